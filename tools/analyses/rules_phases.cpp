#include "tools/analyses/rules_phases.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "model/error.hpp"
#include "tools/analyses/zones.hpp"
#include "tools/formats/run_config.hpp"

namespace tilesim {

namespace {

// ---- the cases: kernels built from a few lines each, every form at its best tile ----

// Rows of the rule 5 cases: the rulebook's example A's (softmax (16, 16384)).
constexpr int64_t kRows = 16;

nlohmann::json op(const std::string& name, const std::vector<std::string>& in,
                  const std::string& out, nlohmann::json extra = nlohmann::json::object()) {
  extra["op"] = name;
  extra["inputs"] = in;
  extra["out"] = out;
  return extra;
}
// A reduction over the row, its result kept as a column.
nlohmann::json row_op(const std::string& name, const std::string& in, const std::string& out) {
  return op(name, {in}, out, {{"dim", -1}, {"keepdim", true}});
}
nlohmann::json scalar_op(const std::string& name, const std::string& in, const std::string& out,
                         double v) {
  return op(name, {in}, out, {{"scalar", v}});
}

// An input of a kernel: a [kRows, L] tensor, or a column [kRows, 1] (a statistic).
struct In {
  In(const char* n, bool col = false) : name(n), column(col) {}  // NOLINT: read as a name
  std::string name;
  bool column = false;
};
// One kernel of a form: a tile program over [kRows, L] tensors.
struct Kernel {
  std::vector<In> inputs;
  std::vector<std::string> outputs;
  std::vector<nlohmann::json> body;
  std::string dtype = "fp32";
};
// A way of writing the computation: one kernel, or several run one after another (their times
// add: the rulebook's gen_time of each, launches not counted).
struct Form {
  std::string name;
  std::vector<Kernel> kernels;
};

// The run config `doc` (a case written for a claim, named `key` in messages) swept over `cands`.
const Ran& config_sweep(Cases& cases, const std::string& key, const nlohmann::json& doc,
                        std::vector<Candidate> cands, bool allow_over_shape = false) {
  const auto path = default_config_dir() / "rules" / (key + ".json");
  SweepConfig cfg;
  cfg.path = path;
  cfg.base = run_config_from_json(doc, path).spec;
  cfg.constraints.allow_tile_over_shape = allow_over_shape;
  return cases.run(key, cfg, std::move(cands));
}

// The fastest time of `k` on rows of length L among tiles [1, t], t a power of two from 1 KB of
// contiguous bytes up to the row and the rulebook's limits.max_tile_elements (candidates that
// overflow UB drop out, as a compile would refuse them).
const CandidateResult& best_of(Cases& cases, const std::string& key, const Kernel& k, int64_t len) {
  nlohmann::json prog = {{"program", key}, {"outputs", k.outputs}};
  for (const auto& in : k.inputs)
    prog["inputs"].push_back(
        {{"name", in.name}, {"shape", {kRows, in.column ? 1 : len}}, {"dtype", k.dtype}});
  prog["body"] = nlohmann::json::array({{{"set_vec_tile_shapes", {1, len}}, {"name", "row"}}});
  for (const auto& o : k.body) prog["body"].push_back(o);
  std::vector<Candidate> cands;
  const int64_t first = 1024 / dtype_bytes(parse_dtype(k.dtype));  // the rulebook's 1 KB
  const int64_t most = std::min(len, cases.hw().limits.max_tile_elements);
  for (int64_t t = std::min(first, len); t <= most; t *= 2) cands.push_back({{1, t}, 1});
  return best(config_sweep(cases, key, {{"program", prog}}, cands));
}

// A form's time on rows of length L (its kernels' best gen_times added) and whether every kernel's
// best tile covers the row (else the row splits over tiles: a reduction's stage ends there).
struct FormTime {
  double us = 0;
  bool covers = true;
};
FormTime form_time(Cases& cases, const Form& f, int64_t len) {
  FormTime t;
  for (size_t i = 0; i < f.kernels.size(); ++i) {
    const CandidateResult& c =
        best_of(cases, fmt::format("rule5 {} k{} L{}", f.name, i, len), f.kernels[i], len);
    t.us += c.gen_time_us;
    t.covers = t.covers && c.tile.back() >= len;
  }
  return t;
}

// Row lengths of the rule 5 cases: a row that fits one tile up to one several tiles long.
const std::vector<int64_t>& lengths() {
  static const std::vector<int64_t> l = {1024, 2048, 4096, 8192, 16384, 32768, 65536};
  return l;
}

// Form `a` against form `b` along the row lengths: each length's times and a's extra cost in
// percent of b's, as evidence rows.
struct Versus {
  std::vector<int64_t> len;
  std::vector<double> a, b, extra_pct;
  std::vector<bool> a_covers, b_covers;  // each form's best tiles cover the row
  // The first row length whose row the form splits over tiles (none: it covers every row tried).
  static std::optional<int64_t> splits(const std::vector<int64_t>& len,
                                       const std::vector<bool>& covers) {
    for (size_t i = 0; i < len.size(); ++i)
      if (!covers[i]) return len[i];
    return std::nullopt;
  }
  std::optional<int64_t> a_splits() const { return splits(len, a_covers); }
  std::optional<int64_t> b_splits() const { return splits(len, b_covers); }
};
Versus versus(Cases& cases, const Form& a, const Form& b) {
  Versus v;
  for (int64_t l : lengths()) {
    const FormTime ta = form_time(cases, a, l), tb = form_time(cases, b, l);
    v.len.push_back(l);
    v.a.push_back(ta.us);
    v.b.push_back(tb.us);
    v.a_covers.push_back(ta.covers);
    v.b_covers.push_back(tb.covers);
    v.extra_pct.push_back(gap_pct(ta.us, tb.us));
  }
  return v;
}
// The first row length from which on a's extra cost over b stays above `pct` (none: never).
// With `above` false: the first from which it stays at or below `pct`.
std::optional<int64_t> turns_at(const Versus& v, double pct, bool above = true) {
  std::optional<int64_t> at;
  for (size_t i = v.len.size(); i-- > 0;) {
    if ((v.extra_pct[i] > pct) != above) break;
    at = v.len[i];
  }
  return at;
}
// The evidence rows of `v` (its axis named `axis`), each pair a timing the verdict rests on.
void add_rows(RuleCheck& k, const Versus& v, const std::string& a, const std::string& b,
              const std::string& axis = "row_length") {
  for (size_t i = 0; i < v.len.size(); ++i) {
    k.data["rows"].push_back({{axis, v.len[i]},
                              {a + "_us", v.a[i]},
                              {b + "_us", v.b[i]},
                              {"extra_pct", v.extra_pct[i]}});
    compared(k, v.a[i], v.b[i]);
  }
}
std::string curve_text(const Versus& v) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < v.len.size(); ++i)
    parts.push_back(fmt::format("{} {:+.1f}%", v.len[i], v.extra_pct[i]));
  return join(parts, ", ");
}
std::string at_text(const std::optional<int64_t>& at) {
  return at ? fmt::format("{}", *at) : std::string("none of the rows tried");
}
void set_threshold(RuleCheck& k, const std::optional<int64_t>& at, const std::string& what) {
  k.data["threshold"] = at ? nlohmann::json(*at) : nlohmann::json(nullptr);
  k.data["threshold_what"] = what;
}

// Softmax's forms: exp(x) / sum exp(x) (unstable); the stable one as PyPTO composes it (amax, sub,
// exp, sum, div: the max a pass of its own once a row splits); the stable one with its max and sum
// in one pass (amax then sumexp with its running max, X10); and as three kernels.
Kernel softmax_unstable() {
  return {
      {"x"}, {"y"}, {op("exp", {"x"}, "e"), row_op("sum", "e", "s"), op("div", {"e", "s"}, "y")}};
}
Kernel softmax_stable() {
  return {{"x"},
          {"y"},
          {row_op("amax", "x", "m"), op("sub", {"x", "m"}, "d"), op("exp", {"d"}, "e"),
           row_op("sum", "e", "s"), op("div", {"e", "s"}, "y")}};
}
Kernel softmax_one_pass() {
  return {{"x"},
          {"y"},
          {row_op("amax", "x", "m"), row_op("sumexp", "x", "s"), op("sub", {"x", "m"}, "d"),
           op("exp", {"d"}, "e"), op("div", {"e", "s"}, "y")}};
}

// ---- rule 5 ----

std::string split_text(const std::optional<int64_t>& split) {
  return split ? fmt::format("rows split over tiles from {}", *split)
               : std::string("a tile covers every row tried");
}

// Fusion claims: the unfused form (a) against the fused one (b). The fusion pays where the
// unfused form costs more than a tie; the threshold is the first row length from which it no
// longer does. Holds when the fusion pays at every row the fused stage's tile covers and stops
// only once its rows split.
void fusion_verdict(RuleCheck& k, const Versus& v, const std::string& what) {
  const auto stops = turns_at(v, kRuleTiePct, false);
  bool pays_covered = true, pays_somewhere = false;
  for (size_t i = 0; i < v.len.size(); ++i) {
    if (v.b_covers[i]) pays_covered = pays_covered && v.extra_pct[i] > kRuleTiePct;
    pays_somewhere = pays_somewhere || v.extra_pct[i] > kRuleTiePct;
  }
  const auto split = v.b_splits();
  set_threshold(k, stops, what);
  k.data["fused_splits_from"] = split ? nlohmann::json(*split) : nlohmann::json(nullptr);
  k.verdict = pays_covered && (!stops || (split && *stops >= *split)) ? Verdict::kHolds
              : pays_somewhere                                        ? Verdict::kBends
                                                                      : Verdict::kFails;
}

// Claims that turn where form a's row splits: `covered` holds for a's extra cost at every row
// a's tile covers, and b wins by more than a tie from the first split row on (the threshold).
// Returns "b wins from row X; a's rows split ..." for the check's numbers.
std::string split_verdict(RuleCheck& k, const Versus& v, const std::function<bool(double)>& covered,
                          const std::string& what, const std::string& b_wins,
                          const std::string& a_name) {
  const auto at = turns_at(v, kRuleTiePct);
  const auto split = v.a_splits();
  set_threshold(k, at, what);
  bool holds = true;
  for (size_t i = 0; i < v.len.size(); ++i)
    if (v.a_covers[i]) holds = holds && covered(v.extra_pct[i]);
  k.verdict = holds && at && split && *at == *split ? Verdict::kHolds
              : at                                  ? Verdict::kBends
                                                    : Verdict::kFails;
  return fmt::format("{} wins from row {}; {}: {}", b_wins, at_text(at), a_name, split_text(split));
}

RuleCheck check_stable_softmax(Cases& cases) {
  RuleCheck k = new_check(
      "rule5.stable_softmax",
      "Rule 5: a stable softmax's max pass costs little while a tile covers the row; once the "
      "row splits it is a pass over x of its own, unless the max and the sum are one pass",
      nlohmann::json::object());
  const Form unstable{"unstable", {softmax_unstable()}};
  const Versus three = versus(cases, {"stable", {softmax_stable()}}, unstable);
  const Versus one = versus(cases, {"stable_one_pass", {softmax_one_pass()}}, unstable);
  add_rows(k, three, "stable", "unstable");
  const auto split = three.a_splits();
  set_threshold(k, split, "row length (fp32) from which the stable form's rows split over tiles");
  double covered = 0, past = 1e300;
  bool one_cheaper = true;
  for (size_t i = 0; i < three.len.size(); ++i) {
    k.data["rows"][i]["stable_one_pass_us"] = one.a[i];
    if (three.a_covers[i]) {
      covered = std::max(covered, three.extra_pct[i]);
    } else {
      past = std::min(past, three.extra_pct[i]);
      one_cheaper = one_cheaper && one.extra_pct[i] < three.extra_pct[i];
    }
  }
  const bool jumps = split && covered < past;
  k.verdict = jumps && one_cheaper ? Verdict::kHolds : jumps ? Verdict::kBends : Verdict::kFails;
  k.numbers =
      fmt::format("stable over unstable by row length: {}; {}; the one-pass form over unstable: {}",
                  curve_text(three), split_text(split), curve_text(one));
  k.why =
      "while a tile covers the row the max is one more reduce on data in UB; a split row ends "
      "the amax's stage (its partials merge across tiles), so the ops after it read x from GM "
      "again; sumexp's running max (the op table's X10) folds the max into the sum's pass";
  return k;
}

RuleCheck check_online_softmax(Cases& cases) {
  RuleCheck k = new_check(
      "rule5.online_softmax",
      "Rule 5: the online softmax (max and sum of exp in one pass, the sum rescaled as the max "
      "grows) costs more than a max pass of its own while a tile covers the row, and pays once "
      "the row splits",
      nlohmann::json::object());
  const Versus v =
      versus(cases, {"stable", {softmax_stable()}}, {"stable_one_pass", {softmax_one_pass()}});
  add_rows(k, v, "max_pass", "online");
  const std::string turn = split_verdict(
      k, v, [](double e) { return e < -kRuleTiePct; },
      "row length (fp32) from which the online form wins by more than a tie", "the online form",
      "the max-pass form");
  k.numbers = fmt::format("a max pass of its own over the online form by row length: {}; {}",
                          curve_text(v), turn);
  k.why =
      "the online statistics compute exp(x - max) for the sum and the apply computes it again "
      "for y (a second Sub and Exp over the tile), and each partial merge rescales the running "
      "sum (the op table's sumexp record); the max-pass form keeps e = exp(x - max) in UB and "
      "sums it. Once the row splits, its separate max is a pass over x through GM, which the "
      "online statistics save";
  return k;
}

RuleCheck check_softmax_fusion(Cases& cases) {
  RuleCheck k = new_check(
      "rule5.softmax_fusion",
      "Rule 5: softmax as one fused kernel beats three kernels (amax; sub, exp and sum; div) "
      "while a tile covers the row, by the intermediates' round trips through GM",
      nlohmann::json::object());
  const Form three{"three_kernels",
                   {{{"x"}, {"m"}, {row_op("amax", "x", "m")}},
                    {{"x", {"m", true}},
                     {"e", "s"},
                     {op("sub", {"x", "m"}, "d"), op("exp", {"d"}, "e"), row_op("sum", "e", "s")}},
                    {{"e", {"s", true}}, {"y"}, {op("div", {"e", "s"}, "y")}}}};
  const Versus v = versus(cases, three, {"stable", {softmax_stable()}});
  add_rows(k, v, "three_kernels", "fused");
  fusion_verdict(k, v, "row length (fp32) from which one fused kernel no longer wins");
  k.numbers = fmt::format(
      "three kernels over one fused kernel by row length: {} (each kernel's gen_time added, "
      "launches not counted); the fused kernel: {}",
      curve_text(v), split_text(v.b_splits()));
  k.why =
      "three kernels store m, e and s and read x twice and e once more, and each kernel's tasks "
      "start after the last one's end; fused on a tile covering the row, every intermediate "
      "stays in UB. Once the row splits the fused program is three stages through GM too, all on "
      "one tile, where the three kernels each take their own best tile";
  return k;
}

RuleCheck check_layernorm_one_pass(Cases& cases) {
  RuleCheck k = new_check(
      "rule5.layernorm_one_pass",
      "Rule 5: LayerNorm's one-pass statistics (E[x^2] - E[x]^2) tie the two-pass ones (the "
      "mean, then the mean of (x - mean)^2) while a tile covers the row, and win once it splits",
      nlohmann::json::object());
  const auto eps = [](const std::string& in, const std::string& out) {
    return scalar_op("add", in, out, 1e-5);
  };
  const Kernel two{{"x"},
                   {"y"},
                   {row_op("mean", "x", "mu"), op("sub", {"x", "mu"}, "d"),
                    op("mul", {"d", "d"}, "q"), row_op("mean", "q", "v"), eps("v", "ve"),
                    op("rsqrt", {"ve"}, "r"), op("mul", {"d", "r"}, "y")}};
  const Kernel one{
      {"x"},
      {"y"},
      {op("mul", {"x", "x"}, "q"), row_op("mean", "x", "mu"), row_op("mean", "q", "ms"),
       op("mul", {"mu", "mu"}, "mu2"), op("sub", {"ms", "mu2"}, "v"), eps("v", "ve"),
       op("rsqrt", {"ve"}, "r"), op("sub", {"x", "mu"}, "d"), op("mul", {"d", "r"}, "y")}};
  const Versus v = versus(cases, {"layernorm_two_pass", {two}}, {"layernorm_one_pass", {one}});
  add_rows(k, v, "two_pass", "one_pass");
  const std::string turn = split_verdict(
      k, v, [](double e) { return std::abs(e) <= kRuleTiePct; },
      "row length (fp32) from which one pass wins by more than a tie", "one pass",
      "the two-pass form");
  k.numbers = fmt::format("two-pass over one-pass by row length: {}; {}", curve_text(v), turn);
  k.why =
      "a split row ends the mean's stage: the two-pass form reads x for the mean, again for the "
      "squared deviations and again to normalise; the one-pass form's two means share one pass "
      "(X9). Its price is numerical: E[x^2] - E[x]^2 cancels when the mean is large against the "
      "spread (Welford's update avoids it at one more division per element)";
  return k;
}

RuleCheck check_fusion_ub(Cases& cases) {
  RuleCheck k = new_check(
      "rule5.fusion_ub",
      "Rule 5: fusing a residual add into RMSNorm pays while a tile of the fused stage covers the "
      "row in UB, and stops paying once the row splits",
      nlohmann::json::object());
  const auto rms = [](const std::string& h) {
    return std::vector<nlohmann::json>{op("mul", {h, h}, "q"), row_op("mean", "q", "ms"),
                                       scalar_op("add", "ms", "me", 1e-6),
                                       op("rsqrt", {"me"}, "rr"), op("mul", {h, "rr"}, "y")};
  };
  Kernel fused{{"x", "res"}, {"h", "y"}, {op("add", {"x", "res"}, "h")}};
  for (auto& o : rms("h")) fused.body.push_back(o);
  const Form separate{
      "add_then_rmsnorm",
      {{{"x", "res"}, {"h"}, {op("add", {"x", "res"}, "h")}}, {{"h"}, {"y"}, rms("h")}}};
  const Versus v = versus(cases, separate, {"add_rmsnorm_fused", {fused}});
  add_rows(k, v, "separate", "fused");
  fusion_verdict(k, v, "row length (fp32) from which the fused kernel no longer wins");
  k.numbers =
      fmt::format("separate (add, then RMSNorm) over fused by row length: {}; the fused kernel: {}",
                  curve_text(v), split_text(v.b_splits()));
  k.why =
      "fused on a tile covering the row, h never leaves UB and one kernel's tasks do both; a "
      "split row ends the mean's stage, so h is stored for the normalising stage and read back "
      "as the separate kernels do, on a tile that carries x, res, h and the square at once";
  return k;
}

RuleCheck check_fp32_accumulate(Cases& cases) {
  RuleCheck k = new_check(
      "rule5.fp32_accumulate",
      "Rule 5: accumulating fp16 inputs in fp32 costs its casts: little while the copies bind, "
      "more as the vector pipe binds",
      nlohmann::json::object());
  Kernel fp16{{"x"}, {"s"}, {op("mul", {"x", "x"}, "q"), row_op("sum", "q", "s")}, "fp16"};
  Kernel fp32{{"x"},
              {"s"},
              {op("cast", {"x"}, "xf", {{"dtype", "fp32"}}), op("mul", {"xf", "xf"}, "q"),
               row_op("sum", "q", "s")},
              "fp16"};
  const Versus v = versus(cases, {"sum_squares_fp32_acc", {fp32}}, {"sum_squares_fp16", {fp16}});
  add_rows(k, v, "fp32_accumulate", "fp16");
  const auto at = turns_at(v, 100 * kClose);
  set_threshold(k, at, "row length (fp16) from which the casts cost more than 10%");
  const bool grows = v.extra_pct.back() > v.extra_pct.front();
  k.verdict = grows && at ? Verdict::kHolds : grows ? Verdict::kBends : Verdict::kFails;
  k.numbers = fmt::format(
      "fp32 accumulation over fp16 by row length: {}; the casts cost more than 10% from row {}",
      curve_text(v), at_text(at));
  k.why =
      "the cast is one more full-rate pass over the tile and the fp32 ops process half the "
      "elements per repeat; while fixed costs and copies dominate (short rows) that hides, on "
      "long rows the vector pipe binds";
  return k;
}

// ---- rule 4: the losses under PyPTO, phase 1 per sample, phase 2 the batch mean ----

// A loss kernel and its case: (n, features) fp32, phase 1's tile [rows, features].
struct Phase1 {
  std::string op;
  int64_t features = 0;
  int64_t n = 0;
  int64_t rows = 0;
  std::string text() const {
    return fmt::format("{} ({}, {}) phase 1 [{}, {}]", op, n, features, rows, features);
  }
  // The run config both phase-2 sweeps start from: fp32, phase 1's tile.
  nlohmann::json config() const {
    return {{"op", op}, {"shape", {n, features}}, {"dtype", "fp32"}, {"tile", {rows, features}}};
  }
  // A candidate of phase 1's tile at loop count `loop`, phase 2 under `tile` and `merge`.
  Candidate candidate(int64_t loop, int64_t tile, const std::string& merge) const {
    return {{rows, features}, loop, 0, {}, {}, {{"phase2_tile", {tile}}, {"merge", merge}}};
  }
};
// Cross entropy over 16 classes: phase 1 a row of 16 logits per sample, so phase 2's share of the
// kernel is large.
Phase1 cross_entropy(int64_t n, int64_t rows) {
  return {"cross_entropy", 16, n, rows};
}
// Phase 2's tiles tried: from one UB block of fp32 values up to what UB holds ([t, 1] tiles pad
// each value to a UB block).
const std::vector<int64_t>& phase2_tiles() {
  static const std::vector<int64_t> t = {8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096};
  return t;
}

// Phase 2's time by tile (and merge) with phase 1's tile [rows, 16]: the ok candidates.
struct Phase2Curve {
  std::vector<int64_t> tile;
  std::vector<double> us;
  std::string refused;  // no phase 2 tile ran: why (phase 1's tile overflows UB, say)
  double best_us() const { return *std::min_element(us.begin(), us.end()); }
  int64_t best_tile() const { return tile[std::min_element(us.begin(), us.end()) - us.begin()]; }
  // The smallest tile within a tie of the best.
  int64_t enough() const {
    for (size_t i = 0; i < us.size(); ++i)
      if (us[i] <= best_us() * (1 + kRuleTiePct / 100)) return tile[i];
    return best_tile();
  }
  std::optional<double> at(int64_t t) const {
    const auto it = std::find(tile.begin(), tile.end(), t);
    if (it == tile.end()) return std::nullopt;
    return us[static_cast<size_t>(it - tile.begin())];
  }
};
Phase2Curve phase2_curve(Cases& cases, const Phase1& p, const std::string& merge) {
  std::vector<Candidate> cands;
  for (int64_t t : phase2_tiles())
    if (t <= p.n) cands.push_back(p.candidate(1, t, merge));
  // 16 classes: a tile covers the row exactly.
  const Ran& r =
      config_sweep(cases, fmt::format("rule4 {} {}", p.text(), merge), p.config(), cands, true);
  Phase2Curve c;
  for (const auto& x : r.res.candidates)
    if (x.ok) {
      c.tile.push_back(x.params["phase2_tile"][0].get<int64_t>());
      c.us.push_back(x.gen_time_us);
    }
  if (c.tile.empty()) c.refused = r.res.candidates.front().reason;
  return c;
}

// A curve the claim cannot do without.
Phase2Curve needed(Cases& cases, const Phase1& p, const std::string& merge) {
  Phase2Curve c = phase2_curve(cases, p, merge);
  if (c.tile.empty())
    throw Error(fmt::format("rules: rule 4: {}: no phase 2 tile could be evaluated ({})", p.text(),
                            c.refused));
  return c;
}

std::string curve_text(const Phase2Curve& c) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < c.tile.size(); ++i)
    parts.push_back(fmt::format("{} {:.2f}", c.tile[i], c.us[i]));
  return join(parts, ", ");
}

// Batches of the rule 4 cases: phase 2 short against phase 1, and long enough to split.
const std::vector<int64_t>& batches() {
  static const std::vector<int64_t> n = {65536, 524288};
  return n;
}

RuleCheck check_phase2_contiguous(Cases& cases) {
  RuleCheck k = new_check(
      "rule4.phase2_contiguous",
      "Rule 4: phase 2 meets rule 1's contiguity on its own: its tile of per-sample values "
      "reaches about 1 KB (256 fp32) before it ties its best",
      nlohmann::json::object());
  int held = 0;
  std::vector<std::string> parts;
  int64_t last = 0;
  // Cross entropy at both batches, and the pair and triplet losses (128 features) at the smaller.
  const std::vector<Phase1> cs = {cross_entropy(batches().front(), 256),
                                  {"mse", 128, batches().front(), 64},
                                  {"triplet_margin", 128, batches().front(), 64},
                                  cross_entropy(batches().back(), 256)};
  for (const Phase1& p : cs) {
    const Phase2Curve c = needed(cases, p, "auto");
    const int64_t bytes = c.enough() * 4;
    last = bytes;
    const bool ok = bytes >= 512 && bytes <= 2048;
    held += ok;
    compared(k, c.best_us(), c.us.front());
    parts.push_back(fmt::format("{}: phase 2 us by tile {}; ties its best from {} values ({} B)",
                                p.text(), curve_text(c), c.enough(), bytes));
    k.data["rows"].push_back({{"kernel", p.text()},
                              {"phase2_tile", c.tile},
                              {"gen_time_us", c.us},
                              {"enough_bytes", bytes}});
  }
  k.data["threshold"] = last;
  k.data["threshold_what"] =
      "contiguous bytes of phase 2's tile from which it ties its best, at the largest batch";
  k.verdict = count_verdict(held, static_cast<int>(cs.size()));
  k.numbers = join(parts);
  k.why =
      "a phase 2 tile of t values pays its reduction's instructions (vector.issue_cycles each, "
      "the [t, 1] column reduced row by row of UB blocks) and one accumulating store, whatever t: "
      "short tiles pay them N / t times; past the knee more values per tile only lengthen the "
      "tasks. At a small batch phase 2 keeps gaining up to one tile (its tasks are few anyway); "
      "where phase 1 is heavy (128 features a sample) phase 2's share is small and it ties from "
      "fewer values";
  return k;
}

RuleCheck check_phase2_own_tile(Cases& cases) {
  RuleCheck k = new_check(
      "rule4.phase2_own_tile",
      "Rule 4: choose phase 2's tile on its own: its best does not follow phase 1's tile, and "
      "following phase 1's rows loses where they are few",
      nlohmann::json::object());
  // The smaller batch: phase 1's tiles from 32 rows stay within the rulebook's 2048 tiles.
  const int64_t n = batches().front();
  std::vector<Phase2Curve> curves;
  const std::vector<int64_t> rows = {32, 128, 512};
  for (int64_t r : rows) curves.push_back(phase2_curve(cases, cross_entropy(n, r), "auto"));
  // Phase 2's best with phase 1's largest tile that runs: does it hold for the others?
  std::optional<int64_t> own;
  for (const Phase2Curve& c : curves)
    if (!c.tile.empty()) own = c.best_tile();
  if (!own)
    throw Error("rules: rule 4: no phase 1 tile of cross entropy (" + std::to_string(n) +
                ", 16) runs: " + curves.back().refused);
  int same = 0, follow_loses = 0, ran = 0;
  double widest = 0;
  std::vector<std::string> parts;
  for (size_t i = 0; i < rows.size(); ++i) {
    const Phase2Curve& c = curves[i];
    if (c.tile.empty()) {
      parts.push_back(fmt::format("phase 1 [{}, 16] refused: {}", rows[i], c.refused));
      continue;
    }
    ++ran;
    const auto at_own = c.at(*own);
    const auto follow = c.at(rows[i]);
    const bool tied = at_own && *at_own <= c.best_us() * (1 + kRuleTiePct / 100);
    const bool loses = follow && *follow > c.best_us() * (1 + kRuleTiePct / 100);
    same += tied;
    follow_loses += loses;
    // The verdict's deciding pair: following phase 1 against the best, where it loses most.
    if (follow) widest = std::max(widest, gap_pct(*follow, c.best_us()));
    parts.push_back(
        fmt::format("phase 1 [{}, 16]: best phase 2 tile {} ({}), tile {} {}, "
                    "following ({}) {}",
                    rows[i], c.best_tile(), us(c.best_us()), *own,
                    at_own ? us(*at_own) : std::string("refused"), rows[i],
                    follow ? us(*follow) : std::string("refused")));
    k.data["rows"].push_back({{"phase1_rows", rows[i]},
                              {"best_phase2_tile", c.best_tile()},
                              {"best_us", c.best_us()},
                              {"own_tile_us", at_own ? nlohmann::json(*at_own) : nlohmann::json()},
                              {"follow_us", follow ? nlohmann::json(*follow) : nlohmann::json()}});
  }
  k.data["threshold"] = *own;
  k.data["threshold_what"] = "phase 2's own best tile (values), whatever phase 1's";
  k.margin_pct = widest;
  k.verdict = same == ran && follow_loses > 0 ? Verdict::kHolds
              : same > 0                      ? Verdict::kBends
                                              : Verdict::kFails;
  k.numbers = fmt::format("N {}: {}", n, join(parts));
  k.why =
      "phase 2 reads the per-sample vector phase 1 wrote to GM, after every phase 1 task: its "
      "tile sets its own copies and task count and nothing of phase 1's carries over";
  return k;
}

RuleCheck check_phase2_merge(Cases& cases) {
  RuleCheck k = new_check(
      "rule4.phase2_merge",
      "Rule 4: phase 2's partial results are best added into the result by its own tasks "
      "(atomic) than merged by tasks of their own (a tree); the tree's cost grows with the "
      "partials' count",
      nlohmann::json::object());
  const int64_t n = batches().front();
  const Phase2Curve atomic = needed(cases, cross_entropy(n, 256), "atomic");
  const Phase2Curve tree = needed(cases, cross_entropy(n, 256), "tree");
  Versus v;  // by partial count, ascending
  for (size_t i = tree.tile.size(); i-- > 0;) {
    const auto a = atomic.at(tree.tile[i]);
    if (!a) continue;
    v.len.push_back(n / tree.tile[i]);
    v.a.push_back(tree.us[i]);
    v.b.push_back(*a);
    v.extra_pct.push_back(gap_pct(tree.us[i], *a));
  }
  add_rows(k, v, "tree", "atomic", "partials");
  const auto at = turns_at(v, kRuleTiePct);
  k.data["threshold"] = at ? nlohmann::json(*at) : nlohmann::json(nullptr);
  k.data["threshold_what"] = "partial results from which the tree costs more than a tie";
  bool never_worse = true;
  for (double e : v.extra_pct) never_worse = never_worse && e >= -kRuleTiePct;
  k.verdict = never_worse && at ? Verdict::kHolds : at ? Verdict::kBends : Verdict::kFails;
  std::vector<std::string> parts;
  for (size_t i = 0; i < v.len.size(); ++i)
    parts.push_back(fmt::format("{} {:+.1f}%", v.len[i], v.extra_pct[i]));
  k.numbers = fmt::format(
      "N {}, phase 1 [256, 16]: tree over atomic by partial count: {}; the tree loses from {} "
      "partials",
      n, join(parts, ", "), at_text(at));
  k.why =
      "an atomic merge is one accumulating store per phase 2 task; a tree adds a level of merge "
      "tasks per halving, each a dispatch, two partial loads and a store, waiting on its pair";
  return k;
}

// A loop over phase 1 (loop_count chunks of the batch, a root function each) with phase 2's
// merge atomic or a tree: phase 2 runs once after every chunk, outside the loop.
RuleCheck check_loop_merge(Cases& cases) {
  RuleCheck k = new_check(
      "rule4.loop_merge",
      "Rule 4: a loop over phase 1 does not change phase 2's merge: the same merge wins at every "
      "loop count, its cost the same, and the best loop count is the same under either merge",
      nlohmann::json::object());
  const Phase1 p = cross_entropy(batches().back(), 256);
  const std::vector<int64_t> loops = {1, 2, 4, 8, 16, 32, 64};
  std::map<std::string, std::vector<double>> us;
  for (const char* merge : {"atomic", "tree"}) {
    std::vector<Candidate> cands;
    for (int64_t l : loops) cands.push_back(p.candidate(l, 1024, merge));
    const Ran& r = config_sweep(cases, fmt::format("rule4 {} loops {}", p.text(), merge),
                                p.config(), cands, true);
    for (const auto& c : r.res.candidates) {
      if (!c.ok)
        throw Error(fmt::format("rules: rule 4: {} loop {} merge {}: {}", p.text(), c.loop_count,
                                merge, c.reason));
      us[merge].push_back(c.gen_time_us);
    }
  }
  const auto& a = us["atomic"];
  const auto& t = us["tree"];
  double least = 1e300, most = 0;
  bool same_winner = true;
  std::vector<std::string> parts;
  for (size_t i = 0; i < loops.size(); ++i) {
    const double extra = t[i] - a[i];
    least = std::min(least, extra);
    most = std::max(most, extra);
    same_winner = same_winner && gap_pct(t[i], a[i]) > kRuleTiePct;
    compared(k, t[i], a[i]);
    parts.push_back(
        fmt::format("loop {}: {:.2f} / {:.2f} us (+{:.2f})", loops[i], a[i], t[i], extra));
    k.data["rows"].push_back({{"loop_count", loops[i]},
                              {"atomic_us", a[i]},
                              {"tree_us", t[i]},
                              {"tree_extra_us", extra}});
  }
  const auto best = [&](const std::vector<double>& v) {
    return loops[static_cast<size_t>(std::min_element(v.begin(), v.end()) - v.begin())];
  };
  // "The same cost": the tree's extra time varies by at most a third of its smallest.
  const bool steady = most <= least * (1 + 1.0 / 3);
  // Within a tie: the tree's time at the atomic merge's best loop count is its own best.
  const size_t at_a =
      static_cast<size_t>(std::find(loops.begin(), loops.end(), best(a)) - loops.begin());
  const bool same_best = t[at_a] <= *std::min_element(t.begin(), t.end()) * (1 + kRuleTiePct / 100);
  k.data["tree_extra_us_range"] = {least, most};
  k.verdict = same_winner && steady && same_best ? Verdict::kHolds
              : same_winner                      ? Verdict::kBends
                                                 : Verdict::kFails;
  k.numbers = fmt::format(
      "{}, phase 2 tile 1024, atomic / tree: {}; best loop {} (atomic) and {} (tree); the tree's "
      "extra {:.2f}..{:.2f} us",
      p.text(), join(parts), best(a), best(t), least, most);
  k.why =
      "phase 2 stands outside the loop, each of its tiles waiting for the phase 1 tasks that "
      "wrote its rows: the tree adds its merge tasks (a dispatch, two partial loads and a store "
      "each) whatever the chunking, so the same merge wins at every loop count and the loop "
      "count trades phase 1's granularity alone (rule 2); how much of the tree hides behind "
      "the last chunks' phase 1 changes with the chunking";
  return k;
}

// Under SPMD: the loss as one launch (its blocks fold their samples into the mean, X13) against
// phase 1 and phase 2 as kernels of their own; kernel times (a launch each).
RuleCheck check_phase_fusion(Cases& cases) {
  RuleCheck k = new_check(
      "rule4.phase_fusion",
      "Rule 4: under SPMD, fold phase 2 into phase 1's blocks (one launch, each block adding its "
      "samples' share): it beats phase 2 as a kernel of its own, by most at small batches",
      nlohmann::json::object());
  const int64_t rows = 256, grid = cases.hw().cores.aiv;
  const nlohmann::json spmd = {{"style", "spmd"}, {"grid", grid}};
  const auto row = [](const char* name, const char* in, const char* out) {
    return nlohmann::json{
        {"op", name}, {"inputs", {in}}, {"dim", -1}, {"keepdim", true}, {"out", out}};
  };
  Versus v;
  for (int64_t n : {int64_t{4096}, int64_t{16384}, int64_t{65536}, int64_t{262144}}) {
    const auto one = [&](const std::string& key, const nlohmann::json& doc, const Dims& tile) {
      return best(config_sweep(cases, fmt::format("rule4 {} N{}", key, n), doc, {{tile, 1}}, true))
          .kernel_time_us;
    };
    const double fused = one("cross_entropy spmd",
                             {{"op", "cross_entropy"},
                              {"shape", {n, 16}},
                              {"dtype", "fp32"},
                              {"tile", {rows, 16}},
                              {"partition", spmd}},
                             {rows, 16});
    nlohmann::json p1 = {
        {"program", "cross_entropy_phase1"},
        {"inputs",
         {{{"name", "x"}, {"shape", {n, 16}}, {"dtype", "fp32"}},
          {{"name", "t"}, {"shape", {n, 1}}, {"dtype", "int32"}}}},
        {"outputs", {"l"}},
        {"body",
         {{{"set_vec_tile_shapes", {rows, 16}}, {"name", "rows"}},
          row("amax", "x", "m"),
          row("sumexp", "x", "s"),
          {{"op", "pick"}, {"inputs", {"x", "t"}}, {"dim", -1}, {"keepdim", true}, {"out", "xt"}},
          op("log", {"s"}, "ls"),
          op("add", {"m", "ls"}, "lse"),
          op("sub", {"lse", "xt"}, "l")}}};
    const int64_t t2 = std::min<int64_t>(n, 2048);
    nlohmann::json p2 = {
        {"program", "cross_entropy_phase2"},
        {"inputs", {{{"name", "l"}, {"shape", {n, 1}}, {"dtype", "fp32"}}}},
        {"outputs", {"o"}},
        {"body",
         {{{"set_vec_tile_shapes", {t2, 1}}, {"name", "rows"}},
          {{"op", "mean"}, {"inputs", {"l"}}, {"dim", 0}, {"keepdim", true}, {"out", "o"}}}}};
    const double separate = one("phase1 spmd", {{"program", p1}, {"partition", spmd}}, {rows, 16}) +
                            one("phase2 spmd", {{"program", p2}, {"partition", spmd}}, {t2, 1});
    v.len.push_back(n);
    v.a.push_back(separate);
    v.b.push_back(fused);
    v.extra_pct.push_back(gap_pct(separate, fused));
  }
  add_rows(k, v, "separate", "fused", "batch");
  // The batch from which the second kernel costs less than 10% ("close").
  const auto fades = turns_at(v, 100 * kClose, false);
  k.data["threshold"] = fades ? nlohmann::json(*fades) : nlohmann::json(nullptr);
  k.data["threshold_what"] = "batch from which phase 2 as its own kernel costs less than 10% more";
  bool wins = true;
  for (double e : v.extra_pct) wins = wins && e > kRuleTiePct;
  const bool shrinks = v.extra_pct.back() < v.extra_pct.front();
  k.verdict = wins && shrinks   ? Verdict::kHolds
              : wins || shrinks ? Verdict::kBends
                                : Verdict::kFails;
  std::vector<std::string> parts;
  for (size_t i = 0; i < v.len.size(); ++i)
    parts.push_back(fmt::format("{} {:+.1f}%", v.len[i], v.extra_pct[i]));
  k.numbers = fmt::format(
      "cross entropy (N, 16), tile [{}, 16], grid {}: two kernels over one launch by batch "
      "(kernel times): {}; within 10% from N {}",
      rows, grid, join(parts, ", "), at_text(fades));
  k.why =
      "a second kernel pays its launch (kernel.vector_launch_us), its blocks' start and a pass "
      "over the per-sample vector in GM; folded, each block reduces the values it holds in UB "
      "and adds one atomic. Phase 1's time grows with the batch, the second kernel's hardly";
  return k;
}

}  // namespace

std::vector<RuleCheck> check_rule4(Cases& cases) {
  return {check_phase2_contiguous(cases), check_phase2_own_tile(cases), check_phase2_merge(cases),
          check_loop_merge(cases), check_phase_fusion(cases)};
}

std::vector<RuleCheck> check_rule5(Cases& cases) {
  return {check_stable_softmax(cases), check_online_softmax(cases),
          check_softmax_fusion(cases), check_layernorm_one_pass(cases),
          check_fusion_ub(cases),      check_fp32_accumulate(cases)};
}

}  // namespace tilesim

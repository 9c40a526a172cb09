#include "tools/reports/rule_chapters.hpp"

#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "model/error.hpp"
#include "tools/formats/text_append.hpp"
#include "tools/reports/rules_lang.hpp"

namespace tilesim {

namespace {

// A fixed text of the chapters in each language.
struct Text {
  const char* en;
  const char* zh;
  const char* in(const std::string& lang) const { return lang == "zh" ? zh : en; }
};

struct Chapter {
  const char* prefix;
  Text title, applies;
};
const Chapter kChapters[] = {
    {"rule4.",
     {"Rule 4 - two-phase pipelines: phase 2 is a kernel of its own",
      "规则 4 - 两阶段流水：第二阶段是一个独立的 kernel"},
     {"Applies to a reduction in two phases: a loss's per-sample phase then its batch "
      "mean (cross-entropy, MSE, triplet margin), a norm's statistics then its "
      "normalisation, softmax's statistics then its apply. The cases: cross entropy (N, "
      "16) fp32 under PyPTO, phase 1 one row of 16 classes per sample, phase 2 the mean "
      "of the N per-sample values (its tile [t, 1], `params.phase2_tile`).",
      "适用于两阶段的归约：损失函数的逐样本阶段再求批均值（交叉熵、MSE、triplet "
      "margin）、归一化的统计量再归一化、softmax 的统计量再应用。用例"
      "：PyPTO 下的交叉熵 (N, 16) FP32，第一阶段每个样本一行 16 个类别，第二阶段求 N "
      "个逐样本值的均值（其 tile 为 [t, 1]，`pa"
      "rams.phase2_tile`）。"}},
    {"rule5.",
     {"Rule 5 - fusion and numerical stability", "规则 5 - 融合与数值稳定性"},
     {"Applies to chains of vector ops on the same rows: fusing them into one kernel, "
      "and the extra work a numerically stable form costs. The cases: tile programs over "
      "16 rows of 1024 to 65536 elements, each form at its best tile [1, t] (t from 1 KB "
      "of contiguous bytes up to the row and the tile-element limit; a tile UB cannot "
      "hold drops out).",
      "适用于同一批行上的向量算子链：把它们融合成一个 kernel，以及数值稳定写法多出的工作。用例：16 "
      "行、每行 1024 到 65536 个元素的 tile 程"
      "序，每种写法取其最优 tile [1, t]（t 从 1 KB 连续字节到整行与 tile 元素上限；UB 放不下的 "
      "tile 被剔除）。"}},
};
const Text kTitle{"Rules 4 and 5, derived by tilesim", "规则 4 与规则 5：由 tilesim 推导"};
const Text kIntro{
    "The rulebook (shared/RULES.md) left these chapters unwritten. tilesim writes them "
    "from its mechanisms: each rule below is a claim the model tested, with the "
    "verdict, the threshold at which it turns and the runs behind it, on {}. Only the "
    "claims are written by hand; every verdict, threshold and figure comes from the "
    "run. Regenerate with:",
    "规则手册（shared/RULES.md）没有写这两章。tilesim "
    "从其机制写出它们：下面每条规则都是模型检验过的一个论断，附结论、结论转折处的阈值以及背后"
    "的运行，硬件为 {}。只有论断是人写的；所有结论、阈值和数字都来自运行。重新生成："};
const Text kMeasure{
    "Times are `gen_time_us` (the span of a kernel's tasks, the rulebook's measure); a "
    "form of several kernels adds theirs (launches not counted). Within 2% two timings "
    "are a tie.",
    "时间为 `gen_time_us`（一个 kernel 所有任务的跨度，即规则手册的度量）；由多个 kernel "
    "组成的写法把各自的时间相加（不计启动）。两个时"
    "间相差 2% 以内视为持平。"};
const Text kClaim{"claim", "论断"}, kVerdictWord{"verdict", "结论"};
const Text kVerdict{"Verdict on", "结论，硬件"}, kThreshold{"Threshold", "阈值"},
    kWhy{"Why", "原因"}, kMeasured{"Measured", "测得"}, kEvidence{"Evidence", "证据"},
    kClosest{"closest timings", "最接近的两个时间相差"}, kTie{"a tie", "在 2% 以内，视为持平"};

std::string cell(const nlohmann::json& v) {
  if (v.is_null()) return "-";
  if (v.is_array()) {
    std::string s;
    for (const auto& x : v) append(s, "{}{}", s.empty() ? "" : ", ", cell(x));
    return s;
  }
  if (v.is_number_float()) return fmt::format("{:.4g}", v.get<double>());
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

// The claim's evidence rows as a Markdown table (the columns of its first row, in order).
std::string evidence_table(const nlohmann::json& rows) {
  if (!rows.is_array() || rows.empty()) return "";
  std::vector<std::string> cols;
  for (const auto& [key, value] : rows.front().items()) cols.push_back(key);
  std::string s = "|";
  for (const auto& c : cols) append(s, " {} |", c);
  s += "\n|";
  for (size_t i = 0; i < cols.size(); ++i) s += " --- |";
  s += "\n";
  for (const auto& row : rows) {
    s += "|";
    for (const auto& c : cols) append(s, " {} |", cell(row.contains(c) ? row[c] : nullptr));
    s += "\n";
  }
  return s;
}

// The chapter's claims at a glance: each with its verdict and threshold.
void append_summary(std::string& s, const RulesResult& r, const char* prefix,
                    const std::string& lang) {
  append(s, "\n| {} | {} | {} |\n| --- | --- | --- |\n", kClaim.in(lang), kVerdictWord.in(lang),
         kThreshold.in(lang));
  for (const RuleCheck& k : r.checks) {
    if (k.id.rfind(prefix, 0) != 0) continue;
    const bool t = k.data.is_object() && k.data.contains("threshold");
    append(s, "| `{}` | {} | {} |\n", k.id, verdict_name(k.verdict),
           t ? fmt::format("{} ({})", cell(k.data["threshold"]),
                           cell(k.data.value("threshold_what", nlohmann::json("-"))))
             : std::string("-"));
  }
}

// The claim without its "Rule 4: " head (the chapter says it).
std::string claim_text(const RuleCheck& k) {
  for (const char* sep : {": ", "\uff1a"}) {
    const auto at = k.claim.find(sep);
    if (at != std::string::npos) return k.claim.substr(at + std::strlen(sep));
  }
  return k.claim;
}

}  // namespace

std::string rule_chapters(const RulesResult& r, const std::string& lang) {
  check_rules_lang(lang);
  const auto tr = [&lang](const Text& t) { return t.in(lang); };
  std::string s;
  append(s, "# {}\n\n", tr(kTitle));
  append(s, fmt::runtime(tr(kIntro)), r.hardware);
  append(s,
         "\n\n```sh\nbuild/tools/tilesim rules --only rule4 --only rule5{} --chapters "
         "docs/rules_4_5{}.md\n```\n\n{}\n",
         lang == "en" ? "" : " --lang " + lang, lang == "en" ? "" : "." + lang, tr(kMeasure));
  bool any = false;
  for (const Chapter& ch : kChapters) {
    int n = 0;
    for (const RuleCheck& k : r.checks) {
      if (k.id.rfind(ch.prefix, 0) != 0) continue;
      if (n++ == 0) {
        append(s, "\n## {}\n\n{}\n", tr(ch.title), tr(ch.applies));
        append_summary(s, r, ch.prefix, lang);
      }
      std::string rule = claim_text(k);
      if (!rule.empty() && rule[0] >= 'a' && rule[0] <= 'z')
        rule[0] = static_cast<char>(rule[0] - 32);
      append(s, "\n### {}\n\n`{}`\n\n", rule, k.id);
      append(s, "- {} {}: **{}**", tr(kVerdict), r.hardware, verdict_name(k.verdict));
      if (!std::isnan(k.margin_pct))
        append(s, " ({} {:.1f}%{})", tr(kClosest), k.margin_pct,
               k.tie() ? fmt::format(", {}", tr(kTie)) : std::string());
      append(s, ".\n");
      if (k.data.is_object() && k.data.contains("threshold"))
        append(s, "- {}: **{}** ({}).\n", tr(kThreshold), cell(k.data["threshold"]),
               cell(k.data.value("threshold_what", nlohmann::json("-"))));
      append(s, "- {}: {}\n", tr(kWhy), k.why);
      append(s, "- {}: {}\n", tr(kMeasured), k.numbers);
      if (k.data.is_object() && k.data.contains("rows"))
        append(s, "\n{}:\n\n{}", tr(kEvidence), evidence_table(k.data["rows"]));
    }
    any = any || n > 0;
  }
  if (!any)
    throw Error(
        "rules --chapters: no rule 4 or rule 5 claim was checked (add --only rule4 --only rule5, "
        "or leave --only out)");
  return s;
}

}  // namespace tilesim

// tilesim merge SHARD... [-o f] [--csv [f]] [--json [f]] [--svg f] [--top N] [--wide] [--quiet]
// Merges the shard files of one sweep (tilesim sweep --shard K/N) into its ranked result: the
// same table, CSV, JSON and SVG as the unsharded sweep, byte for byte. -o writes the merged
// result as one shard file (1/1), which merge renders again without the shards. Exit codes as
// sweep: 0 when some candidate was evaluated, 1 when every candidate was rejected, 2 on bad input
// (a shard missing, given twice or from another sweep).
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "model/error.hpp"
#include "tools/analyses/sweep_shard.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/options.hpp"
#include "tools/cli/sweep_outputs.hpp"
#include "tools/formats/output_file.hpp"

namespace tilesim {

namespace {

struct MergeArgs {
  std::vector<std::string> shards;
  std::string output;
  SweepOutputArgs out;
};

int merge(const MergeArgs& a) {
  check_outputs_not_inputs({{"-o", a.output},
                            {"--csv", a.out.csv},
                            {"--json", a.out.json},
                            {"--svg", a.out.svg},
                            {"--svg-map", a.out.svg_map}},
                           std::vector<std::filesystem::path>(a.shards.begin(), a.shards.end()));
  for (const auto& s : a.shards) {
    check_sweep_outputs(a.out, s);
    if (!a.output.empty()) check_not_an_input(a.output, "-o", s);
  }
  std::vector<SweepShard> shards =
      read_shards(a.shards.size(), [&](size_t i) { return load_shard(a.shards[i]); });
  const int64_t n = shards.front().shard.n;
  const MergedSweep m = merge_shards(std::move(shards));
  check_sweep_outputs_fit(a.out, m.job.candidates);
  if (!a.output.empty()) {
    SweepShard all;
    all.job = m.job.doc;
    all.hash = m.job.hash;
    all.total = m.result.candidates.size();
    all.results.assign(m.result.candidates.begin(), m.result.candidates.end());
    write_output(a.output, shard_to_json(all).dump() + "\n", "the merged shard file");
  }
  std::string note = fmt::format("{} candidates merged from {} shard{}", m.result.candidates.size(),
                                 n, n > 1 ? "s" : "");
  if (!a.output.empty()) note += "; merged result written to " + a.output;
  write_sweep_outputs(a.out, m.job.cfg, m.job.hw, m.result, note);
  return sweep_exit_code(m.result, a.shards.front());
}

}  // namespace

CommandAction add_merge_command(CLI::App& app) {
  auto args = std::make_shared<MergeArgs>();
  auto* cmd = app.add_subcommand(
      "merge",
      "merge the shard files of one sweep (tilesim sweep --shard K/N) into its ranked result");
  cmd->add_option("shards", args->shards, "shard files (JSON), every K of one N once")->required();
  cmd->add_option("-o,--output", args->output,
                  "write the merged result as one shard file (1/1), for tilesim merge (merging or "
                  "rendering again)")
      ->check(not_empty("file name"));
  add_sweep_output_options(cmd, args->out);
  return [cmd, args]() { return *cmd ? merge(*args) : -1; };
}

}  // namespace tilesim

// Sharded sweeps (tilesim sweep --shard K/N) and their merge (tilesim merge): shards partition the
// candidates, shard files round-trip every figure, merged shards equal the unsharded sweep byte
// for byte in every format, and shards that do not belong together are refused in one line.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <functional>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <span>
#include <sstream>

#include "model/error.hpp"
#include "test_support.hpp"
#include "tools/analyses/candidate_json.hpp"
#include "tools/analyses/sweep_shard.hpp"

namespace tilesim {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A scratch folder per test.
fs::path scratch(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("tilesim_shard_test_" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// The table without its closing note (timing for sweep, the shard count for merge) and the
// lines naming the files written.
std::string table_of(const std::string& out) {
  return out.substr(0, out.rfind("\n\n  "));
}

TEST(Shard, IndicesPartitionTheCandidates) {
  for (size_t total : {0u, 1u, 3u, 10u, 11u})
    for (int64_t n : {1, 2, 3, 5, 12}) {
      std::vector<int> seen(total, 0);
      size_t smallest = total, largest = 0;
      for (int64_t k = 1; k <= n; ++k) {
        const auto idx = shard_indices(total, {k, n});
        smallest = std::min(smallest, idx.size());
        largest = std::max(largest, idx.size());
        for (size_t i : idx) {
          EXPECT_EQ(static_cast<int64_t>(i % static_cast<size_t>(n)), k - 1);
          ++seen.at(i);
        }
      }
      for (int s : seen) EXPECT_EQ(s, 1);
      EXPECT_LE(largest - smallest, 1u);  // balanced: ceil vs floor of total / n
    }
}

TEST(Shard, ParseAcceptsKOverNOnly) {
  EXPECT_EQ(parse_shard("2/8", "--shard").k, 2);
  EXPECT_EQ(parse_shard("2/8", "--shard").n, 8);
  for (const char* bad : {"0/3", "4/3", "3", "/3", "1/", "a/3", "1/3x", "-1/3", "1/0"}) {
    try {
      parse_shard(bad, "--shard");
      ADD_FAILURE() << bad;
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), std::string("--shard ") + bad +
                                           ": expected K/N, integers with 1 <= K <= N (e.g. 2/8)");
    }
  }
}

TEST(Shard, FilesRoundTripEveryFigure) {
  const SweepJob job =
      sweep_job_from_file(test::source_path("configs/sweeps/spmd_add_grid_910b4.json"));
  const SweepShard s = run_shard(job, {2, 3}, {});
  ASSERT_FALSE(s.results.empty());
  const nlohmann::json j = shard_to_json(s);
  const SweepShard back = shard_from_json(nlohmann::json::parse(j.dump()), "s.json");
  EXPECT_EQ(shard_to_json(back), j);
  EXPECT_EQ(back.hash, job.hash);
  for (size_t i = 0; i < s.results.size(); ++i) {
    EXPECT_EQ(back.results[i].gen_time_us, s.results[i].gen_time_us);  // exact, not near
    EXPECT_EQ(back.results[i].per_core.size(), s.results[i].per_core.size());
    EXPECT_EQ(back.results[i].spmd.utilisation, s.results[i].spmd.utilisation);
  }
}

// The binary form (Dask chunks) holds what the shard file holds: read back, every candidate's JSON
// record is the original's, for a pypto, a program and an spmd sweep (refused candidates, named
// tiles and params among them).
TEST(Shard, BytesRoundTripEveryFigure) {
  for (const char* config : {"configs/sweeps/spmd_add_grid_910b4.json",
                             "configs/sweeps/softmax_16x16384_exhaustive.json",
                             "configs/sweeps/rule2_groupnorm_16x64x256x256_loops.json"}) {
    SCOPED_TRACE(config);
    const SweepJob job = sweep_job_from_file(test::source_path(config));
    const auto n = std::min<int64_t>(97, static_cast<int64_t>(job.candidates.size()));
    const SweepShard s = run_shard(job, {1, n}, {});
    ASSERT_FALSE(s.results.empty());
    const std::string bytes = shard_to_bytes(s);
    EXPECT_TRUE(is_shard_bytes(bytes));
    EXPECT_FALSE(is_shard_bytes(shard_to_json(s).dump()));
    const SweepShard back = shard_from_bytes(bytes, "<chunk>");
    EXPECT_EQ(shard_to_json(back), shard_to_json(s));
    EXPECT_EQ(back.hash, s.hash);
    EXPECT_EQ(back.origin, "<chunk>");
    EXPECT_EQ(shard_to_bytes(back), bytes);
  }
}

// Binary shards, JSON shards or a mix merge into the unsharded sweep's result.
TEST(Shard, BytesMergeAsShardFilesDo) {
  const SweepJob job = sweep_job_from_file(
      test::source_path("configs/sweeps/rule2_groupnorm_16x64x256x256_loops.json"));
  const SweepResult whole = run_sweep(job.cfg, job.hw, {}, job.candidates);
  std::vector<SweepShard> shards;
  for (int64_t k : {2, 3, 1}) {
    const SweepShard s = run_shard(job, {k, 3}, {});
    shards.push_back(k == 2 ? shard_from_json(shard_to_json(s), "s.json")
                            : shard_from_bytes(shard_to_bytes(s), "<chunk>"));
  }
  const MergedSweep m = merge_shards(std::move(shards));
  EXPECT_EQ(m.result.ranking, whole.ranking);
  EXPECT_EQ(m.result.why, whole.why);
  ASSERT_EQ(m.result.candidates.size(), whole.candidates.size());
  for (size_t i = 0; i < whole.candidates.size(); ++i)
    EXPECT_EQ(candidate_to_json(m.result.candidates[i]), candidate_to_json(whole.candidates[i]));
}

// Numbers as varints and tagged floating-point values: every value of every width comes back bit
// for bit, with the byte counts the encoding promises; a value too wide for its field is refused.
TEST(ByteRecord, NumbersRoundTripBitForBitInFewBytes) {
  enum class Small : uint8_t { kA = 0, kB = 200 };
  struct Record {
    bool b;
    int32_t i32;
    int64_t i64;
    uint64_t u64;
    Small e;
    double d;
    float f;
  };
  const auto fields_of = [](auto& io, auto& r) {
    io(r.b), io(r.i32), io(r.i64), io(r.u64), io(r.e), io(r.d), io(r.f);
  };
  const std::vector<Record> records = {
      {false, 0, 0, 0, Small::kA, 0.0, 0.0F},
      {true, -1, 63, 127, Small::kB, -0.0, -0.0F},
      {true, -64, -65, 128, Small::kA, std::numeric_limits<double>::denorm_min(), 1.5F},
      {false, std::numeric_limits<int32_t>::min(), std::numeric_limits<int64_t>::min(),
       std::numeric_limits<uint64_t>::max(), Small::kB, std::numeric_limits<double>::quiet_NaN(),
       std::numeric_limits<float>::infinity()},
      {true, std::numeric_limits<int32_t>::max(), std::numeric_limits<int64_t>::max(), 300,
       Small::kA, -1e300, -3.0F}};
  for (const Record& r : records) {
    ByteWriter counter;
    fields_of(counter, r);
    std::string bytes(counter.size(), '\0');
    ByteWriter w{std::span<char>(bytes)};
    fields_of(w, r);
    ASSERT_EQ(w.size(), bytes.size());
    Record back{};
    ByteReader in(bytes, "<test>", "the record");
    fields_of(in, back);
    EXPECT_TRUE(in.at_end());
    EXPECT_EQ(back.b, r.b);
    EXPECT_EQ(back.i32, r.i32);
    EXPECT_EQ(back.i64, r.i64);
    EXPECT_EQ(back.u64, r.u64);
    EXPECT_EQ(back.e, r.e);
    EXPECT_EQ(std::memcmp(&back.d, &r.d, sizeof r.d), 0) << r.d;
    EXPECT_EQ(std::memcmp(&back.f, &r.f, sizeof r.f), 0) << r.f;
  }
  // All zeros: one byte each. The extremes: a 64-bit varint takes 10 bytes, 32 bits 5.
  ByteWriter zeros;
  fields_of(zeros, records[0]);
  EXPECT_EQ(zeros.size(), 7U);
  ByteWriter wide;
  fields_of(wide, records[3]);
  EXPECT_EQ(wide.size(), 1U + 5 + 10 + 10 + 2 + 9 + 5);
  // An int64 where an int32 is read: refused, not truncated.
  ByteWriter c;
  c(int64_t{1} << 40);
  std::string bytes(c.size(), '\0');
  ByteWriter w{std::span<char>(bytes)};
  w(int64_t{1} << 40);
  int32_t narrow = 0;
  ByteReader in(bytes, "<test>", "the record");
  try {
    in(narrow);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("an integer out of range"), std::string::npos);
  }
}

// Shards read side by side: each in its slot, and of several errors the first by position.
TEST(Shard, ReadSideBySideTheFirstErrorByPositionIsRaised) {
  const auto shards = read_shards(5, [](size_t i) {
    SweepShard s;
    s.origin = "s" + std::to_string(i);
    return s;
  });
  ASSERT_EQ(shards.size(), 5U);
  for (size_t i = 0; i < shards.size(); ++i) EXPECT_EQ(shards[i].origin, "s" + std::to_string(i));
  for (int trial = 0; trial < 20; ++trial) {
    try {
      read_shards(64, [](size_t i) -> SweepShard {
        if (i % 7 == 3) throw Error("shard " + std::to_string(i));
        return {};
      });
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_STREQ(e.what(), "shard 3");
    }
  }
}

// Cut short, extended, or edited: refused in one line naming the origin, never read past its end.
TEST(Shard, MalformedBytesAreRefused) {
  const SweepJob job =
      sweep_job_from_file(test::source_path("configs/sweeps/spmd_add_grid_910b4.json"));
  const std::string good = shard_to_bytes(run_shard(job, {1, 3}, {}));
  auto error_of = [](const std::string& bytes) {
    try {
      shard_from_bytes(bytes, "<chunk 1/3>");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  for (const size_t cut : {size_t{0}, size_t{5}, size_t{40}, good.size() / 2, good.size() - 1})
    EXPECT_TRUE(error_of(good.substr(0, cut)).starts_with("<chunk 1/3>: ")) << cut;
  EXPECT_NE(error_of(good.substr(0, good.size() - 1)).find("its compressed part: zstd:"),
            std::string::npos);
  EXPECT_NE(error_of(good + "x").find("1 bytes after its compressed part"), std::string::npos);
  EXPECT_EQ(error_of("{}"), "<chunk 1/3>: not a tilesim binary shard");
  // A version that is not this one (the version string follows the magic and byte-order mark).
  std::string other = good;
  const size_t version_at = 21 + sizeof(uint32_t) + 1;  // its length is one varint byte
  other[version_at] = other[version_at] == '9' ? '8' : '9';
  EXPECT_NE(error_of(other).find("another machine's byte order or version"), std::string::npos);
  // A figure edited into a time no run has is refused as in a shard file.
  SweepShard edited = run_shard(job, {1, 3}, {});
  edited.results.front().gen_time_us = -1;
  EXPECT_NE(error_of(shard_to_bytes(edited)).find("metrics.gen_time_us is -1"), std::string::npos);
}

// ../shared/hostile-t3 merge_negative_time: a shard's times are finite and >= 0 (a negative one
// ranked first and was recommended).
TEST(Shard, ATimeThatNoRunCanHaveIsRefused) {
  const SweepJob job =
      sweep_job_from_file(test::source_path("configs/sweeps/spmd_add_grid_910b4.json"));
  nlohmann::json j = shard_to_json(run_shard(job, {1, 3}, {}));
  j["results"][0]["metrics"]["gen_time_us"] = -5.0;
  const auto index = j["results"][0]["index"].get<size_t>();
  try {
    shard_from_json(j, "s1.json");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              fmt::format("s1.json: results: candidate {}: metrics.gen_time_us is -5 (a time is "
                          "finite, >= 0 and at most 1e+12 us) (write shard files with tilesim "
                          "sweep --shard; an edited shard is refused)",
                          index));
  }
}

// ../shared/hostile-t4 merge_refused_candidate_ranked_first: a refused candidate flipped to ok
// with another's figures at half the time was ranked first (the hash covered the job only). Each
// result is checked as a fresh run's figures are, and the results against their own hash.
TEST(Shard, EditedResultsAreRefused) {
  const SweepJob job =
      sweep_job_from_file(test::source_path("configs/sweeps/spmd_add_grid_910b4.json"));
  const nlohmann::json good = shard_to_json(run_shard(job, {1, 3}, {}));
  const auto error_of = [](const nlohmann::json& j) {
    return test::error_of([&] { shard_from_json(j, "s1.json"); });
  };
  EXPECT_EQ(error_of(good), "(no error)");
  const auto edited = [&](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json j = good;
    edit(j["results"][0]);
    return error_of(j);
  };
  const auto has = [](const std::string& msg, const std::string& needle) {
    return msg.find(needle) != std::string::npos;
  };
  EXPECT_PRED2(has, edited([](nlohmann::json& r) { r["reason"] = "UB overflow"; }),
               "ok, yet it carries a refusal");
  EXPECT_PRED2(has, edited([](nlohmann::json& r) { r["ok"] = false; }),
               "refused (ok false) without");
  EXPECT_PRED2(has, edited([](nlohmann::json& r) { r["metrics"]["gen_time_us"] = 1e300; }),
               "metrics.gen_time_us is 1e+300");
  EXPECT_PRED2(has, edited([](nlohmann::json& r) {
                 r["metrics"]["gen_time_us"] = r["metrics"]["gen_time_us"].get<double>() / 2;
                 r["metrics"]["kernel_time_us"] = r["metrics"]["kernel_time_us"].get<double>() / 2;
               }),
               "is not the sum of its parts");
  EXPECT_PRED2(has, edited([](nlohmann::json& r) { r["metrics"]["pipes"][0]["max_us"] = 1e6; }),
               "more than gen_time_us");
  EXPECT_PRED2(has, edited([](nlohmann::json& r) {
                 r["metrics"]["tasks"] = r["metrics"]["tasks"].get<int64_t>() + 1;
               }),
               "does not match the results the file carries");
}

// ../shared/hostile-t3 merge_candidates_huge, merge_shard_n_huge, merge_of_cli_shard_huge_n and
// merge_job_differs_same_hash: a shard's counts are bounded before they size anything (2^62
// candidates, N = 2^62 took 1-2 GB and ended in bad_alloc), N is at most the candidate count (in
// sweep --shard too), and every shard's job is checked against its hash (only the first was).
TEST(Shard, CountsAndJobsAreCheckedBeforeTheyAreUsed) {
  const SweepJob job =
      sweep_job_from_file(test::source_path("configs/sweeps/spmd_add_grid_910b4.json"));
  const size_t total = job.candidates.size();
  const nlohmann::json good = shard_to_json(run_shard(job, {1, 3}, {}));
  auto error_of = [](const nlohmann::json& j) {
    try {
      shard_from_json(j, "s1.json");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  nlohmann::json j = good;
  j["candidates"] = 4611686018427387904ll;
  EXPECT_EQ(error_of(j),
            "s1.json: candidates: out of range: 4611686018427387904 (allowed 1..100000)");
  j = good;
  j["shard"] = {1, 4611686018427387904ll};
  EXPECT_EQ(error_of(j), fmt::format("s1.json: shard: 1/4611686018427387904: the sweep has {} "
                                     "candidates, so N is at most {} (a shard beyond them would "
                                     "hold none)",
                                     total, total));
  j = good;
  j["job"]["config_doc"]["description"] = "another sweep";
  EXPECT_EQ(error_of(j).substr(0, 53),
            "s1.json: config_hash: " + good["config_hash"].get<std::string>() + " does not match");
  EXPECT_NE(error_of(j).find("the file was edited"), std::string::npos);
  try {
    run_shard(job, {1, static_cast<int64_t>(total) + 1}, {});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              fmt::format("shard 1/{}: the sweep has {} candidates, so N is at most {} (a shard "
                          "beyond them would hold none)",
                          total + 1, total, total));
  }
  // Missing shards print as runs, not one name per shard.
  std::vector<SweepShard> one;
  one.push_back(run_shard(job, {2, static_cast<int64_t>(total)}, {}));
  try {
    merge_shards(std::move(one));
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), fmt::format("merge: shards 1/{0}, 3/{0}..{0}/{0} missing "
                                                 "(given: 2/{0})",
                                                 total));
  }
}

TEST(Shard, MergeRebuildsTheUnshardedResult) {
  const SweepJob job = sweep_job_from_file(
      test::source_path("configs/sweeps/rule2_groupnorm_16x64x256x256_loops.json"));
  const SweepResult whole = run_sweep(job.cfg, job.hw, {}, job.candidates);
  std::vector<SweepShard> shards;
  for (int64_t k : {3, 1, 2}) shards.push_back(run_shard(job, {k, 3}, {}));
  const MergedSweep m = merge_shards(std::move(shards));
  EXPECT_EQ(m.result.ranking, whole.ranking);
  EXPECT_EQ(m.result.recommended, whole.recommended);
  EXPECT_EQ(m.result.why, whole.why);
  ASSERT_EQ(m.result.candidates.size(), whole.candidates.size());
  for (size_t i = 0; i < whole.candidates.size(); ++i) {
    EXPECT_EQ(m.result.candidates[i].zone, whole.candidates[i].zone);
    EXPECT_EQ(m.result.candidates[i].gen_time_us, whole.candidates[i].gen_time_us);
  }
}

// Every output format, through the CLI, for a pypto sweep, an spmd sweep and one shard per
// candidate.
TEST(ShardCli, MergedShardsEqualTheSweepByteForByte) {
  const fs::path d = scratch("equal");
  for (const auto& [config, n] : {std::pair{"configs/sweeps/rule2_matmul_16384_loops.json", 3},
                                  {"configs/sweeps/spmd_softmax_grid_subtile_4096x4096.json", 4},
                                  {"configs/sweeps/rule1_a_softmax_16x16384.json", 3}}) {
    const std::string cfg = test::source_path(config);
    const std::string full = (d / "full").string(), merged = (d / "merged").string();
    const auto sweep = test::run_cli("sweep " + cfg + " -j 2 --top 0 --json " + full +
                                         ".json --csv " + full + ".csv --svg " + full + ".svg",
                                     false);
    ASSERT_EQ(sweep.code, 0) << sweep.out;
    std::string shard_files;
    for (int k = 1; k <= n; ++k) {
      const std::string f = (d / fmt::format("s{}.json", k)).string();
      const auto r = test::run_cli(fmt::format("sweep {} -q --shard {}/{} -o {}", cfg, k, n, f));
      ASSERT_EQ(r.code, 0) << r.out;
      shard_files = f + " " + shard_files;  // any order
    }
    const auto merge = test::run_cli("merge " + shard_files + " --top 0 --json " + merged +
                                         ".json --csv " + merged + ".csv --svg " + merged + ".svg",
                                     false);
    ASSERT_EQ(merge.code, 0) << merge.out;
    EXPECT_EQ(table_of(merge.out), table_of(sweep.out)) << config;
    EXPECT_NE(merge.out.find(" candidates merged from " + std::to_string(n) + " shards"),
              std::string::npos);
    for (const char* ext : {".json", ".csv", ".svg"})
      EXPECT_EQ(slurp(merged + ext), slurp(full + ext)) << config << ext;
  }
  fs::remove_all(d);
}

TEST(ShardCli, ShardsThatDoNotBelongTogetherAreRefusedInOneLine) {
  const fs::path d = scratch("errors");
  const std::string cfg = test::source_path("configs/sweeps/rule2_matmul_16384_loops.json");
  const std::string other = test::source_path("configs/sweeps/rule1_a_softmax_16x16384.json");
  auto shard = [&](const std::string& config, const std::string& spec, const std::string& name) {
    const std::string f = (d / name).string();
    EXPECT_EQ(test::run_cli("sweep " + config + " -q --shard " + spec + " -o " + f).code, 0);
    return f;
  };
  const std::string a1 = shard(cfg, "1/2", "a1.json"), a2 = shard(cfg, "2/2", "a2.json");
  const std::string b2 = shard(other, "2/2", "b2.json"), c1 = shard(cfg, "1/3", "c1.json");
  auto error_of = [](const std::string& args) {
    const auto r = test::run_cli(args);
    EXPECT_EQ(r.code, 2) << args;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
    return r.out;
  };
  EXPECT_EQ(error_of("merge " + a1), "tilesim: error: merge: shard 2/2 missing (given: 1/2)\n");
  EXPECT_EQ(error_of("merge " + a1 + " " + a2 + " " + a1),
            "tilesim: error: " + a1 + ": shard 1/2 given twice (also " + a1 + ")\n");
  EXPECT_NE(
      error_of("merge " + a1 + " " + b2).find(b2 + ": another sweep than " + a1 + " (config hash "),
      std::string::npos);
  EXPECT_EQ(error_of("merge " + a1 + " " + c1), "tilesim: error: " + c1 + ": shard 1/3, but " + a1 +
                                                    " is shard 1/2 (one sweep's shards share N)\n");
  EXPECT_NE(
      error_of("sweep " + cfg + " -q --shard 1/9223372036854775807 -o " + (d / "x.json").string())
          .find("tilesim: error: --shard 1/9223372036854775807: the sweep has "),
      std::string::npos);
  EXPECT_FALSE(fs::exists(d / "x.json"));
  EXPECT_EQ(error_of("sweep " + cfg + " --shard 1/2"),
            "tilesim: error: --shard 1/2: give the shard file with -o FILE\n");
  EXPECT_EQ(error_of("sweep " + cfg + " --shard 1/2 -o x.json --json"),
            "tilesim: error: --json: a shard has no ranking; tilesim merge writes --json from all "
            "the shards\n");
  fs::remove_all(d);
}

}  // namespace
}  // namespace tilesim

// model/hardware: the parameter table, the loader (bases, exact rejections), the shipped files and
// the generated docs/hardware.md.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "model/error.hpp"
#include "model/hardware.hpp"
#include "model/hardware_doc.hpp"
#include "model/json_reader.hpp"
#include "model/ub_budget.hpp"
#include "test_support.hpp"

namespace tilesim {
namespace {

using test::default_hw;

nlohmann::json default_doc() {
  return JsonReader::parse_file(default_hardware_path(), "hardware file");
}

std::string load_error(const nlohmann::json& doc, const std::string& origin = "hw.json") {
  try {
    hardware_from_json(doc, origin);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInput);
    return e.what();
  }
  return "(no error)";
}

std::string file_error(const std::filesystem::path& file) {
  try {
    load_hardware(file);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// A scratch directory of hardware files, removed at the end of the test.
class Dir {
 public:
  Dir()
      : path_(std::filesystem::temp_directory_path() /
              ("tilesim_hw_" + std::to_string(getpid()) + "_" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name())) {
    std::filesystem::create_directories(path_);
  }
  ~Dir() { std::filesystem::remove_all(path_); }
  std::filesystem::path write(const std::string& name, const nlohmann::json& doc) const {
    const auto f = path_ / name;
    std::ofstream(f) << doc.dump(1);
    return f;
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

nlohmann::json entry(const nlohmann::json& value, const std::string& source = "test") {
  return {{"value", value}, {"source", source}};
}

void expect_same_machine(const Hardware& a, const Hardware& b) {
  for (const auto& p : hardware_params()) EXPECT_EQ(get_param(a, p), get_param(b, p)) << p.key;
}

// ---- the table ----

TEST(HardwareTable, EachKeyIsItsMemberPathDeclaredOnceWithBoundsUnitDocAndPart) {
  std::set<std::string> keys;
  for (const auto& p : hardware_params()) {
    EXPECT_TRUE(keys.insert(p.key).second) << p.key << " declared twice";
    EXPECT_LT(p.min, p.max) << p.key;
    EXPECT_STRNE(p.unit, "") << p.key;
    EXPECT_STRNE(p.doc, "") << p.key;
    EXPECT_EQ(std::string(p.doc).find('\n'), std::string::npos) << p.key;
    EXPECT_TRUE(std::set<std::string>({"The chip", "The AICPU runtime", "The rulebook's limits"})
                    .count(p.part))
        << p.key;
  }
  // The key reaches the member it names, and the type is the member's.
  Hardware hw;
  set_param(hw, *find_hardware_param("dma.read.issue_cycles"), 7.5);
  EXPECT_EQ(hw.dma.read.issue_cycles, 7.5);
  set_param(hw, *find_hardware_param("l0a.align_bytes"), 512);
  EXPECT_EQ(hw.l0a.align_bytes, 512);
  EXPECT_TRUE(find_hardware_param("cores.aiv")->is_integer());
  EXPECT_FALSE(find_hardware_param("clock_mhz")->is_integer());
  EXPECT_EQ(find_hardware_param("gm.l2_bandwidth_gbps"), nullptr);
}

// ---- the shipped files ----

TEST(Hardware, ShippedFilesLoadWithSources) {
  const Hardware b1 = default_hw();
  EXPECT_EQ(b1.name, "ascend910b1");
  EXPECT_EQ(b1.cores.aiv, 48);
  EXPECT_EQ(b1.ub.bytes, 196608);
  const Hardware b4 = load_hardware(shipped_hardware_path("ascend910b4"));
  EXPECT_EQ(b4.name, "ascend910b4");
  EXPECT_EQ(b4.cores.aiv, 40);
  EXPECT_LT(b4.clock_mhz, b1.clock_mhz);
  EXPECT_EQ(shipped_hardware_names(),
            (std::vector<std::string>{"ascend910_93", "ascend910b1", "ascend910b2", "ascend910b3",
                                      "ascend910b4"}));
}

// The 910B variants and the A3 die differ from the 910B1 in what their sources say: core counts
// (catlass arch.hpp AscendC910B3: 20 AIC / 40 AIV), clocks (1.8 GHz from the rated fp16
// TFLOPS), and nothing else: their buffers and costs are the 910B1's.
TEST(Hardware, TheVariantsDifferInCoresAndClock) {
  const Hardware b1 = default_hw();
  const Hardware b2 = load_hardware(shipped_hardware_path("ascend910b2"));
  const Hardware b3 = load_hardware(shipped_hardware_path("ascend910b3"));
  const Hardware a3 = load_hardware(shipped_hardware_path("ascend910_93"));
  EXPECT_EQ(b2.cores.aic, 24);
  EXPECT_EQ(b3.cores.aic, 20);
  EXPECT_EQ(b3.cores.aiv, 40);
  EXPECT_EQ(a3.cores.aic, 24);
  for (const Hardware* h : {&b2, &b3, &a3}) {
    EXPECT_DOUBLE_EQ(h->clock_mhz, 1800) << h->name;
    EXPECT_EQ(h->l2.bytes, b1.l2.bytes) << h->name;
    EXPECT_EQ(h->gm.hbm_bandwidth_gbps, b1.gm.hbm_bandwidth_gbps) << h->name;
  }
  // 20 AIC x 16^3 MAC x 2 flop x 1.8 GHz: the 910B3's rated 294.9 TFLOPS fp16, within 0.1%.
  const double tflops = b3.cores.aic * 4096.0 * 2 * b3.clock_mhz * 1e6 / 1e12;
  EXPECT_NEAR(tflops, 294.9, 0.3);
}

TEST(Hardware, MemoryAlignmentsComeFromTheFile) {
  // shared/HARDWARE.md On-chip buffers: UB/L1 32 B; L0A/L0B 512 B; L0C 64 B.
  const Hardware hw = default_hw();
  EXPECT_EQ(mem_align(MemSpace::kUb, hw), 32);
  EXPECT_EQ(mem_align(MemSpace::kL1, hw), 32);
  EXPECT_EQ(mem_align(MemSpace::kL0a, hw), 512);
  EXPECT_EQ(mem_align(MemSpace::kL0b, hw), 512);
  EXPECT_EQ(mem_align(MemSpace::kL0c, hw), 64);
  Hardware moved = hw;
  moved.l0a.align_bytes = 1024;
  EXPECT_EQ(mem_align(MemSpace::kL0a, moved), 1024);
  EXPECT_EQ(mem_capacity(MemSpace::kL0c, hw), 131072);
}

TEST(Hardware, Ascend910b4ListsOnlyWhatDiffersFromItsBase) {
  const auto b4 = JsonReader::parse_file(shipped_hardware_path("ascend910b4"), "hardware file");
  ASSERT_EQ(b4["base"], "ascend910b1");
  const auto b1 = default_doc();
  for (auto it = b4["parameters"].begin(); it != b4["parameters"].end(); ++it)
    EXPECT_NE(it.value()["value"], b1["parameters"][it.key()]["value"])
        << it.key() << " repeats its base's value";
  EXPECT_LT(b4["parameters"].size(), hardware_params().size() / 2);
}

// ---- bases ----

TEST(HardwareBase, ADiffFileEqualsTheFullFile) {
  Dir dir;
  // The full file with three values changed, and the same as a diff over the shipped name.
  auto full = default_doc();
  full["name"] = "variant";
  full["parameters"]["clock_mhz"] = entry(1500);
  full["parameters"]["cores.aiv"] = entry(40);
  full["parameters"]["l0c.align_bytes"] = entry(128);
  const nlohmann::json diff = {
      {"name", "variant"},
      {"base", "ascend910b1"},
      {"parameters",
       {{"clock_mhz", entry(1500)}, {"cores.aiv", entry(40)}, {"l0c.align_bytes", entry(128)}}}};
  const Hardware a = load_hardware(dir.write("full.json", full));
  const Hardware b = load_hardware(dir.write("diff.json", diff));
  expect_same_machine(a, b);
  EXPECT_EQ(b.name, "variant");
  EXPECT_EQ(b.cores.aiv, 40);
  EXPECT_EQ(b.l0c.align_bytes, 128);
  EXPECT_EQ(b.l0a.align_bytes, 512);  // inherited
  // Merged, the diff is a self-contained file: every key, in table order, with its source.
  const auto merged = merged_hardware_file(dir.path() / "diff.json");
  EXPECT_FALSE(merged.contains("base"));
  ASSERT_EQ(merged["parameters"].size(), hardware_params().size());
  EXPECT_EQ(merged["parameters"].begin().key(), hardware_params()[0].key);
  EXPECT_EQ(merged["parameters"]["clock_mhz"]["source"], "test");
  EXPECT_EQ(merged["parameters"]["l1.bytes"]["source"],
            default_doc()["parameters"]["l1.bytes"]["source"].get<std::string>());
  expect_same_machine(hardware_from_json(nlohmann::json::parse(merged.dump()), "merged"), b);
}

TEST(HardwareBase, ShippedB4DiffersFromItsBaseInNineValues) {
  // What the 910B4 has of its own (clock, cores, HBM read and write, L2 size, its mixed and read
  // bandwidths, the cores a PyPTO scheduler thread shakes hands with); its per-core DMA and
  // vector figures are its base's.
  const Hardware b4 = load_hardware(shipped_hardware_path("ascend910b4"));
  const Hardware b1 = default_hw();
  int differ = 0;
  for (const auto& p : hardware_params()) differ += get_param(b4, p) != get_param(b1, p);
  EXPECT_EQ(differ, 9);
  EXPECT_EQ(b4.l2.read_bandwidth_gbps, 2600.0);
  EXPECT_EQ(b4.scheduler.handshake_cores, 7 + 14);  // its first thread's AIC + AIV block
  EXPECT_EQ(b4.clock_mhz, 1500);
  EXPECT_EQ(b4.l2.bytes, 100663296);
  EXPECT_EQ(b4.gm.hbm_bandwidth_gbps, 773.0);
  EXPECT_EQ(b4.dma.read.issue_cycles, b1.dma.read.issue_cycles);
  EXPECT_EQ(b4.gm.hbm_write_bandwidth_gbps, 536.0);
  EXPECT_EQ(b4.ub.bytes, b1.ub.bytes);
}

TEST(HardwareBase, BasesChainAndTheNearestFileWins) {
  Dir dir;
  dir.write("mid.json", {{"name", "mid"},
                         {"base", "ascend910b1"},
                         {"parameters", {{"clock_mhz", entry(1500)}, {"cores.aiv", entry(40)}}}});
  const auto top =
      dir.write("top.json", {{"name", "top"},
                             {"base", "mid.json"},
                             {"parameters", {{"cores.aiv", entry(32)}, {"cores.aic", entry(16)}}}});
  const Hardware hw = load_hardware(top);
  EXPECT_EQ(hw.name, "top");
  EXPECT_EQ(hw.clock_mhz, 1500);   // from mid
  EXPECT_EQ(hw.cores.aiv, 32);     // top over mid
  EXPECT_EQ(hw.cores.aic, 16);     // top
  EXPECT_EQ(hw.ub.bytes, 196608);  // from ascend910b1
  // A relative base is found beside the file, wherever the program runs.
  std::filesystem::create_directories(dir.path() / "sub");
  const auto nested = dir.write(
      "sub/leaf.json",
      {{"name", "leaf"}, {"base", "../top.json"}, {"parameters", nlohmann::json::object()}});
  EXPECT_EQ(load_hardware(nested).cores.aiv, 32);
}

TEST(HardwareBase, AFileWithABaseMayLeaveParametersOut) {
  Dir dir;
  const auto alias = dir.write("alias.json", {{"name", "alias"}, {"base", "ascend910b1"}});
  const Hardware hw = load_hardware(alias);
  EXPECT_EQ(hw.name, "alias");
  expect_same_machine(hw, default_hw());
  EXPECT_EQ(load_error({{"name", "alone"}}), "hw.json: parameters: missing");
}

// ../shared/hostile-t3 hw_base_chain_10000: a chain of 10^4 bases overflowed the stack (one call
// per level) and copied the chain per level (3.6 GB, then bad_alloc). The walk is a loop now.
TEST(HardwareBase, AChainOfTenThousandBasesLoads) {
  Dir dir;
  constexpr int kLevels = 10000;
  for (int i = 0; i < kLevels; ++i)
    dir.write(fmt::format("h{}.json", i),
              {{"name", fmt::format("h{}", i)},
               {"base", i + 1 < kLevels ? fmt::format("h{}.json", i + 1) : "ascend910b1"}});
  const Hardware hw = load_hardware(dir.path() / "h0.json");
  EXPECT_EQ(hw.name, "h0");
  expect_same_machine(hw, default_hw());
}

TEST(HardwareBase, CycleIsAnError) {
  Dir dir;
  const auto a = dir.write(
      "a.json", {{"name", "a"}, {"base", "b.json"}, {"parameters", nlohmann::json::object()}});
  const auto b = dir.write(
      "b.json", {{"name", "b"}, {"base", "a.json"}, {"parameters", nlohmann::json::object()}});
  EXPECT_EQ(file_error(a), b.string() + ": base: cycle of bases: " + a.string() + " -> " +
                               b.string() + " -> " + a.string());
  const auto self =
      dir.write("self.json",
                {{"name", "s"}, {"base", "self.json"}, {"parameters", nlohmann::json::object()}});
  EXPECT_EQ(file_error(self),
            self.string() + ": base: cycle of bases: " + self.string() + " -> " + self.string());
}

TEST(HardwareBase, MissingKeyNamesTheFileAndItsBases) {
  Dir dir;
  auto partial = default_doc();
  partial["parameters"].erase("dma.read.burst_cycles");
  dir.write("partial.json", partial);
  const auto top = dir.write(
      "top.json",
      {{"name", "t"}, {"base", "partial.json"}, {"parameters", {{"clock_mhz", entry(1500)}}}});
  EXPECT_EQ(file_error(top), top.string() +
                                 ": parameters.dma.read.burst_cycles: missing (neither here nor "
                                 "in its bases " +
                                 (dir.path() / "partial.json").string() +
                                 "): every parameter needs a value (a number, 0 to 1000000 "
                                 "cycles) and a source");
}

TEST(HardwareBase, BaseNotFound) {
  Dir dir;
  const auto named = dir.write(
      "n.json", {{"name", "n"}, {"base", "ascend999"}, {"parameters", nlohmann::json::object()}});
  EXPECT_EQ(file_error(named), named.string() +
                                   ": base: 'ascend999' is neither a file beside this "
                                   "one (" +
                                   (dir.path() / "ascend999").string() +
                                   ") nor a shipped name (ascend910_93, ascend910b1, "
                                   "ascend910b2, ascend910b3, ascend910b4)");
  const auto wrong =
      dir.write("w.json", {{"name", "w"}, {"base", 3}, {"parameters", nlohmann::json::object()}});
  EXPECT_EQ(file_error(wrong), wrong.string() + ": base: expected a string, got 3");
  // A shipped file may be named with its extension too, as a run config's "hardware" may.
  const auto ext = dir.write("e.json", {{"name", "e"}, {"base", "ascend910b4.json"}});
  EXPECT_EQ(load_hardware(ext).cores.aiv, 40);
}

TEST(HardwareBase, ABaseFilesOwnMistakeNamesTheBase) {
  Dir dir;
  auto bad = default_doc();
  bad["parameters"]["cores.aic"]["value"] = 2.5;
  const auto base = dir.write("bad_base.json", bad);
  const auto top = dir.write(
      "top.json",
      {{"name", "t"}, {"base", "bad_base.json"}, {"parameters", {{"clock_mhz", entry(1500)}}}});
  EXPECT_EQ(file_error(top), base.string() +
                                 ": parameters.cores.aic.value: expected an integer (0 to 1024 "
                                 "cores), got 2.5");
}

TEST(HardwareBase, CalibrateFitsTheInheritedFittedParametersAndWritesAStandaloneFile) {
  Dir dir;
  // A variant of ascend910b4 that sets nothing fitted itself: calibrate's default free
  // parameters are the "fitted" ones of the merged file (11 on ascend910b4), and -o writes
  // every parameter, bases merged in, that loads on its own anywhere.
  dir.write(
      "variant.json",
      {{"name", "variant"}, {"base", "ascend910b4"}, {"parameters", {{"cores.aic", entry(16)}}}});
  const std::string config = test::source_path("configs/examples/add_pypto.json");
  const auto m = dir.write(
      "m.json",
      {{"hardware", "variant.json"},
       {"measurements",
        {{{"id", "t"}, {"config_file", config}, {"metric", "kernel_time_us"}, {"measured", 300}},
         {{"id", "m"}, {"config_file", config}, {"metric", "mte2_time_us"}, {"measured", 150}}}}});
  const auto out = dir.path() / "out.json";
  // Two figures cannot pin 12 parameters: the fit is refused (exit 1, no hardware file) with one
  // line naming what to hold, unless --allow-degenerate keeps it.
  const test::CmdResult refused =
      test::run_cli("calibrate " + m.string() + " -q -o " + out.string());
  EXPECT_EQ(refused.code, 1) << refused.out;
  EXPECT_EQ(refused.out.rfind("tilesim calibrate: " + m.string() +
                                  ": degenerate fit (condition number inf > 10000): the "
                                  "measurements cannot separate dma.read.peak_bytes_per_cycle, ",
                              0),
            0u)
      << refused.out;
  EXPECT_NE(refused.out.find("hold some of them (a --free list without them, or the measurements' "
                             "\"free\" list) or add measurements that move them apart; "
                             "dma.l1.nd2nz_row_cycles, dma.l1.nd2nz_bytes_per_cycle move no "
                             "measurement (hold them); free instead, each alone removing a share "
                             "of the misfit: "),
            std::string::npos)
      << refused.out;
  EXPECT_NE(
      refused.out.find("%); " + out.string() + " not written (--allow-degenerate keeps the fit)\n"),
      std::string::npos)
      << refused.out;
  EXPECT_FALSE(std::filesystem::exists(out));
  const test::CmdResult r = test::run_cli(
      "calibrate " + m.string() + " --json -o " + out.string() + " --allow-degenerate",
      /*with_stderr=*/false);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out)["parameters"].size(), 11u);
  const auto written = JsonReader::parse_file(out, "calibrated hardware file");
  EXPECT_FALSE(written.contains("base"));
  EXPECT_EQ(written["parameters"].size(), hardware_params().size());
  std::filesystem::rename(out, std::filesystem::temp_directory_path() / out.filename());
  const auto moved = std::filesystem::temp_directory_path() / out.filename();
  const Hardware hw = load_hardware(moved);
  std::filesystem::remove(moved);
  EXPECT_EQ(hw.name, "variant");
  EXPECT_EQ(hw.cores.aic, 16);
  EXPECT_EQ(hw.cores.aiv, 40);
}

// ---- exact rejections ----

TEST(Hardware, RejectsMissingKey) {
  auto doc = default_doc();
  doc["parameters"].erase("dma.read.burst_cycles");
  EXPECT_EQ(load_error(doc),
            "hw.json: parameters.dma.read.burst_cycles: missing: every parameter needs a value (a "
            "number, 0 to 1000000 cycles) and a source");
}

TEST(Hardware, RejectsUnknownKeyPointingAtTheExistingDocs) {
  auto doc = default_doc();
  doc["parameters"]["dma.read.brust_cycles"] = entry(1, "typo");
  EXPECT_EQ(load_error(doc),
            "hw.json: parameters.dma.read.brust_cycles: unknown key; did you mean "
            "dma.read.burst_cycles? (every key is listed in docs/hardware.md)");
  doc = default_doc();
  doc["parameters"]["gm.l2_bandwidth_gbps"] = entry(1, "dropped");
  EXPECT_EQ(load_error(doc),
            "hw.json: parameters.gm.l2_bandwidth_gbps: no longer a hardware parameter: nothing "
            "read it; L2 is modelled by l2.bytes (sim/l2_residency)");
  doc = default_doc();
  doc["parameters"]["scheduler.oldest_root_first"] = entry(1, "moved");
  EXPECT_EQ(load_error(doc),
            "hw.json: parameters.scheduler.oldest_root_first: no longer a hardware parameter: the "
            "ready-queue order is a runtime policy of the run or sweep config, \"runtime\": "
            "{\"ready_order\": \"oldest_root_first\" | \"fifo\"}");
  doc = default_doc();
  doc["parameters"]["something_else"] = entry(1);
  EXPECT_EQ(load_error(doc),
            "hw.json: parameters.something_else: unknown key (every key is listed in "
            "docs/hardware.md)");
  EXPECT_TRUE(std::filesystem::exists(test::source_path("docs/hardware.md")));
  doc = default_doc();
  doc["bsae"] = "ascend910b1";
  EXPECT_EQ(load_error(doc),
            "hw.json: bsae: unknown key (allowed: name, description, base, parameters)");
}

TEST(Hardware, RejectsWrongTypeOutOfRangeAndMissingSource) {
  auto doc = default_doc();
  doc["parameters"]["cores.aiv"]["value"] = 47.5;
  EXPECT_EQ(load_error(doc),
            "hw.json: parameters.cores.aiv.value: expected an integer (1 to 1024 cores), got 47.5");
  doc = default_doc();
  doc["parameters"]["clock_mhz"]["value"] = "fast";
  EXPECT_EQ(load_error(doc),
            "hw.json: parameters.clock_mhz.value: expected a number (100 to 10000 MHz), got "
            "\"fast\"");
  doc = default_doc();
  doc["parameters"]["gm.hbm_bandwidth_gbps"]["value"] = -5;
  EXPECT_EQ(load_error(doc),
            "hw.json: parameters.gm.hbm_bandwidth_gbps.value: out of range: -5 (allowed 1 to "
            "1000000 GB/s)");
  doc = default_doc();
  doc["parameters"]["clock_mhz"].erase("source");
  EXPECT_EQ(load_error(doc),
            "hw.json: parameters.clock_mhz: source missing: every value must say where it comes "
            "from (a non-empty string)");
  doc = default_doc();
  doc["parameters"]["clock_mhz"]["fitted"] = "yes";
  EXPECT_EQ(load_error(doc),
            "hw.json: parameters.clock_mhz.fitted: expected true or false, got \"yes\"");
  doc = default_doc();
  doc["parameters"]["clock_mhz"] = 1850;
  EXPECT_EQ(load_error(doc),
            "hw.json: parameters.clock_mhz: expected an object {\"value\": ..., \"source\": "
            "\"...\"}, got 1850");
  doc = default_doc();
  doc["parameters"]["vector.bytes_per_repeat"]["value"] = 250;
  EXPECT_EQ(load_error(doc),
            "hw.json: parameters.vector.bytes_per_repeat: must be a multiple of ub.align_bytes "
            "(32)");
  EXPECT_EQ(file_error("/nonexistent/hw.json"),
            "/nonexistent/hw.json: cannot open hardware file (give a path or a shipped name: "
            "ascend910_93, ascend910b1, ascend910b2, ascend910b3, ascend910b4)");
}

// ---- docs/hardware.md ----

TEST(HardwareDoc, CheckedInFileIsCurrent) {
  std::ifstream in(test::source_path("docs/hardware.md"));
  std::stringstream checked_in;
  checked_in << in.rdbuf();
  EXPECT_TRUE(checked_in.str() == shipped_hardware_doc())
      << "docs/hardware.md is stale: regenerate with " << HARDWARE_DOC_BINARY
      << " > docs/hardware.md";
  // The program prints exactly the renderer's text.
  const auto out = std::filesystem::temp_directory_path() /
                   ("tilesim_hardware_doc_" + std::to_string(getpid()) + ".md");
  ASSERT_EQ(std::system((std::string(HARDWARE_DOC_BINARY) + " > " + out.string()).c_str()), 0);
  std::ifstream printed(out);
  std::stringstream text;
  text << printed.rdbuf();
  std::filesystem::remove(out);
  EXPECT_EQ(text.str(), shipped_hardware_doc());
}

// Every hardware file the doc shows loads as it is written (its example once used a retired key:
// copying it failed).
TEST(HardwareDoc, ItsExamplesLoad) {
  const std::string doc = shipped_hardware_doc();
  int examples = 0;
  for (size_t at = doc.find("```json\n"); at != std::string::npos;
       at = doc.find("```json\n", at + 1)) {
    const size_t begin = at + 8, end = doc.find("```", begin);
    ASSERT_NE(end, std::string::npos);
    Dir dir;
    const auto file =
        dir.write("example.json", nlohmann::json::parse(doc.substr(begin, end - begin)));
    EXPECT_EQ(file_error(file), "(no error)") << doc.substr(begin, end - begin);
    ++examples;
  }
  EXPECT_GE(examples, 1);
}

TEST(HardwareDoc, EveryParameterHasARowWithTheDefaultValueAndSource) {
  const std::string md = shipped_hardware_doc();
  const auto doc = default_doc();
  for (const auto& p : hardware_params()) {
    // The parameter's own row starts a line (a shipped file's row may name it in its list).
    const auto row = md.find("\n| `" + std::string(p.key) + "` |");
    ASSERT_NE(row, std::string::npos) << p.key;
    const std::string line = md.substr(row + 1, md.find('\n', row + 1) - row - 1);
    EXPECT_NE(line.find(p.doc), std::string::npos) << line;
    EXPECT_NE(line.find(p.is_integer() ? "| integer |" : "| number |"), std::string::npos) << line;
    EXPECT_NE(line.find("| " + doc["parameters"][p.key]["value"].dump()), std::string::npos)
        << line;
  }
  EXPECT_NE(md.find("| `l0a.align_bytes` | integer | B | 1 to 65536 |"), std::string::npos);
  EXPECT_NE(md.find("| ascend910b4 | ascend910b1 | `clock_mhz`, `cores.aiv`"), std::string::npos);
}

}  // namespace
}  // namespace tilesim

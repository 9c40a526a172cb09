// The kernel registry is the one house of every op: each op has a shipped example and (see
// functional_test.cpp) an Eigen case, its declared params are well formed, and a config's params
// are checked at load with one error naming the file and the key.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "kernels/lowering.hpp"
#include "kernels/ops/op_doc.hpp"
#include "kernels/spec/registry.hpp"
#include "kernels/spec/registry_doc.hpp"
#include "model/error.hpp"
#include "test_support.hpp"
#include "tools/formats/run_config.hpp"
#include "tools/formats/sweep_config.hpp"

namespace tilesim {
namespace {

namespace fs = std::filesystem;

TEST(Registry, EveryOpHasAShippedExample) {
  std::map<std::string, std::string> example_of;
  for (const auto& e : fs::directory_iterator(test::source_path("configs/examples"))) {
    if (e.path().extension() != ".json") continue;
    const RunConfig rc = load_run_config(e.path());  // every example loads, params included
    example_of.emplace(rc.spec.op, e.path().filename().string());
  }
  for (const auto& op : registered_ops())
    EXPECT_TRUE(example_of.count(op)) << "no example in configs/examples/ has op '" << op << "'";
}

TEST(Registry, OpsAreUniqueAndFoundInTheirFamilies) {
  const std::vector<std::string> ops = registered_ops();
  EXPECT_EQ(std::set<std::string>(ops.begin(), ops.end()).size(), ops.size());
  EXPECT_EQ(find_family("relu")->name, "elementwise");
  EXPECT_EQ(find_family("groupnorm")->name, "norm");
  EXPECT_EQ(find_family("nope"), nullptr);
  EXPECT_EQ(find_op("div")->record, find_op_record("div"));  // one op table
  EXPECT_EQ(find_op("div")->record->instrs, std::vector<VecClass>{VecClass::kDiv});
  EXPECT_EQ(find_op("add")->inputs, 2);
}

// A record's dtypes: the float types unless it says otherwise; the one place programs and built-in
// kernels read them.
TEST(Registry, EachRecordNamesTheDtypesItTakesAndGives) {
  const DTypeSet any = DTypeSet::all();
  const std::map<std::string, DTypeSet> other = {
      {"any", any},
      {"all", any},
      {"cast", any},
      {"transpose", any},
      {"gather", any},
      {"load", any},
      {"round", {DType::kFp32}},  // PyPTO rounds fp16 / bf16 through casts: not this record
      {"add", {DType::kFp32, DType::kFp16, DType::kBf16, DType::kInt32}},
      {"sub", {DType::kFp32, DType::kFp16, DType::kBf16, DType::kInt32}},
      {"mul", {DType::kFp32, DType::kFp16, DType::kBf16, DType::kInt32}},
      {"maximum", {DType::kFp32, DType::kFp16, DType::kBf16, DType::kInt32}},
      {"minimum", {DType::kFp32, DType::kFp16, DType::kBf16, DType::kInt32}},
      {"matmul", {DType::kFp32, DType::kFp16, DType::kBf16, DType::kInt8}}};
  for (const auto& name : op_record_names()) {
    const OpRecord& r = *find_op_record(name);
    const auto it = other.find(name);
    EXPECT_EQ(r.operands, it == other.end() ? DTypeSet::floats() : it->second) << name;
    const OutDType out = name == "argmax" || name == "argmin" ? OutDType::kInt32
                         : name == "cast" || name == "matmul" ? OutDType::kGiven
                                                              : OutDType::kOperand;
    EXPECT_EQ(r.out, out) << name;
  }
  EXPECT_EQ(DTypeSet::floats().text(), "fp32, fp16, bf16");
  EXPECT_EQ(op_dtypes(find_op("softmax")->record), DTypeSet::floats());  // a family's own op
  EXPECT_EQ(op_dtypes(find_op("matmul")->record), other.at("matmul"));
}

// Each declaration is usable: it has a doc, and its own default passes its own validation.
TEST(Registry, DeclaredDefaultsValidate) {
  for (const auto& op : registered_ops())
    for (const ParamDecl* p : op_params(op)) {
      EXPECT_FALSE(p->doc.empty()) << op << "." << p->name;
      if (p->fallback.is_null()) continue;
      nlohmann::json params = {{p->name, p->fallback}};
      for (const ParamDecl* q : op_params(op))
        if (q->required && q != p) params[q->name] = q->min;
      EXPECT_NO_THROW(validate_params(op, JsonReader(params, "decl", "params")))
          << op << "." << p->name;
    }
}

struct Failure {
  std::string message;
  ErrorKind kind = ErrorKind::kInput;
};

template <typename F>
Failure failure(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return {e.what(), e.kind()};
  }
  ADD_FAILURE() << "expected an error";
  return {};
}

fs::path write_config(const std::string& name, const std::string& text) {
  const fs::path p = fs::temp_directory_path() / name;
  std::ofstream(p) << text;
  return p;
}

TEST(Registry, ParamsTypoInARunConfigIsOneLoadErrorNamingFileAndKey) {
  const fs::path f = write_config(
      "registry_typo_run.json",
      R"({"op": "softmax", "shape": [16, 64], "dim": 1, "tile": [1, 64], "params": {"mege": "tree"}})");
  const Failure e = failure([&] { load_run_config(f); });
  EXPECT_EQ(e.message,
            f.string() + ": params.mege: unknown param for softmax (allowed: merge, spmd_rows)");
  EXPECT_EQ(e.kind, ErrorKind::kParams);
}

TEST(Registry, ParamsTypoInASweepConfigIsOneLoadErrorNamingFileAndKey) {
  const fs::path f = write_config("registry_typo_sweep.json",
                                  R"({"op": "groupnorm", "shape": [4, 8, 16, 64],
      "params": {"groups": 2, "merg": "tree"},
      "candidates": {"tiles": [[1, 2, 4, 64]], "loop_counts": [1, 2]}})");
  const Failure e = failure([&] { load_sweep_config(f); });
  EXPECT_EQ(e.message,
            f.string() +
                ": params.merg: unknown param for groupnorm (allowed: merge, groups, spmd_rows)");
  EXPECT_EQ(e.kind, ErrorKind::kParams);
}

TEST(Registry, ParamValuesAreCheckedAgainstTheirDeclaration) {
  auto load = [](const std::string& op, const std::string& extra) {
    const nlohmann::json doc = nlohmann::json::parse(
        R"({"op": ")" + op + R"(", "shape": [4, 8, 16, 64], "tile": [1, 2, 4, 64)" + "]" + extra +
        "}");
    return failure([&] { kernel_spec_from_json(doc, "k.json", {}); });
  };
  const auto kind_is_params = [](const Failure& f) { return f.kind == ErrorKind::kParams; };
  Failure f = load("sum", R"(, "dim": 1, "params": {"multi_dim": "stacked"})");
  EXPECT_EQ(f.message,
            "k.json: params.multi_dim: \"stacked\" is not allowed (allowed: merged, chained)");
  EXPECT_TRUE(kind_is_params(f));
  f = load("groupnorm", R"(, "params": {"groups": 0})");
  EXPECT_EQ(f.message, "k.json: params.groups: out of range: 0 (allowed >= 1)");
  EXPECT_TRUE(kind_is_params(f));
  f = load("groupnorm", "");
  EXPECT_EQ(f.message,
            "k.json: params.groups: missing: groupnorm needs it (channel groups, an integer >= 1 "
            "dividing C)");
  EXPECT_TRUE(kind_is_params(f));
  f = load("batchnorm", R"(, "params": {"groups": 2})");
  EXPECT_EQ(f.message,
            "k.json: params.groups: unknown param for batchnorm (allowed: merge, spmd_rows)");
  f = load("mse", R"(, "params": {"phase2_tile": [8, 8]})");
  EXPECT_EQ(f.message, "k.json: params.phase2_tile: expected an array of 1 integer(s), got [8,8]");
  f = load("matmul", R"(, "params": {"vector_epilogue": 1})");
  EXPECT_EQ(f.message, "k.json: params.vector_epilogue: expected true or false, got 1");
  f = load("relu", R"(, "params": {"merge": "tree"})");
  EXPECT_EQ(f.message, "k.json: params.merge: unknown param for relu (allowed: l2_bypass_inputs)");
}

TEST(Registry, UnknownOpAtLoadListsTheRegistry) {
  const Failure f = failure([] {
    kernel_spec_from_json(nlohmann::json::parse(R"({"op": "softmaxx", "shape": [4], "tile": [8]})"),
                          "k.json", {});
  });
  std::string list;
  for (const auto& op : registered_ops()) list += (list.empty() ? "" : ", ") + op;
  EXPECT_EQ(f.message, "k.json: op: unknown op 'softmaxx' (known: " + list + ")");
  EXPECT_EQ(f.kind, ErrorKind::kInput);
}

// A spec built in code is checked the same way when it is lowered.
TEST(Registry, LoweringChecksParamsOfSpecsBuiltInCode) {
  KernelSpec s;
  s.op = "layernorm";
  s.shape = {4, 64};
  s.tile = {1, 64};
  s.params["merge"] = "fast";
  const Failure f = failure([&] { lower_kernel(s, test::default_hw()); });
  EXPECT_EQ(
      f.message,
      "layernorm: params.merge: \"fast\" is not allowed (allowed: auto, in_task, chain, tree, "
      "atomic)");
  EXPECT_EQ(f.kind, ErrorKind::kParams);
}

// ---- docs/ops.md ----

TEST(OpsDoc, CheckedInFileIsCurrent) {
  std::ifstream in(test::source_path("docs/ops.md"));
  std::stringstream checked_in;
  checked_in << in.rdbuf();
  EXPECT_TRUE(checked_in.str() == ops_doc_markdown())
      << "docs/ops.md is stale: regenerate with " << OPS_DOC_BINARY << " > docs/ops.md";
  // The program prints exactly the renderer's text.
  const auto out =
      fs::temp_directory_path() / ("tilesim_ops_doc_" + std::to_string(getpid()) + ".md");
  ASSERT_EQ(std::system((std::string(OPS_DOC_BINARY) + " > " + out.string()).c_str()), 0);
  std::ifstream printed(out);
  std::stringstream text;
  text << printed.rdbuf();
  fs::remove(out);
  EXPECT_EQ(text.str(), ops_doc_markdown());
}

// The row of `key` ("| `sum` |") in the section of `md` starting at `section`.
std::string row_of(const std::string& md, const std::string& section, const std::string& key) {
  const size_t from = md.find(section);
  if (from == std::string::npos) return "";
  const size_t at = md.find("| `" + key + "` |", from);
  return at == std::string::npos ? "" : md.substr(at, md.find('\n', at) - at);
}

TEST(OpsDoc, EveryRecordHasARowWithItsInstructionsAndDtypes) {
  const std::string md = ops_doc_markdown();
  for (const OpRecord& r : op_records()) {
    const std::string row = row_of(md, "## The op table", r.name);
    ASSERT_FALSE(row.empty()) << r.name;
    EXPECT_NE(row.find(op_kind_name(r.kind)), std::string::npos) << row;
    EXPECT_NE(row.find(markdown_cell(r.doc)), std::string::npos) << row;
    EXPECT_NE(row.find(r.operands.text()), std::string::npos) << row;
    if (!r.reduction) continue;
    const std::string red = row_of(md, "## Reductions", r.name);
    ASSERT_FALSE(red.empty()) << r.name;
    EXPECT_NE(red.find(reduce_passes_text(r.reduction->merge_passes)), std::string::npos) << red;
    EXPECT_NE(red.find(r.reduction->merges_atomically ? "| yes |" : "| no |"), std::string::npos)
        << red;
  }
  EXPECT_NE(md.find("| `gelu` | unary | 1 | z = gelu(x), tanh form | simple, simple, simple, "
                    "simple, simple, exp_ln, simple, div | 1 output tile(s) |"),
            std::string::npos);
  EXPECT_NE(md.find("| `logsumexp` | ReduceMax: reduce; Sub (x - max): simple/tile; Exp: "
                    "exp_ln/tile; ReduceSum: reduce; Ln: exp_ln/out; Add (+ max): simple/out | "
                    "- |"),
            std::string::npos);
  EXPECT_NE(md.find("| `argmax` | ReduceMax (calIndex): reduce; index beside value "
                    "(ORDER_VALUE_INDEX): simple/tile | - | Compare: simple/out (in dtype); "
                    "Select (values): simple/out (in dtype); Select (indices): simple/out (in "
                    "dtype) | no index (-1) | index | no | int32 index |"),
            std::string::npos);
}

TEST(OpsDoc, EveryFamilyOpAndParamHasARow) {
  const std::string md = ops_doc_markdown();
  for (const KernelFamily& f : kernel_families()) {
    const std::string section = "### " + f.name + "\n";
    ASSERT_NE(md.find(section), std::string::npos) << f.name;
    for (const KernelOp& op : f.ops) EXPECT_FALSE(row_of(md, section, op.name).empty()) << op.name;
    for (const ParamDecl& p : f.params) {
      const std::string row = row_of(md, section, p.name);
      ASSERT_FALSE(row.empty()) << f.name << "." << p.name;
      EXPECT_NE(row.find(markdown_cell(p.doc)), std::string::npos) << row;
      EXPECT_NE(row.find(param_default_text(p)), std::string::npos) << row;
    }
  }
  EXPECT_NE(md.find("| `multi_dim` | string | `\"merged\"` | `merged`, `chained` | every op |"),
            std::string::npos);
}

}  // namespace
}  // namespace tilesim

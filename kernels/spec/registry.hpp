#pragma once
// The one kernel registry: each kernel family is one record holding its op names, its params
// (declared with type, default and allowed values) and its lowering. lower_kernel, the known-ops
// list of error messages and the run-config parser (params are validated when a config is
// loaded) all read it. Adding an op to a family is one entry in its record; a new family is its
// own file plus one line in registry.cpp.

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/ops/op_table.hpp"
#include "kernels/spec/kernel_spec.hpp"
#include "kernels/spec/lowered.hpp"
#include "model/hardware.hpp"
#include "model/json_reader.hpp"
#include "model/task_graph.hpp"

namespace tilesim {

struct Program;

enum class ParamType { kInt, kBool, kString, kIntList };

struct ParamDecl {
  std::string name;
  ParamType type = ParamType::kString;
  nlohmann::json fallback;           // the default; null: required, or derived (see `doc`)
  bool required = false;             // no default: the config must give it
  std::vector<std::string> allowed;  // kString: the allowed values
  int64_t min = std::numeric_limits<int64_t>::min();  // kInt / kIntList elements
  int64_t max = std::numeric_limits<int64_t>::max();
  size_t list_size = 0;          // kIntList: exact length (0: any non-empty length)
  std::vector<std::string> ops;  // the ops that take it (empty: every op of the family)
  std::string doc;               // one line
};

// A boolean option, false unless the config sets it, taken by `ops` (empty: every op).
ParamDecl flag_param(std::string name, std::string doc, std::vector<std::string> ops = {});

struct KernelOp {
  KernelOp(std::string op, std::string what) : name(std::move(op)), doc(std::move(what)) {}
  KernelOp(std::string op, std::string what, int n, std::function<double(double, double)> v)
      : name(std::move(op)), doc(std::move(what)), inputs(n), value(std::move(v)) {}
  // An op that is one form of its family's kernel (`form`: the family's own enum).
  template <class Form>
  requires std::is_enum_v<Form> KernelOp(std::string op, std::string what, Form f)
      : name(std::move(op)), doc(std::move(what)), form(static_cast<int>(f)) {}
  // An op of the one op table (kernels/ops/op_table.hpp), named there: its doc, arity, vector
  // instructions and value come from its record.
  explicit KernelOp(const std::string& table_name);

  std::string name;
  std::string doc;
  // Elementwise ops: inputs and their value (`y` unused by unary ops), which the functional
  // executor applies tile by tile; their instructions are the record's.
  int inputs = 1;
  std::function<double(double x, double y)> value;
  const OpRecord* record = nullptr;
  // Which form of its family's kernel the op is: an enum the family defines (a norm's statistic
  // axes and centring, softmax's log output, a loss's per-row statistic). A family branches on
  // this flag of the record (form_of), never on the op's name.
  int form = 0;
};

struct KernelFamily {
  std::string name;
  std::vector<KernelOp> ops;
  std::vector<ParamDecl> params;
  // The family's builder: its run config as a tile program (kernels/program/program.hpp), which
  // the one program lowering turns into tasks and the functional executor runs with Eigen.
  std::function<Program(const KernelSpec&, const Hardware&)> program;
  // Elements the rulebook's prod(tile) limit counts for one tile (unset: prod(tile)).
  std::function<int64_t(const KernelSpec&)> tile_elements;
  // The tensors a `shape` (or a tile of it) stands for, when they are not the shape itself
  // (matmul's [m, k, n]: A [m, k], B [k, n], C [m, n]); unset: the shape is the tensor.
  std::function<std::vector<Dims>(const Dims&)> tensors_of;
  // Checks of params whose allowed values depend on the spec (its shape): run after the declared
  // checks, at load (the reader names the file) and before lowering; failures are kParams.
  std::function<void(const KernelSpec&, const JsonReader& params)> check_params;
  // The spmd partition is modelled for the family.
  bool spmd = false;
};

// Every family, in registration order.
const std::vector<KernelFamily>& kernel_families();
// The family of `op`, or nullptr.
const KernelFamily* find_family(const std::string& op);
const KernelOp* find_op(const std::string& op);
// The form of a registered op (KernelOp::form); an unregistered name is a bug (InternalError).
int op_form(const std::string& op);
// ... as its family's enum.
template <class Form>
Form form_of(const std::string& op) {
  return static_cast<Form>(op_form(op));
}
// Every op name in registration order, and the one-line rejection of any other op.
std::vector<std::string> registered_ops();
std::string unknown_op_message(const std::string& op);
// The params `op` takes.
std::vector<const ParamDecl*> op_params(const std::string& op);

// Checks `params` (a reader of the spec's "params" object) against the declarations of `op`:
// unknown keys, types, allowed values, bounds and required params; every failure is kParams.
void validate_params(const std::string& op, const JsonReader& params);
// One param's value (`value` reads it; the message names its place): a name `op` declares, and a
// value of the declared type within its allowed values and bounds.
void validate_param(const std::string& op, const std::string& name, const JsonReader& value);
// Same for a spec built in code (the message names the op as its origin), with its family's
// spec-dependent checks.
void validate_params(const KernelSpec& spec);
// The family's spec-dependent param checks (KernelFamily::check_params), `params` naming the file.
void check_spec_params(const KernelSpec& spec, const JsonReader& params);

// Typed reads of a spec's (already validated) params, the declaration's default when absent.
// Reading a param the op does not declare is a bug in the kernel (InternalError).
bool has_param(const KernelSpec& spec, const std::string& name);
int64_t param_int(const KernelSpec& spec, const std::string& name);
bool param_bool(const KernelSpec& spec, const std::string& name);
std::string param_string(const KernelSpec& spec, const std::string& name);
Dims param_ints(const KernelSpec& spec, const std::string& name);

}  // namespace tilesim

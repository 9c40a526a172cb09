#include "kernels/spec/registry.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>

#include "model/error.hpp"

namespace tilesim {

ParamDecl flag_param(std::string name, std::string doc, std::vector<std::string> ops) {
  ParamDecl p;
  p.name = std::move(name);
  p.type = ParamType::kBool;
  p.fallback = false;
  p.ops = std::move(ops);
  p.doc = std::move(doc);
  return p;
}

KernelOp::KernelOp(const std::string& table_name) {
  record = find_op_record(table_name);
  if (!record) throw InternalError("op table has no record " + table_name);
  name = record->name;
  doc = record->doc;
  inputs = record->kind == OpKind::kBinary ? 2 : 1;
  value = record->value;
}

// The registration list: one line per family, each defined in its own file.
KernelFamily copy_in_kernels();
KernelFamily elementwise_kernels();
KernelFamily reduce_kernels();
KernelFamily softmax_kernels();
KernelFamily norm_kernels();
KernelFamily loss_kernels();
KernelFamily matmul_kernels();

namespace {

std::vector<KernelFamily> build_registry() {
  std::vector<KernelFamily> families = {copy_in_kernels(), elementwise_kernels(), reduce_kernels(),
                                        softmax_kernels(), norm_kernels(),        loss_kernels(),
                                        matmul_kernels()};
  // Broken records are bugs in tilesim: every op is unique and every param names its own ops.
  std::set<std::string> seen;
  for (const auto& f : families) {
    if (!f.program) throw InternalError("kernel family " + f.name + " needs a builder");
    std::set<std::string> mine;
    for (const auto& op : f.ops) {
      if (!seen.insert(op.name).second) throw InternalError("op registered twice: " + op.name);
      mine.insert(op.name);
    }
    for (const auto& p : f.params)
      for (const auto& op : p.ops)
        if (!mine.count(op))
          throw InternalError(fmt::format("param {} of family {} names op {} outside the family",
                                          p.name, f.name, op));
  }
  return families;
}

bool applies_to(const ParamDecl& p, const std::string& op) {
  return p.ops.empty() || std::find(p.ops.begin(), p.ops.end(), op) != p.ops.end();
}

const ParamDecl* find_param(const std::string& op, const std::string& name) {
  for (const ParamDecl* p : op_params(op))
    if (p->name == name) return p;
  return nullptr;
}

std::string param_names(const std::vector<const ParamDecl*>& decls) {
  std::vector<std::string> names;
  for (const ParamDecl* p : decls) names.push_back(p->name);
  return names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", "));
}

void check_value(const ParamDecl& p, const JsonReader& v) {
  switch (p.type) {
    case ParamType::kInt:
      v.integer(p.min, p.max);
      return;
    case ParamType::kBool:
      v.boolean();
      return;
    case ParamType::kString:
      if (p.allowed.empty())
        v.string();
      else
        v.one_of(p.allowed);
      return;
    case ParamType::kIntList: {
      if (!v.json().is_array() || v.json().empty() ||
          (p.list_size > 0 && v.json().size() != p.list_size))
        v.fail(p.list_size > 0 ? fmt::format("expected an array of {} integer(s), got {}",
                                             p.list_size, v.json().dump())
                               : "expected a non-empty array of integers, got " + v.json().dump());
      for (const auto& x : v.items()) x.integer(p.min, p.max);
      return;
    }
  }
}

// The param's value: the spec's own, else the declared default.
nlohmann::json param_value(const KernelSpec& spec, const std::string& name) {
  const ParamDecl* p = find_param(spec.op, name);
  if (!p) throw InternalError(fmt::format("{} reads undeclared param {}", spec.op, name));
  if (spec.params.is_object() && spec.params.contains(name)) return spec.params[name];
  if (p->fallback.is_null())
    throw InternalError(fmt::format("{} reads param {} that has no default", spec.op, name));
  return p->fallback;
}

}  // namespace

int op_form(const std::string& op) {
  const KernelOp* k = find_op(op);
  if (!k) throw InternalError("no registered op " + op + " to take the form of");
  return k->form;
}

const std::vector<KernelFamily>& kernel_families() {
  static const std::vector<KernelFamily> families = build_registry();
  return families;
}

const KernelFamily* find_family(const std::string& op) {
  for (const auto& f : kernel_families())
    for (const auto& o : f.ops)
      if (o.name == op) return &f;
  return nullptr;
}

const KernelOp* find_op(const std::string& op) {
  for (const auto& f : kernel_families())
    for (const auto& o : f.ops)
      if (o.name == op) return &o;
  return nullptr;
}

std::vector<std::string> registered_ops() {
  std::vector<std::string> ops;
  for (const auto& f : kernel_families())
    for (const auto& o : f.ops) ops.push_back(o.name);
  return ops;
}

std::vector<const ParamDecl*> op_params(const std::string& op) {
  std::vector<const ParamDecl*> out;
  if (const KernelFamily* f = find_family(op))
    for (const auto& p : f->params)
      if (applies_to(p, op)) out.push_back(&p);
  return out;
}

void validate_param(const std::string& op, const std::string& name, const JsonReader& value) {
  const JsonReader v = value.with_kind(ErrorKind::kParams);
  const ParamDecl* p = find_param(op, name);
  if (!p) v.fail(fmt::format("unknown param for {} (allowed: {})", op, param_names(op_params(op))));
  check_value(*p, v);
}

void validate_params(const std::string& op, const JsonReader& params) {
  const JsonReader r = params.with_kind(ErrorKind::kParams);
  r.expect_object();
  r.for_each_member(
      [&](const std::string& key, const JsonReader& v) { validate_param(op, key, v); });
  const auto decls = op_params(op);
  for (const ParamDecl* p : decls)
    if (p->required && !r.has(p->name))
      r.with_kind(ErrorKind::kParams)
          .fail_at(p->name, fmt::format("missing: {} needs it ({})", op, p->doc));
}

void validate_params(const KernelSpec& spec) {
  const JsonReader params(spec.params, spec.op, "params", ErrorKind::kParams);
  validate_params(spec.op, params);
  check_spec_params(spec, params);
}

void check_spec_params(const KernelSpec& spec, const JsonReader& params) {
  const KernelFamily* f = find_family(spec.op);
  if (f && f->check_params) f->check_params(spec, params.with_kind(ErrorKind::kParams));
}

bool has_param(const KernelSpec& spec, const std::string& name) {
  if (!find_param(spec.op, name))
    throw InternalError(fmt::format("{} asks for undeclared param {}", spec.op, name));
  return spec.params.is_object() && spec.params.contains(name);
}

int64_t param_int(const KernelSpec& spec, const std::string& name) {
  return param_value(spec, name).get<int64_t>();
}

bool param_bool(const KernelSpec& spec, const std::string& name) {
  return param_value(spec, name).get<bool>();
}

std::string param_string(const KernelSpec& spec, const std::string& name) {
  return param_value(spec, name).get<std::string>();
}

Dims param_ints(const KernelSpec& spec, const std::string& name) {
  const auto v = param_value(spec, name).get<std::vector<int64_t>>();
  return Dims(v.begin(), v.end());
}

std::string unknown_op_message(const std::string& op) {
  return fmt::format("unknown op '{}' (known: {})", op, fmt::join(registered_ops(), ", "));
}

}  // namespace tilesim

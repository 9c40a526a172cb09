#include "model/dtype.hpp"

#include "model/error.hpp"

namespace tilesim {

int64_t dtype_bytes(DType t) {
  switch (t) {
    case DType::kFp32:
    case DType::kInt32:
      return 4;
    case DType::kFp16:
    case DType::kBf16:
      return 2;
    case DType::kInt8:
      return 1;
  }
  return 4;
}

std::string_view dtype_name(DType t) {
  return enum_name(kDTypeNames, t);
}

namespace {
// The dtype `name` spells (its name or its alias), if `allowed` holds it.
std::optional<DType> named_dtype(std::string_view name, bool (*allowed)(DType)) {
  std::optional<DType> t = enum_named(kDTypeNames, name);
  if (!t) t = enum_named(kDTypeAliases, name);
  return t && allowed(*t) ? t : std::nullopt;
}

bool is_float(DType t) {
  return t == DType::kFp32 || t == DType::kFp16 || t == DType::kBf16;
}
bool is_any(DType) {
  return true;
}
}  // namespace

DType parse_dtype(std::string_view name) {
  if (const auto t = named_dtype(name, is_float)) return *t;
  throw Error("unknown dtype '" + std::string(name) + "' (allowed: fp32, fp16, bf16)");
}

DType parse_program_dtype(std::string_view name) {
  if (const auto t = named_dtype(name, is_any)) return *t;
  throw Error("unknown dtype '" + std::string(name) + "' (allowed: fp32, fp16, bf16, int8, int32)");
}

}  // namespace tilesim

#include "model/dtype.hpp"

#include "model/error.hpp"

namespace tilesim {

int64_t dtype_bytes(DType t) {
  return t == DType::kFp32 ? 4 : 2;
}

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::kFp32:
      return "fp32";
    case DType::kFp16:
      return "fp16";
    case DType::kBf16:
      return "bf16";
  }
  return "?";
}

DType parse_dtype(std::string_view name) {
  if (name == "fp32" || name == "float32") return DType::kFp32;
  if (name == "fp16" || name == "float16") return DType::kFp16;
  if (name == "bf16" || name == "bfloat16") return DType::kBf16;
  throw Error("unknown dtype '" + std::string(name) + "' (allowed: fp32, fp16, bf16)");
}

}  // namespace tilesim

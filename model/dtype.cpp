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
  switch (t) {
    case DType::kFp32:
      return "fp32";
    case DType::kFp16:
      return "fp16";
    case DType::kBf16:
      return "bf16";
    case DType::kInt8:
      return "int8";
    case DType::kInt32:
      return "int32";
  }
  return "?";
}

DType parse_dtype(std::string_view name) {
  if (name == "fp32" || name == "float32") return DType::kFp32;
  if (name == "fp16" || name == "float16") return DType::kFp16;
  if (name == "bf16" || name == "bfloat16") return DType::kBf16;
  throw Error("unknown dtype '" + std::string(name) + "' (allowed: fp32, fp16, bf16)");
}

DType parse_program_dtype(std::string_view name) {
  if (name == "int8") return DType::kInt8;
  if (name == "int32") return DType::kInt32;
  if (name == "fp32" || name == "float32" || name == "fp16" || name == "float16" ||
      name == "bf16" || name == "bfloat16")
    return parse_dtype(name);
  throw Error("unknown dtype '" + std::string(name) + "' (allowed: fp32, fp16, bf16, int8, int32)");
}

}  // namespace tilesim

#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "model/enum_names.hpp"

namespace tilesim {

// kInt8 and kInt32 appear in user tile programs only (a cast's target, a gather's row index);
// kernel configs take the float types (parse_dtype).
enum class DType { kFp32, kFp16, kBf16, kInt8, kInt32 };
inline constexpr std::array<EnumName<DType>, 5> kDTypeNames = {{{DType::kFp32, "fp32"},
                                                                {DType::kFp16, "fp16"},
                                                                {DType::kBf16, "bf16"},
                                                                {DType::kInt8, "int8"},
                                                                {DType::kInt32, "int32"}}};
// The long spellings configs may use for the float types (PyTorch's names).
inline constexpr std::array<EnumName<DType>, 3> kDTypeAliases = {
    {{DType::kFp32, "float32"}, {DType::kFp16, "float16"}, {DType::kBf16, "bfloat16"}}};

int64_t dtype_bytes(DType t);
std::string_view dtype_name(DType t);
// Throws tilesim::Error naming the allowed spellings.
DType parse_dtype(std::string_view name);
// Also int8 and int32 (a tile program's tensors).
DType parse_program_dtype(std::string_view name);

}  // namespace tilesim

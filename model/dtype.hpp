#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace tilesim {

// kInt8 and kInt32 appear in user tile programs only (a cast's target, a gather's row index);
// kernel configs take the float types (parse_dtype).
enum class DType { kFp32, kFp16, kBf16, kInt8, kInt32 };

int64_t dtype_bytes(DType t);
std::string_view dtype_name(DType t);
// Throws tilesim::Error naming the allowed spellings.
DType parse_dtype(std::string_view name);
// Also int8 and int32 (a tile program's tensors).
DType parse_program_dtype(std::string_view name);

}  // namespace tilesim

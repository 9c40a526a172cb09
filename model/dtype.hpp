#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace tilesim {

enum class DType { kFp32, kFp16, kBf16 };

int64_t dtype_bytes(DType t);
std::string_view dtype_name(DType t);
// Throws tilesim::Error naming the allowed spellings.
DType parse_dtype(std::string_view name);

}  // namespace tilesim

#pragma once
// One error type for every user-facing failure: the message is a single line that names
// where the problem is (file, key, op, dim) and what is allowed, and the kind says which class
// of mistake it is (a sweep files its rejections by kind, never by matching message text).
// A broken internal invariant is an InternalError: a bug in tilesim, not in the user's input.

#include <array>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "model/enum_names.hpp"

namespace tilesim {

enum class ErrorKind {
  kInput,      // malformed or unknown input: bad JSON, unknown key or op, wrong type, bad value
  kParams,     // an op's params: unknown param, wrong type, value not allowed
  kCapacity,   // a buffer does not fit its memory (UB, L1, L0A/B/C)
  kAlignment,  // a tile or copy breaks an alignment rule (32 B last dim, fractal multiples)
  kLimits,     // a limit of the model or of the rulebook (rank, supported combinations)
};

inline constexpr std::array<EnumName<ErrorKind>, 5> kErrorKindNames = {
    {{ErrorKind::kInput, "input"},
     {ErrorKind::kParams, "params"},
     {ErrorKind::kCapacity, "capacity"},
     {ErrorKind::kAlignment, "alignment"},
     {ErrorKind::kLimits, "limits"}}};
constexpr std::string_view error_kind_name(ErrorKind k) {
  return enum_name(kErrorKindNames, k);
}

class Error : public std::runtime_error {
 public:
  // `key`: the key path in the document the message names, when a JSON reader rejected it (the
  // Python module raises it as ConfigError.key).
  explicit Error(const std::string& message, ErrorKind kind = ErrorKind::kInput,
                 std::string key = "")
      : std::runtime_error(message), kind_(kind), key_(std::move(key)) {}
  ErrorKind kind() const { return kind_; }
  const std::string& key() const { return key_; }

 private:
  ErrorKind kind_;
  std::string key_;
};

// A broken invariant inside tilesim (exit code 3), never the user's input (exit code 2).
class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& message) : std::logic_error(message) {}
};

}  // namespace tilesim

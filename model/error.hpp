#pragma once
// One error type for every user-facing failure: the message is a single line that names
// where the problem is (file, key, op, dim) and what is allowed.

#include <stdexcept>
#include <string>

namespace tilesim {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace tilesim

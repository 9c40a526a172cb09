#pragma once
// What every libFuzzer target shares: the input becomes a file, read by one loader the way the
// CLI reads it. A tilesim::Error is the promised answer to bad input; anything else escaping (an
// InternalError, another exception, a sanitizer report, a hang) is a finding.

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "model/error.hpp"

namespace tilesim::fuzz {

// The input written to a file of this process (`name` gives its extension); the file is reused
// by every run of the target, and its folder removed when the process ends normally.
inline std::filesystem::path input_file(const uint8_t* data, size_t size, const char* name) {
  static const struct Dir {
    std::filesystem::path path =
        std::filesystem::temp_directory_path() / ("tilesim-fuzz-" + std::to_string(::getpid()));
    Dir() { std::filesystem::create_directories(path); }
    ~Dir() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  } dir;
  const auto file = dir.path / name;
  std::ofstream(file, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return file;
}

// Runs `load` on the input; a user error is an accepted outcome.
template <class Load>
int run_loader(const uint8_t* data, size_t size, const char* name, Load load) {
  const auto file = input_file(data, size, name);
  try {
    load(file);
  } catch (const Error&) {
  }
  return 0;
}

}  // namespace tilesim::fuzz

#include "model/input_files.hpp"

#include <mutex>
#include <vector>

namespace tilesim {

namespace {

std::mutex g_mutex;
std::vector<std::filesystem::path> g_inputs;  // as read; compared by std::filesystem::equivalent

}  // namespace

void note_input_file(const std::filesystem::path& file) {
  std::error_code ec;
  const auto canonical = std::filesystem::weakly_canonical(file, ec);
  const std::lock_guard lock(g_mutex);
  for (const auto& p : g_inputs)
    if (p == (ec ? file : canonical)) return;
  g_inputs.push_back(ec ? file : canonical);
}

std::optional<std::string> read_as_input(const std::filesystem::path& file) {
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) return std::nullopt;
  const std::lock_guard lock(g_mutex);
  for (const auto& p : g_inputs)
    if (std::filesystem::equivalent(p, file, ec)) return p.string();
  return std::nullopt;
}

}  // namespace tilesim

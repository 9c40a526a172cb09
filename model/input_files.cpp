#include "model/input_files.hpp"

#include <sys/stat.h>

#include <map>
#include <mutex>
#include <utility>

namespace tilesim {

namespace {

// A file is its device and inode (what std::filesystem::equivalent compares), so every name of
// one file finds the same entry, in a lookup that stays logarithmic for any number of inputs.
using FileId = std::pair<dev_t, ino_t>;

std::optional<FileId> file_id(const std::filesystem::path& file) {
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) return std::nullopt;
  return FileId{st.st_dev, st.st_ino};
}

std::mutex g_mutex;
std::map<FileId, std::string> g_inputs;  // each file under the first name it was read as

}  // namespace

void note_input_file(const std::filesystem::path& file) {
  const auto id = file_id(file);
  if (!id) return;  // nothing there to overwrite
  const std::lock_guard lock(g_mutex);
  g_inputs.emplace(*id, file.string());
}

std::optional<std::string> read_as_input(const std::filesystem::path& file) {
  const auto id = file_id(file);
  if (!id) return std::nullopt;
  const std::lock_guard lock(g_mutex);
  const auto it = g_inputs.find(*id);
  return it == g_inputs.end() ? std::nullopt : std::optional<std::string>(it->second);
}

}  // namespace tilesim

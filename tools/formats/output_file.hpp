#pragma once
// Every file tilesim writes goes through here: the text goes to a temporary file beside the
// target, is flushed and checked, then renamed over the target, so a full disk, an I/O error or
// a kill mid-write never leaves a truncated file in place of the old one, and a failure is an
// error (exit 2), never a silent success. A target that is not a regular file (a device, a pipe)
// is written in place, its errors checked just the same.

#include <filesystem>
#include <functional>
#include <ostream>
#include <string>

namespace tilesim {

// Writes what `write` puts on the stream to `file`; throws tilesim::Error naming the file.
void write_file_atomically(const std::filesystem::path& file,
                           const std::function<void(std::ostream&)>& write,
                           const std::string& what);

// Refuses to write `output` (named by `option`) over `input`, one of the command's own inputs.
void check_not_an_input(const std::filesystem::path& output, const std::string& option,
                        const std::filesystem::path& input);

}  // namespace tilesim

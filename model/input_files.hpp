#pragma once
// The files this process has read as input (configs, programs, hardware files and their bases,
// measurements, datasets, graphs, traces, CSVs): every loader notes the file it opens, and every
// output refuses to replace one of them, however the input was reached (named directly, or by
// another input: a program a run config names, a hardware file's base, a point's config_file).

#include <filesystem>
#include <optional>
#include <string>

namespace tilesim {

// Records `file` (thread-safe; the same file by any name is one entry).
void note_input_file(const std::filesystem::path& file);
// The name an input was read under when `file` is that same file (it exists and is equivalent),
// else nothing.
std::optional<std::string> read_as_input(const std::filesystem::path& file);

}  // namespace tilesim

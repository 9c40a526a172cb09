#include "tools/formats/output_file.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <system_error>

#include "model/error.hpp"
#include "model/input_files.hpp"

namespace tilesim {

void write_file_atomically(const std::filesystem::path& file,
                           const std::function<void(std::ostream&)>& write,
                           const std::string& what) {
  // However the input was reached (a program a config names, a hardware file's base, a point's
  // config_file): an output never replaces a file this command read.
  if (const auto input = read_as_input(file))
    throw Error(file.string() + ": is one of the command's input files (read as " + *input +
                "): " + what + " not written (write it elsewhere)");
  std::error_code ec;
  if (std::filesystem::exists(file, ec) && !std::filesystem::is_regular_file(file, ec)) {
    // A device or a pipe (/dev/stdout, a FIFO): written in place, its errors still checked.
    std::ofstream out(file, std::ios::binary);
    if (out) write(out);
    out.flush();
    if (!out) throw Error(file.string() + ": cannot write " + what + ": " + std::strerror(errno));
    return;
  }
  std::filesystem::path tmp = file;
  tmp += ".tilesim-tmp-" + std::to_string(::getpid());
  const auto fail = [&](const std::string& why) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    throw Error(file.string() + ": cannot write " + what + ": " + why);
  };
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) fail(std::strerror(errno));
    write(out);
    out.flush();
    if (!out) fail(std::strerror(errno));
    out.close();
    if (out.fail()) fail(std::strerror(errno));
  }
  std::filesystem::rename(tmp, file, ec);
  if (ec) fail(ec.message());
}

void check_not_an_input(const std::filesystem::path& output, const std::string& option,
                        const std::filesystem::path& input) {
  std::error_code ec;
  if (output.string() != "-" && std::filesystem::exists(output, ec) &&
      std::filesystem::equivalent(output, input, ec))
    throw Error(option + " " + output.string() +
                ": is the command's own input file (write the output elsewhere)");
}

}  // namespace tilesim

#pragma once
// Every file tilesim writes goes through here. The text goes to a temporary file beside the
// target, is flushed and checked, then renamed over the target, so a full disk, an I/O error or a
// kill mid-write never leaves a truncated file in place of the old one, and a failure is an error
// (exit 2), never a silent success.
// - A symlink is written through: the rename replaces the file it points to, never the link.
// - A link into /proc/self/fd or /dev/fd (/dev/stdout) is that open descriptor: the text goes to
//   it, after what the process already wrote there.
// - A target that is not a regular file (a device, a pipe) is written in place, its errors
//   checked just the same.
// While an OutputTransaction is open, the renames wait for its commit, so a command's outputs
// change together or not at all.

#include <filesystem>
#include <functional>
#include <ostream>
#include <string>

namespace tilesim {

// Writes what `write` puts on the stream to `file`; throws tilesim::Error naming the file.
void write_file_atomically(const std::filesystem::path& file,
                           const std::function<void(std::ostream&)>& write,
                           const std::string& what);

// All the files one command writes (the CLI opens one per command). While it is open,
// write_file_atomically leaves each file in its temporary; commit() renames them all, with the
// stop signals held back so that a signal lands before the first rename or after the last. Closed
// without a commit (an error, a stop), it removes every temporary: every old output stays.
class OutputTransaction {
 public:
  OutputTransaction();  // one at a time
  ~OutputTransaction();
  OutputTransaction(const OutputTransaction&) = delete;
  OutputTransaction& operator=(const OutputTransaction&) = delete;
  void commit();
};

// SIGINT, SIGTERM and SIGHUP remove the open transaction's temporaries, print one line on stderr
// and exit 128 + the signal; one during the commit lands when every rename is done. The CLI
// installs them at start (a sweep replaces them while it evaluates, to stop between candidates).
void remove_temporaries_on_stop_signals();

// A child process group (trace-pypto's tracer) that ends with the command: a stop signal kills it
// (SIGKILL) before the command exits. 0: none.
void stop_child_with_the_command(int process_group);

// Refuses to write `output` (named by `option`) over `input`, one of the command's own inputs.
void check_not_an_input(const std::filesystem::path& output, const std::string& option,
                        const std::filesystem::path& input);

}  // namespace tilesim

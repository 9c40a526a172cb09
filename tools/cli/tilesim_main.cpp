// tilesim: the command-line entry point. Each subcommand lives in its own cmd_*.cpp.
// Exit codes: 0 done (--help and --version too), 2 bad input (usage errors included: the error
// and the command's usage line), 3 internal error.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <iostream>
#include <new>
#include <string>
#include <vector>

#include "commit.hpp"  // generated: TILESIM_COMMIT
#include "model/error.hpp"
#include "model/nearest_name.hpp"
#include "model/printable.hpp"
#include "tools/cli/commands.hpp"
#include "tools/formats/output_file.hpp"
#include "tools/formats/version.hpp"

namespace {

// The usage line of the subcommand being parsed when the error struck (the app's otherwise).
std::string usage_line(const CLI::App& app) {
  const CLI::App* cmd = &app;
  std::string name = app.get_name();
  // Down to the innermost subcommand parsed ("measurements from-msprof").
  while (!cmd->get_subcommands().empty()) {
    cmd = cmd->get_subcommands().back();
    name += " " + cmd->get_name();
  }
  std::string usage = CLI::Formatter().make_usage(cmd, name);
  while (!usage.empty() && usage.back() == '\n') usage.pop_back();
  return usage;
}

// The known name `word` is a typo away from: at most 2 edits, and fewer than half its letters.
std::string closest(const std::string& word, const std::vector<std::string>& names) {
  const size_t half = (word.size() + 1) / 2;
  return tilesim::nearest_name(word, names, half == 0 ? 0 : std::min<size_t>(2, half - 1));
}

// A usage error's hint: an unknown command or option that is a typo away from a known one.
std::string did_you_mean(CLI::App& app, int argc, char** argv) {
  std::vector<std::string> commands;
  for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
    commands.push_back(sub->get_name());
  if (argc > 1 && argv[1][0] != '-' &&
      std::find(commands.begin(), commands.end(), argv[1]) == commands.end()) {
    const std::string c = closest(argv[1], commands);
    return fmt::format("unknown command '{}'{} (commands: {})", argv[1],
                       c.empty() ? "" : fmt::format(", did you mean '{}'?", c),
                       fmt::join(commands, ", "));
  }
  const CLI::App* cmd = app.get_subcommands().empty() ? nullptr : app.get_subcommands().back();
  if (!cmd) return "";
  while (!cmd->get_subcommands().empty()) cmd = cmd->get_subcommands().back();
  std::vector<std::string> options;
  for (const CLI::Option* o : cmd->get_options())
    for (const auto& n : o->get_lnames()) options.push_back("--" + n);
  for (int i = 2; i < argc; ++i) {
    const std::string arg = std::string(argv[i]).substr(0, std::string(argv[i]).find('='));
    if (arg.rfind("--", 0) != 0 || std::find(options.begin(), options.end(), arg) != options.end())
      continue;
    const std::string o = closest(arg, options);
    if (!o.empty()) return fmt::format("unknown option '{}', did you mean '{}'?", arg, o);
  }
  return "";
}

// No option takes an empty value: `--json ''` would otherwise mean "not given" (CLI11 runs no
// validator on an empty result of an optional-value option).
void refuse_empty_values(const CLI::App& app) {
  const CLI::App* cmd = &app;
  while (true) {
    for (const CLI::Option* o : cmd->get_options())
      if (o->count() > 0)
        for (const std::string& r : o->results())
          if (r.empty())
            throw CLI::ValidationError(o->get_name(),
                                       "an empty value (give one, or leave the option out)");
    if (cmd->get_subcommands().empty()) break;
    cmd = cmd->get_subcommands().back();
  }
}

// What reaches the terminal: a stream's text with every control character but a line end, a tab
// and a carriage return (the progress lines) escaped (model/printable.hpp), so that no name from an
// input, wherever a report prints it, sends an escape sequence. (Reports escape the names they
// print themselves; this is the floor under them.)
class TerminalSafeBuf : public std::streambuf {
 public:
  explicit TerminalSafeBuf(std::streambuf* dest) : dest_(dest) {
    setp(buf_.data(), buf_.data() + buf_.size());
  }

 protected:
  int overflow(int c) override {
    if (!drain()) return traits_type::eof();
    if (c != traits_type::eof()) {
      *pptr() = static_cast<char>(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  int sync() override { return drain() && dest_->pubsync() == 0 ? 0 : -1; }

 private:
  bool drain() {
    bool ok = true;
    const char* run = pbase();
    for (const char* p = pbase(); p < pptr(); ++p) {
      const auto c = static_cast<unsigned char>(*p);
      if ((c >= 0x20 && c != 0x7f) || c == '\n' || c == '\t' || c == '\r') continue;
      const std::string escaped = tilesim::printable(std::string_view(p, 1));
      ok = ok && dest_->sputn(run, p - run) == p - run &&
           dest_->sputn(escaped.data(), static_cast<std::streamsize>(escaped.size())) ==
               static_cast<std::streamsize>(escaped.size());
      run = p + 1;
    }
    ok = ok && dest_->sputn(run, pptr() - run) == pptr() - run;
    setp(buf_.data(), buf_.data() + buf_.size());
    return ok;
  }

  std::streambuf* dest_;
  std::array<char, 8192> buf_{};
};

// std::cout and std::cerr through a TerminalSafeBuf while main runs (put back, flushed, before
// the streams' own end).
struct TerminalSafeStreams {
  TerminalSafeBuf out{std::cout.rdbuf()}, err{std::cerr.rdbuf()};
  std::streambuf* const old_out = std::cout.rdbuf(&out);
  std::streambuf* const old_err = std::cerr.rdbuf(&err);
  TerminalSafeStreams() { std::cerr.setf(std::ios::unitbuf); }
  ~TerminalSafeStreams() {
    std::cout.flush();
    std::cerr.flush();
    std::cout.rdbuf(old_out);
    std::cerr.rdbuf(old_err);
  }
  TerminalSafeStreams(const TerminalSafeStreams&) = delete;
  TerminalSafeStreams& operator=(const TerminalSafeStreams&) = delete;
};

}  // namespace

int main(int argc, char** argv) {
  TerminalSafeStreams terminal;
  CLI::App app{"", "tilesim"};
  const std::string version =
      fmt::format("tilesim {} (commit {})", tilesim::tilesim_version(), TILESIM_COMMIT);
  app.set_version_flag("--version", version);
  const std::vector<tilesim::CommandAction> commands = tilesim::register_commands(app);
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
    sub->set_version_flag("--version", version);
  try {
    app.parse(argc, argv);
    refuse_empty_values(app);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    const std::string hint = did_you_mean(app, argc, argv);
    std::cerr << "tilesim: error: " << tilesim::printable(hint.empty() ? e.what() : hint) << "\n"
              << usage_line(app) << "\n";
    return 2;
  }
  try {
    // A command's output files change together, when it succeeds, or not at all.
    tilesim::remove_temporaries_on_stop_signals();
    tilesim::OutputTransaction outputs;
    for (const auto& action : commands)
      if (const int rc = action(); rc >= 0) {
        // The report on standard output is output too: a full disk or a closed pipe is an error.
        std::cout.flush();
        if (!std::cout) throw tilesim::Error("standard output: cannot write the report");
        // Exit 1 is a verdict (a dataset outside its tolerances, a refused fit, every candidate
        // rejected): the outputs are that verdict, written as on success. Only an error or a
        // stop leaves every old output as it was.
        if (rc == 0 || rc == 1) outputs.commit();
        return rc;
      }
  } catch (const tilesim::Error& e) {  // the user's input: exit 2
    std::cerr << "tilesim: error: " << tilesim::printable(e.what()) << "\n";
    return 2;
  } catch (const tilesim::InternalError& e) {  // a broken invariant, a bug in tilesim: exit 3
    std::cerr << "tilesim: internal error: " << tilesim::printable(e.what()) << "\n";
    return 3;
  } catch (const std::bad_alloc&) {  // a valid input too large for this machine: exit 2
    std::cerr << "tilesim: error: out of memory: the input needs more memory than this process "
                 "may use (make it smaller, or lower --max-tasks where the command takes it)\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "tilesim: internal error: " << tilesim::printable(e.what()) << "\n";
    return 3;
  }
  return 0;
}

#include "tools/cli/cli_reference.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <vector>

namespace tilesim {

namespace {

// A table cell: '|' escaped, line ends as spaces.
std::string cell(std::string text) {
  std::string out;
  for (const char c : text) {
    if (c == '|')
      out += "\\|";
    else if (c == '\n')
      out += ' ';
    else
      out += c;
  }
  return out;
}

// What the option takes: "flag", its value's type ("[FILE]" when the value is optional), and
// "repeatable" when it may be given several times.
std::string value_of(const CLI::Option& o) {
  if (o.get_type_size_max() == 0 || o.get_expected_max() == 0) return "flag";
  std::string type = o.get_type_name().empty() ? std::string("TEXT") : o.get_type_name();
  if (o.get_expected_min() == 0 && type.front() != '[') type = "[" + type + "]";
  if (o.get_items_expected_max() > 1 && !o.get_positional()) type += ", repeatable";
  if (o.get_positional() && o.get_items_expected_max() > 1) type += " ...";
  return type;
}

std::string names_of(const CLI::Option& o) {
  if (o.get_positional() && o.get_lnames().empty() && o.get_snames().empty())
    return fmt::format("`{}`", o.get_name());
  std::vector<std::string> names;
  for (const auto& s : o.get_snames()) names.push_back("`-" + s + "`");
  for (const auto& l : o.get_lnames()) names.push_back("`--" + l + "`");
  return fmt::format("{}", fmt::join(names, ", "));
}

void command_section(const CLI::App& cmd, const std::string& name, std::string& out) {
  out += fmt::format("## tilesim {}\n\n{}\n\n", name, cmd.get_description());
  std::string usage = CLI::Formatter().make_usage(&cmd, "tilesim " + name);
  while (!usage.empty() && usage.back() == '\n') usage.pop_back();
  const std::string prefix = "Usage: ";
  if (usage.rfind(prefix, 0) == 0) usage = usage.substr(prefix.size());
  out += fmt::format("```\n{}\n```\n\n", usage);
  const auto options = cmd.get_options([](const CLI::Option* o) {
    return o->get_name() != "--help" && o->get_name() != "--version" && !o->get_group().empty();
  });
  if (!options.empty()) {
    out += "| option | takes | default | what it does |\n| --- | --- | --- | --- |\n";
    for (const CLI::Option* o : options) {
      std::string what = o->get_description();
      if (o->get_required()) what = "required: " + what;
      // An option whose value is optional: what it means given alone (its "default" in CLI11).
      std::string fallback = o->get_default_str().empty() ? "-" : "`" + o->get_default_str() + "`";
      if (o->get_expected_min() == 0 && o->get_type_size_max() > 0 && fallback != "-")
        fallback = "given alone: " + fallback;
      out += fmt::format("| {} | {} | {} | {} |\n", names_of(*o), cell(value_of(*o)),
                         cell(fallback), cell(what));
    }
    out += "\n";
  }
  for (const CLI::App* sub : cmd.get_subcommands([](const CLI::App*) { return true; }))
    command_section(*sub, name + " " + sub->get_name(), out);
}

}  // namespace

std::string cli_reference_markdown(const CLI::App& app) {
  std::string out =
      "# Command reference\n\n"
      "<!-- Generated from the commands' CLI11 declarations (tools/cli/cmd_*.cpp) by\n"
      "     build/tools/reference_doc cli > docs/reference/cli.md; the reference_docs test fails "
      "when it is stale. -->\n\n";
  out += fmt::format(
      "{}\n\nEvery command also takes `-h`, `--help` (its usage and options, exit 0) and "
      "`--version`. The options every command spells the same way (`--json [FILE]`, `--csv "
      "[FILE]`, `-j/--jobs`, `-q/--quiet`, `-o/--output`, `--hardware`) and the exit codes are "
      "described in [../run.md](../run.md).\n\n",
      app.get_description());
  std::vector<const CLI::App*> commands;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    commands.push_back(sub);
  out += "| command | what it does |\n| --- | --- |\n";
  for (const CLI::App* c : commands) {
    const std::string anchor = "tilesim-" + c->get_name();
    out += fmt::format("| [`{}`](#{}) | {} |\n", c->get_name(), anchor, cell(c->get_description()));
  }
  out += "\n";
  for (const CLI::App* c : commands) command_section(*c, c->get_name(), out);
  while (out.size() > 1 && out[out.size() - 1] == '\n' && out[out.size() - 2] == '\n')
    out.pop_back();
  return out;
}

}  // namespace tilesim

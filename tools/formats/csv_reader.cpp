#include "tools/formats/csv_reader.hpp"

#include <fmt/format.h>

#include <fstream>
#include <iterator>
#include <set>
#include <system_error>

#include "model/error.hpp"
#include "model/input_files.hpp"
#include "model/printable.hpp"

namespace tilesim {

int CsvTable::column(std::string_view name) const {
  for (size_t c = 0; c < header.size(); ++c)
    if (header[c] == name) return static_cast<int>(c);
  return -1;
}

std::string printable_field(std::string_view text) {
  constexpr size_t kMax = 64;
  return printable(text, kMax);
}

void CsvTable::fail(int64_t line, int column, const std::string& what) const {
  if (column < 0) throw Error(fmt::format("{}: line {}: {}", origin, line, what));
  const size_t c = static_cast<size_t>(column);
  throw Error(fmt::format(
      "{}: line {}, column {}{}: {}", origin, line, column + 1,
      c < header.size() ? fmt::format(" ({})", printable_field(header[c])) : std::string(), what));
}

namespace {

// One pass over the text; `at(line, col)` errors before the header is known name no column.
class Parser {
 public:
  Parser(std::string_view text, const std::string& origin, const CsvLimits& limits)
      : s_(text), limits_(limits) {
    table_.origin = origin;
    if (s_.substr(0, 3) == "\xEF\xBB\xBF") pos_ = 3;
    if (s_.substr(0, 2) == "\xFF\xFE" || s_.substr(0, 2) == "\xFE\xFF")
      throw Error(origin +
                  ": the file is UTF-16 (it starts with a UTF-16 byte-order mark); msprof writes "
                  "UTF-8 (convert it: iconv -f UTF-16 -t UTF-8)");
  }

  CsvTable run() {
    bool header = true;
    while (pos_ < s_.size()) {
      if (const size_t end = line_end_at()) {  // an empty line
        pos_ += end;
        ++line_;
        continue;
      }
      CsvRow row;
      row.line = line_;
      read_record(row.fields);
      if (header) {
        table_.header = std::move(row.fields);
        for (size_t c = 0; c < table_.header.size(); ++c)
          if (table_.header[c].find('\0') != std::string::npos)
            fail(row.line, -1,
                 "a NUL byte in the header: the file is UTF-16 or binary, not the UTF-8 text "
                 "msprof writes");
        std::set<std::string> seen;
        for (size_t c = 0; c < table_.header.size(); ++c)
          if (!seen.insert(table_.header[c]).second)
            fail(
                row.line, static_cast<int>(c),
                fmt::format("'{}' appears twice in the header", printable_field(table_.header[c])));
        header = false;
        continue;
      }
      if (row.fields.size() != table_.header.size())
        fail(row.line, static_cast<int>(std::min(row.fields.size(), table_.header.size())),
             fmt::format("the record has {} fields, the header {}", row.fields.size(),
                         table_.header.size()));
      if (table_.rows.size() == limits_.max_rows)
        fail(row.line, -1,
             fmt::format("more than {} records (the limit for one file)", limits_.max_rows));
      table_.rows.push_back(std::move(row));
    }
    if (header)
      throw Error(table_.origin + ": empty file (a CSV file starts with its header line)");
    return std::move(table_);
  }

 private:
  [[noreturn]] void fail(int64_t line, int column, const std::string& what) const {
    // Before the header is read, columns have no names yet.
    table_.fail(line, column, what);
  }

  // Reads one record from pos_ up to and including its line end (or the end of the text).
  void read_record(std::vector<std::string>& fields) {
    while (true) {
      if (fields.size() == limits_.max_columns)
        fail(line_, static_cast<int>(fields.size()),
             fmt::format("more than {} fields in a record (the limit)", limits_.max_columns));
      fields.push_back(read_field(static_cast<int>(fields.size())));
      if (pos_ >= s_.size()) return;
      if (s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      pos_ += line_end_at();
      ++line_;
      return;
    }
  }

  void append(std::string& field, char c, int column) {
    if (field.size() == limits_.max_field_bytes)
      fail(line_, column,
           fmt::format("a field over {} bytes (the limit)", limits_.max_field_bytes));
    field += c;
  }

  // The length of the line end at pos_: LF, CRLF or a lone CR (old Mac tools), else 0.
  size_t line_end_at() const {
    if (pos_ >= s_.size()) return 0;
    if (s_[pos_] == '\n') return 1;
    if (s_[pos_] == '\r') return pos_ + 1 < s_.size() && s_[pos_ + 1] == '\n' ? 2 : 1;
    return 0;
  }

  bool at_field_end() const { return pos_ >= s_.size() || s_[pos_] == ',' || line_end_at() > 0; }

  std::string read_field(int column) {
    std::string field;
    if (pos_ < s_.size() && s_[pos_] == '"') {
      const int64_t open_line = line_;
      ++pos_;
      while (true) {
        if (pos_ >= s_.size())
          fail(open_line, column, "a quoted field is never closed (no closing '\"')");
        const char c = s_[pos_++];
        if (c == '"') {
          if (pos_ < s_.size() && s_[pos_] == '"') {
            append(field, '"', column);
            ++pos_;
            continue;
          }
          if (!at_field_end())
            fail(line_, column,
                 "text after the closing quote of a quoted field (a quote inside a field is "
                 "written \"\")");
          return field;
        }
        if (c == '\n' || (c == '\r' && (pos_ >= s_.size() || s_[pos_] != '\n'))) ++line_;
        append(field, c, column);
      }
    }
    while (!at_field_end()) {
      const char c = s_[pos_++];
      if (c == '"')
        fail(line_, column,
             "a quote inside an unquoted field (quote the whole field and write the quote \"\")");
      append(field, c, column);
    }
    return field;
  }

  std::string_view s_;
  CsvLimits limits_;
  CsvTable table_;
  size_t pos_ = 0;
  int64_t line_ = 1;
};

}  // namespace

CsvTable parse_csv(std::string_view text, const std::string& origin, const CsvLimits& limits) {
  return Parser(text, origin, limits).run();
}

CsvTable load_csv(const std::filesystem::path& file, const CsvLimits& limits) {
  const std::string name = file.string();
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) throw Error(name + ": no such file");
  if (!std::filesystem::is_regular_file(file, ec))
    throw Error(name + ": not a regular file (a CSV file is expected)");
  const uintmax_t size = std::filesystem::file_size(file, ec);
  if (ec) throw Error(name + ": cannot read its size: " + ec.message());
  if (size > limits.max_bytes)
    throw Error(fmt::format("{}: {} bytes, over the {} bytes a CSV file may have (the limit)", name,
                            size, limits.max_bytes));
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error(name + ": cannot open the CSV file");
  note_input_file(file);
  std::string text(static_cast<size_t>(size), '\0');
  in.read(text.data(), static_cast<std::streamsize>(size));
  if (in.gcount() != static_cast<std::streamsize>(size))
    throw Error(name + ": cannot read the CSV file");
  return parse_csv(text, name, limits);
}

}  // namespace tilesim

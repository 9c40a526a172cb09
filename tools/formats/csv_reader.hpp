#pragma once
// A small RFC 4180 CSV reader for the profiles boards write (msprof's op_summary): a header line,
// then records of comma-separated fields; a field may be quoted ("..."), a quote inside doubled
// (""), and a quoted field may hold commas and line breaks. Lines end in LF, CRLF or a lone CR; a
// UTF-8 byte order mark before the header is skipped, and so are empty lines (no characters at
// all). Every record must have the header's field count. A UTF-16 file (its byte-order mark, or
// NUL bytes in the header) is refused as such.
//
// Work is bounded before it starts (CsvLimits): the file size, the records, the fields per
// record and the bytes per field. Every rejection is one line naming the file, the line and the
// column: "<file>: line L, column C: <what>" (columns count from 1; with a header name, "column C
// (name)"). A path that is not a regular file, an empty file, an unclosed quote, text after a
// closing quote, a quote inside an unquoted field and a ragged record are errors.

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace tilesim {

struct CsvLimits {
  uintmax_t max_bytes = uintmax_t{512} << 20;  // 512 MiB: a large training profile
  size_t max_rows = size_t{1} << 20;
  size_t max_columns = 4096;
  size_t max_field_bytes = size_t{1} << 16;
};

struct CsvRow {
  int64_t line = 0;  // where the record starts (1-based)
  std::vector<std::string> fields;
};

struct CsvTable {
  std::string origin;  // the file, as named
  std::vector<std::string> header;
  std::vector<CsvRow> rows;

  // The index of the column named exactly `name`, or -1.
  int column(std::string_view name) const;
  // "<origin>: line L, column C (name): what" as a tilesim::Error (column < 0: the whole line).
  [[noreturn]] void fail(int64_t line, int column, const std::string& what) const;
};

// A field's text as it may appear in a one-line message: control characters escaped (\n, \r,
// \t, \xNN) and cut to 64 bytes ("...").
std::string printable_field(std::string_view text);

CsvTable parse_csv(std::string_view text, const std::string& origin, const CsvLimits& limits = {});
CsvTable load_csv(const std::filesystem::path& file, const CsvLimits& limits = {});

}  // namespace tilesim

#pragma once
// The one JSON reader every config parser uses (hardware files, run and sweep configs, kernel
// params, measurements, PyPTO graphs and swimlanes). A JsonReader is one value of a document
// together with where it is (file and key path), so every rejection reads
// "<file>: <key.path>: <what is wrong> (<what is allowed>)" and carries its ErrorKind.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/dims.hpp"
#include "model/error.hpp"

namespace tilesim {

class JsonReader {
 public:
  // `origin` names the document (usually its file); `path` is the key path of `value` in it.
  JsonReader(const nlohmann::json& value, std::string origin, std::string path = "",
             ErrorKind kind = ErrorKind::kInput);

  // Reads and parses a file; `what` says what the file should be ("run config"): a JSON object.
  // Refuses, before parsing, a non-regular file, a file over `max_bytes` and one whose document is
  // not an object (a trace given as a config); then nesting deeper than kMaxJsonDepth and a key
  // repeated in one object. Parsing takes about ten times the file's size in memory: the default
  // bound keeps a document under ~1 GB; running out anyway is an error naming the file.
  static constexpr int kMaxJsonDepth = 64;
  static constexpr uint64_t kMaxJsonFileBytes = uint64_t{64} << 20;
  static nlohmann::json parse_file(const std::filesystem::path& file, const std::string& what,
                                   uint64_t max_bytes = kMaxJsonFileBytes);

  const nlohmann::json& json() const { return *value_; }
  const std::string& origin() const { return origin_; }
  const std::string& path() const { return path_; }  // "" for the top level
  std::string where() const;                         // the path, or "top level"
  // The kind of error this reader's rejections carry (kInput, or kParams inside an op's params).
  JsonReader with_kind(ErrorKind kind) const;

  [[noreturn]] void fail(const std::string& what) const;
  [[noreturn]] void fail(const std::string& what, ErrorKind kind) const;
  // Fails naming the member `key` of this object, present or not ("missing: ...").
  [[noreturn]] void fail_at(const std::string& key, const std::string& what) const;

  // Objects: members, rejecting keys outside `allowed` (listed in the message). A document's top
  // level may also carry "$schema" (its JSON Schema, for editors), which readers ignore.
  void expect_object() const;
  void check_keys(const std::vector<std::string>& allowed) const;
  bool has(const std::string& key) const;
  JsonReader at(const std::string& key) const;  // the member; fails "missing" if absent
  std::optional<JsonReader> find(const std::string& key) const;
  void for_each_member(const std::function<void(const std::string&, const JsonReader&)>& f) const;

  // Arrays: elements with their index in the path.
  std::vector<JsonReader> items() const;

  // Typed values; out-of-range or wrong-typed values fail naming the allowed range.
  std::string string() const;
  std::string one_of(const std::vector<std::string>& allowed) const;
  bool boolean() const;
  int64_t integer(int64_t min = std::numeric_limits<int64_t>::min(),
                  int64_t max = std::numeric_limits<int64_t>::max()) const;
  double number(double min = -std::numeric_limits<double>::infinity(),
                double max = std::numeric_limits<double>::infinity()) const;
  // A non-empty array of positive integers; `rank` > 0 requires exactly that many.
  Dims positive_ints(size_t rank = 0) const;

  // Optional members with a default.
  std::string string_or(const std::string& key, const std::string& fallback) const;
  bool boolean_or(const std::string& key, bool fallback) const;
  int64_t integer_or(const std::string& key, int64_t fallback,
                     int64_t min = std::numeric_limits<int64_t>::min(),
                     int64_t max = std::numeric_limits<int64_t>::max()) const;
  double number_or(const std::string& key, double fallback,
                   double min = -std::numeric_limits<double>::infinity(),
                   double max = std::numeric_limits<double>::infinity()) const;

 private:
  std::string child_path(const std::string& key) const;

  const nlohmann::json* value_;
  std::string origin_;
  std::string path_;
  ErrorKind kind_;
};

}  // namespace tilesim

#include "model/json_reader.hpp"
#include "model/input_files.hpp"
#include "model/printable.hpp"

#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <set>
#include <vector>

namespace tilesim {

namespace {

// A value as a message quotes it: one line, cut short (a message never quotes a whole document).
std::string shown(const nlohmann::json& v) {
  constexpr size_t kShownBytes = 120;
  if (v.is_array() && v.size() > 64) return fmt::format("an array of {} items", v.size());
  if (v.is_object() && v.size() > 64) return fmt::format("an object of {} keys", v.size());
  return printable(v.dump(), kShownBytes);
}

std::string range_text(double min, double max) {
  const bool lo = std::isfinite(min), hi = std::isfinite(max);
  if (lo && hi) return fmt::format("{} to {}", min, max);
  if (lo) return fmt::format(">= {}", min);
  if (hi) return fmt::format("<= {}", max);
  return "any number";
}

std::string range_text(int64_t min, int64_t max) {
  constexpr auto kMin = std::numeric_limits<int64_t>::min();
  constexpr auto kMax = std::numeric_limits<int64_t>::max();
  if (min != kMin && max != kMax) return fmt::format("{}..{}", min, max);
  if (min != kMin) return fmt::format(">= {}", min);
  if (max != kMax) return fmt::format("<= {}", max);
  return "any integer";
}

// Nesting depth and repeated keys, checked as SAX events go by (no DOM is built).
class StructureCheck : public nlohmann::json_sax<nlohmann::json> {
 public:
  StructureCheck(std::string file, std::string what)
      : file_(std::move(file)), what_(std::move(what)) {}

  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override {
    open();
    keys_.emplace_back();
    return true;
  }
  bool key(string_t& k) override {
    if (!keys_.back().insert(k).second)
      throw Error(fmt::format("{}: {}: key \"{}\" appears twice in one object (each key once)",
                              file_, what_, k));
    return true;
  }
  bool end_object() override {
    keys_.pop_back();
    --depth_;
    return true;
  }
  bool start_array(std::size_t) override {
    open();
    return true;
  }
  bool end_array() override {
    --depth_;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    out_of_range_ = dynamic_cast<const nlohmann::json::out_of_range*>(&e) != nullptr;
    message_ = e.what();
    return false;
  }
  // The parse error as one line, as the DOM parse would have raised it.
  [[noreturn]] void fail() const {
    if (out_of_range_)
      throw Error(file_ + ": a number in the " + what_ + " is out of range: " + message_);
    throw Error(file_ + ": malformed JSON in " + what_ + ": " + message_);
  }

 private:
  void open() {
    if (depth_++ >= JsonReader::kMaxJsonDepth)
      throw Error(fmt::format("{}: {} nests deeper than {} levels (allowed: at most {})", file_,
                              what_, JsonReader::kMaxJsonDepth, JsonReader::kMaxJsonDepth));
  }

  std::string file_, what_;
  int depth_ = 0;
  std::vector<std::set<std::string>> keys_;  // per open object
  bool out_of_range_ = false;
  std::string message_;
};

}  // namespace

JsonReader::JsonReader(const nlohmann::json& value, std::string origin, std::string path,
                       ErrorKind kind)
    : value_(&value), origin_(std::move(origin)), path_(std::move(path)), kind_(kind) {}

nlohmann::json JsonReader::parse_file(const std::filesystem::path& file, const std::string& what,
                                      uint64_t max_bytes) {
  std::error_code ec;
  if (std::filesystem::exists(file, ec) && !std::filesystem::is_regular_file(file, ec))
    throw Error(file.string() + ": not a regular file (a " + what + " is a JSON file)");
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error(file.string() + ": cannot open " + what);
  note_input_file(file);
  const uint64_t bytes = std::filesystem::file_size(file, ec);
  const auto size_text = [&] { return fmt::format("{:.0f} MB", static_cast<double>(bytes) / 1e6); };
  if (!ec && bytes > max_bytes)
    throw Error(
        fmt::format("{}: {} ({} bytes) is more than a {} holds (at most {} MiB): is it the "
                    "right file?",
                    file.string(), size_text(), bytes, what, max_bytes >> 20));
  // The document's first character says whether it is an object at all (a trace given as a run
  // config is an array), before a byte more is read.
  char first = ' ';
  while (in.get(first) && (first == ' ' || first == '\n' || first == '\r' || first == '\t')) {
  }
  if (in && first != '{' && first != '\xEF')  // '\xEF': a byte-order mark, then the document
    throw Error(
        fmt::format("{}: {} is not a {} (expected a JSON object, got {})", file.string(),
                    bytes >= 1000000 ? size_text() : fmt::format("{} bytes", bytes), what,
                    first == '[' ? "an array" : "'" + printable(std::string(1, first)) + "...'"));
  in.clear();
  in.seekg(0);
  try {
    const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    // A first pass without a DOM refuses nesting deeper than kMaxJsonDepth and a key repeated in
    // one object (no config nests that deep; a repeated key would silently keep its last value).
    // nlohmann's callback parser would do it in one pass, but it rescans the enclosing array at
    // every object's end: quadratic in an array of many objects (a program of 10^5 ops).
    StructureCheck check(file.string(), what);
    if (!nlohmann::json::sax_parse(text, &check)) check.fail();
    return nlohmann::json::parse(text);
  } catch (const std::bad_alloc&) {
    throw Error(
        fmt::format("{}: out of memory reading this {} ({})", file.string(), what, size_text()));
  }
}

std::string JsonReader::where() const {
  return path_.empty() ? "top level" : path_;
}

JsonReader JsonReader::with_kind(ErrorKind kind) const {
  JsonReader r = *this;
  r.kind_ = kind;
  return r;
}

void JsonReader::fail(const std::string& what) const {
  fail(what, kind_);
}

void JsonReader::fail(const std::string& what, ErrorKind kind) const {
  throw Error(origin_ + ": " + where() + ": " + what, kind, path_);
}

void JsonReader::fail_at(const std::string& key, const std::string& what) const {
  throw Error(origin_ + ": " + child_path(key) + ": " + what, kind_, child_path(key));
}

std::string JsonReader::child_path(const std::string& key) const {
  return path_.empty() ? key : path_ + "." + key;
}

void JsonReader::expect_object() const {
  if (!value_->is_object()) fail("expected a JSON object, got " + shown(*value_));
}

void JsonReader::check_keys(const std::vector<std::string>& allowed) const {
  expect_object();
  for (auto it = value_->begin(); it != value_->end(); ++it)
    if (std::find(allowed.begin(), allowed.end(), it.key()) == allowed.end() &&
        !(path_.empty() && it.key() == "$schema"))
      JsonReader(it.value(), origin_, child_path(it.key()), kind_)
          .fail(fmt::format("unknown key (allowed: {})", fmt::join(allowed, ", ")));
}

bool JsonReader::has(const std::string& key) const {
  return value_->is_object() && value_->contains(key);
}

JsonReader JsonReader::at(const std::string& key) const {
  expect_object();
  const auto it = value_->find(key);
  if (it == value_->end()) fail_at(key, "missing");
  return JsonReader(*it, origin_, child_path(key), kind_);
}

std::optional<JsonReader> JsonReader::find(const std::string& key) const {
  if (!has(key)) return std::nullopt;
  return at(key);
}

void JsonReader::for_each_member(
    const std::function<void(const std::string&, const JsonReader&)>& f) const {
  expect_object();
  for (auto it = value_->begin(); it != value_->end(); ++it)
    f(it.key(), JsonReader(it.value(), origin_, child_path(it.key()), kind_));
}

std::vector<JsonReader> JsonReader::items() const {
  if (!value_->is_array()) fail("expected an array, got " + shown(*value_));
  std::vector<JsonReader> out;
  out.reserve(value_->size());
  for (size_t i = 0; i < value_->size(); ++i)
    out.emplace_back((*value_)[i], origin_, fmt::format("{}[{}]", path_, i), kind_);
  return out;
}

std::string JsonReader::string() const {
  if (!value_->is_string()) fail("expected a string, got " + shown(*value_));
  return value_->get<std::string>();
}

std::string JsonReader::one_of(const std::vector<std::string>& allowed) const {
  if (!value_->is_string() ||
      std::find(allowed.begin(), allowed.end(), value_->get<std::string>()) == allowed.end())
    fail(fmt::format("{} is not allowed (allowed: {})", shown(*value_), fmt::join(allowed, ", ")));
  return value_->get<std::string>();
}

bool JsonReader::boolean() const {
  if (!value_->is_boolean()) fail("expected true or false, got " + shown(*value_));
  return value_->get<bool>();
}

int64_t JsonReader::integer(int64_t min, int64_t max) const {
  if (!value_->is_number_integer())
    fail(fmt::format("expected an integer ({}), got {}", range_text(min, max), shown(*value_)));
  // An unsigned value above INT64_MAX (2^64 - 1 reads as -1 through int64_t) is out of range as
  // written.
  if (value_->is_number_unsigned() &&
      value_->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    fail(fmt::format("out of range: {} (allowed {})", shown(*value_), range_text(min, max)));
  const auto v = value_->get<int64_t>();
  if (v < min || v > max)
    fail(fmt::format("out of range: {} (allowed {})", v, range_text(min, max)));
  return v;
}

double JsonReader::number(double min, double max) const {
  if (!value_->is_number())
    fail(fmt::format("expected a number ({}), got {}", range_text(min, max), shown(*value_)));
  const double v = value_->get<double>();
  if (!std::isfinite(v) || v < min || v > max)
    fail(fmt::format("out of range: {} (allowed {})", shown(*value_), range_text(min, max)));
  return v;
}

Dims JsonReader::positive_ints(size_t rank) const {
  const bool shape_ok = value_->is_array() && !value_->empty() &&
                        (rank == 0 || value_->size() == rank) &&
                        std::all_of(value_->begin(), value_->end(), [](const nlohmann::json& x) {
                          return x.is_number_integer() && x.get<int64_t>() > 0;
                        });
  if (!shape_ok)
    fail(rank == 0 ? "expected a non-empty array of positive integers, got " + shown(*value_)
                   : fmt::format("expected an array of {} positive integers, got {}", rank,
                                 shown(*value_)));
  Dims d;
  for (const nlohmann::json& x : *value_) d.push_back(x.get<int64_t>());
  return d;
}

std::string JsonReader::string_or(const std::string& key, const std::string& fallback) const {
  return has(key) ? at(key).string() : fallback;
}

bool JsonReader::boolean_or(const std::string& key, bool fallback) const {
  return has(key) ? at(key).boolean() : fallback;
}

int64_t JsonReader::integer_or(const std::string& key, int64_t fallback, int64_t min,
                               int64_t max) const {
  return has(key) ? at(key).integer(min, max) : fallback;
}

double JsonReader::number_or(const std::string& key, double fallback, double min,
                             double max) const {
  return has(key) ? at(key).number(min, max) : fallback;
}

}  // namespace tilesim

#include "tools/formats/json_stream.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <fstream>
#include <sstream>
#include <vector>

#include "model/error.hpp"

namespace tilesim {

namespace {

namespace od = simdjson::ondemand;

// Text parsed at once: its structural index is about four times as large, so a batch costs
// ~20 MB however large the file.
constexpr size_t kBatchBytes = size_t{4} << 20;
constexpr size_t kReadBytes = size_t{1} << 20;
constexpr int kMaxDepth = JsonReader::kMaxJsonDepth;

JsonScalar::Type type_of_first(char c) {
  switch (c) {
    case '{':
      return JsonScalar::Type::kObject;
    case '"':
      return JsonScalar::Type::kString;
    case 't':
    case 'f':
      return JsonScalar::Type::kBool;
    case 'n':
      return JsonScalar::Type::kNull;
    default:
      return JsonScalar::Type::kDouble;
  }
}

// Whether a document has been read to its end (simdjson 3.0 has no document::at_end).
bool at_end(od::document& doc) {
  return doc.current_location().error() == simdjson::OUT_OF_BOUNDS;
}

// Bytes the batch scanner stops at: inside a string, its end or an escape; outside, structure.
constexpr auto kInString = [] {
  std::array<bool, 256> t{};
  t['"'] = t['\\'] = true;
  return t;
}();
constexpr auto kStructural = [] {
  std::array<bool, 256> t{};
  for (const unsigned char c : std::string_view("\"[]{},")) t[c] = true;
  return t;
}();

bool is_space(char c) {
  return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

}  // namespace

const char* JsonScalar::type_name(Type t) {
  switch (t) {
    case Type::kNull:
      return "null";
    case Type::kBool:
      return "boolean";
    case Type::kString:
      return "string";
    case Type::kArray:
      return "array";
    case Type::kObject:
      return "object";
    default:
      return "number";
  }
}

double JsonScalar::number() const {
  return type == Type::kInt    ? static_cast<double>(i)
         : type == Type::kUint ? static_cast<double>(u)
                               : d;
}

nlohmann::json JsonScalar::to_json() const {
  switch (type) {
    case Type::kNull:
      return nullptr;
    case Type::kBool:
      return b;
    case Type::kInt:
      return i;
    case Type::kUint:
      return u;
    case Type::kDouble:
      return d;
    case Type::kString:
      return std::string(text);
    case Type::kArray:
      return "<an array>";
    case Type::kObject:
      return "<an object>";
    case Type::kHuge:
      break;
  }
  return std::string(text);
}

void JsonPlace::reject(const JsonScalar& v,
                       const std::function<void(const JsonReader&)>& check) const {
  if (v.type == JsonScalar::Type::kHuge)
    fail(fmt::format("out of range: {} (beyond double precision)", v.text));
  const nlohmann::json value = v.to_json();
  check(JsonReader(value, origin_, path_));
  throw InternalError(origin_ + ": " + path_ + ": a value was rejected and then accepted");
}

void JsonPlace::fail(const std::string& what, ErrorKind kind) const {
  throw Error(origin_ + ": " + (path_.empty() ? "top level" : path_) + ": " + what, kind);
}

JsonStream::JsonStream(std::filesystem::path file, std::string what)
    : file_(std::move(file)), origin_(file_.string()), what_(std::move(what)) {
  std::error_code ec;
  if (std::filesystem::exists(file_, ec) && !std::filesystem::is_regular_file(file_, ec))
    throw Error(origin_ + ": not a regular file (a " + what_ + " is a JSON file)");
}

JsonStream::JsonStream(std::string text, std::string origin, std::string what)
    : text_(std::move(text)), origin_(std::move(origin)), what_(std::move(what)) {}

std::unique_ptr<std::istream> JsonStream::open() const {
  if (text_) return std::make_unique<std::istringstream>(*text_);
  auto in = std::make_unique<std::ifstream>(file_, std::ios::binary);
  if (!*in) throw Error(origin_ + ": cannot open " + what_);
  return in;
}

void JsonStream::malformed(const std::string& why) const {
  throw Error(origin_ + ": malformed JSON in " + what_ + ": " + why);
}

void JsonStream::too_deep() const {
  throw Error(fmt::format("{}: {} nests deeper than {} levels (allowed: at most {})", origin_,
                          what_, kMaxDepth, kMaxDepth));
}

void JsonStream::check_new_key(std::string_view key, std::vector<std::string>& seen) const {
  if (std::find(seen.begin(), seen.end(), key) != seen.end()) repeated_key(key);
  seen.emplace_back(key);
}

void JsonStream::repeated_key(std::string_view key) const {
  throw Error(fmt::format("{}: {}: key \"{}\" appears twice in one object (each key once)", origin_,
                          what_, key));
}

od::field JsonStream::field(simdjson::simdjson_result<od::field> m) {
  if (m.error()) throw simdjson::simdjson_error(m.error());
  return std::move(m).value_unsafe();
}

std::string_view JsonStream::key(od::field& f) {
  // The raw key, unless it holds an escape (stage 1 has checked the closing quote is there).
  const char* begin = f.key().raw();
  const char* end = begin;
  while (*end != '"' && *end != '\\') ++end;
  if (*end == '"') return {begin, static_cast<size_t>(end - begin)};
  return f.unescaped_key().value();
}

JsonScalar JsonStream::scalar(od::value v) {
  JsonScalar s;
  switch (v.type().value()) {
    case od::json_type::array:
      s.type = JsonScalar::Type::kArray;
      break;
    case od::json_type::object:
      s.type = JsonScalar::Type::kObject;
      break;
    case od::json_type::string:
      s.type = JsonScalar::Type::kString;
      s.text = v.get_string().value();
      break;
    case od::json_type::boolean:
      s.type = JsonScalar::Type::kBool;
      s.b = v.get_bool().value();
      break;
    case od::json_type::null:
      if (!v.is_null().value()) throw simdjson::simdjson_error(simdjson::N_ATOM_ERROR);
      break;
    case od::json_type::number: {
      std::string_view raw = v.raw_json_token();
      while (!raw.empty() && is_space(raw.back())) raw.remove_suffix(1);
      s.text = raw;
      const auto n = v.get_number();
      if (!n.error()) {
        const od::number x = n.value_unsafe();
        switch (x.get_number_type()) {
          case od::number_type::signed_integer:
            s.type = JsonScalar::Type::kInt;
            s.i = x.get_int64();
            break;
          case od::number_type::unsigned_integer:
            s.type = JsonScalar::Type::kUint;
            s.u = x.get_uint64();
            break;
          case od::number_type::floating_point_number:
            s.type = JsonScalar::Type::kDouble;
            s.d = x.get_double();
            break;
        }
        break;
      }
      // An integer beyond 64 bits reads as a double (as the config reader does); a literal
      // beyond double range is kHuge; anything else is malformed.
      double d = 0;
      const auto [end, ec] = std::from_chars(raw.data(), raw.data() + raw.size(), d);
      if (end != raw.data() + raw.size()) throw simdjson::simdjson_error(n.error());
      s.type = ec == std::errc::result_out_of_range ? JsonScalar::Type::kHuge
                                                    : JsonScalar::Type::kDouble;
      s.d = d;
      break;
    }
  }
  return s;
}

void JsonStream::for_each_member(
    od::value object, const std::function<void(std::string_view, od::value)>& member) const {
  std::vector<std::string> seen;
  for (auto m : object.get_object()) {
    od::field f = field(m);
    const std::string_view k = key(f);
    check_new_key(k, seen);
    member(k, f.value());
  }
}

JsonScalar JsonStream::leaf(od::value v, int depth) const {
  const JsonScalar x = scalar(v);
  if (x.type == JsonScalar::Type::kArray || x.type == JsonScalar::Type::kObject)
    check_ignored(v, depth);
  return x;
}

void JsonStream::check_ignored(od::value v, int depth) const {
  if (depth > kMaxDepth) too_deep();
  switch (v.type().value()) {
    case od::json_type::array:
      for (auto item : v.get_array()) check_ignored(item.value(), depth + 1);
      break;
    case od::json_type::object:
      for_each_member(v, [&](std::string_view, od::value m) { check_ignored(m, depth + 1); });
      break;
    default:
      scalar(v);
  }
}

void JsonStream::for_each_element(const std::function<void(size_t, od::value)>& element,
                                  const std::function<void(JsonScalar::Type)>& not_array) {
  const auto source = open();
  std::istream& in = *source;
  std::string buf;       // text not yet parsed, from the current batch's first element
  size_t scanned = 0;    // buf[0, scanned) is scanned
  size_t cut = 0;        // a top-level comma in buf ending the batch (0: none yet)
  uint64_t dropped = 0;  // bytes of the file before buf
  bool started = false, closed = false, in_string = false, escaped = false;
  int depth = 0;
  size_t index = 0;

  // Parses buf[0, end) as the elements of an array; drops them (and the comma after) from buf.
  auto parse_batch = [&](size_t end) {
    simdjson::padded_string batch(end + 2);
    batch.data()[0] = '[';
    std::copy(buf.data(), buf.data() + end, batch.data() + 1);
    batch.data()[end + 1] = ']';
    try {
      od::document doc = parser_.iterate(batch);
      for (auto item : doc.get_array()) element(index++, item.value());
      if (!at_end(doc)) malformed(fmt::format("unexpected text near byte {}", dropped + end));
    } catch (const simdjson::simdjson_error& e) {
      malformed(fmt::format("{} (in the elements from byte {} on, element {} or later)", e.what(),
                            dropped, index));
    }
    const size_t next = std::min(end + 1, buf.size());
    buf.erase(0, next);
    dropped += next;
    scanned -= next;
  };

  std::vector<char> chunk(kReadBytes);
  size_t close_at = 0;  // the array's ']' in buf
  while (!closed) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    const auto got = static_cast<size_t>(in.gcount());
    if (got == 0) break;
    buf.append(chunk.data(), got);
    if (!started) {
      size_t p = 0;
      while (p < buf.size() && is_space(buf[p])) ++p;
      if (p == buf.size()) {
        dropped += buf.size();
        buf.clear();
        continue;
      }
      if (buf[p] != '[') {
        if (std::string_view("{\"tfn-0123456789").find(buf[p]) == std::string_view::npos)
          malformed(fmt::format("unexpected '{}' at byte {}", buf[p], dropped + p));
        not_array(type_of_first(buf[p]));
      }
      started = true;
      depth = 1;
      buf.erase(0, p + 1);
      dropped += p + 1;
    }
    // The structure outside strings: depth, and the top-level commas that may end a batch. The
    // bytes between the ones that matter are skipped by table.
    const char* const data = buf.data();
    const size_t size = buf.size();
    for (; scanned < size; ++scanned) {
      if (in_string) {
        if (escaped) {  // the character after a backslash
          escaped = false;
          continue;
        }
        while (scanned < size && !kInString[static_cast<unsigned char>(data[scanned])]) ++scanned;
        if (scanned == size) break;
        if (data[scanned] == '\\')
          escaped = true;
        else
          in_string = false;
        continue;
      }
      while (scanned < size && !kStructural[static_cast<unsigned char>(data[scanned])]) ++scanned;
      if (scanned == size) break;
      const char c = data[scanned];
      if (c == '"') {
        in_string = true;
      } else if (c == '[' || c == '{') {
        if (++depth > kMaxDepth) too_deep();
      } else if (c == ']' || c == '}') {
        if (--depth == 0) {
          if (c != ']')
            malformed(fmt::format("'}}' closes the array near byte {}", dropped + scanned));
          closed = true;
          close_at = scanned;
          break;
        }
      } else if (depth == 1) {  // a comma
        cut = scanned;
      }
    }
    if (!closed && cut > 0 && cut >= kBatchBytes) {
      parse_batch(cut);
      cut = 0;
    }
  }
  if (!started) malformed("the file is empty");
  if (!closed) malformed("unexpected end of file (the array is not closed)");
  parse_batch(close_at);  // drops the ']' too
  // Only white space may follow the array.
  auto only_space = [](std::string_view s) { return std::all_of(s.begin(), s.end(), is_space); };
  bool trailing = !only_space(buf);
  while (!trailing &&
         in.read(chunk.data(), static_cast<std::streamsize>(chunk.size())).gcount() > 0)
    trailing = !only_space(std::string_view(chunk.data(), static_cast<size_t>(in.gcount())));
  if (trailing) malformed("text after the top-level array");
}

void JsonStream::whole(const std::function<void(od::value)>& doc_fn,
                       const std::function<void(JsonScalar::Type)>& not_composite) {
  simdjson::padded_string text;
  if (text_)
    text = simdjson::padded_string(*text_);
  else if (simdjson::padded_string::load(file_.string()).get(text))
    throw Error(origin_ + ": cannot open " + what_);
  try {
    od::document doc = parser_.iterate(text);
    const od::json_type type = doc.type().value();
    if (type != od::json_type::array && type != od::json_type::object) {
      size_t p = 0;
      while (p < text.size() && is_space(text.data()[p])) ++p;
      not_composite(p < text.size() ? type_of_first(text.data()[p]) : JsonScalar::Type::kNull);
    }
    doc_fn(doc.get_value().value());
    if (!at_end(doc)) malformed("text after the top-level value");
  } catch (const simdjson::simdjson_error& e) {
    malformed(e.what());
  }
}

}  // namespace tilesim

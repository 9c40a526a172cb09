#include "tools/formats/json_stream.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <fstream>
#include <mutex>
#include <sstream>
#include <utility>
#include <vector>

#include <tbb/enumerable_thread_specific.h>
#include <tbb/info.h>
#include <tbb/parallel_pipeline.h>
#include <tbb/task_arena.h>

#include "model/error.hpp"
#include "model/input_files.hpp"
#include "tools/formats/json_array_scanner.hpp"

namespace tilesim {

namespace {

namespace od = simdjson::ondemand;

// Text parsed at once: its structural index is about four times as large, so a batch costs
// ~5 MB however large the file (per thread parsing).
constexpr size_t kBatchBytes = size_t{1} << 20;
constexpr size_t kReadBytes = size_t{256} << 10;
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
  if (v.type == JsonScalar::Type::kArray || v.type == JsonScalar::Type::kObject) {
    // The composite's contents were not kept: an empty one of its type is checked, and the
    // message names the type instead of showing the placeholder.
    const bool array = v.type == JsonScalar::Type::kArray;
    const nlohmann::json empty = array ? nlohmann::json::array() : nlohmann::json::object();
    try {
      check(JsonReader(empty, origin_, path_));
    } catch (const Error& e) {
      // The placeholder is shown first after "file: path: ".
      std::string what = e.what();
      const std::string prefix = origin_ + ": " + path_ + ": ";
      const size_t at =
          what.find(array ? "[]" : "{}", what.starts_with(prefix) ? prefix.size() : 0);
      if (at != std::string::npos) what.replace(at, 2, array ? "an array" : "an object");
      throw Error(what, e.kind(), e.key());
    }
    throw InternalError(origin_ + ": " + path_ + ": a composite was rejected and then accepted");
  }
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

uint64_t JsonStream::size_bytes() const {
  if (text_) return text_->size();
  std::error_code ec;
  const uintmax_t n = std::filesystem::file_size(file_, ec);
  return ec ? 0 : n;
}

std::unique_ptr<std::istream> JsonStream::open() const {
  if (text_) return std::make_unique<std::istringstream>(*text_);
  auto in = std::make_unique<std::ifstream>(file_, std::ios::binary);
  if (!*in) throw Error(origin_ + ": cannot open " + what_);
  note_input_file(file_);
  return in;
}

namespace {
constexpr std::string_view kUtf8Bom = "\xEF\xBB\xBF";
}  // namespace

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

// What for_each_batch does, in steps: the file read and cut into batches of whole elements (in
// order), each batch parsed into its reader (in parallel), and handed over (in order).
class JsonStream::BatchPipeline {
 public:
  BatchPipeline(const JsonStream& stream, const BatchOpen& open_batch, const BatchDone& done,
                const std::function<void(JsonScalar::Type)>& not_array)
      : stream_(stream),
        source_(stream.open()),
        in_(*source_),
        open_batch_(open_batch),
        done_(done),
        not_array_(not_array),
        scan_(kMaxDepth) {}
  void run(int threads);

 private:
  // One batch of whole elements on its way through the pipeline: its text (wrapped in '[' ']'),
  // where it starts, and what became of it.
  struct Batch {
    std::vector<char> text;  // `size` bytes and simdjson's padding (empty: no text)
    size_t size = 0;
    uint64_t first_byte = 0;  // of its first element, in the file
    size_t first_index = 0;   // its first element's index
    size_t elements = 0;
    // Top-level commas inside it that the cutting saw last in a read (text position, elements
    // before it): where it splits into parts parsed one by one (parse_parts).
    std::vector<std::pair<size_t, size_t>> parts;
    std::unique_ptr<JsonBatchReader> reader;
    std::exception_ptr error;  // reading the text, or the file after the last batch, failed
  };

  // Batch text buffers, reused: a fresh one per batch would be fresh pages to fault in.
  class BufferPool {
   public:
    std::vector<char> get(size_t size) {
      std::vector<char> b;
      {
        const std::lock_guard lock(mutex_);
        if (!free_.empty()) {
          b = std::move(free_.back());
          free_.pop_back();
        }
      }
      if (b.size() < size) b.resize(size);
      return b;
    }
    void put(std::vector<char> b) {
      if (b.empty()) return;
      const std::lock_guard lock(mutex_);
      free_.push_back(std::move(b));
    }

   private:
    std::mutex mutex_;
    std::vector<std::vector<char>> free_;
  };

  std::shared_ptr<Batch> take(size_t end, size_t elements);
  bool open_array();
  std::shared_ptr<Batch> next_batch();
  void check_trailing();
  void parse(Batch& b);
  bool parse_parts(Batch& b);
  std::shared_ptr<Batch> cut_stage(tbb::flow_control& fc);
  std::shared_ptr<Batch> parse_stage(std::shared_ptr<Batch> b);
  void done_stage(std::shared_ptr<Batch> b);

  const JsonStream& stream_;
  const std::unique_ptr<std::istream> source_;
  std::istream& in_;
  const BatchOpen& open_batch_;
  const BatchDone& done_;
  const std::function<void(JsonScalar::Type)>& not_array_;
  std::string buf_;  // text not yet cut into a batch, from the next batch's first element
  std::vector<std::pair<size_t, size_t>> cuts_;  // the last comma of each read: (at, commas before)
  size_t scanned_ = 0;                           // buf_[0, scanned_) is scanned
  uint64_t dropped_ = 0;                         // bytes of the file before buf_
  size_t next_index_ = 0;
  bool started_ = false, finished_ = false;
  JsonArrayScanner scan_;
  BufferPool texts_;
  std::vector<char> chunk_ = std::vector<char>(kReadBytes);
  tbb::enumerable_thread_specific<od::parser> parsers_;
  std::atomic<bool> stopped_ = false;  // by an error: nothing more is cut or parsed
  std::exception_ptr first_error_;
};

// The elements in buf_[0, end) as a batch; dropped from buf_ with the comma after them.
std::shared_ptr<JsonStream::BatchPipeline::Batch> JsonStream::BatchPipeline::take(size_t end,
                                                                                  size_t elements) {
  auto b = std::make_shared<Batch>();
  b->text = texts_.get(end + 2 + simdjson::SIMDJSON_PADDING);
  b->size = end + 2;
  char* t = b->text.data();
  t[0] = '[';
  std::copy(buf_.data(), buf_.data() + end, t + 1);
  t[end + 1] = ']';
  b->first_byte = dropped_;
  b->first_index = next_index_;
  b->elements = elements;
  for (const auto& [at, commas] : cuts_)
    if (at < end) b->parts.emplace_back(at + 1, commas + 1);
  cuts_.clear();
  next_index_ += elements;
  const size_t next = std::min(end + 1, buf_.size());
  buf_.erase(0, next);
  dropped_ += next;
  scanned_ -= next;
  scan_.drop(next, elements);
  return b;
}

// Before the top-level value: skips white space (and a byte-order mark) and drops the array's
// '[', refusing any other value. False while all that was read is white space.
bool JsonStream::BatchPipeline::open_array() {
  size_t p = 0;
  while (p < buf_.size() && is_space(buf_[p])) ++p;
  // A UTF-8 byte-order mark (some Windows tools write one) is not part of the JSON.
  if (dropped_ == 0 && p == 0 && buf_.rfind(kUtf8Bom, 0) == 0) p = kUtf8Bom.size();
  while (p < buf_.size() && is_space(buf_[p])) ++p;
  if (p == buf_.size()) {
    dropped_ += buf_.size();
    buf_.clear();
    return false;
  }
  if (buf_[p] != '[') {
    if (std::string_view("{\"tfn-0123456789").find(buf_[p]) == std::string_view::npos)
      stream_.malformed(fmt::format("unexpected '{}' at byte {}", buf_[p], dropped_ + p));
    not_array_(type_of_first(buf_[p]));
  }
  started_ = true;
  buf_.erase(0, p + 1);
  dropped_ += p + 1;
  return true;
}

// The next batch, or the end (null): reads and scans the file until a batch is cut.
std::shared_ptr<JsonStream::BatchPipeline::Batch> JsonStream::BatchPipeline::next_batch() {
  bool at_end = false;
  while (!scan_.closed()) {
    if (scan_.cut() > 0 && scan_.cut() >= kBatchBytes)
      return take(scan_.cut(), scan_.commas_before_cut() + 1);
    if (at_end) break;
    in_.read(chunk_.data(), static_cast<std::streamsize>(chunk_.size()));
    const auto got = static_cast<size_t>(in_.gcount());
    at_end = got == 0;
    buf_.append(chunk_.data(), got);
    if (!started_) {
      if (at_end) break;
      if (!open_array()) continue;
    }
    scan_.scan(buf_.data(), buf_.size(), scanned_, at_end);
    if (scan_.stop() == JsonArrayScanner::Stop::kTooDeep) stream_.too_deep();
    if (scan_.stop() == JsonArrayScanner::Stop::kClosedByBrace)
      stream_.malformed(fmt::format("'}}' closes the array near byte {}", dropped_ + scanned_));
    if (scan_.cut() > 0 && (cuts_.empty() || scan_.cut() > cuts_.back().first))
      cuts_.emplace_back(scan_.cut(), scan_.commas_before_cut());
  }
  if (!finished_) {  // the last batch (its ']' dropped too)
    finished_ = true;
    if (!started_) stream_.malformed("the file is empty");
    if (!scan_.closed()) stream_.malformed("unexpected end of file (the array is not closed)");
    return take(scan_.close_at(), scan_.commas() + 1);
  }
  check_trailing();
  return nullptr;
}

// After the array, only white space may follow.
void JsonStream::BatchPipeline::check_trailing() {
  auto only_space = [](std::string_view s) { return std::all_of(s.begin(), s.end(), is_space); };
  bool trailing = !only_space(buf_);
  buf_.clear();
  while (!trailing &&
         in_.read(chunk_.data(), static_cast<std::streamsize>(chunk_.size())).gcount() > 0)
    trailing = !only_space(std::string_view(chunk_.data(), static_cast<size_t>(in_.gcount())));
  if (trailing) stream_.malformed("text after the top-level array");
}

// Parses a batch part by part, each part's text and structural index small enough to stay in
// the core's cache (a whole batch's index is ~4 MB): each part's commas become brackets while it
// is parsed. False, the text as it was and no reader kept, when any part fails or does not hold
// the elements the cutting counted: parse() then reads the batch whole, for the same messages.
bool JsonStream::BatchPipeline::parse_parts(Batch& b) {
  od::parser& parser = parsers_.local();
  size_t longest = 0, begin = 0;
  for (const auto& part : b.parts) {
    longest = std::max(longest, part.first + 1 - begin);
    begin = part.first;
  }
  longest = std::max(longest, b.size - begin);
  if (parser.capacity() < longest && parser.allocate(longest) != simdjson::SUCCESS) return false;
  std::unique_ptr<JsonBatchReader> reader = open_batch_(b.first_index);
  reader->bytes = b.size;
  char* t = b.text.data();
  size_t index = b.first_index;
  begin = 0;
  for (size_t k = 0; k <= b.parts.size(); ++k) {
    const size_t end = k < b.parts.size() ? b.parts[k].first : b.size - 1;  // its ']'
    const size_t last =
        b.first_index + (k < b.parts.size() ? b.parts[k].second : b.elements);  // past its last
    const char open = t[begin], close = t[end];
    t[begin] = '[';
    t[end] = ']';
    bool ok = false;
    try {
      od::document doc = parser.iterate(t + begin, end + 1 - begin, b.text.size() - begin);
      for (auto item : doc.get_array()) {
        if (index == last) break;
        reader->element(index++, item.value());
      }
      ok = index == last && at_end(doc);
    } catch (...) {
    }
    t[begin] = open;
    t[end] = close;
    if (!ok) return false;
    begin = end;
  }
  b.reader = std::move(reader);
  return true;
}

// Parses a batch's elements into its reader; an error is kept in the batch.
void JsonStream::BatchPipeline::parse(Batch& b) {
  if (!b.parts.empty() && parse_parts(b)) return;
  b.reader = open_batch_(b.first_index);
  b.reader->bytes = b.size;
  size_t index = b.first_index;
  try {
    od::parser& parser = parsers_.local();
    // Room for a whole batch at once, not grown batch by batch.
    if (parser.capacity() < kBatchBytes + kReadBytes + 2 &&
        parser.allocate(kBatchBytes + kReadBytes + 2) != simdjson::SUCCESS)
      throw std::bad_alloc();
    od::document doc = parser.iterate(b.text.data(), b.size, b.text.size());
    for (auto item : doc.get_array()) b.reader->element(index++, item.value());
    if (!at_end(doc))
      stream_.malformed(fmt::format("unexpected text near byte {}", b.first_byte + b.size - 2));
  } catch (const simdjson::simdjson_error& e) {
    try {
      stream_.malformed(fmt::format("{} (in the elements from byte {} on, element {} or later)",
                                    e.what(), b.first_byte, index));
    } catch (...) {
      b.error = std::current_exception();
    }
  } catch (...) {
    b.error = std::current_exception();
  }
}

// Stage 1 (in order): the next batch, or a batch holding the error that stopped the cutting.
std::shared_ptr<JsonStream::BatchPipeline::Batch> JsonStream::BatchPipeline::cut_stage(
    tbb::flow_control& fc) {
  if (stopped_) {
    fc.stop();
    return nullptr;
  }
  std::shared_ptr<Batch> b;
  try {
    b = next_batch();
    if (!b) {
      fc.stop();
      return nullptr;
    }
  } catch (...) {
    b = std::make_shared<Batch>();
    b->error = std::current_exception();
    stopped_ = true;
  }
  return b;
}

// Stage 2 (in parallel): the batch parsed, its text given back to the pool.
std::shared_ptr<JsonStream::BatchPipeline::Batch> JsonStream::BatchPipeline::parse_stage(
    std::shared_ptr<Batch> b) {
  if (!b->text.empty() && !stopped_) parse(*b);
  texts_.put(std::move(b->text));
  return b;
}

// Stage 3 (in order): the batch handed over; the first error is kept and stops the rest.
void JsonStream::BatchPipeline::done_stage(std::shared_ptr<Batch> b) {
  if (first_error_) return;
  try {
    done_(std::move(b->reader), b->error != nullptr);
    if (b->error) std::rethrow_exception(b->error);
  } catch (...) {
    first_error_ = std::current_exception();
    stopped_ = true;
  }
}

// Three stages: cut (in order), parse (in parallel), hand over (in order). Errors travel with
// their batch and stop the cutting, so the first one in the file is the one thrown, whatever
// the thread count. Nothing throws inside the pipeline: a batch is owned by its token.
void JsonStream::BatchPipeline::run(int threads) {
  tbb::task_arena arena(threads > 0 ? std::min(threads, tbb::info::default_concurrency())
                                    : tbb::task_arena::automatic);
  arena.execute([&] {
    tbb::parallel_pipeline(
        static_cast<size_t>(2 * tbb::this_task_arena::max_concurrency()),
        tbb::make_filter<void, std::shared_ptr<Batch>>(
            tbb::filter_mode::serial_in_order,
            [this](tbb::flow_control& fc) { return cut_stage(fc); }) &
            tbb::make_filter<std::shared_ptr<Batch>, std::shared_ptr<Batch>>(
                tbb::filter_mode::parallel,
                [this](std::shared_ptr<Batch> b) { return parse_stage(std::move(b)); }) &
            tbb::make_filter<std::shared_ptr<Batch>, void>(
                tbb::filter_mode::serial_in_order,
                [this](std::shared_ptr<Batch> b) { done_stage(std::move(b)); }));
  });
  if (first_error_) std::rethrow_exception(first_error_);
}

void JsonStream::for_each_batch(int threads, const BatchOpen& open_batch, const BatchDone& done,
                                const std::function<void(JsonScalar::Type)>& not_array) {
  BatchPipeline(*this, open_batch, done, not_array).run(threads);
}

void JsonStream::whole(const std::function<void(od::value)>& doc_fn,
                       const std::function<void(JsonScalar::Type)>& not_composite) {
  simdjson::padded_string text;
  if (text_)
    text = simdjson::padded_string(*text_);
  else if (simdjson::padded_string::load(file_.string()).get(text))
    throw Error(origin_ + ": cannot open " + what_);
  if (!text_) note_input_file(file_);
  // A UTF-8 byte-order mark (some Windows tools write one) is not part of the JSON.
  if (std::string_view(text.data(), text.size()).rfind(kUtf8Bom, 0) == 0)
    text = simdjson::padded_string(text.data() + kUtf8Bom.size(), text.size() - kUtf8Bom.size());
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

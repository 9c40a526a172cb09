#pragma once
// Large JSON inputs (PyPTO task graphs, swimlane traces) read with simdjson On-Demand, without a
// DOM, under the same rules as the config reader (model/json_reader.hpp): a non-regular file is
// refused, nesting deeper than JsonReader::kMaxJsonDepth and a key repeated in one object are
// refused, and every failure is one line naming the file. A top-level array is streamed a batch
// of elements at a time, the batches parsed in parallel, so memory holds a few batches of text
// and their structural indexes, never the whole file's.
//
// Values are read as Scalars; a value that is not what the caller needs is rejected through a
// JsonReader on the same value (to_json), so the messages are the config reader's, word for word.

#include <simdjson.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <istream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "model/error.hpp"
#include "model/json_reader.hpp"

namespace tilesim {

// One scalar (or the type of a composite) of a document.
struct JsonScalar {
  enum class Type { kNull, kBool, kInt, kUint, kDouble, kString, kArray, kObject, kHuge };
  Type type = Type::kNull;
  bool b = false;
  int64_t i = 0;
  uint64_t u = 0;
  double d = 0;
  std::string_view text;  // a string's unescaped text, or a number's literal (kHuge: beyond
                          // double range)
  bool is_int() const { return type == Type::kInt; }
  bool is_number() const {
    return type == Type::kInt || type == Type::kUint || type == Type::kDouble;
  }
  double number() const;
  static const char* type_name(Type t);  // as nlohmann names them ("number", "object", ...)
  // The value for a JsonReader's message (a composite stands in as its type name).
  nlohmann::json to_json() const;
};

// Where a value is, for messages: the document and the key path, as JsonReader spells them.
class JsonPlace {
 public:
  JsonPlace(std::string origin, std::string path)
      : origin_(std::move(origin)), path_(std::move(path)) {}
  // Rejects `v` through JsonReader::`check` (integer, number, string, one_of, ...), which must
  // throw; a value no reader method would refuse is a broken invariant.
  [[noreturn]] void reject(const JsonScalar& v,
                           const std::function<void(const JsonReader&)>& check) const;
  [[noreturn]] void fail(const std::string& what, ErrorKind kind = ErrorKind::kInput) const;
  const std::string& origin() const { return origin_; }
  const std::string& path() const { return path_; }

 private:
  std::string origin_, path_;
};

// The reader of one batch of a top-level array's elements (JsonStream::for_each_batch).
class JsonBatchReader {
 public:
  virtual ~JsonBatchReader() = default;
  // Element `index` (counted from the array's first element).
  virtual void element(size_t index, simdjson::ondemand::value v) = 0;
  size_t bytes = 0;  // of the batch's text
};

class JsonStream {
 public:
  // `what` names the document in messages ("fixed-latency task graph").
  JsonStream(std::filesystem::path file, std::string what);
  // A document already in memory, named `origin` in messages.
  JsonStream(std::string text, std::string origin, std::string what);

  // A top-level array, read a batch of elements at a time, the batches parsed on up to
  // `threads` threads. `open(first_index)` makes the reader of a batch, which is given each of
  // its elements in order. `done(reader, failed)` receives the batches in file order, one at a
  // time: `failed` when reading the batch stopped at an error (the reader holds what came
  // before it; no reader when the text around the elements was at fault). Whatever `done`
  // throws is the error; else a failed batch's error is thrown. Either way nothing after it is
  // read, so the error thrown is the first in the file, for any thread count.
  // `not_array(first)` when the document is not an array (`first` is its type); it must throw.
  using BatchOpen = std::function<std::unique_ptr<JsonBatchReader>(size_t first_index)>;
  using BatchDone = std::function<void(std::unique_ptr<JsonBatchReader>, bool failed)>;
  void for_each_batch(int threads, const BatchOpen& open, const BatchDone& done,
                      const std::function<void(JsonScalar::Type)>& not_array);
  // Any document, whole (for inputs that are not one big array); `not_composite(type)` when it
  // is neither an array nor an object, which must throw.
  void whole(const std::function<void(simdjson::ondemand::value)>& doc,
             const std::function<void(JsonScalar::Type)>& not_composite);

  // An object's member as iterated (its error thrown).
  static simdjson::ondemand::field field(simdjson::simdjson_result<simdjson::ondemand::field> m);
  // A member's key, unescaped (read raw when it holds no escape).
  static std::string_view key(simdjson::ondemand::field& f);
  // A value's scalar (arrays and objects: their type only, the value left unread).
  static JsonScalar scalar(simdjson::ondemand::value v);
  // Each member of an object, its key unescaped and refused when repeated.
  void for_each_member(
      simdjson::ondemand::value object,
      const std::function<void(std::string_view, simdjson::ondemand::value)>& member) const;
  // A value read only as a scalar: a composite is walked (check_ignored) and yields its type.
  JsonScalar leaf(simdjson::ondemand::value v, int depth) const;
  // Walks a value the caller ignores, refusing depth and repeated keys in it. `depth`: the
  // value's nesting level (the top level's elements are at 1).
  void check_ignored(simdjson::ondemand::value v, int depth) const;
  // Refuses a key seen twice in one object (`seen` holds the object's keys so far).
  void check_new_key(std::string_view key, std::vector<std::string>& seen) const;
  [[noreturn]] void repeated_key(std::string_view key) const;
  [[noreturn]] void too_deep() const;
  const std::string& origin() const { return origin_; }
  // The document's size in bytes (0 when the file cannot be read).
  uint64_t size_bytes() const;

 private:
  class BatchPipeline;  // for_each_batch's steps (json_stream.cpp)

  [[noreturn]] void malformed(const std::string& why) const;

  std::unique_ptr<std::istream> open() const;

  std::filesystem::path file_;
  std::optional<std::string> text_;  // the document, when it came from memory
  std::string origin_, what_;
  simdjson::ondemand::parser parser_;  // for whole()
};

}  // namespace tilesim

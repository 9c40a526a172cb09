#pragma once
// The structure of a top-level JSON array's text, scanned ahead of parsing so the array can be
// cut into batches of whole elements (tools/formats/json_stream.hpp): the nesting depth outside
// strings, the top-level commas (where a batch may end) and the array's closing bracket. Nothing
// else is checked here; simdjson checks the batches.
//
// Text is scanned 64 bytes at a time with SSE2 masks (bit i of a mask: byte i is a quote, a
// bracket, ...), so a scan costs a few instructions per block plus one step per bracket, not one
// per byte. A block holding a backslash, and the text's last bytes, go byte by byte (scan_bytes);
// the two paths give the same result (tests/pypto_formats_test.cpp, JsonArrayScanner.*).

#include <cstddef>
#include <cstdint>

namespace tilesim {

class JsonArrayScanner {
 public:
  enum class Stop { kNone, kTooDeep, kClosedByBrace };

  // Starts after the array's '['. `max_depth`: the deepest nesting allowed (the array is 1).
  explicit JsonArrayScanner(int max_depth) : max_depth_(max_depth) {}

  // Scans text[scanned, size), advancing `scanned`: to `size`, or to the closing bracket, or to
  // where a stop was found. Only whole 64-byte blocks are scanned unless `at_end` (the text is
  // all there is): the rest waits for more text.
  void scan(const char* text, size_t size, size_t& scanned, bool at_end);
  // The same, byte by byte (the reference for the block path).
  void scan_bytes(const char* text, size_t size, size_t& scanned);

  Stop stop() const { return stop_; }
  bool closed() const { return closed_; }
  // Of the array's closing bracket, when closed().
  size_t close_at() const { return close_at_; }
  // The last top-level comma scanned (0: none yet), and the top-level commas before it.
  size_t cut() const { return cut_; }
  size_t commas_before_cut() const { return commas_before_cut_; }
  // Top-level commas in text[0, scanned).
  size_t commas() const { return commas_; }
  // The text before position `n` is dropped: positions move down by n, the n bytes held
  // `dropped_commas` top-level commas, and the cut goes.
  void drop(size_t n, size_t dropped_commas);

 private:
  void scan_block(const char* block, size_t at);
  void comma(size_t at);

  const int max_depth_;
  int depth_ = 1;
  bool in_string_ = false, escaped_ = false, closed_ = false;
  Stop stop_ = Stop::kNone;
  size_t close_at_ = 0, cut_ = 0, commas_before_cut_ = 0, commas_ = 0;
};

}  // namespace tilesim

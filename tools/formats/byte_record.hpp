#pragma once
// Records as bytes, for handing results between processes of one tilesim build (Dask workers to
// their client): strings and vectors as a count and their items, a record through its
// `fields(io, record)` (found by argument-dependent lookup), which names the fields once for both
// directions. Numbers take few bytes where they are small or zero, as most of a sweep's are (a
// rejected candidate's figures are all zeros): an integer (a count, an enum) as a LEB128 varint,
// signed ones zigzagged; a floating-point +0 as one 0 byte, any other value as a 1 byte and its
// bits in the machine's own layout. Not a file format: whoever writes one checks that the reader
// is the same tilesim (version and byte order in a header of its own).

#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/error.hpp"

namespace tilesim {

// One value through a ByteWriter or a ByteReader: the shapes a record is made of, written and read
// by one walk.
template <class IO, class T>
void byte_io(IO& io, T& v) {
  if constexpr (std::is_arithmetic_v<std::remove_const_t<T>> ||
                std::is_enum_v<std::remove_const_t<T>>) {
    io.number(v);
  } else if constexpr (std::is_same_v<std::remove_const_t<T>, std::string>) {
    io.text(v);
  } else if constexpr (std::is_same_v<std::remove_const_t<T>, nlohmann::json>) {
    io.json(v);
  } else if constexpr (requires {
                         v.first;
                         v.second;
                       }) {
    byte_io(io, v.first);
    byte_io(io, v.second);
  } else if constexpr (requires {
                         v.size();
                         v.begin();
                       }) {
    io.count(v);
    for (auto& x : v) byte_io(io, x);
  } else {
    fields(io, v);
  }
}

namespace byte_numbers {
// An integer's varint payload: enums as their underlying type, signed values zigzagged (small
// magnitudes of either sign take one byte).
template <class T>
uint64_t to_unsigned(T v) {
  if constexpr (std::is_enum_v<T>) {
    return to_unsigned(static_cast<std::underlying_type_t<T>>(v));
  } else if constexpr (std::is_signed_v<T>) {
    const auto x = static_cast<int64_t>(v);
    return (static_cast<uint64_t>(x) << 1) ^ static_cast<uint64_t>(x >> 63);
  } else {
    return static_cast<uint64_t>(v);
  }
}
// The inverse, or false when the payload does not fit T.
template <class T>
bool from_unsigned(uint64_t u, T& v) {
  if constexpr (std::is_enum_v<T>) {
    std::underlying_type_t<T> x{};
    if (!from_unsigned(u, x)) return false;
    v = static_cast<T>(x);
    return true;
  } else if constexpr (std::is_signed_v<T>) {
    const auto x = static_cast<int64_t>((u >> 1) ^ (~(u & 1) + 1));
    if constexpr (sizeof(T) < sizeof(int64_t))
      if (x < std::numeric_limits<T>::min() || x > std::numeric_limits<T>::max()) return false;
    v = static_cast<T>(x);
    return true;
  } else {
    if constexpr (sizeof(T) < sizeof(uint64_t))
      if (u > std::numeric_limits<T>::max()) return false;
    v = static_cast<T>(u);
    return true;
  }
}
}  // namespace byte_numbers

// Writes a record's bytes in two passes over the same walk: one that only counts them, then one
// into memory of that size, allocated once (a string, Python's bytes object). Growing the output
// as it is written would copy a large result several times, each copy into fresh pages to fault
// in.
class ByteWriter {
 public:
  ByteWriter() = default;  // counts only: size()
  explicit ByteWriter(std::span<char> out) : out_(out), counting_(false) {}

  template <class T>
  void operator()(const T& v) {
    byte_io(*this, v);
  }

  void raw(const void* p, size_t n) {
    if (!counting_) {
      if (n > out_.size() - pos_)
        throw InternalError("byte record: longer than the " + std::to_string(out_.size()) +
                            " bytes its counting pass gave");
      std::memcpy(out_.data() + pos_, p, n);
    }
    pos_ += n;
  }
  template <class T>
  void number(const T& v) {
    if constexpr (std::is_same_v<T, bool>) {
      const uint8_t b = v ? 1 : 0;
      raw(&b, 1);
    } else if constexpr (std::is_floating_point_v<T>) {
      const T zero{};
      const uint8_t tag = std::memcmp(&v, &zero, sizeof v) == 0 ? 0 : 1;
      raw(&tag, 1);
      if (tag != 0) raw(&v, sizeof v);
    } else {
      varint(byte_numbers::to_unsigned(v));
    }
  }
  void text(std::string_view s) {
    varint(s.size());
    raw(s.data(), s.size());
  }
  // The common empty object as no text at all; any other value as its dump, which parses back to
  // an equal value (doubles included).
  void json(const nlohmann::json& v) {
    text(v.is_object() && v.empty() ? std::string() : v.dump());
  }
  template <class C>
  void count(const C& items) {
    varint(items.size());
  }
  // Bytes counted or written so far.
  size_t size() const { return pos_; }

 private:
  void varint(uint64_t u) {
    uint8_t b[10];
    size_t n = 0;
    for (; u >= 0x80; u >>= 7) b[n++] = static_cast<uint8_t>(u | 0x80);
    b[n++] = static_cast<uint8_t>(u);
    raw(b, n);
  }

  std::span<char> out_;
  bool counting_ = true;
  size_t pos_ = 0;
};

class ByteReader {
 public:
  // `origin` and `what` name the bytes in the one-line error a short or malformed record gives.
  ByteReader(std::string_view bytes, std::string origin, std::string what)
      : in_(bytes), origin_(std::move(origin)), what_(std::move(what)) {}

  template <class T>
  void operator()(T& v) {
    byte_io(*this, v);
  }

  void raw(void* p, size_t n) { std::memcpy(p, take(n), n); }
  template <class T>
  void number(T& v) {
    if constexpr (std::is_same_v<T, bool>) {
      const auto b = static_cast<uint8_t>(*take(1));
      if (b > 1) fail("a bool of " + std::to_string(b));
      v = b == 1;
    } else if constexpr (std::is_floating_point_v<T>) {
      const auto tag = static_cast<uint8_t>(*take(1));
      if (tag > 1) fail("a number tagged " + std::to_string(tag));
      v = T{};
      if (tag == 1) raw(&v, sizeof v);
    } else {
      const uint64_t u = varint();
      if (!byte_numbers::from_unsigned(u, v))
        fail("an integer out of range (" + std::to_string(u) + ")");
    }
  }
  void text(std::string& s) {
    const size_t n = items(1);
    s.assign(take(n), n);
  }
  void json(nlohmann::json& v) {
    std::string t;
    text(t);
    try {
      v = t.empty() ? nlohmann::json::object() : nlohmann::json::parse(t);
    } catch (const nlohmann::json::exception& e) {
      fail(e.what());
    }
  }
  // Every item takes at least a byte, so a count beyond the bytes left is malformed.
  template <class C>
  void count(C& items_of) {
    items_of.resize(items(1));
  }

  bool at_end() const { return pos_ == in_.size(); }
  // Bytes read so far.
  size_t position() const { return pos_; }
  [[noreturn]] void fail(const std::string& why) const {
    throw Error(origin_ + ": " + what_ + " is malformed (" + why + ")");
  }

 private:
  const char* take(size_t n) {
    if (n > in_.size() - pos_)
      fail("it ends " + std::to_string(n - (in_.size() - pos_)) + " bytes short");
    const char* p = in_.data() + pos_;
    pos_ += n;
    return p;
  }
  uint64_t varint() {
    uint64_t u = 0;
    for (int shift = 0;; shift += 7) {
      const auto b = static_cast<uint8_t>(*take(1));
      if (shift == 63 && b > 1) fail("a varint beyond 64 bits");
      u |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return u;
    }
  }
  size_t items(size_t min_item_bytes) {
    const uint64_t n = varint();
    if (n > (in_.size() - pos_) / min_item_bytes)
      fail("a count of " + std::to_string(n) + " beyond its bytes");
    return static_cast<size_t>(n);
  }

  std::string_view in_;
  size_t pos_ = 0;
  std::string origin_, what_;
};

}  // namespace tilesim

#pragma once
// Records as bytes, for handing results between processes of one tilesim build (Dask workers to
// their client): numbers in the machine's own layout, strings and vectors as a count and their
// items, a record through its `fields(io, record)` (found by argument-dependent lookup), which
// names the fields once for both directions. Not a file format: whoever writes one checks that
// the reader is the same tilesim (version and byte order in a header of its own).

#include <cstdint>
#include <cstring>
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
    io.raw(&v, sizeof v);
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

class ByteWriter {
 public:
  explicit ByteWriter(std::string& out) : out_(out) {}

  template <class T>
  void operator()(const T& v) {
    byte_io(*this, v);
  }

  void raw(const void* p, size_t n) { out_.append(static_cast<const char*>(p), n); }
  void text(const std::string& s) {
    const auto n = static_cast<uint64_t>(s.size());
    raw(&n, sizeof n);
    out_.append(s);
  }
  // The common empty object as no text at all; any other value as its dump, which parses back to
  // an equal value (doubles included).
  void json(const nlohmann::json& v) {
    text(v.is_object() && v.empty() ? std::string() : v.dump());
  }
  template <class C>
  void count(const C& items) {
    const auto n = static_cast<uint64_t>(items.size());
    raw(&n, sizeof n);
  }

 private:
  std::string& out_;
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
  size_t items(size_t min_item_bytes) {
    uint64_t n = 0;
    raw(&n, sizeof n);
    if (n > (in_.size() - pos_) / min_item_bytes)
      fail("a count of " + std::to_string(n) + " beyond its bytes");
    return static_cast<size_t>(n);
  }

  std::string_view in_;
  size_t pos_ = 0;
  std::string origin_, what_;
};

}  // namespace tilesim

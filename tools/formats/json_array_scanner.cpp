#include "tools/formats/json_array_scanner.hpp"

#include <array>
#include <bit>
#include <string_view>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace tilesim {

namespace {

constexpr size_t kBlock = 64;

// Bytes the byte path stops at: inside a string, its end or an escape; outside, structure.
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

#if defined(__SSE2__)
// Bit i set where block[i] is one of the bytes the masks are for.
struct BlockMasks {
  uint64_t quote = 0, backslash = 0, open = 0, close = 0, brace_close = 0, comma = 0;
};

BlockMasks masks_of(const char* block) {
  BlockMasks m;
  const auto bits = [](__m128i v, char c) {
    return static_cast<uint64_t>(
        static_cast<uint16_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(c)))));
  };
  for (int k = 0; k < 4; ++k) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 16 * k));
    const int shift = 16 * k;
    m.quote |= bits(v, '"') << shift;
    m.backslash |= bits(v, '\\') << shift;
    m.open |= (bits(v, '[') | bits(v, '{')) << shift;
    const uint64_t brace = bits(v, '}');
    m.close |= (bits(v, ']') | brace) << shift;
    m.brace_close |= brace << shift;
    m.comma |= bits(v, ',') << shift;
  }
  return m;
}

// Bit i: the xor of bits 0..i (inside a string from an opening quote up to its closing one).
uint64_t prefix_xor(uint64_t x) {
  for (int s = 1; s < 64; s *= 2) x ^= x << s;
  return x;
}
#endif

}  // namespace

void JsonArrayScanner::comma(size_t at) {
  commas_before_cut_ = commas_;
  cut_ = at;
  ++commas_;
}

void JsonArrayScanner::drop(size_t n, size_t dropped_commas) {
  commas_ -= dropped_commas;
  cut_ = commas_before_cut_ = 0;
  if (closed_) close_at_ -= n;
}

void JsonArrayScanner::scan_bytes(const char* text, size_t size, size_t& scanned) {
  for (; scanned < size; ++scanned) {
    if (in_string_) {
      if (escaped_) {  // the character after a backslash
        escaped_ = false;
        continue;
      }
      while (scanned < size && !kInString[static_cast<unsigned char>(text[scanned])]) ++scanned;
      if (scanned == size) break;
      if (text[scanned] == '\\')
        escaped_ = true;
      else
        in_string_ = false;
      continue;
    }
    while (scanned < size && !kStructural[static_cast<unsigned char>(text[scanned])]) ++scanned;
    if (scanned == size) break;
    const char c = text[scanned];
    if (c == '"') {
      in_string_ = true;
    } else if (c == '[' || c == '{') {
      if (++depth_ > max_depth_) {
        stop_ = Stop::kTooDeep;
        return;
      }
    } else if (c == ']' || c == '}') {
      if (--depth_ == 0) {
        if (c != ']') {
          stop_ = Stop::kClosedByBrace;
          return;
        }
        closed_ = true;
        close_at_ = scanned;
        return;
      }
    } else if (depth_ == 1) {
      comma(scanned);
    }
  }
}

void JsonArrayScanner::scan(const char* text, size_t size, size_t& scanned, bool at_end) {
#if defined(__SSE2__)
  while (!closed_ && stop_ == Stop::kNone && size - scanned >= kBlock) {
    const char* block = text + scanned;
    const BlockMasks m = masks_of(block);
    if (escaped_ || m.backslash != 0) {  // escapes: byte by byte
      scan_bytes(text, scanned + kBlock, scanned);
      continue;
    }
    uint64_t in_string = prefix_xor(m.quote);
    if (in_string_) in_string = ~in_string;
    in_string_ = (in_string >> 63) != 0;
    const uint64_t outside = ~in_string;
    const uint64_t open = m.open & outside, commas = m.comma & outside;
    uint64_t brackets = (m.open | m.close) & outside;
    // Between two brackets the depth holds: the commas there are top-level when it is 1.
    uint64_t top = 0, before_done = 0;
    size_t stop_at = kBlock;
    while (brackets != 0) {
      const int i = std::countr_zero(brackets);
      const uint64_t bit = uint64_t{1} << i, before = bit - 1;
      if (depth_ == 1) top |= commas & before & ~before_done;
      before_done = before | bit;
      brackets &= brackets - 1;
      if (open & bit) {
        if (++depth_ > max_depth_) {
          stop_ = Stop::kTooDeep;
          stop_at = static_cast<size_t>(i);
          break;
        }
      } else if (--depth_ == 0) {
        stop_at = static_cast<size_t>(i);
        if (m.brace_close & bit) {
          stop_ = Stop::kClosedByBrace;
        } else {
          closed_ = true;
          close_at_ = scanned + stop_at;
        }
        break;
      }
    }
    if (stop_at == kBlock && depth_ == 1) top |= commas & ~before_done;
    if (top != 0) {
      const int n = std::popcount(top);
      commas_before_cut_ = commas_ + static_cast<size_t>(n) - 1;
      commas_ += static_cast<size_t>(n);
      cut_ = scanned + static_cast<size_t>(63 - std::countl_zero(top));
    }
    scanned += stop_at;
  }
  if (at_end && !closed_ && stop_ == Stop::kNone) scan_bytes(text, size, scanned);
#else
  (void)at_end;
  scan_bytes(text, size, scanned);
#endif
}

}  // namespace tilesim

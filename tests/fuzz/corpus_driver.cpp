// The fuzz targets without libFuzzer: every seed of a loader's corpus (tests/corpus/<loader>/),
// then a fixed number of deterministic mutations of them, each run through the loader's target.
// It is the bounded fuzz pass of every test build, so the sanitizer build (ASan + UBSan) runs it
// in CI with the compiler CI has; scripts/fuzz.sh is the coverage-guided libFuzzer run (clang).
// A finding ends the process as it would end libFuzzer's: a sanitizer report, or an exception
// other than tilesim::Error escaping the target (std::terminate).
//
//   fuzz_corpus LOADER CORPUS_DIR MUTATIONS
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <string_view>
#include <vector>

// Every loader of tests/fuzz/loaders.txt (CMake writes fuzz_targets.inc from it).
#define TILESIM_FUZZ_TARGET(loader) \
  extern "C" int tilesim_fuzz_##loader(const uint8_t* data, size_t size);
#include "fuzz_targets.inc"
#undef TILESIM_FUZZ_TARGET

namespace {

using Entry = int (*)(const uint8_t*, size_t);

struct Target {
  std::string_view name;
  Entry entry;
};
#define TILESIM_FUZZ_TARGET(loader) {#loader, tilesim_fuzz_##loader},
constexpr Target kTargets[] = {
#include "fuzz_targets.inc"
};
#undef TILESIM_FUZZ_TARGET

// Bytes a mutation inserts: JSON's structure, digits and the edges of numbers.
constexpr std::string_view kBytes = "{}[],:\"\\-+.eE0123456789 tfn\n";
constexpr size_t kMaxLen = 65536;  // as scripts/fuzz.sh's -max_len

// One to four edits: flip a bit, overwrite or insert a byte, erase or repeat a span, or splice in
// a span of another seed.
std::string mutate(const std::vector<std::string>& seeds, std::mt19937_64& rng) {
  std::string s = seeds[rng() % seeds.size()];
  const int edits = 1 + static_cast<int>(rng() % 4);
  for (int e = 0; e < edits; ++e) {
    const size_t at = s.empty() ? 0 : rng() % s.size();
    const size_t span = 1 + rng() % 16;
    switch (rng() % 6) {
      case 0:
        if (!s.empty()) s[at] = static_cast<char>(s[at] ^ (1 << (rng() % 8)));
        break;
      case 1:
        if (!s.empty()) s[at] = kBytes[rng() % kBytes.size()];
        break;
      case 2:
        s.insert(s.begin() + static_cast<std::ptrdiff_t>(at), kBytes[rng() % kBytes.size()]);
        break;
      case 3:
        s.erase(at, span);
        break;
      case 4:
        if (!s.empty()) s.insert(at, s.substr(at, span));
        break;
      default: {
        const std::string& other = seeds[rng() % seeds.size()];
        if (!other.empty()) s.insert(at, other.substr(rng() % other.size(), span * 8));
      }
    }
  }
  if (s.size() > kMaxLen) s.resize(kMaxLen);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: fuzz_corpus LOADER CORPUS_DIR MUTATIONS\n");
    return 2;
  }
  const std::string_view name = argv[1];
  const auto target = std::find_if(std::begin(kTargets), std::end(kTargets),
                                   [&](const Target& t) { return t.name == name; });
  if (target == std::end(kTargets)) {
    std::fprintf(stderr, "fuzz_corpus: unknown loader %s\n", argv[1]);
    return 2;
  }
  std::vector<std::filesystem::path> files;
  for (const auto& f : std::filesystem::directory_iterator(argv[2]))
    if (f.is_regular_file() && f.path().filename() != "README.md") files.push_back(f.path());
  std::sort(files.begin(), files.end());  // the same order, so the same mutations, everywhere
  std::vector<std::string> seeds;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    seeds.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  if (seeds.empty()) {
    std::fprintf(stderr, "fuzz_corpus: no seeds in %s\n", argv[2]);
    return 2;
  }
  auto run = [&](const std::string& s) {
    target->entry(reinterpret_cast<const uint8_t*>(s.data()), s.size());
  };
  for (const auto& s : seeds) run(s);
  const long mutations = std::stol(argv[3]);
  uint64_t seed = 14695981039346656037ULL;  // FNV-1a of the loader's name
  for (const char c : name) seed = (seed ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  std::mt19937_64 rng(seed);
  for (long i = 0; i < mutations; ++i) run(mutate(seeds, rng));
  std::printf("fuzz_corpus %s: %zu seeds and %ld mutations, no finding\n", argv[1], seeds.size(),
              mutations);
  return 0;
}

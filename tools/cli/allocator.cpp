// The executables' allocator settings: jemalloc (linked by tools/CMakeLists.txt) reads this
// symbol at start-up. Large task graphs touch hundreds of MB once; on a kernel whose transparent
// huge pages are "madvise" (Debian's default) every 4 KiB first touch is a page fault, which cost
// ~40% of `tilesim replay` on a 10^6-task graph (bench/README.md, Replay). "thp:always" makes
// jemalloc advise huge pages on the memory it maps, so a first touch maps 2 MiB at a time.
extern "C" {
// NOLINTNEXTLINE: jemalloc's documented configuration hook (man jemalloc, TUNING).
extern const char* const malloc_conf;
const char* const malloc_conf = "thp:always";
}

// Replay driver for fuzz targets when libFuzzer is not in use (GCC builds).
// Feeds every file of the given corpus folder, then deterministic mutations
// of each (bit flips, truncations, byte insertions), to the target. A crash,
// sanitizer report or abort fails the ctest. An empty or missing corpus is an
// error: a fuzz smoke test must not pass vacuously.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR [mutations-per-seed]\n", argv[0]);
    return 2;
  }
  int mutations = argc > 2 ? std::atoi(argv[2]) : 300;
  std::vector<std::vector<uint8_t>> seeds;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(argv[1], ec)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    seeds.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  if (seeds.empty()) {
    std::fprintf(stderr, "no seed files in %s\n", argv[1]);
    return 2;
  }
  std::mt19937 rng(12345);
  size_t runs = 0;
  LLVMFuzzerTestOneInput(nullptr, 0);
  for (const auto& seed : seeds) {
    LLVMFuzzerTestOneInput(seed.data(), seed.size());
    ++runs;
    for (int m = 0; m < mutations; ++m) {
      std::vector<uint8_t> s = seed;
      int op = static_cast<int>(rng() % 4);
      if (!s.empty() && op == 0) {
        s[rng() % s.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
      } else if (!s.empty() && op == 1) {
        s.resize(rng() % s.size());
      } else if (op == 2) {
        size_t pos = s.empty() ? 0 : rng() % s.size();
        s.insert(s.begin() + static_cast<long>(pos), static_cast<uint8_t>(rng()));
      } else if (!s.empty()) {
        size_t a = rng() % s.size(), b = rng() % s.size();
        std::swap(s[a], s[b]);
      }
      LLVMFuzzerTestOneInput(s.data(), s.size());
      ++runs;
    }
  }
  std::printf("replayed %zu inputs from %zu seeds\n", runs, seeds.size());
  return 0;
}

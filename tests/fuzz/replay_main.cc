// Replay driver for fuzz targets when libFuzzer is not in use (GCC builds).
// Usage: TARGET [-mutations=N] PATH...  Each PATH is a file or a folder of
// files. Every input is fed to the target, then (for folders: seed corpora)
// N deterministic mutations of each (bit flips, truncations, byte insertions,
// swaps; default 300). Single files (crash regressions) are fed as they are.
// A crash, sanitizer report or abort fails the ctest. A path with no input
// is an error: a fuzz smoke test must not pass vacuously. On a crash
// (SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL) the input being run is written
// to replay-crash-input in the working folder, so it can become a
// regression test, and the signal is raised again.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

// The input being run, for the crash handler (set before each call).
const uint8_t* g_input = nullptr;
size_t g_input_size = 0;

void SaveInputAndDie(int sig) {
  constexpr char kPath[] = "replay-crash-input";
  int fd = ::open(kPath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) {
    size_t done = 0;
    while (done < g_input_size) {
      ssize_t n = ::write(fd, g_input + done, g_input_size - done);
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    ::close(fd);
    constexpr char kMsg[] = "replay: crashing input written to replay-crash-input\n";
    (void)!::write(2, kMsg, sizeof(kMsg) - 1);
  }
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

void Run(const uint8_t* data, size_t size) {
  g_input = data;
  g_input_size = size;
  LLVMFuzzerTestOneInput(data, size);
}

std::vector<uint8_t> ReadAll(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

int main(int argc, char** argv) {
  int mutations = 300;
  std::vector<std::vector<uint8_t>> seeds;     // mutated
  std::vector<std::vector<uint8_t>> verbatim;  // fed once
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("-mutations=", 0) == 0) {
      mutations = std::atoi(arg.c_str() + 11);
      continue;
    }
    std::error_code ec;
    if (std::filesystem::is_regular_file(arg, ec)) {
      verbatim.push_back(ReadAll(arg));
      continue;
    }
    size_t before = seeds.size();
    for (const auto& entry : std::filesystem::directory_iterator(arg, ec)) {
      if (entry.is_regular_file()) seeds.push_back(ReadAll(entry.path()));
    }
    if (seeds.size() == before) {
      std::fprintf(stderr, "no input files in %s\n", arg.c_str());
      return 2;
    }
  }
  if (seeds.empty() && verbatim.empty()) {
    std::fprintf(stderr, "usage: %s [-mutations=N] FILE_OR_DIR...\n", argv[0]);
    return 2;
  }
  for (int sig : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL}) ::signal(sig, SaveInputAndDie);
  std::mt19937 rng(12345);
  size_t runs = 0;
  LLVMFuzzerTestOneInput(nullptr, 0);
  for (const auto& v : verbatim) {
    Run(v.data(), v.size());
    ++runs;
  }
  for (const auto& seed : seeds) {
    Run(seed.data(), seed.size());
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
      Run(s.data(), s.size());
      ++runs;
    }
  }
  std::printf("replayed %zu inputs (%zu seeds, %zu single files)\n", runs, seeds.size(),
              verbatim.size());
  return 0;
}

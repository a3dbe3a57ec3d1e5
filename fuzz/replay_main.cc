// Replays fuzz inputs without a fuzzing engine, so the test suite can run every fuzz target over
// its kept corpus with any compiler. Usage: <target>_replay PATH... (files, or directories searched
// recursively). Exits 0 after running every input; 1 when a path is missing or a directory is empty
// (a corpus that silently vanished must not pass); 2 without arguments.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

namespace fs = std::filesystem;

bool run_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    fprintf(stderr, "replay: cannot read %s\n", path.c_str());
    return false;
  }
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s PATH...  (corpus files or directories)\n", argv[0]);
    return 2;
  }
  size_t total = 0;
  for (int i = 1; i < argc; ++i) {
    const fs::path arg(argv[i]);
    std::error_code ec;
    if (fs::is_regular_file(arg, ec)) {
      if (!run_file(arg)) return 1;
      ++total;
      continue;
    }
    if (!fs::is_directory(arg, ec)) {
      fprintf(stderr, "replay: %s: no such file or directory\n", argv[i]);
      return 1;
    }
    size_t in_dir = 0;
    for (const auto& entry : fs::recursive_directory_iterator(arg, ec)) {
      if (!entry.is_regular_file()) continue;
      if (!run_file(entry.path())) return 1;
      ++in_dir;
    }
    if (ec || in_dir == 0) {
      fprintf(stderr, "replay: %s: directory is empty or unreadable; expected corpus files\n",
              argv[i]);
      return 1;
    }
    total += in_dir;
  }
  printf("replayed %zu inputs\n", total);
  return 0;
}

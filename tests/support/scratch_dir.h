// Scratch directories for tests that write files (runs, merges, exports): one path per name and
// process under ::testing::TempDir(), cleaned up when the test process ends. Under ctest every
// test is its own process, so without this each run of the suite left a directory per test.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <string>
#include <system_error>
#include <vector>

namespace tokperf::testing_support {

// ::testing::TempDir()/NAME_PID, emptied (removed if it exists; not created). Every path handed
// out is removed when the process exits after all of its tests passed; after a failure they are
// kept for a look and stderr names them.
inline std::string scratch_dir(const std::string& name) {
  struct Registry {
    std::mutex mu;
    std::vector<std::string> dirs;
    // Constructed on the first call, inside a running test, so it is destroyed before gtest's
    // UnitTest singleton (constructed earlier, by main).
    ~Registry() {
      const bool failed = ::testing::UnitTest::GetInstance()->Failed();
      for (const std::string& d : dirs) {
        std::error_code ec;
        if (!failed) {
          std::filesystem::remove_all(d, ec);
        } else if (std::filesystem::exists(d, ec)) {
          std::fprintf(stderr, "test files kept in %s\n", d.c_str());
        }
      }
    }
  };
  static Registry registry;
  // TempDir() ends in '/': join, not concatenate, so the path compares equal to what tokperf
  // prints for it.
  const std::string d =
      (std::filesystem::path(::testing::TempDir()) / (name + "_" + std::to_string(::getpid())))
          .lexically_normal()
          .string();
  std::error_code ec;
  std::filesystem::remove_all(d, ec);
  std::lock_guard<std::mutex> lock(registry.mu);
  registry.dirs.push_back(d);
  return d;
}

// A path for one file or folder, `name` with a counter in front, inside this process's own
// scratch_dir("tokperf_files") (created here), so it goes when that does. Nothing is created at the
// path itself.
inline std::string scratch_file(const std::string& name) {
  static const std::string dir = [] {
    const std::string d = scratch_dir("tokperf_files");
    std::filesystem::create_directories(d);
    return d;
  }();
  static std::atomic<int> counter{0};
  return dir + "/" + std::to_string(counter++) + "_" + name;
}

}  // namespace tokperf::testing_support

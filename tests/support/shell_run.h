// Runs the built tokperf through the shell with its stdout and stderr captured together, and names
// per-process temporary paths: what the CLI tests (workload, tokenizer) share. Header-only; needs
// TOKPERF_BINARY (tests/CMakeLists.txt). For several children at once use child_process.h.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <string>

#include <gtest/gtest.h>

#include "support/scratch_dir.h"

namespace tokperf::testing_support {

struct ShellRun {
  int rc = -1;
  std::string out;  // stdout and stderr
};

// `tokperf ARGS` with XDG_DATA_HOME=xdg_dir, so runs never touch the user's history store.
inline ShellRun run_tokperf_shell(const std::string& args, const std::string& xdg_dir) {
  ShellRun r;
  const std::string cmd =
      "XDG_DATA_HOME=" + xdg_dir + " " + std::string(TOKPERF_BINARY).append(" ") + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// A fresh path in this process's scratch folder (scratch_file): prefix and `name`, removed at exit.
inline std::string unique_temp_path(const std::string& prefix, const std::string& name) {
  return scratch_file(prefix + name);
}

}  // namespace tokperf::testing_support

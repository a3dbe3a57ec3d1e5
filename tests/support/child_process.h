// Runs a program (tokperf, in the CLI tests) as a child process with its output captured in files,
// without waiting, so several can run at once (the shards of a sharded bench). Everything the
// child needs is built before fork(): a scripted server's thread may hold the allocator's lock at
// that moment, so the child makes only async-signal-safe calls.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace tokperf::testing_support {

struct ChildResult {
  int exit_code = -1;
  std::string out, err;
};

class ChildProcess {
 public:
  // env: "NAME=value" entries that replace or add to the parent's environment; "NAME" alone
  // removes the variable.
  ChildProcess(const std::string& binary, std::vector<std::string> args,
               std::vector<std::string> env = {});
  ~ChildProcess();  // waits if wait() was not called
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Blocks until the child exits.
  ChildResult wait();

 private:
  pid_t pid_ = -1;
  std::string out_path_, err_path_;
  bool waited_ = false;
  ChildResult result_;
};

// Runs to completion.
ChildResult run_child(const std::string& binary, std::vector<std::string> args,
                      std::vector<std::string> env = {});

}  // namespace tokperf::testing_support

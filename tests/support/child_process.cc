#include "support/child_process.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <sstream>

extern char** environ;

namespace tokperf::testing_support {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::atomic<int> g_counter{0};

}  // namespace

ChildProcess::ChildProcess(const std::string& binary, std::vector<std::string> args,
                           std::vector<std::string> env) {
  const char* tmp = std::getenv("TMPDIR");
  const std::string base = std::string(tmp != nullptr ? tmp : "/tmp") + "/tokperf_child_" +
                           std::to_string(getpid()) + "_" + std::to_string(g_counter++);
  out_path_ = base + ".out";
  err_path_ = base + ".err";
  std::string bin = binary;
  std::vector<char*> argv;
  argv.push_back(bin.data());
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  auto name_of = [](const std::string& kv) { return kv.substr(0, kv.find('=')); };
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv = *e;
    bool replaced = false;
    for (const auto& o : env) replaced = replaced || name_of(o) == name_of(kv);
    if (!replaced) env_strings.push_back(kv);
  }
  for (const auto& o : env) {
    if (o.find('=') != std::string::npos) env_strings.push_back(o);
  }
  std::vector<char*> envp;
  for (auto& kv : env_strings) envp.push_back(kv.data());
  envp.push_back(nullptr);
  pid_ = fork();
  if (pid_ == 0) {
    int o = open(out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int e = open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(o, 1);
    dup2(e, 2);
    int devnull = open("/dev/null", O_RDONLY);
    dup2(devnull, 0);
    execve(bin.c_str(), argv.data(), envp.data());
    _exit(127);
  }
}

ChildProcess::~ChildProcess() {
  if (!waited_) wait();
}

ChildResult ChildProcess::wait() {
  if (waited_) return result_;
  waited_ = true;
  int status = 0;
  if (pid_ > 0) waitpid(pid_, &status, 0);
  result_.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result_.out = slurp(out_path_);
  result_.err = slurp(err_path_);
  unlink(out_path_.c_str());
  unlink(err_path_.c_str());
  return result_;
}

ChildResult run_child(const std::string& binary, std::vector<std::string> args,
                      std::vector<std::string> env) {
  ChildProcess c(binary, std::move(args), std::move(env));
  return c.wait();
}

}  // namespace tokperf::testing_support

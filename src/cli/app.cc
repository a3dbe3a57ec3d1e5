#include "cli/app.h"

#include <cstdio>

namespace tokperf {

int run_cli(int argc, char** argv) {
  std::puts("tokperf " TOKPERF_VERSION);
  return kExitOk;
}

}  // namespace tokperf

// The output flags shared by `bench` and `sim run`: where the run's folder goes (a dated default),
// whether to write files at all, the history store, and --json.
#pragma once

#include <string>

#include "load/bench_config.h"

namespace CLI {
class App;
}

namespace tokperf {

struct OutputFlags {
  std::string out_dir;
  bool no_save = false;
  std::string store;
  bool no_history = false;
  bool json = false;
};

// Declares --out, --no-save, --store, --no-history and --json (group "Output").
void add_output_flags(CLI::App* sub, OutputFlags& f);

// Sets c.out_dir (default tokperf-results/<local time>-<run id>; empty with --no-save),
// c.record_history and c.history_store. REQUIRES: c.run_id set.
void apply_output_flags(const OutputFlags& f, BenchConfig& c);

}  // namespace tokperf

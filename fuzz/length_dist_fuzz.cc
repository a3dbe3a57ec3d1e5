// Fuzz target for length distributions (workload/length_dist.h): LengthDist::parse on the flag
// text and parse_histogram on a histogram file. Byte 0 picks which (and a seed); the rest is the
// input. Invariants: on success every draw is a whole number from 1 to 10^7 and the mean is finite
// and at least 1; an error names the flag (or the file). hist:FILE specs are not opened here. See
// docs/FUZZING.md.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "workload/length_dist.h"

namespace {

void check(bool ok, const char* what) {
  if (!ok) {
    fprintf(stderr, "length_dist_fuzz: invariant broken: %s\n", what);
    abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tokperf;
  if (size < 1) return 0;
  std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  const bool histogram = data[0] & 1;
  if (!histogram && text.find("hist:") != std::string_view::npos) return 0;  // no file access
  auto d = histogram ? LengthDist::parse_histogram(text, "h.txt")
                     : LengthDist::parse(text, "--input-tokens");
  if (!d.ok()) {
    check(d.error().find(histogram ? "h.txt" : "--input-tokens") != std::string::npos,
          "error does not name its source");
    return 0;
  }
  check(std::isfinite(d->mean()) && d->mean() >= 1, "mean");
  WorkloadRng rng(data[0]);
  for (int i = 0; i < 8; ++i) {
    const int64_t x = d->sample(rng);
    check(x >= 1 && x <= 10'000'000, "draw out of range");
  }
  return 0;
}

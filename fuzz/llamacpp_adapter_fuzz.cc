// Fuzz target for the llamacpp protocol: framing + classifier through the StreamRecorder at any
// split. See protocol_fuzz_common.h and docs/FUZZING.md.
#include "protocol_fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return tokperf_fuzz::run_protocol_fuzz(tokperf::ApiKind::kLlamaCpp, data, size);
}

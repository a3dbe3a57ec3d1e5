// tokperf: parse -> run -> report -> exit code. Everything else lives in the modules.
#include "cli/app.h"

int main(int argc, char** argv) { return tokperf::run_cli(argc, argv); }

# tokperf_pch(<target> [EXTRA <header>...]): precompile the headers most of tokperf's translation
# units include (counted with `grep -h '^#include <' src/*/*.cc src/*/*.h | sort | uniq -c`), plus
# EXTRA ones, for <target>. A no-op when TOKPERF_PCH is OFF, so a build without precompiled headers
# (-DTOKPERF_PCH=OFF) still checks that every file includes what it uses.
# Not CLI11: its header defines classes with inline virtual functions and global validator objects,
# which every translation unit that sees it compiles and constructs; through a precompiled header
# the files that do not use it (all but src/cli/) got slower.
set(tokperf_pch_headers
  <algorithm> <array> <cmath> <cstdint> <cstring> <functional> <limits> <map> <memory> <optional>
  <span> <sstream> <string> <string_view> <unordered_map> <utility> <vector>
  <fmt/format.h> <nlohmann/json.hpp>)

function(tokperf_pch target)
  if(NOT TOKPERF_PCH)
    return()
  endif()
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "EXTRA")
  target_precompile_headers(${target} PRIVATE ${tokperf_pch_headers} ${arg_EXTRA})
endfunction()

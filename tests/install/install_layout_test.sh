#!/usr/bin/env bash
# ctest: `cmake --install` puts the binary, the docs and the bash completion where Debian expects
# them, and the installed binary runs. Usage: install_layout_test.sh BUILD_DIR SCRATCH_DIR
set -euo pipefail
build=$1
root=$2
rm -rf "$root"
cmake --install "$build" --prefix "$root/usr" >/dev/null
fail() { echo "install_layout_test: $*" >&2; exit 1; }
[ -x "$root/usr/bin/tokperf" ] || fail "bin/tokperf missing or not executable"
for f in README.md ARCHITECTURE.md FUZZING.md metrics.md summary-schema.md; do
  [ -f "$root/usr/share/doc/tokperf/$f" ] || fail "share/doc/tokperf/$f missing"
done
comp="$root/usr/share/bash-completion/completions/tokperf"
[ -f "$comp" ] || fail "bash completion missing"
"$root/usr/bin/tokperf" --version | grep '^tokperf ' >/dev/null || fail "installed tokperf --version failed"
# The installed completion is the one the installed binary generates.
diff <("$root/usr/bin/tokperf" completion bash) "$comp" >/dev/null || fail "completion out of date"
bash -c "source '$comp'; COMP_WORDS=(tokperf be); COMP_CWORD=1; _tokperf; [[ \${COMPREPLY[*]} == bench ]]" ||
  fail "completion does not complete 'be' to 'bench'"
rm -rf "$root"
echo "install layout ok"

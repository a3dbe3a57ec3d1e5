#!/usr/bin/env bash
# Builds libFuzzer targets with clang (ASan + UBSan + coverage) from only the parser layers, without
# instrumenting the whole of tokperf_lib, and runs each for a fixed number of executions.
#
#   scripts/fuzz_campaign.sh build                       # objects + every target into build-fuzz-direct/
#   scripts/fuzz_campaign.sh run TARGET [RUNS] [MAXLEN]  # default 10,000,000 runs, max_len 4096
#
# A run starts from the kept corpus fuzz/corpus/TARGET (read only) and grows a scratch corpus in
# build-fuzz-direct/corpus/TARGET; its libFuzzer log goes to build-fuzz-direct/TARGET.log, and the
# last lines (executions, speed, peak RSS) are printed; crash-/slow-unit- files land in
# build-fuzz-direct/ too (a process stopped with SIGSTOP for a benchmark writes a slow-unit file on
# resuming: that is the pause, not the parser). Fold findings back with -merge=1 as
# docs/FUZZING.md shows. Runs at nice 19 so it only takes idle CPU.
set -euo pipefail
cd "$(dirname "$0")/.."
out=build-fuzz-direct
cxx=${CXX_FUZZ:-clang++}
flags=(-std=c++20 -O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined
       -fno-sanitize-recover=undefined -Isrc "-DTOKPERF_SOURCE_DIR=\"$PWD\"")
# The layers the parsers live in; the archive lets each target link only what it uses.
src_globs=(src/core/*.cc src/client/*.cc src/metrics/*.cc src/servermetrics/*.cc src/net/*.cc
           src/workload/*.cc src/load/arrivals.cc src/tokenize/*.cc)
libs=(-lsimdjson -lfmt -lcurl $(pkg-config --libs sentencepiece libpcre2-8 libutf8proc))

build() {
  mkdir -p "$out/obj"
  local objs=() jobs=0
  for s in ${src_globs[@]}; do
    local o="$out/obj/$(echo "${s%.cc}" | tr / _).o"
    objs+=("$o")
    if [[ ! -f "$o" || "$s" -nt "$o" ]]; then
      nice -n 10 "$cxx" "${flags[@]}" $(pkg-config --cflags sentencepiece libpcre2-8 libutf8proc) \
        -c "$s" -o "$o" &
      if (( ++jobs % 2 == 0 )); then wait; fi
    fi
  done
  wait
  rm -f "$out/libfuzzparsers.a"
  ar qc "$out/libfuzzparsers.a" "${objs[@]}"
  for f in fuzz/*_fuzz.cc; do
    local name; name=$(basename "${f%.cc}")
    if [[ ! -x "$out/$name" || "$f" -nt "$out/$name" || "$out/libfuzzparsers.a" -nt "$out/$name" ]]; then
      nice -n 10 "$cxx" "${flags[@]}" -fsanitize=fuzzer "$f" "$out/libfuzzparsers.a" "${libs[@]}" \
        -o "$out/$name"
    fi
  done
  echo "built: $(ls "$out" | grep -c '_fuzz$') targets in $out/"
}

run() {
  local target=$1 runs=${2:-10000000} maxlen=${3:-4096}
  [[ -x "$out/$target" ]] || { echo "no $out/$target: run '$0 build' first" >&2; exit 2; }
  mkdir -p "$out/corpus/$target"
  local t0=$SECONDS
  nice -n 19 "$out/$target" -runs="$runs" -max_len="$maxlen" -print_final_stats=1 \
    -artifact_prefix="$out/" \
    "$out/corpus/$target" "fuzz/corpus/$target" > "$out/$target.log" 2>&1 || {
    echo "$target: FAILED after $((SECONDS - t0)) s, see $out/$target.log" >&2
    tail -30 "$out/$target.log" >&2
    exit 1
  }
  echo "$target: $runs runs, max_len $maxlen, $((SECONDS - t0)) s wall"
  grep -E 'stat::number_executed_units|stat::average_exec_per_sec|stat::peak_rss_mb|^Done' \
    "$out/$target.log"
}

case "${1:-}" in
  build) build ;;
  run) shift; run "$@" ;;
  *) echo "usage: $0 build | run TARGET [RUNS] [MAXLEN]" >&2; exit 2 ;;
esac

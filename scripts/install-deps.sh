#!/usr/bin/env bash
# Installs tokperf's build and test dependencies from Debian 12's packages. Run as root.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
pkgs=(
  g++ cmake make pkg-config git ca-certificates
  libcurl4-openssl-dev libsimdjson-dev nlohmann-json3-dev libcli11-dev libfmt-dev libsqlite3-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  prometheus-cpp-dev         # --metrics-port exposition
  libsentencepiece-dev libpcre2-dev libutf8proc-dev  # --tokenizer (src/tokenize/)
  sentencepiece              # spm_train/spm_encode: tests/data/tokenize reference ids
  prometheus                 # promtool: validates expositions in tests
  clang libclang-rt-14-dev   # libFuzzer targets
  python3                    # bench/ scripts and numpy-free reference checks
  chromium                   # headless browser test of report.html
  slurm-wlm munge openmpi-bin  # tests/distributed: a one-host Slurm cluster and mpirun
  libpmix-dev                # libpmix.so, which Slurm's pmix plugin loads (srun --mpi=pmix)
)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
# npm fetches report.html's chart library at build time (web/package.json); any Node.js >= 18 will do,
# so an existing non-Debian install (e.g. NodeSource) is kept.
command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
if ((${#missing[@]})); then
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

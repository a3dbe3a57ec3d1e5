#!/usr/bin/env bash
# Installs tokperf's build and test dependencies from Debian 12's packages. Run as root.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
pkgs=(
  g++ cmake make pkg-config git ca-certificates
  libcurl4-openssl-dev libsimdjson-dev nlohmann-json3-dev libcli11-dev libfmt-dev libsqlite3-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  clang libclang-rt-14-dev   # libFuzzer targets
  python3                    # bench/ scripts and numpy-free reference checks
)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if ((${#missing[@]})); then
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

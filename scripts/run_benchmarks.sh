#!/usr/bin/env bash
# run_benchmarks.sh BUILD_DIR — runs every bench/bench_* executable in turn.
set -euo pipefail
build=${1:-build}
shopt -s nullglob
ran=0
for b in "$build"/bench/bench_*; do
  [ -x "$b" ] || continue
  echo "== $(basename "$b")"
  "$b"
  ran=$((ran + 1))
done
echo "ran $ran benchmarks"

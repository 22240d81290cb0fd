#!/usr/bin/env bash
# run_fuzzers.sh BUILD_DIR SECONDS — runs each libFuzzer target for a bounded
# time, starting from a scratch copy of its seed corpus (the committed corpus
# is never modified). Fails on the first crash.
set -euo pipefail
build=${1:-build-fuzz}
seconds=${2:-20}
shopt -s nullglob
ran=0
for f in "$build"/fuzz/fuzz_*; do
  [ -x "$f" ] || continue
  name=$(basename "$f"); short=${name#fuzz_}
  work=$(mktemp -d)
  [ -d "fuzz/corpus/$short" ] && cp -r "fuzz/corpus/$short/." "$work/"
  echo "== $name (${seconds}s)"
  "$f" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
       -artifact_prefix="$build/crash-$short-" "$work" 2>&1 | tail -n 12
  rm -rf "$work"
  ran=$((ran + 1))
done
echo "ran $ran fuzz targets"

#!/bin/sh
# lone_clone.sh <source-dir> — the repository stands alone: clones the
# committed HEAD of <source-dir> into an empty temporary folder (nothing
# beside it: no sibling data folder, no other checkout), configures, builds and runs
# the unit tier there (after installing the template runtime, as bootstrap does). Fails naming the step that failed; the folder is
# removed whatever happens. Uncommitted changes are not part of the clone.
set -u
src=${1:?usage: lone_clone.sh <source-dir>}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cdsh-lone-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM
jobs=$(nproc 2>/dev/null || echo 2)
fail() {
    echo "lone clone: FAILED at step '$1' in $tmp/cdsh (output above)" >&2
    exit 1
}
step() { echo "lone clone: $1"; }

step "git clone $src (HEAD $(git -C "$src" rev-parse --short HEAD))"
git clone --quiet --no-hardlinks "$src" "$tmp/cdsh" || fail "git clone"
ls -A "$tmp" | grep -qvx cdsh && fail "the temporary folder holds more than the clone"

# What `make test` gets from scripts/bootstrap.sh and the tests need: the card
# templates' JavaScript runtime, from its committed lockfile (npm's cache
# makes this quick after the first time).
step "template runtime (runtime/js)"
(cd "$tmp/cdsh/runtime/js" && npm ci --prefer-offline --no-audit --no-fund --loglevel=error &&
    npm run --silent build) || fail "runtime/js: npm ci && npm run build"

# With ccache, paths are hashed relative to the clone, so a clone compiles
# from the same cache entries as any other checkout's build/ folder.
launcher=""
if command -v ccache >/dev/null 2>&1; then
    launcher="-DCMAKE_C_COMPILER_LAUNCHER=ccache"
    export CCACHE_BASEDIR="$tmp" CCACHE_NOHASHDIR=true
fi
step "configure"
cmake -S "$tmp/cdsh" -B "$tmp/cdsh/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo $launcher \
    >"$tmp/configure.log" 2>&1 || { cat "$tmp/configure.log"; fail "configure"; }
step "build"
cmake --build "$tmp/cdsh/build" -j "$jobs" >"$tmp/build.log" 2>&1 ||
    { tail -n 60 "$tmp/build.log"; fail "build"; }
step "unit tier"
(cd "$tmp/cdsh/build" && ctest -L unit -j "$jobs" --output-on-failure) || fail "ctest -L unit"
step "passed"

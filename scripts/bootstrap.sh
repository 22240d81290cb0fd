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

if [ -f tests/package-lock.json ]; then
  if [ ! -d tests/node_modules ] || [ tests/package-lock.json -nt tests/node_modules/.package-lock.json ]; then
    echo "bootstrap: installing npm packages for the end-to-end tests"
    (cd tests && npm ci --no-audit --no-fund --loglevel=error)
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
    (cd "$dir" && npm install --no-audit --no-fund --loglevel=error)
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

#!/usr/bin/env bash
# Playwright tests of onyx-web and the digit reader page (tests/web/run.mjs) in Debian's
# chromium: builds bindings/js/dist (bindings/js/build.sh) first. Needs the native CLI and
# the exported models of the main build ($1, default build: `ctest -R models_export`).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
if [ ! -x "${CHROMIUM:-/usr/bin/chromium}" ]; then
  echo "test_web.sh: no chromium at ${CHROMIUM:-/usr/bin/chromium} (scripts/setup.sh installs Debian's)" >&2
  exit 1
fi
bindings/js/build.sh
NODE_PATH=$PWD/node_modules node tests/web/run.mjs --build "$build" "${@:2}"

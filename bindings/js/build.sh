#!/usr/bin/env bash
# Builds onyx-web into bindings/js/dist/ (make web-build): the two WebAssembly artifacts
# with Debian's Emscripten (build-web: single-threaded, build-web-mt: pthreads), then the
# TypeScript (type-checked and .d.ts by tsc, bundled by esbuild). Prints the sizes.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
jobs=${JOBS:-$(nproc)}
export NODE_PATH=/usr/share/nodejs  # Debian emscripten finds its JS tools (acorn) there
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
for variant in web web-mt; do
  dir=build-$variant
  threads=OFF; [ "$variant" = web-mt ] && threads=ON
  if [ ! -f "$dir/build.ninja" ]; then
    emcmake cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" \
      -DONYX_WASM_THREADS=$threads -DONYX_WASM_NATIVE_EH=ON >/dev/null
  fi
  rc=0
  ninja -C "$dir" -j"$jobs" onyx_web > "$dir/ninja.log" 2>&1 || rc=$?
  grep -v '^\[' "$dir/ninja.log" | grep -v 'pthreads-mem-growth' || true
  if [ "$rc" -ne 0 ]; then
    echo "web-build: the WebAssembly build in $dir failed (ninja exit $rc)" >&2
    exit 1
  fi
done
dist=bindings/js/dist
rm -rf "$dist"
mkdir -p "$dist"
cp build-web/onyx-web.mjs build-web/onyx-web.wasm "$dist/"
cp build-web-mt/onyx-web-mt.mjs build-web-mt/onyx-web-mt.wasm build-web-mt/onyx-web-mt.worker.js "$dist/"
bin=$root/node_modules/.bin
(cd bindings/js && "$bin/tsc" -p tsconfig.json)
common=(--bundle --format=esm --target=es2022 --minify --keep-names --sourcemap --log-level=warning)
"$bin/esbuild" bindings/js/src/index.ts "${common[@]}" --outfile="$dist/index.mjs"
"$bin/esbuild" bindings/js/src/worker.ts "${common[@]}" --outfile="$dist/onyx-web-worker.mjs"
echo "web-build: $dist/"
for f in "$dist"/*.wasm "$dist"/*.mjs "$dist"/*.worker.js; do
  printf '  %-28s %9d bytes raw, %8d gzip -9\n' "$(basename "$f")" "$(stat -c %s "$f")" "$(gzip -9c "$f" | wc -c)"
done

#!/usr/bin/env bash
# Builds the concurrency stress test (tests/stress/stress.cc) with clang-16 and
# ThreadSanitizer and runs it: 8 callers on one session, threads 1, 2 and 4, on the
# models the main build's tests export (BUILD/models) and the digit reader. Any data race
# TSan sees fails the run.
#   scripts/test_tsan.sh [BUILD]   (default build)
set -euo pipefail
cd "$(dirname "$0")/.."
main=${1:-build}
build=build-tsan
jobs=$(nproc)
if [ ! -f "$build/build.ninja" ]; then
  # Line tables only (-g1) and Highway's static target only: races do not depend on the
  # SIMD width, and compiling every target of every SIMD file under TSan costs most of
  # the build (CI has 2 cores).
  CC=clang-16 CXX=clang++-16 cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_FLAGS="-g1 -DHWY_COMPILE_ONLY_STATIC=1" \
    -DONYX_TSAN=ON -DONYX_BUILD_TOOLS=OFF >/dev/null
fi
ninja -C "$build" -j"$jobs" onyx_stress > "$build/ninja.log" 2>&1 || { cat "$build/ninja.log"; exit 1; }
models=$main/models
for m in mobilenet_v2 resnet18 transformer; do
  if [ ! -f "$models/$m/model.onnx" ]; then
    echo "test_tsan.sh: $models/$m/model.onnx is missing (ctest's models_export writes it; it needs PyTorch)"
    [ "${CI:-}" = true ] && exit 1
    echo "test_tsan.sh: skipped"
    exit 0
  fi
done
echo "tsan: onyx_stress under ThreadSanitizer"
TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1" "$build/onyx_stress" \
  --model crnn-digits=models/crnn-digits/v2/crnn-digits-v2-opset17.onnx \
  --model transformer="$models/transformer/model.onnx" \
  --model mobilenet_v2="$models/mobilenet_v2/model.onnx" \
  --model resnet18="$models/resnet18/model.onnx" \
  --callers 8 --runs 4 --threads 1,2,4

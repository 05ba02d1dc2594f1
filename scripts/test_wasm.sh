#!/usr/bin/env bash
# Builds the core library with Emscripten (-msimd128) and runs a few ONNX node cases
# under Node, checking the outputs as the native conformance runner does.
set -euo pipefail
cd "$(dirname "$0")/.."
suite=${1:-${ONYX_CONFORMANCE_DIR:-../shared/conformance/onnx-node}}
if [ ! -d "$suite" ]; then
  if [ "${CI:-}" = true ]; then
    echo "test_wasm.sh: the ONNX 1.22 node suite is not at $suite (CI=true: it must be)" >&2
    exit 1
  fi
  echo "test_wasm.sh: the ONNX 1.22 node suite is not at $suite; running the cases the ONNX 1.12 suite (libonnx-testdata) has"
  suite=/usr/share/libonnx-testdata/data/node
fi
# The single-threaded build of onyx-web (bindings/js/build.sh) with the same flags, so
# the core library is compiled once for both (CI has 2 cores).
build=build-web
jobs=$(nproc)
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
if [ ! -f "$build/build.ninja" ]; then
  emcmake cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" \
    -DONYX_WASM_THREADS=OFF -DONYX_WASM_NATIVE_EH=ON >/dev/null
fi
export NODE_PATH=/usr/share/nodejs  # Debian emscripten finds its JS tools (acorn) there
# A failed link can leave a stale or broken onyx_wasm_check.js behind: trust ninja's status.
rc=0
ninja -C "$build" -j"$jobs" onyx_wasm_check > "$build/ninja.log" 2>&1 || rc=$?
grep -v '^\[' "$build/ninja.log" || true
if [ "$rc" -ne 0 ]; then
  echo "test_wasm.sh: the WebAssembly build failed (ninja exit $rc)" >&2
  exit 1
fi
cases=(test_conv_with_strides_padding test_gemm_default_no_bias test_lstm_defaults
       test_maxpool_2d_pads test_resize_upsample_scales_linear test_softmax_axis_0
       test_loop11 test_if test_einsum_batch_matmul test_cast_FLOAT_to_FLOAT16
       test_equal_string_broadcast test_string_concat_broadcasting)
args=()
for c in "${cases[@]}"; do [ -d "$suite/$c" ] && args+=("$suite/$c"); done
# Model cases: the digit readers on reference crops, against the native reference kernels
# (outputs of `onyx run --reference`): their 3x3 layers of 16-64 input channels take
# Winograd F(4x4, 3x3) in WebAssembly only (src/kernels/cpu/conv_winograd.cc), so this is
# where that choice is checked, at the node cases' tolerance. They need the native CLI.
native=${ONYX_NATIVE_BUILD:-build}
if [ -x "$native/onyx" ]; then
  cases="$build/model-cases"
  rm -rf "$cases"
  for reader in crnn-digits crnn-digits/v2; do
    model=$(ls models/$reader/*.onnx | head -1)
    for crop in 0000 0042 0137; do
      d="$cases/$(echo "$reader" | tr / -)-$crop"
      mkdir -p "$d/test_data_set_0"
      cp "$model" "$d/model.onnx"
      "$native/onyx" ocr "$model" "models/$reader/reference/images/$crop.png" --save-inputs "$d/in" \
        >"$d/log" 2>&1 || { cat "$d/log"; exit 1; }
      mv "$d/in/$crop.npy" "$d/test_data_set_0/input_0.npy"
      "$native/onyx" run "$model" --input "input=$d/test_data_set_0/input_0.npy" --reference -o "$d/out" \
        >"$d/log" 2>&1 || { cat "$d/log"; exit 1; }
      mv "$d/out/logits.npy" "$d/test_data_set_0/output_0.npy"
      rm -rf "$d/in" "$d/out" "$d/log"
      args+=("$d")
    done
  done
  # MobileNetV2 (exported by the main build's tests): its depthwise-separable layers at
  # 28x28 and below run channels last (src/opt/channels_last.cc), which in WebAssembly
  # (8-column GEMM panels) takes the layers of 24 output channels too.
  mv2=$native/models/mobilenet_v2
  if [ -f "$mv2/model.onnx" ] && [ -f "$mv2/set_0/input.npy" ]; then
    d="$cases/mobilenet_v2"
    mkdir -p "$d/test_data_set_0"
    cp "$mv2/model.onnx" "$d/model.onnx"
    cp "$mv2/set_0/input.npy" "$d/test_data_set_0/input_0.npy"
    "$native/onyx" run "$d/model.onnx" --input "input=$d/test_data_set_0/input_0.npy" --reference -o "$d/out" \
      >"$d/log" 2>&1 || { cat "$d/log"; exit 1; }
    mv "$d/out/logits.npy" "$d/test_data_set_0/output_0.npy"
    rm -rf "$d/out" "$d/log"
    args+=("$d")
  else
    echo "test_wasm.sh: SKIPPED the MobileNetV2 case: $mv2 is exported by the main build's tests (make test)"
  fi
else
  echo "test_wasm.sh: SKIPPED the digit-reader model cases: they need the native CLI ($native/onyx; make build)"
fi
echo "wasm (Node $(node --version)):"
NODE_PATH=/usr/share/nodejs node --no-experimental-fetch "$build/onyx_wasm_check.js" "${args[@]}"

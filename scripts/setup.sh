#!/usr/bin/env bash
# Installs everything onyx needs on Debian 12 (run as root). Idempotent: installs only
# what is missing and prints nothing when all is there.
#   scripts/setup.sh   build + test dependencies: C++ toolchain and libraries, Node packages,
#                      PyTorch/torchvision/onnx for the model parity test, Emscripten for
#                      the WebAssembly build, the ONNX 1.12 node suite (libonnx-testdata),
#                      Graphviz (SVG/HTML pictures of `onyx graph`), libspng (PNG decoding of
#                      `onyx ocr`), PIL and fonts (the digit reader's synthetic crops; v2's
#                      training fonts, and python3-cairo with the held-out fonts of its
#                      evaluation sets), OpenBLAS
#                      (Debian's torch and numpy are far slower on the reference BLAS),
#                      clang-16 + libFuzzer (fuzzing, ThreadSanitizer), pybind11 + pytest
#                      (the Python module), chromium (browser tests of onyx-web)
set -euo pipefail
cd "$(dirname "$0")/.."

for a in "$@"; do
  echo "setup.sh: unknown option $a (it takes none)" >&2
  exit 2
done

pkgs=(build-essential cmake ninja-build pkg-config git
      libprotozero-dev libhwy-dev libcli11-dev nlohmann-json3-dev libfmt-dev
      libgtest-dev libgmock-dev libbenchmark-dev zlib1g-dev
      python3 python3-numpy python3-torch python3-torchvision python3-onnx nodejs
      libonnx-testdata emscripten graphviz libspng-dev python3-pil libopenblas0-pthread
      fonts-dejavu-core fonts-liberation2 fonts-roboto-unhinted
      fonts-liberation fonts-freefont-ttf fonts-noto-mono fonts-inconsolata fonts-crosextra-carlito
      fonts-crosextra-caladea fonts-urw-base35 fonts-cantarell fonts-roboto-slab fonts-firacode fonts-ebgaramond
      fonts-gnutypewriter fonts-dkg-handwriting fonts-breip fonts-rufscript fonts-humor-sans fonts-sjfonts
      fonts-kristi fonts-bwht
      python3-cairo fontconfig fonts-open-sans fonts-go fonts-karla fonts-cabin fonts-linuxlibertine
      fonts-sil-charis fonts-jetbrains-mono fonts-mononoki fonts-yanone-kaffeesatz fonts-comic-neue
      clang-16 libfuzzer-16-dev libclang-rt-16-dev
      pybind11-dev python3-pybind11 python3-pytest python3-dev python3-pip python3-setuptools
      python3-wheel chromium)
# Debian's npm conflicts with NodeSource's nodejs, which ships its own npm.
command -v npm >/dev/null 2>&1 || pkgs+=(npm)

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "setup.sh: missing Debian packages: ${missing[*]}; run as root or install them" >&2
    exit 1
  fi
  echo "setup.sh: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# npm packages, pinned in package.json / package-lock.json: onnxruntime-node and
# onnxruntime-web (the references onyx is compared with; the CPU binary of
# onnxruntime-node ships in the package, so the GPU download of its install script is
# skipped), typescript and esbuild (bindings/js), playwright-core (browser tests, driving
# Debian's chromium). Reinstalled when any pinned version is missing.
npm_current() {
  node -e 'const p=require("./package.json").dependencies;for(const [n,v] of Object.entries(p)){let ok=false;try{ok=require("./node_modules/"+n+"/package.json").version===v}catch(e){}if(!ok)process.exit(1)}' 2>/dev/null
}
if ! npm_current; then
  echo "setup.sh: installing npm packages"
  ONNXRUNTIME_NODE_INSTALL=skip npm ci --no-audit --no-fund --loglevel=error >/dev/null
fi

#!/usr/bin/env bash
# The main job on the bundled default model: inspect it, run it with onyx on the bundled
# image, and compare with the output PyTorch gave for the same image.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
onyx="$build/onyx"
model=models/tiny-cnn/tiny-cnn-v1-opset17.onnx
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "== onyx inspect $model"
"$onyx" inspect "$model"
echo
echo "== onyx run $model --input image=models/tiny-cnn/image.npy"
"$onyx" run "$model" --input image=models/tiny-cnn/image.npy --output-dir "$out"
echo
/usr/bin/python3 - "$out/probs.npy" models/tiny-cnn/probs.torch.npy <<'PY'
import sys
import numpy as np
got, ref = np.load(sys.argv[1]), np.load(sys.argv[2])
err = float(np.max(np.abs(got - ref)))
print("class probabilities (onyx):", " ".join(f"{p:.3f}" for p in got[0]))
print(f"top-1 class: onyx {int(got.argmax())}, PyTorch {int(ref.argmax())}; "
      f"max abs difference {err:.2e}")
ok = np.allclose(got, ref, rtol=1e-3, atol=1e-5)
print("onyx matches PyTorch" if ok else "MISMATCH with PyTorch")
sys.exit(0 if ok else 1)
PY

"""`pip install --no-build-isolation ./bindings/python` works offline (--no-index) and gives
an importable module. It reuses the CMake build folder of the tests (ONYX_BUILD_DIR), so
only the module's target is built."""
import os
import subprocess
import sys

import pytest

from conftest import BUILD, SOURCE


def test_pip_install_offline(tmp_path):
    if not (BUILD / "CMakeCache.txt").exists():
        pytest.skip("no CMake build folder to build the module in")
    target = tmp_path / "site"
    env = dict(os.environ, ONYX_BUILD_DIR=str(BUILD), PIP_NO_INDEX="1")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-index", "--no-deps",
                    "--target", str(target), str(SOURCE / "bindings" / "python")],
                   check=True, env=env, capture_output=True)
    code = ("import onyx, sys; s = onyx.InferenceSession(sys.argv[1]); "
            "assert onyx.__file__.startswith(sys.argv[2]), onyx.__file__; print(s.get_inputs()[0].name)")
    out = subprocess.run([sys.executable, "-c", code, str(SOURCE / "models" / "tiny-cnn" / "tiny-cnn-v1-opset17.onnx"),
                          str(target)], check=True, capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=str(target)), cwd=tmp_path)
    assert out.stdout.strip() == "image"

"""Fixtures of the onyx Python module tests: where the CLI, the build and the models are.

ctest (the `python` test) sets ONYX_CLI, ONYX_BUILD_DIR and ONYX_SOURCE_DIR and puts
build/python on PYTHONPATH."""
import os
import pathlib
import subprocess

import numpy as np
import pytest

SOURCE = pathlib.Path(os.environ.get("ONYX_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))
BUILD = pathlib.Path(os.environ.get("ONYX_BUILD_DIR", SOURCE / "build"))
CLI = os.environ.get("ONYX_CLI", str(BUILD / "onyx"))


@pytest.fixture(scope="session")
def source_dir():
    return SOURCE


@pytest.fixture(scope="session")
def build_dir():
    return BUILD


def cli_run(model, feeds, out_dir):
    """`onyx run MODEL --input NAME=FILE.npy ... -o OUT_DIR`: the C++ Session's outputs,
    read back from the .npy files it writes (by output name)."""
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    args = [CLI, "run", str(model), "-o", str(out_dir)]
    for name, arr in feeds.items():
        path = out_dir / ("in_" + "".join(c if c.isalnum() else "_" for c in name) + ".npy")
        np.save(path, arr)
        args += ["--input", f"{name}={path}"]
    subprocess.run(args, check=True, capture_output=True)
    return out_dir


def safe_file_name(name):
    """The file stem `onyx run` gives an output (tools/onyx/util.cc)."""
    s = "".join(c if (c.isalnum() and c.isascii()) or c in "-_." else "_" for c in name)
    return "output" if s in ("", ".", "..") else s

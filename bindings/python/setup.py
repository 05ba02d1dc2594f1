"""Builds the onyx Python module with CMake (the repository two folders up) and packages it.

    pip install --no-build-isolation ./bindings/python     (from the repository root)

No network: CMake, a C++20 compiler, pybind11-dev, python3-dev and libhwy-dev must be
installed (scripts/setup.sh installs them). ONYX_CMAKE_ARGS adds arguments to the
configure step (e.g. -DCMAKE_CXX_COMPILER_LAUNCHER=ccache); ONYX_BUILD_DIR names an
existing CMake build folder of the repository to build the module in (e.g. build),
instead of a fresh one."""
import os
import pathlib
import shlex
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        if os.environ.get("ONYX_BUILD_DIR"):
            build = pathlib.Path(os.environ["ONYX_BUILD_DIR"]).resolve()
        else:
            build = pathlib.Path(self.build_temp).resolve() / "cmake"
        args = ["cmake", "-S", str(ROOT), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release", "-DONYX_BUILD_TOOLS=OFF",
                "-DONYX_BUILD_PYTHON=ON", f"-DONYX_PYTHON={sys.executable}"]
        if shutil.which("ninja") and not (build / "CMakeCache.txt").exists():
            args += ["-G", "Ninja"]
        args += shlex.split(os.environ.get("ONYX_CMAKE_ARGS", ""))
        if not (build / "CMakeCache.txt").exists():
            subprocess.run(args, check=True)
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", "2")
        subprocess.run(["cmake", "--build", str(build), "--target", "onyx_python", "-j", jobs], check=True)
        built = next((build / "python" / "onyx").glob("_onyx*.so"))
        dest = pathlib.Path(self.get_ext_fullpath(ext.name))
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(built, dest)


setup(
    packages=["onyx"],
    package_data={"onyx": ["__init__.pyi", "py.typed"]},
    ext_modules=[Extension("onyx._onyx", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
)

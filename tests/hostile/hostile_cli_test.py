#!/usr/bin/python3
"""ctest `hostile_cli`: the CLI on hostile models and files (issue 9).

Writes small models whose integer attributes overflow (DepthToSpace blocksize 2^32 and
3037000500, ConvTranspose strides, Pad pads, Tile repeats), whose 1-D shape inputs are
declared 2^32 or 2^62 long (ConstantOfShape, Reshape, Expand, Unsqueeze, Col2Im,
MaxUnpool), whose inputs are string tensors of 2^40 elements (Identity, LabelEncoder),
a Conv without input channels (a SIGFPE before), a declared shape of 65 dims, and FIFOs
named as the model, as external data and as --input files (.npy and .pb). On each it
runs `onyx check`, `onyx run --random-inputs`, `onyx graph --shapes --format dot` and
`onyx card`, and asserts: no death by signal, exit within a few seconds, peak RSS of
the child under 1 GB, and where the model is refused, `onyx: error:` (or check's
`error:`) naming the node and the fault.

Standard library only (the models are written by tests/hostile/onnx_pb.py). Exits 77
(skip) where os.mkfifo is missing.
"""
import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from onnx_pb import (BOOL, FLOAT, INT64, STRING, attr_int, attr_ints, attr_string, attr_strings, model,  # noqa: E402
                     node, tensor, value_info)

TIME_LIMIT_S = 10.0
RSS_LIMIT_KB = 1 << 20  # 1 GB

P32, P40, P62 = 1 << 32, 1 << 40, 1 << 62


def out(name, elem=FLOAT):
    return value_info(name, elem, None)


class Case:
    """A hostile model: the node it names, fragments its refusal must hold, and which
    commands refuse it (check statically; run at session creation or at run time)."""

    def __init__(self, name, data, node_name, fragments, check_refuses=True, run_refuses=True):
        self.name, self.data, self.node, self.fragments = name, data, node_name, fragments
        self.check_refuses, self.run_refuses = check_refuses, run_refuses


def cases():
    c = []
    for b in (P32, 3037000500):
        c.append(Case(f"depth_to_space_blocksize_{b}",
                      model([node("DepthToSpace", ["x"], ["y"], "d2s", [attr_int("blocksize", b)])],
                            [value_info("x", FLOAT, [1, 4, 2, 2])], [out("y")]),
                      "d2s", ["blocksize", "overflows"]))
    c.append(Case("space_to_depth_blocksize_2p32",
                  model([node("SpaceToDepth", ["x"], ["y"], "s2d", [attr_int("blocksize", P32)])],
                        [value_info("x", FLOAT, [1, 4, 2, 2])], [out("y")]),
                  "s2d", ["blocksize", "overflows"]))
    w = tensor("w", FLOAT, [1, 1, 3, 3], raw=b"\0" * 36)
    c.append(Case("conv_transpose_strides_2p62",
                  model([node("ConvTranspose", ["x", "w"], ["y"], "deconv", [attr_ints("strides", [P62, 1])])],
                        [value_info("x", FLOAT, [1, 1, 4, 4])], [out("y")], [w]),
                  "deconv", ["output extent", "overflows"]))
    c.append(Case("pad_2p62",
                  model([node("Pad", ["x", "pads"], ["y"], "pad")], [value_info("x", FLOAT, [1, 1, 4])], [out("y")],
                        [tensor("pads", INT64, [6], int64s=[0, 0, P62, 0, 0, P62])]),
                  "pad", ["padded axis", "overflows"]))
    c.append(Case("tile_repeats_2p62",
                  model([node("Tile", ["x", "r"], ["y"], "tile")], [value_info("x", FLOAT, [4])], [out("y")],
                        [tensor("r", INT64, [1], int64s=[P62])]),
                  "tile", ["repeats", "overflows"]))
    for n in (P32, P62):
        c.append(Case(f"constant_of_shape_len_{n}",
                      model([node("ConstantOfShape", ["s"], ["y"], "cos")], [value_info("s", INT64, [n])], [out("y")]),
                      "cos", ["at most 64 axes"]))
        c.append(Case(f"reshape_len_{n}",
                      model([node("Reshape", ["x", "s"], ["y"], "rs")],
                            [value_info("x", FLOAT, [1]), value_info("s", INT64, [n])], [out("y")]),
                      "rs", ["at most 64 axes"]))
        c.append(Case(f"expand_len_{n}",
                      model([node("Expand", ["x", "s"], ["y"], "ex")],
                            [value_info("x", FLOAT, [1]), value_info("s", INT64, [n])], [out("y")]),
                      "ex", ["at most 64 axes"]))
    c.append(Case("unsqueeze_axes_len_2p32",
                  model([node("Unsqueeze", ["x", "a"], ["y"], "unsq")],
                        [value_info("x", FLOAT, [2]), value_info("a", INT64, [P32])], [out("y")], opsets=(("", 13),)),
                  "unsq", ["at most 64 axes"]))
    c.append(Case("col2im_image_shape_len_2p32",
                  model([node("Col2Im", ["x", "i", "b"], ["y"], "c2i")],
                        [value_info("x", FLOAT, [1, 4, 4]), value_info("i", INT64, [P32]), value_info("b", INT64, [P32])],
                        [out("y")], opsets=(("", 18),)),
                  "c2i", ["image_shape", "at most 64 axes"]))
    c.append(Case("max_unpool_output_shape_len_2p32",
                  model([node("MaxUnpool", ["x", "i", "s"], ["y"], "unpool", [attr_ints("kernel_shape", [2, 2])])],
                        [value_info("x", FLOAT, [1, 1, 2, 2]), value_info("i", INT64, [1, 1, 2, 2]),
                         value_info("s", INT64, [P32])], [out("y")], opsets=(("", 11),)),
                  "unpool", ["output_shape", "at most 64 axes"]))
    c.append(Case("conv_no_input_channels",
                  model([node("Conv", ["x", "w"], ["y"], "conv")], [value_info("x", FLOAT, [1, 0, 5, 5])],
                        [value_info("y", FLOAT, [1, 1, 3, 3])], [tensor("w", FLOAT, [1, 0, 3, 3], raw=b"")]),
                  "conv", ["no input channels"], check_refuses=False))
    # Valid models whose string input of 2^40 elements `run --random-inputs` cannot make:
    # the error names the input, not a bare std::bad_alloc.
    c.append(Case("string_input_2p40",
                  model([node("Identity", ["x"], ["y"], "id")], [value_info("x", STRING, [P40])],
                        [value_info("y", STRING, [P40])]),
                  "x", ["string[1099511627776]", "--max-tensor-bytes"], check_refuses=False))
    c.append(Case("label_encoder_string_input_2p40",
                  model([node("LabelEncoder", ["x"], ["y"], "le",
                              [attr_strings("keys_strings", ["a"]), attr_ints("values_int64s", [1])], domain="ai.onnx.ml")],
                        [value_info("x", STRING, [P40])], [value_info("y", INT64, [P40])],
                        opsets=(("", 17), ("ai.onnx.ml", 3))),
                  "x", ["string[1099511627776]", "--max-tensor-bytes"], check_refuses=False))
    # A declared shape of 65 dims: the loader refuses it (no node to name; the value is named).
    c.append(Case("declared_rank_65",
                  model([node("Relu", ["x"], ["y"], "relu")], [value_info("x", FLOAT, [1] * 65)], [out("y")]),
                  "x", ["more than 64 dims"]))
    return c


def run_child(cmd, cwd):
    """Runs cmd; returns (status, signal, seconds, peak RSS in KB, output)."""
    with tempfile.TemporaryFile() as so:
        start = time.monotonic()
        p = subprocess.Popen(cmd, stdout=so, stderr=subprocess.STDOUT, cwd=cwd)
        timed_out = False
        while True:
            pid, status, usage = os.wait4(p.pid, os.WNOHANG)
            if pid == p.pid:
                break
            if time.monotonic() - start > TIME_LIMIT_S:
                timed_out = True
                os.kill(p.pid, signal.SIGKILL)
                pid, status, usage = os.wait4(p.pid, 0)
                break
            time.sleep(0.01)
        p.returncode = 0  # reaped here; keep Popen from waiting again
        elapsed = time.monotonic() - start
        so.seek(0)
        text = so.read().decode(errors="replace")
    sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else -1
    return code, sig, elapsed, usage.ru_maxrss, text, timed_out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--onyx", required=True)
    args = ap.parse_args()
    if not hasattr(os, "mkfifo"):
        print("skip: os.mkfifo is missing on this platform")
        return 77
    onyx = os.path.abspath(args.onyx)
    failures = []
    checked = 0

    def attempt(label, cmd, cwd, must_refuse, fragments):
        nonlocal checked
        checked += 1
        code, sig, secs, rss, text, timed_out = run_child(cmd, cwd)
        where = f"{label}: {' '.join(os.path.basename(a) if a == onyx else a for a in cmd)}"
        if timed_out:
            failures.append(f"{where}: still running after {TIME_LIMIT_S} s (killed)\n{text[-2000:]}")
            return
        if sig:
            failures.append(f"{where}: killed by signal {sig} ({signal.Signals(sig).name})\n{text[-2000:]}")
            return
        if rss > RSS_LIMIT_KB:
            failures.append(f"{where}: peak RSS {rss // 1024} MB, over 1 GB")
        if must_refuse:
            if code == 0:
                failures.append(f"{where}: exit 0, expected a refusal\n{text[-2000:]}")
            missing = [f for f in fragments if f not in text]
            if missing:
                failures.append(f"{where}: output lacks {missing}\n{text[-2000:]}")
        elif code not in (0, 1) or (code == 1 and "error" not in text):
            failures.append(f"{where}: exit {code} without a clear error\n{text[-2000:]}")
        print(f"ok   {where} (exit {code}, {secs:.2f} s, {rss // 1024} MB)")

    with tempfile.TemporaryDirectory() as work:
        for case in cases():
            path = os.path.join(work, case.name + ".onnx")
            with open(path, "wb") as f:
                f.write(case.data)
            named = [f"'{case.node}'"] + case.fragments
            attempt(case.name, [onyx, "check", path], work, case.check_refuses, ["error:"] + named)
            attempt(case.name, [onyx, "run", path, "--random-inputs", "-o", os.path.join(work, "out")], work,
                    case.run_refuses, ["onyx: error:"] + named)
            attempt(case.name, [onyx, "graph", path, "--shapes", "--format", "dot", "-o", os.devnull], work,
                    False, [])
            attempt(case.name, [onyx, "card", path, "-o", os.path.join(work, "card.md")], work, False, [])

        # One node of hours' work within every limit (a 512x512 kernel over a 1024x1024
        # image, 6.9e10 multiply-adds): --timeout stops it inside the node.
        long_conv = os.path.join(work, "long_conv.onnx")
        with open(long_conv, "wb") as f:
            f.write(model([node("Conv", ["x", "w"], ["y"], "conv")], [value_info("x", FLOAT, [1, 1, 1024, 1024])],
                          [value_info("y", FLOAT, [1, 1, 513, 513])],
                          [tensor("w", FLOAT, [1, 1, 512, 512], raw=b"\0" * (4 * 512 * 512))]))
        attempt("long_conv_timeout", [onyx, "run", long_conv, "--random-inputs", "--timeout", "1", "-o",
                                      os.path.join(work, "out")], work, True,
                ["onyx: error:", "'conv'", "RunOptions::terminate", "--timeout 1 s"])

        # Regexes that backtrack exponentially ("(a*)*c" against 3,000 a's): RegexFullMatch
        # takes RE2's syntax, which has no back-references, and onyx matches it in time
        # linear in the string. Before, `onyx run` never ended and --timeout could not stop
        # it (nothing polls inside the regex engine). The answers are plain: no string of
        # a's ends in c, and a's then one c do.
        xpb = os.path.join(work, "regex_x.pb")
        with open(xpb, "wb") as f:
            f.write(tensor("x", STRING, [2], strings=[b"a" * 3000, b"a" * 2999 + b"c"]))
        for k, pattern in enumerate((b"(a*)*c", b"(a|aa)*c", b"(a|a?)+c")):
            regex = os.path.join(work, f"regex_{k}.onnx")
            with open(regex, "wb") as f:
                f.write(model([node("RegexFullMatch", ["x"], ["y"], "re", [attr_string("pattern", pattern)])],
                              [value_info("x", STRING, [2])], [value_info("y", BOOL, [2])], opsets=(("", 20),)))
            rdir = os.path.join(work, f"regex_out_{k}")
            before = len(failures)
            attempt(f"regex_backtracking {pattern.decode()}", [onyx, "run", regex, "--input", "x=" + xpb, "--timeout",
                                                            "5", "-o", rdir], work, False, [])
            y = os.path.join(rdir, "y.npy")
            got = open(y, "rb").read()[-2:] if os.path.exists(y) else None
            if len(failures) == before and got != b"\x00\x01":
                failures.append(f"regex_backtracking {pattern.decode()}: y = {got!r}, expected [False, True]")

        # FIFOs: opening one for reading blocks until a writer comes; nothing may wait.
        fifo = os.path.join(work, "pipe.bin")
        os.mkfifo(fifo)
        for cmd in (["check", fifo], ["run", fifo, "--random-inputs", "-o", os.path.join(work, "out")],
                    ["graph", fifo, "--format", "dot", "-o", os.devnull], ["card", fifo, "-o", os.devnull]):
            attempt("fifo_as_model", [onyx] + cmd, work, True, ["onyx: error:", fifo, "is a FIFO"])
        ext = os.path.join(work, "external_fifo.onnx")
        with open(ext, "wb") as f:
            f.write(model([node("Identity", ["w"], ["y"], "id")], [], [value_info("y", FLOAT, [4])],
                          [tensor("w", FLOAT, [4], external={"location": "pipe.bin", "offset": 0, "length": 16})]))
        for cmd in (["check", ext], ["run", ext, "-o", os.path.join(work, "out")],
                    ["graph", ext, "--format", "dot", "-o", os.devnull]):
            attempt("fifo_as_external_data", [onyx] + cmd, work, True, ["onyx: error:", "tensor 'w'", "is a FIFO"])
        ident = os.path.join(work, "identity.onnx")
        with open(ident, "wb") as f:
            f.write(model([node("Identity", ["x"], ["y"], "id")], [value_info("x", FLOAT, [4])],
                          [value_info("y", FLOAT, [4])]))
        for ext_name in (".npy", ".pb"):
            fin = os.path.join(work, "input" + ext_name)
            os.mkfifo(fin)
            attempt("fifo_as_input" + ext_name, [onyx, "run", ident, "--input", "x=" + fin, "-o",
                                                 os.path.join(work, "out")], work, True,
                    ["onyx: error:", fin, "is a FIFO"])

    if failures:
        print(f"\n{len(failures)} of {checked} command(s) failed:")
        for f in failures:
            print("FAIL " + f)
        return 1
    print(f"\nall {checked} commands ended cleanly")
    return 0


if __name__ == "__main__":
    sys.exit(main())

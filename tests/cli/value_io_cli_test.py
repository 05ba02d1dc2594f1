#!/usr/bin/env python3
"""Every value kind through `onyx run` and `onyx parity`, checked with numpy and onnx's
own protobuf classes (ctest `value_io_cli`; skips with 77 where numpy or onnx is missing).

  value_io_cli_test.py --onyx BUILD/onyx [--work DIR]

- strings: a numpy unicode .npy in, the same array out (np.load); bytes that are not
  UTF-8 (from a .pb made by onnx.helper) come out as surrogate escapes that
  .encode("utf-8", "surrogateescape") turns back into the bytes, and go back in unchanged;
- --output-format pb: each file parses as onnx.TensorProto / SequenceProto / OptionalProto
  and onnx.numpy_helper reads the values numpy computed;
- a sequence is a folder of 0.npy, 1.npy; an empty optional a NAME.none marker; bfloat16
  the uint16 bits numpy's round-to-nearest-even gives, with a note; all of them fed back
  through --input into a model that consumes them;
- onyx parity reads string and raw-bit references (.npy, .pb) in its sample folders;
- loose numbers and wrong input names are refused with the flag and the text.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

failures = []


def check(cond, what, detail=""):
    print(("PASS " if cond else "FAIL ") + what + ("" if cond or not detail else "\n" + detail), flush=True)
    if not cond:
        failures.append(what)


def run(*args):
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=120)


def bf16_bits(x):
    """float32 -> bfloat16 bits, round to nearest even (NaN aside), in numpy."""
    import numpy as np
    u = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--onyx", required=True)
    ap.add_argument("--work", default="build/value_io_cli")
    a = ap.parse_args()
    try:
        import numpy as np
        import onnx
        from onnx import TensorProto, helper, numpy_helper
    except ImportError as e:
        print(f"SKIP: {e} (this test needs numpy and onnx, Debian's python3-numpy and python3-onnx)")
        return 77
    onyx, work = a.onyx, os.path.abspath(a.work)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    P = lambda *p: os.path.join(work, *p)  # noqa: E731

    def save_model(name, nodes, inputs, outputs, opset=17):
        g = helper.make_graph(nodes, name, inputs, outputs)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
        m.ir_version = 8
        path = P(name + ".onnx")
        onnx.save(m, path)
        return path

    tensor = helper.make_tensor_value_info
    # strings: y = Identity(s)
    strings = save_model("strings", [helper.make_node("Identity", ["s"], ["y"])],
                         [tensor("s", TensorProto.STRING, ["N"])], [tensor("y", TensorProto.STRING, ["N"])])
    # kinds: seq = [a, b], e = an empty optional, bf = bfloat16(a)
    opt_float = helper.make_optional_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, None))
    seq_float = helper.make_sequence_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, None))
    kinds = save_model(
        "kinds",
        [helper.make_node("SequenceConstruct", ["a", "b"], ["seq"]),
         helper.make_node("Optional", [], ["e"], type=helper.make_tensor_type_proto(TensorProto.FLOAT, None)),
         helper.make_node("Cast", ["a"], ["bf"], to=TensorProto.BFLOAT16)],
        [tensor("a", TensorProto.FLOAT, [3]), tensor("b", TensorProto.FLOAT, [2])],
        [helper.make_value_info("seq", seq_float), helper.make_value_info("e", opt_float),
         tensor("bf", TensorProto.BFLOAT16, [3])])
    # consume: what kinds writes, fed back
    consume = save_model(
        "consume",
        [helper.make_node("SequenceLength", ["seq"], ["n"]), helper.make_node("OptionalHasElement", ["o"], ["has"]),
         helper.make_node("Cast", ["bf"], ["f"], to=TensorProto.FLOAT),
         helper.make_node("SequenceAt", ["seq", "one"], ["second"])],
        [helper.make_value_info("seq", seq_float), helper.make_value_info("o", opt_float),
         tensor("bf", TensorProto.BFLOAT16, [3]), tensor("one", TensorProto.INT64, [])],
        [tensor("n", TensorProto.INT64, []), tensor("has", TensorProto.BOOL, []), tensor("f", TensorProto.FLOAT, [3]),
         tensor("second", TensorProto.FLOAT, None)])

    # ---- strings as numpy unicode ----
    words = np.array(["héllo", "", "中文😀", "a\0b"])
    np.save(P("s.npy"), words)
    p = run(onyx, "run", strings, "--input", "s=" + P("s.npy"), "-o", P("out_s"))
    y = np.load(P("out_s", "y.npy")) if p.returncode == 0 else None
    check(y is not None and y.dtype.kind == "U" and y.tolist() == words.tolist(),
          "a numpy unicode .npy goes through unchanged", p.stderr + f"\ngot {y!r}")
    raw = [b"\xff\xfe", b"ok", b"\xc3\xa9\xed\xa0\x80"]
    t = helper.make_tensor("s", TensorProto.STRING, [3], raw)
    open(P("raw.pb"), "wb").write(t.SerializeToString())
    p = run(onyx, "run", strings, "--input", "s=" + P("raw.pb"), "-o", P("out_raw"))
    y = np.load(P("out_raw", "y.npy")) if p.returncode == 0 else None
    back = [s.encode("utf-8", "surrogateescape") for s in y.tolist()] if y is not None else None
    check(back == raw, "bytes that are not UTF-8 come out as surrogate escapes", p.stderr + f"\ngot {back!r}")
    p = run(onyx, "run", strings, "--input", "s=" + P("out_raw", "y.npy"), "--output-format", "pb", "-o", P("out_raw2"))
    tp = onnx.TensorProto()
    if p.returncode == 0:
        tp.ParseFromString(open(P("out_raw2", "y.pb"), "rb").read())
    check(list(tp.string_data) == raw and tp.data_type == TensorProto.STRING and tp.name == "y",
          "...and go back in as the same bytes (a .pb TensorProto out)", p.stderr + f"\ngot {tp}")

    # ---- sequences, empty optionals, bfloat16 in the numpy form ----
    av = np.array([1.0, -2.5, 3.14159], dtype=np.float32)
    bv = np.array([0.1, 1e-3], dtype=np.float32)
    np.save(P("a.npy"), av)
    np.save(P("b.npy"), bv)
    p = run(onyx, "run", kinds, "-i", "a=" + P("a.npy"), "-i", "b=" + P("b.npy"), "-o", P("out_k"), "--json")
    j = json.loads(p.stdout) if p.returncode == 0 else {"outputs": []}
    outs = {o["name"]: o for o in j["outputs"]}
    check(sorted(os.listdir(P("out_k"))) == ["bf.npy", "e.none", "seq"] and sorted(os.listdir(P("out_k", "seq"))) == ["0.npy", "1.npy"],
          "npy form: a sequence folder, an empty-optional marker and a .npy", p.stderr + str(os.listdir(P("out_k"))))
    ok = os.path.isdir(P("out_k", "seq")) and np.array_equal(np.load(P("out_k", "seq", "0.npy")), av) and \
        np.array_equal(np.load(P("out_k", "seq", "1.npy")), bv)
    check(ok, "the sequence items are the arrays given")
    bits = np.load(P("out_k", "bf.npy")) if os.path.exists(P("out_k", "bf.npy")) else None
    check(bits is not None and bits.dtype == np.uint16 and np.array_equal(bits, bf16_bits(av)),
          "bfloat16 is written as the uint16 bits numpy's rounding gives", f"{bits!r} vs {bf16_bits(av)!r}")
    check(outs.get("bf", {}).get("stored_as") == "uint16" and "raw bits" in outs.get("bf", {}).get("note", ""),
          "--json says what the bits are", json.dumps(outs.get("bf")))
    check(outs.get("e", {}).get("kind") == "none" and outs.get("seq", {}).get("kind") == "sequence" and
          len(outs.get("seq", {}).get("items", [])) == 2, "--json names the kinds", json.dumps(outs))
    p2 = run(onyx, "run", kinds, "-i", "a=" + P("a.npy"), "-i", "b=" + P("b.npy"), "-o", P("out_k2"))
    check("raw bits (uint16)" in p2.stderr and "onyx: note:" in p2.stderr, "a note on stderr says what the bits are",
          p2.stderr)

    np.save(P("one.npy"), np.array(1, dtype=np.int64))
    p = run(onyx, "run", consume, "-i", "seq=" + P("out_k", "seq"), "-i", "o=" + P("out_k", "e.none"),
            "-i", "bf=" + P("out_k", "bf.npy"), "-i", "one=" + P("one.npy"), "-o", P("out_c"))
    ok = p.returncode == 0 and np.load(P("out_c", "n.npy")) == 2 and not np.load(P("out_c", "has.npy")) and \
        np.array_equal(np.load(P("out_c", "second.npy")), bv) and \
        np.array_equal(np.load(P("out_c", "f.npy")).view(np.uint32) >> 16, bf16_bits(av))
    check(ok, "the folder, the marker and the bits feed back through --input", p.stdout + p.stderr)

    # ---- the pb form, read with onnx's own classes ----
    p = run(onyx, "run", kinds, "-i", "a=" + P("a.npy"), "-i", "b=" + P("b.npy"), "-o", P("out_pb"),
            "--output-format", "pb")
    check(p.returncode == 0 and sorted(os.listdir(P("out_pb"))) == ["bf.pb", "e.pb", "seq.pb"], "pb form: one .pb per output",
          p.stderr)
    if p.returncode == 0:
        sp = onnx.SequenceProto()
        sp.ParseFromString(open(P("out_pb", "seq.pb"), "rb").read())
        items = [numpy_helper.to_array(t) for t in sp.tensor_values]
        check(sp.name == "seq" and sp.elem_type == onnx.SequenceProto.TENSOR and len(items) == 2 and
              np.array_equal(items[0], av) and np.array_equal(items[1], bv), "SequenceProto as onnx reads it", str(sp))
        op = onnx.OptionalProto()
        op.ParseFromString(open(P("out_pb", "e.pb"), "rb").read())
        check(op.name == "e" and not op.HasField("tensor_value") and not op.HasField("sequence_value"),
              "an empty OptionalProto", str(op))
        bp = onnx.TensorProto()
        bp.ParseFromString(open(P("out_pb", "bf.pb"), "rb").read())
        want = (bf16_bits(av).astype(np.uint32) << 16).view(np.float32)
        check(bp.data_type == TensorProto.BFLOAT16 and np.array_equal(numpy_helper.to_array(bp), want),
              "a bfloat16 TensorProto onnx.numpy_helper reads", str(bp))
    p = run(onyx, "run", consume, "-i", "seq=" + P("out_pb", "seq.pb"), "-i", "o=" + P("out_pb", "e.pb"),
            "-i", "bf=" + P("out_pb", "bf.pb"), "-i", "one=" + P("one.npy"), "-o", P("out_c2"))
    ok = p.returncode == 0 and np.load(P("out_c2", "n.npy")) == 2 and not np.load(P("out_c2", "has.npy"))
    check(ok, "the .pb files feed back through --input", p.stderr)

    # ---- onyx parity reads strings and raw bits ----
    for d in ("inputs/s0", "ref/s0", "bad/s0"):
        os.makedirs(P("parity", d))
    np.save(P("parity", "inputs", "s0", "s.npy"), words)
    open(P("parity", "ref", "s0", "y.pb"), "wb").write(
        helper.make_tensor("y", TensorProto.STRING, [4], [w.encode() for w in words.tolist()]).SerializeToString())
    np.save(P("parity", "bad", "s0", "y.npy"), np.array(["héllo", "", "中文😀", "a"]))
    p = run(onyx, "parity", strings, "--inputs", P("parity", "inputs"), "--reference", P("parity", "ref"), "--json")
    check(p.returncode == 0 and json.loads(p.stdout)["outputs"][0]["within_tolerance"] == 1,
          "parity: a unicode .npy input and a string .pb reference", p.stdout[-800:] + p.stderr)
    p = run(onyx, "parity", strings, "--inputs", P("parity", "inputs"), "--reference", P("parity", "bad"))
    check(p.returncode == 1, "parity: a string that differs fails", p.stdout[-800:] + p.stderr)
    bf_model = save_model("bf", [helper.make_node("Cast", ["a"], ["bf"], to=TensorProto.BFLOAT16)],
                          [tensor("a", TensorProto.FLOAT, [3])], [tensor("bf", TensorProto.BFLOAT16, [3])])
    for d in ("bfin/s0", "bfref/s0"):
        os.makedirs(P("parity", d))
    np.save(P("parity", "bfin", "s0", "a.npy"), av)
    np.save(P("parity", "bfref", "s0", "bf.npy"), bf16_bits(av))
    p = run(onyx, "parity", bf_model, "--inputs", P("parity", "bfin"), "--reference", P("parity", "bfref"), "--json",
            "--atol", "0", "--rtol", "0")
    ok = p.returncode == 0 and json.loads(p.stdout)["outputs"][0]["elements"] == 3 and json.loads(p.stdout)["outputs"][0]["max_abs_error"] == 0
    check(ok, "parity: a bfloat16 reference as uint16 bits is read as bfloat16", p.stdout[-800:] + p.stderr)

    # ---- strict numbers and names ----
    def refused(args, code, needles, what):
        p = run(onyx, *args)
        ok = p.returncode == code and all(n in p.stderr for n in needles)
        check(ok, what, f"exit {p.returncode}: {p.stderr}")

    for bad in ("1e3", "64abc", "-1", ""):
        refused(["run", strings, "--random-inputs", "--dim", "N=" + bad, "-o", P("x")], 1,
                ["onyx: error: --dim N", f"'{bad}'"], f"--dim N={bad} is refused")
    refused(["run", strings, "--random-inputs", "--dim", "W=4", "-o", P("x")], 1,
            ["--dim W", "its symbolic dims: N"], "--dim for a symbol the model lacks lists its symbols")
    refused(["run", strings, "--random-inputs", "--seed", "-1"], 2, ["--seed", "'-1'"], "--seed -1 is refused")
    refused(["run", strings, "--random-inputs", "--threads", "0x2"], 2, ["--threads", "'0x2'"], "--threads 0x2 is refused")
    refused(["run", strings, "-i", "s=" + P("s.npy"), "-i", "s=" + P("s.npy")], 1, ["--input s is given twice"],
            "an input given twice is refused")
    refused(["run", strings, "-i", "x=" + P("s.npy")], 1, ["--input x", "its inputs: s"],
            "an input the model lacks is refused, listing its inputs")
    refused(["run", strings, "--random-inputs", "--output-format", "json"], 2, ["--output-format"],
            "an unknown --output-format is refused")
    refused(["parity", strings, "--inputs", P("parity", "inputs"), "--reference", P("parity", "ref"), "--rtol", "nan"],
            2, ["--rtol", "'nan'"], "parity --rtol nan is refused")

    print(f"\n{len(failures)} failure(s)" if failures else "\nall passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

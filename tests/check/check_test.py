#!/usr/bin/python3
"""ctest `check_broken`: `onyx check` on the deliberately broken models of tests/check/broken.

For each row of tests/check/expected.txt (MODEL | CHECKER | FRAGMENT):
  - `onyx check MODEL` must exit 1 and print FRAGMENT (which names the node and the fault);
    a model may have several rows: every fragment must appear (all problems are reported);
  - CHECKER says what onnx.checker.check_model(full_check=True) of onnx 1.12 does with it:
    `reject` (asserted: both reject it) or `accept: WHY` (asserted too, with the reason
    onyx is stricter); or, for opsets onnx 1.12 does not know, `spec OP-VERSION: WHY`: the
    fragment follows from that section of the ONNX 1.22 spec text (asserted: the section
    exists in ../shared/spec where that folder is present) and onnx 1.12's checker cannot
    judge the model (asserted: it rejects it only for an IR version or operator version it
    does not know).
Then the provider table: a model holding RegexFullMatch fails `--provider wasm --strict`
(exit 3) and passes `--provider cpu --strict`; a model without it passes both; the JSON
report parses; a usage error exits 2. Exits 77 (skip) when the onnx module is missing.
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SPEC = os.path.join(os.path.dirname(ROOT), "shared", "spec")
# What onnx 1.12's checker says of a model newer than itself.
TOO_NEW = ("Your model ir_version is higher than the checker's", "No Op registered for")


def spec_has_section(label):
    """True when the ONNX spec text (or the repo's ai.onnx.ml history) describes OP-VERSION."""
    texts = [os.path.join(SPEC, n) for n in ("Changelog.md", "Operators-ml.md")]
    texts.append(os.path.join(ROOT, "scripts", "schemas_ml_history.md"))
    for path in texts:
        if not os.path.isfile(path):
            continue
        with open(path) as f:
            text = f.read()
        if f'name="{label}"' in text or f'#{label}"' in text:
            return True
    return False


def run(onyx, *args):
    p = subprocess.run([onyx, *args], capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout + p.stderr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--onyx", required=True)
    args = ap.parse_args()
    try:
        import onnx
    except ImportError:
        print("skip: the onnx Python module is not installed")
        return 77

    rows = {}
    with open(os.path.join(HERE, "expected.txt")) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            name, checker, fragment = (x.strip() for x in line.split("|", 2))
            rows.setdefault(name, {"checker": checker, "fragments": []})["fragments"].append(fragment)

    failures, spec_unchecked = [], []
    on_disk = sorted(f[:-5] for f in os.listdir(os.path.join(HERE, "broken")) if f.endswith(".onnx"))
    for name in on_disk:
        if name not in rows:
            failures.append(f"{name}: broken model without a row in expected.txt")
    for name, row in sorted(rows.items()):
        path = os.path.join(HERE, "broken", name + ".onnx")
        if not os.path.exists(path):
            failures.append(f"{name}: no file {path} (run tests/check/make_broken.py)")
            continue
        rc, out = run(args.onyx, "check", path)
        if rc != 1:
            failures.append(f"{name}: onyx check exited {rc}, expected 1\n{out}")
        for frag in row["fragments"]:
            if frag not in out:
                failures.append(f"{name}: output lacks {frag!r}\n{out}")
        checker_says = ""
        try:
            onnx.checker.check_model(onnx.load(path), full_check=True)
            checker_rejects = False
        except Exception as e:  # noqa: BLE001 (any checker failure is a rejection)
            checker_rejects, checker_says = True, str(e)
        if row["checker"].startswith("spec "):
            label = row["checker"][5:].split(":", 1)[0].strip()
            if not any(t in checker_says for t in TOO_NEW):
                failures.append(f"{name}: expected.txt says onnx 1.12's checker cannot judge it, but it "
                                f"{'rejects it with: ' + checker_says[:200] if checker_rejects else 'accepts it'}")
            if os.path.isdir(SPEC) and not spec_has_section(label):
                failures.append(f"{name}: expected.txt cites {label}, which {SPEC} does not describe")
            elif not os.path.isdir(SPEC):
                spec_unchecked.append(name)
        if row["checker"] == "reject" and not checker_rejects:
            failures.append(f"{name}: expected.txt says onnx.checker rejects it, but it accepts it")
        if row["checker"].startswith("accept") and checker_rejects:
            failures.append(f"{name}: expected.txt says onnx.checker accepts it, but it rejects it")
    print(f"{len(rows)} broken models checked")
    if spec_unchecked:
        print(f"note: no {SPEC}, so the spec sections cited for {len(spec_unchecked)} models were not looked up")

    regex = os.path.join(HERE, "ok", "regex_opset20.onnx")
    plain = os.path.join(HERE, "ok", "relu_add.onnx")
    cases = [
        (regex, ["--provider", "wasm", "--strict"], 3, "RegexFullMatch 'match_mail' (opset 20)"),
        (regex, ["--provider", "wasm", "--strict"], 3, "left out of the WebAssembly build"),
        (regex, ["--provider", "all", "--strict"], 3, "cpu: can run the 1 node"),
        (regex, ["--provider", "cpu", "--strict"], 0, "valid"),
        (regex, ["--provider", "wasm"], 0, "wasm: cannot run 1 of 1 node"),
        (plain, ["--provider", "wasm", "--strict"], 0, "wasm: can run all 2 nodes"),
        (plain, ["--provider", "all", "--strict"], 0, "cpu: can run all 2 nodes"),
        (plain, ["--provider", "gpu"], 2, "--provider"),
        (os.path.join(HERE, "no-such-model.onnx"), [], 1, "cannot load the model"),
        (os.path.join(HERE, "expected.txt"), [], 1, "cannot load the model"),
    ]
    for model, extra, want_rc, frag in cases:
        rc, out = run(args.onyx, "check", model, *extra)
        if rc != want_rc or frag not in out:
            failures.append(f"check {os.path.basename(model)} {' '.join(extra)}: exit {rc} (want {want_rc}), "
                            f"want {frag!r} in output:\n{out}")
    rc, out = run(args.onyx, "check")
    if rc != 2:
        failures.append(f"'onyx check' without a model exited {rc}, expected 2")
    rc, out = run(args.onyx, "check", "--help")
    if rc != 0 or "Exit codes" not in out:
        failures.append(f"'onyx check --help' exited {rc} or lacks the exit codes:\n{out}")

    rc, out = run(args.onyx, "check", "--json", "--provider", "all", regex)
    try:
        j = json.loads(out)
        assert j["valid"] is True and j["exit_code"] == 0, j
        wasm = [p for p in j["providers"] if p["provider"] == "wasm"][0]
        assert wasm["unsupported"][0]["op_type"] == "RegexFullMatch", wasm
        assert wasm["unsupported"][0]["input_types"] == ["string[2]"], wasm
    except Exception as e:  # noqa: BLE001
        failures.append(f"--json report: {e}\n{out}")
    rc, out = run(args.onyx, "check", "--json", os.path.join(HERE, "broken", "three_faults.onnx"))
    try:
        j = json.loads(out)
        errs = [p for p in j["problems"] if p["severity"] == "error"]
        assert rc == 1 and j["valid"] is False, j
        assert {p["node"] for p in errs} >= {"cast_no_to", "relu_undefined", "softmax_bad_attr"}, errs
    except Exception as e:  # noqa: BLE001
        failures.append(f"--json of three_faults: {e}\n{out}")

    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    print("ok" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""Compares two schema tables (the .inc format of scripts/gen_schemas.py) where they overlap:
for every (domain, op, since) of the OLD table, the NEW one must give the same counts,
deprecation, formal parameters (names, type strings, markers, allowed types) and
attributes (names, types, required). Prints each difference and a summary; exits 1 when
the OLD table has rows the NEW one lacks or rows that differ, unless they are explained
in KNOWN below or listed with --allow.

The table generated from onnx 1.12's Python module is in git history:

    /usr/bin/python3 scripts/compare_schemas.py --old-rev 56a825e   # vs src/check/onnx_schemas.inc

A one-off check, kept so the comparison can be repeated when the spec moves on.
"""
import argparse
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ELEM = ["undefined", "float", "uint8", "int8", "uint16", "int16", "int32", "int64", "string", "bool",
        "float16", "double", "uint32", "uint64", "complex64", "complex128", "bfloat16", "float8e4m3fn",
        "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz", "uint4", "int4", "float4e2m1", "float8e8m0",
        "uint2", "int2"]
KINDS = ("tensor", "seq", "optional", "optional_seq")
# Where the ONNX 1.22 spec text legitimately differs from onnx 1.12's definitions.
KNOWN = {
    "ai.onnx.Erf-13": "onnx PR #7398 'Clarify supported dtypes for Erf operator' narrowed T to the "
                      "float types (the kernels never took integers)",
    "ai.onnx.GridSample-16": "onnx PR #4655 'Correct types in GridSample def.cc': grid is the float "
                             "type T2 and Y has X's type T1 (1.12 had them the other way round)",
    "ai.onnx.Scatter-11": "deprecated: the spec text gives deprecated versions no signature",
    "ai.onnx.Upsample-10": "deprecated: the spec text gives deprecated versions no signature",
}


def load(text):
    """{(domain, op, since): row} with each parameter's type set resolved."""
    sets = []
    part = None
    rows = {}
    for line in text.split("\n"):
        if line.startswith("#ifdef ONYX_SCHEMA_"):
            part = line.split()[1]
            continue
        if line.startswith("#endif"):
            part = None
            continue
        if part == "ONYX_SCHEMA_TYPESETS" and line.startswith("{"):
            sets.append(tuple(int(x, 0) for x in line.strip("{},").split(",")))
        elif part == "ONYX_SCHEMA_ROWS" and line.startswith("{"):
            m = re.fullmatch(r'\{"([^"]*)", "([^"]*)", (\d+), (\d+), (\d+), (\d+), (\d+), (true|false), '
                             r'"([^"]*)", "([^"]*)", "([^"]*)"\},', line)
            if not m:
                raise SystemExit(f"cannot read row {line[:80]}")
            d, op, since = m.group(1), m.group(2), int(m.group(3))
            rows[(d, op, since)] = {
                "counts": tuple(int(m.group(k)) for k in range(4, 8)),
                "deprecated": m.group(8) == "true",
                "inputs": m.group(9), "outputs": m.group(10), "attrs": m.group(11).split(),
            }
    for r in rows.values():
        for k in ("inputs", "outputs"):
            params = []
            for w in r[k].split():
                name, type_str, idx = w.split(":")
                params.append((name, type_str, sets[int(idx)]))
            r[k] = params
    return rows


def names(mask):
    return {ELEM[c] for c in range(64) if mask >> c & 1}


def diff_types(a, b):
    """Human text for how type set b differs from a, or ''."""
    out = []
    for k, kind in enumerate(KINDS):
        plus, minus = names(b[k]) - names(a[k]), names(a[k]) - names(b[k])
        if plus:
            out.append(f"{kind} +{sorted(plus)}")
        if minus:
            out.append(f"{kind} -{sorted(minus)}")
    if a[4] != b[4]:
        out.append(f"other {a[4]} -> {b[4]}")
    return "; ".join(out)


def compare(old, new):
    problems = []
    for key in sorted(old):
        label = f"{key[0] or 'ai.onnx'}.{key[1]}-{key[2]}"
        if key not in new:
            problems.append((label, "missing from the new table"))
            continue
        o, n = old[key], new[key]
        if o["deprecated"] != n["deprecated"]:
            problems.append((label, f"deprecated {o['deprecated']} -> {n['deprecated']}"))
        if o["counts"] != n["counts"]:
            problems.append((label, f"counts (in min, max, out min, max) {o['counts']} -> {n['counts']}"))
        if o["attrs"] != n["attrs"]:
            problems.append((label, f"attributes {' '.join(o['attrs'])} -> {' '.join(n['attrs'])}"))
        for k in ("inputs", "outputs"):
            po, pn = o[k], n[k]
            if [p[:2] for p in po] != [p[:2] for p in pn]:
                problems.append((label, f"{k} {[p[:2] for p in po]} -> {[p[:2] for p in pn]}"))
                continue
            for (name, _, to), (_, _, tn) in zip(po, pn):
                d = diff_types(to, tn)
                if d:
                    problems.append((label, f"{k[:-1]} {name}: {d}"))
    return problems


def main():
    ap = argparse.ArgumentParser()
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--old", help="old table file")
    g.add_argument("--old-rev", help="git revision holding src/check/onnx112_schemas.inc")
    ap.add_argument("--new", default=os.path.join(ROOT, "src", "check", "onnx_schemas.inc"))
    ap.add_argument("--allow", action="append", default=list(KNOWN),
                    help="OP-LABEL whose differences are known and explained (repeatable; "
                         "the ones in KNOWN are always allowed)")
    args = ap.parse_args()
    if args.old:
        old_text = open(args.old).read()
    else:
        old_text = subprocess.run(["git", "-C", ROOT, "show", f"{args.old_rev}:src/check/onnx112_schemas.inc"],
                                  check=True, capture_output=True, text=True).stdout
    old, new = load(old_text), load(open(args.new).read())
    problems = compare(old, new)
    for label, text in problems:
        why = KNOWN.get(label, "allowed" if label in args.allow else "")
        print(f"{label}: {text}" + (f"  ({why})" if why else ""))
    bad = {label for label, _ in problems if label not in args.allow}
    print(f"{len(old)} rows in the old table, {len(new)} in the new; {len(old) - len({p[0] for p in problems})} "
          f"identical, {len({p[0] for p in problems})} differ ({len(bad)} not allowed)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

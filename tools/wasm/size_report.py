#!/usr/bin/env python3
"""What takes the bytes of a .wasm: code bytes per function and per source file.

Link the module with function names kept (emcc --profiling-funcs), then

    tools/wasm/size_report.py build-web/onyx-web.wasm --objects build-web [--top 40]

prints the sections, the largest functions, and (with --objects: a build folder whose .o
files are searched for the object that defines each function, by llvm-nm) the code bytes
per source file. A function defined in several objects (an inline or template one) is
counted once, under "(inline/template, several files)".
"""
import argparse
import collections
import os
import re
import subprocess
import sys

SECTION_NAMES = {0: "custom", 1: "type", 2: "import", 3: "function", 4: "table", 5: "memory", 6: "global",
                 7: "export", 8: "start", 9: "element", 10: "code", 11: "data", 12: "datacount", 13: "tag"}


def leb(buf, pos):
    """Unsigned LEB128 at pos: (value, next position)."""
    result = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return result, pos


def name_at(buf, pos):
    n, pos = leb(buf, pos)
    return buf[pos:pos + n].decode("utf-8", "replace"), pos + n


def parse(path):
    """Sections [(name, size)], per function index its body size, function names, imports."""
    buf = open(path, "rb").read()
    if buf[:4] != b"\0asm":
        sys.exit(f"{path}: not a WebAssembly module")
    pos, sections, bodies, names, imported = 8, [], [], {}, 0
    while pos < len(buf):
        sid = buf[pos]
        size, start = leb(buf, pos + 1)
        end = start + size
        label = SECTION_NAMES.get(sid, str(sid))
        if sid == 0:
            label = "custom:" + name_at(buf, start)[0]
        sections.append((label, end - pos))
        if sid == 2:  # imports: functions among them take the first indices
            count, p = leb(buf, start)
            for _ in range(count):
                _, p = name_at(buf, p)
                _, p = name_at(buf, p)
                kind = buf[p]
                p += 1
                if kind == 0:
                    imported += 1
                    _, p = leb(buf, p)
                elif kind == 1:
                    p += 1
                    flags, p = leb(buf, p)
                    _, p = leb(buf, p)
                    if flags & 1:
                        _, p = leb(buf, p)
                elif kind == 2:
                    flags, p = leb(buf, p)
                    _, p = leb(buf, p)
                    if flags & 1:
                        _, p = leb(buf, p)
                elif kind == 3:
                    p += 2
                elif kind == 4:
                    p += 1
                    _, p = leb(buf, p)
        elif sid == 10:
            count, p = leb(buf, start)
            for _ in range(count):
                n, q = leb(buf, p)
                bodies.append(q + n - p)
                p = q + n
        elif label == "custom:name":
            _, p = name_at(buf, start)
            while p < end:
                sub = buf[p]
                n, q = leb(buf, p + 1)
                if sub == 1:
                    count, r = leb(buf, q)
                    for _ in range(count):
                        idx, r = leb(buf, r)
                        nm, r = name_at(buf, r)
                        names[idx] = nm
                p = q + n
        pos = end
    return sections, bodies, names, imported


def demangle(names):
    mangled = [n for n in names if n.startswith("_Z")]
    if not mangled:
        return {}
    tool = next((t for t in ("llvm-cxxfilt", "c++filt") if subprocess.run(["which", t], capture_output=True).returncode == 0), None)
    if not tool:
        return {}
    out = subprocess.run([tool], input="\n".join(mangled), capture_output=True, text=True).stdout.splitlines()
    return dict(zip(mangled, out))


def defining_objects(build):
    """Function (demangled) -> the .o files under build that define it (llvm-nm)."""
    nm = next((t for t in ("llvm-nm", "emnm") if subprocess.run(["which", t], capture_output=True).returncode == 0), None)
    where = collections.defaultdict(set)
    objs = [os.path.join(d, f) for d, _, fs in os.walk(build) for f in fs if f.endswith(".o")]
    for o in objs:
        r = subprocess.run([nm, "--defined-only", "--demangle", o], capture_output=True, text=True)
        src = re.sub(r"^.*?\.dir/", "", o)[:-2]
        for line in r.stdout.splitlines():
            parts = line.split(" ", 2)
            if len(parts) == 3 and parts[1] in ("T", "t", "W", "w"):
                where[parts[2]].add(src)
    return where


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("wasm")
    ap.add_argument("--objects", help="build folder with the .o files (per-source-file sums)")
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--grep", help="only functions whose (demangled) name matches this regex")
    a = ap.parse_args()
    sections, bodies, names, imported = parse(a.wasm)
    total = sum(s for _, s in sections)
    print(f"{a.wasm}: {total:,} bytes, {len(bodies)} functions")
    for label, size in sections:
        print(f"  {label:28s} {size:10,d}")
    funcs = [(bodies[i], names.get(i + imported, f"func{i + imported}")) for i in range(len(bodies))]
    dm = demangle([n for _, n in funcs])
    funcs = [(s, n, dm.get(n, n)) for s, n in funcs]
    if a.grep:
        funcs = [f for f in funcs if re.search(a.grep, f[2])]
        print(f"matching /{a.grep}/: {len(funcs)} functions, {sum(f[0] for f in funcs):,} code bytes")
    funcs.sort(reverse=True)
    print(f"\nlargest {a.top} functions (code bytes):")
    for s, _, d in funcs[:a.top]:
        print(f"  {s:9,d}  {d[:150]}")
    # Per namespace-ish prefix: the name up to its argument list, the last two components dropped.
    groups = collections.Counter()
    for s, _, d in funcs:
        base = re.sub(r"\(.*", "", re.sub(r"<.*>", "<>", d))
        parts = base.split("::")
        groups["::".join(parts[:-1][:4]) or "(global)"] += s
    print("\ncode bytes per namespace:")
    for g, s in groups.most_common(a.top):
        print(f"  {s:9,d}  {g}")
    if a.objects:
        where = defining_objects(a.objects)
        files = collections.Counter()
        for s, _, d in funcs:
            objs = where.get(d, set())
            key = next(iter(objs)) if len(objs) == 1 else ("(inline/template, several files)" if objs else "(libc++, libc, runtime)")
            files[key] += s
        print("\ncode bytes per source file:")
        for f, s in files.most_common(a.top):
            print(f"  {s:9,d}  {f}")


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Writes src/check/onnx_schemas.inc, the operator schemas `onyx check` validates nodes
against, from the ONNX specification text:

    Changelog.md      every version of every ai.onnx, ai.onnx.preview and
                      ai.onnx.preview.training operator
    Operators-ml.md   the latest version of every ai.onnx.ml operator (the spec folder has
                      no Changelog-ml.md), completed by scripts/schemas_ml_history.md for
                      the older ai.onnx.ml versions
    Operators.md      the summary tables, to check that no version was missed
    onnx.proto        TensorProto.DataType codes, checked against include/onyx/dtype.h
    README.md         the ONNX release the folder holds ("# ONNX specification, release X")

    /usr/bin/python3 scripts/gen_schemas.py [--spec DIR] [--out FILE]

DIR defaults to ../shared/spec next to the repository; FILE to the table in the tree.
Standard library only. Anything the parser does not recognise stops it with the file,
line and operator, so a change of the spec's layout is noticed instead of guessed at.
The ctest `check_schemas_current` regenerates the table and compares it with the tree.
"""
import argparse
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_SPEC = os.path.join(os.path.dirname(ROOT), "shared", "spec")
DEFAULT_OUT = os.path.join(ROOT, "src", "check", "onnx_schemas.inc")
ML_HISTORY = os.path.join(ROOT, "scripts", "schemas_ml_history.md")
DTYPE_H = os.path.join(ROOT, "include", "onyx", "dtype.h")

INT_MAX = 2**31 - 1
ATTR_LETTER = {  # the spec's attribute type words -> one letter (upper case: list)
    "float": "f", "int": "i", "string": "s", "tensor": "t", "graph": "g",
    "sparse_tensor": "p", "type_proto": "y",
    "list of floats": "F", "list of ints": "I", "list of strings": "S",
    "list of tensors": "T", "list of graphs": "G", "list of sparse_tensors": "P",
    "list of type_protos": "Y",
}
SECTIONS = ("Version", "Attributes", "Inputs", "Outputs", "Type Constraints", "Examples")


class SpecError(Exception):
    pass


def fail(where, msg):
    raise SpecError(f"{where}: {msg}")


# ---- element types ----

def read_dtypes(proto_path, dtype_h):
    """ONNX element type name ("float8e4m3fn") -> code, from onnx.proto's TensorProto.DataType,
    checked against onyx's DType enum (same codes; each must fit a 64-bit mask)."""
    proto, onyx = {}, {}
    with open(proto_path) as f:
        text = f.read()
    m = re.search(r"enum DataType \{(.*?)\n\s*\}", text, re.S)
    if not m:
        fail(proto_path, "no 'enum DataType { ... }' (TensorProto.DataType) found")
    for name, code in re.findall(r"^\s*([A-Z0-9_]+)\s*=\s*(\d+);", m.group(1), re.M):
        proto[name.lower()] = int(code)
    with open(dtype_h) as f:
        text = f.read()
    m = re.search(r"enum class DType[^{]*\{(.*?)\};", text, re.S)
    if not m:
        fail(dtype_h, "no 'enum class DType { ... };' found")
    for name, code in re.findall(r"\bk([A-Za-z0-9]+)\s*=\s*(\d+)", m.group(1)):
        onyx[name.lower()] = int(code)
    proto.pop("undefined", None)
    for name, code in proto.items():
        if onyx.get(name) != code:
            fail(dtype_h, f"TensorProto.DataType {name.upper()} = {code} (onnx.proto) has no DType "
                          f"k... = {code} in onyx (found {onyx.get(name)})")
        if code >= 64:
            fail(dtype_h, f"element type {name} has code {code}: TypeSet masks hold codes 1..63 only")
    return proto


CONSTRUCTORS = ("tensor", "sparse_tensor", "seq", "optional", "map")


def parse_type(s, where):
    """'seq(tensor(float))' -> ('seq', ('tensor', 'float')); map(K, V) -> ('map', K, V)."""
    toks = re.findall(r"[A-Za-z0-9_]+|[(),]|\S", s)
    pos = 0

    def expect(t):
        nonlocal pos
        if pos >= len(toks) or toks[pos] != t:
            fail(where, f"cannot read type '{s}' (expected '{t}' at token {pos})")
        pos += 1

    def one():
        nonlocal pos
        if pos >= len(toks):
            fail(where, f"cannot read type '{s}' (ends early)")
        head = toks[pos]
        pos += 1
        if head in ("tensor", "sparse_tensor"):
            expect("(")
            elem = toks[pos]
            pos += 1
            expect(")")
            return (head, elem)
        if head in ("seq", "optional"):
            expect("(")
            inner = one()
            expect(")")
            return (head, inner)
        if head == "map":
            expect("(")
            key = toks[pos]
            pos += 1
            expect(",")
            if pos < len(toks) and toks[pos] not in CONSTRUCTORS:
                val = ("tensor", toks[pos])  # map(int64, string): the value type is an element type
                pos += 1
            else:
                val = one()
            expect(")")
            return ("map", key, val)
        fail(where, f"unknown type constructor '{head}' in '{s}'")

    out = [one()]
    while pos < len(toks):
        expect(",")
        out.append(one())
    return out


def type_masks(types, dtypes, where):
    """(tensor, seq(tensor), optional(tensor), optional(seq(tensor)), other) element masks."""
    m = [0, 0, 0, 0, 0]

    def code(e):
        if e not in dtypes:
            fail(where, f"unknown element type '{e}' (not in onnx.proto's TensorProto.DataType)")
        return 1 << dtypes[e]

    def check_elems(t):  # every element type named anywhere must be known
        if t[0] in ("tensor", "sparse_tensor"):
            code(t[1])
        elif t[0] == "map":
            code(t[1])
            check_elems(t[2])
        else:
            check_elems(t[1])

    for t in types:
        check_elems(t)
        if t[0] == "tensor":
            m[0] |= code(t[1])
        elif t[0] == "seq" and t[1][0] == "tensor":
            m[1] |= code(t[1][1])
        elif t[0] == "optional" and t[1][0] == "tensor":
            m[2] |= code(t[1][1])
        elif t[0] == "optional" and t[1][0] == "seq" and t[1][1][0] == "tensor":
            m[3] |= code(t[1][1][1])
        else:
            m[4] = 1  # maps, sequences of maps, sparse tensors: not checked further
    return tuple(m)


# ---- the markdown layout of gen_doc.py ----

class Op:
    def __init__(self, domain, name, since, deprecated, where):
        self.domain, self.name, self.since, self.deprecated = domain, name, since, deprecated
        self.where = where
        self.experimental = False
        self.sections = {}  # section name -> (counts or None, [(dt text, where)])


HEADER = re.compile(r'^### (?:<a name="[^"]+"></a>)+(?:<a name="[^"]+">)?\*\*([A-Za-z0-9_.-]+)\*\*'
                    r'( \(deprecated\))?</a>$')
DOMAIN_HEAD = re.compile(r"^#{1,2} (ai\.onnx(?:\.[a-z.]+)?)( \(default\))?$")
VERSION_HEAD = re.compile(r"^## Version (\d+) of (?:the default ONNX operator set|the '([a-z.]+)' operator set)$")
SECTION_HEAD = re.compile(r"^#### ([A-Za-z ]+?)(?: \((\d+) - (\d+|&#8734;)\))?$")
AVAILABLE = re.compile(r"^This version of the operator has been (available|deprecated) since version (\d+) of "
                       r"(?:the default ONNX operator set|the '([a-z.]+)' operator set)\.$")


def parse_ops(path, one_version_per_op):
    """Every operator section of a Changelog.md / Operators-ml.md style file."""
    with open(path) as f:
        lines = f.read().split("\n")
    base = os.path.basename(path)
    ops = []
    domain = None       # None until the first domain heading: the preamble is skipped
    set_version = None  # "## Version N of ..." (Changelog layout)
    op = None
    section = None
    i = 0
    fence = False

    def where(k):
        return f"{base}:{k + 1}" + (f" ({op.name}-{op.since})" if op else "")

    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            fence = not fence
            i += 1
            continue
        if fence or not line.startswith("#"):
            if line.strip() and section in ("Version", "Attributes", "Inputs", "Outputs", "Type Constraints"):
                fail(where(i), f"unexpected text after '#### {section}': '{line[:80]}'")
            i += 1
            continue
        m = DOMAIN_HEAD.match(line)
        if m and (line.startswith("# ") or (line.startswith("## ") and one_version_per_op)):
            domain = "" if m.group(1) == "ai.onnx" else m.group(1)
            op = section = None
            i += 1
            continue
        if domain is None:
            i += 1
            continue
        m = VERSION_HEAD.match(line)
        if m:
            if one_version_per_op:
                fail(where(i), "a '## Version' heading in a file of latest versions")
            dom = m.group(2) or ""
            if dom != domain:
                fail(where(i), f"'{line}' inside the section of domain '{domain}'")
            set_version = int(m.group(1))
            op = section = None
            i += 1
            continue
        m = HEADER.match(line)
        if m:
            full = m.group(1)
            prefix = domain + "." if domain else ""
            if prefix and not full.startswith(prefix):
                fail(f"{base}:{i + 1}", f"operator '{full}' does not belong to domain '{domain}'")
            name = full[len(prefix):]
            since = None
            if not one_version_per_op:
                mm = re.fullmatch(r"([A-Za-z0-9_]+)-(\d+)", name)
                if not mm:
                    fail(f"{base}:{i + 1}", f"operator heading '{full}' has no '-VERSION'")
                name, since = mm.group(1), int(mm.group(2))
                if set_version is None or since != set_version:
                    fail(f"{base}:{i + 1}", f"{full} is under '## Version {set_version}'")
            elif not re.fullmatch(r"[A-Za-z0-9_]+", name):
                fail(f"{base}:{i + 1}", f"cannot read operator name '{full}'")
            op = Op(domain, name, since, bool(m.group(2)), f"{base}:{i + 1}")
            ops.append(op)
            section = None
            i += 1
            continue
        m = SECTION_HEAD.match(line)
        if m and op is not None and m.group(1) in SECTIONS:
            section = m.group(1)
            if section in op.sections:
                fail(where(i), f"section '#### {section}' given twice")
            counts = None
            if m.group(2):
                if section not in ("Inputs", "Outputs"):
                    fail(where(i), f"counts on '#### {section}'")
                hi = INT_MAX if m.group(3) == "&#8734;" else int(m.group(3))
                counts = (int(m.group(2)), hi)
            if section == "Version":
                i = read_version(lines, i + 1, op, set_version, where)
                op.sections[section] = (None, [])
            elif section == "Examples":
                op.sections[section] = (None, [])
                i += 1  # free text and code until the next operator
            else:
                entries, i = read_dl(lines, i + 1, where)
                op.sections[section] = (counts, entries)
            continue
        if section == "Examples":
            i += 1
            continue
        fail(where(i), f"unrecognised heading '{line}'")
    if fence:
        fail(f"{base}", "a ``` code fence is never closed")
    return ops


def read_version(lines, i, op, set_version, where):
    """The '#### Version' body: when the version appeared (or was deprecated)."""
    seen = False
    while i < len(lines) and not lines[i].startswith("#"):
        line = lines[i].strip()
        if not line or line.startswith("Other versions of this operator:"):
            i += 1
            continue
        if line == "No versioning maintained for experimental ops.":
            if op.since is None:
                fail(where(i), "an experimental operator without a version in its heading")
            op.experimental = True
        else:
            m = AVAILABLE.match(line)
            if not m:
                fail(where(i), f"cannot read the version sentence '{line}'")
            if (m.group(3) or "") != op.domain:
                fail(where(i), f"the version sentence names domain '{m.group(3) or ''}', not '{op.domain}'")
            if (m.group(1) == "deprecated") != op.deprecated:
                fail(where(i), "the heading and the version sentence disagree about deprecation")
            v = int(m.group(2))
            if op.since is None:
                op.since = v
            elif v != op.since:
                fail(where(i), f"the version sentence says {v}")
        if seen:
            fail(where(i), "two version sentences")
        seen = True
        i += 1
    if not seen:
        fail(where(i), "'#### Version' without a version sentence")
    return i


def read_dl(lines, i, where):
    """A <dl> of <dt>TERM</dt><dd>...</dd> pairs; returns the TERMs with their places."""
    while i < len(lines) and not lines[i].strip():
        i += 1
    if i < len(lines) and lines[i].startswith("#"):
        return [], i  # an empty section ("#### Inputs" of an operator without inputs)
    if i >= len(lines) or lines[i] != "<dl>":
        fail(where(i), "expected '<dl>'")
    i += 1
    entries = []
    while True:
        if i >= len(lines):
            fail(where(i), "the <dl> is never closed")
        line = lines[i]
        if line == "</dl>":
            return entries, i + 1
        m = re.fullmatch(r"<dt>(.*)</dt>", line)
        if m:
            entries.append((m.group(1), where(i)))
            i += 1
            continue
        if line.startswith("<dd>"):
            start = i
            while "</dd>" not in lines[i]:
                i += 1
                if i >= len(lines) or lines[i].startswith(("<dt>", "</dl>", "#")):
                    fail(where(start), "a <dd> is never closed")
            if not lines[i].rstrip().endswith("</dd>"):
                fail(where(i), "text after </dd>")
            i += 1
            continue
        if not line.strip():
            i += 1
            continue
        fail(where(i), f"unexpected line in a <dl>: '{line[:80]}'")


ATTR_DT = re.compile(r"<tt>([A-Za-z0-9_]+)</tt> : ([a-z_ ]+?)( \(required\)| \(default is .*\))?")
PARAM_DT = re.compile(r"<tt>([^<]+)</tt>(?: \(([a-z, -]+)\))? : (.+)")
PARAM_MARKS = {"optional", "variadic", "heterogeneous", "differentiable", "non-differentiable"}


class Schema:
    """One operator version, resolved: what the table row says."""

    def __init__(self, op, dtypes):
        self.domain, self.name, self.since, self.deprecated = op.domain, op.name, op.since, op.deprecated
        self.experimental = op.experimental
        tag = f"{op.where} ({op.name}-{op.since})"
        if "Version" not in op.sections:
            fail(tag, "no '#### Version' section")
        self.attrs = []
        for text, where in op.sections.get("Attributes", (None, []))[1]:
            m = ATTR_DT.fullmatch(text)
            if not m or m.group(2) not in ATTR_LETTER:
                fail(where, f"cannot read attribute '{text}'")
            self.attrs.append((m.group(1), ATTR_LETTER[m.group(2)], m.group(3) == " (required)"))
        names = [a[0] for a in self.attrs]
        if len(set(names)) != len(names):
            fail(tag, f"an attribute is listed twice: {names}")
        self.attrs.sort()
        constraints = {}
        for text, where in op.sections.get("Type Constraints", (None, []))[1]:
            m = re.fullmatch(r"<tt>([A-Za-z0-9_]+)</tt> : (.+)", text)
            if not m:
                fail(where, f"cannot read type constraint '{text}'")
            if m.group(1) in constraints:
                fail(where, f"type constraint {m.group(1)} is given twice")
            constraints[m.group(1)] = type_masks(parse_type(m.group(2), where), dtypes, where)
        # A constraint no parameter uses is left alone (Tile-1 declares such a T1).
        self.inputs, self.min_in, self.max_in = self.params(op, "Inputs", constraints, dtypes, tag)
        self.outputs, self.min_out, self.max_out = self.params(op, "Outputs", constraints, dtypes, tag)

    @staticmethod
    def params(op, section, constraints, dtypes, tag):
        counts, entries = op.sections.get(section, (None, []))
        out = []
        for k, (text, where) in enumerate(entries):
            m = PARAM_DT.fullmatch(text)
            if not m:
                fail(where, f"cannot read {section[:-1].lower()} '{text}'")
            name, marks, type_str = m.group(1), m.group(2), m.group(3)
            marks = [x.strip() for x in marks.split(",")] if marks else []
            if any(x not in PARAM_MARKS for x in marks) or len(set(marks)) != len(marks):
                fail(where, f"unknown markers ({m.group(2)}) on '{name}'")
            option = "?" if "optional" in marks else "*" if "variadic" in marks else ""
            if "optional" in marks and "variadic" in marks:
                fail(where, f"'{name}' is both optional and variadic")
            if "heterogeneous" in marks and option != "*":
                fail(where, f"'{name}' is heterogeneous but not variadic")
            if option == "*" and k != len(entries) - 1:
                fail(where, f"variadic '{name}' is not the last {section[:-1].lower()}")
            if re.search(r"[\s:\"]", name):
                fail(where, f"{section[:-1].lower()} name '{name}' cannot go into the table")
            if type_str in constraints:
                masks = constraints[type_str]
            else:
                if not re.match(r"(tensor|seq|optional|map|sparse_tensor)\(", type_str):
                    fail(where, f"'{name}' has type '{type_str}', which is no type constraint of "
                                f"{op.name}-{op.since} and no concrete type")
                masks = type_masks(parse_type(type_str, where), dtypes, where)
                type_str = type_str.replace(" ", "")
            out.append((name, type_str, option, "heterogeneous" not in marks, masks))
        # What OpSchema::Finalize derives: single parameters raise both counts, optional ones
        # the maximum, a variadic one makes the maximum unbounded (minimum arity 1 unless the
        # heading says otherwise).
        lo = hi = 0
        for _, _, option, _, _ in out:
            if option == "":
                hi += 1
                lo = hi
            elif option == "?":
                hi += 1
            else:
                lo, hi = hi + 1, INT_MAX
        if counts is None:
            if lo != hi:
                fail(tag, f"'#### {section}' gives no counts, but its parameters allow {lo} to {hi}")
            return out, lo, hi
        if counts[1] != hi or counts[0] > lo or (counts[0] < lo and out[-1][2] != "*"):
            fail(tag, f"'#### {section} ({counts[0]} - {counts[1]})' does not fit its parameters "
                      f"({lo} to {hi})")
        return out, counts[0], counts[1]


def summary_versions(path, where_name):
    """{(domain, op): {versions}} from the summary tables at the top of an Operators*.md."""
    out = {}
    with open(path) as f:
        for k, line in enumerate(f, 1):
            if not line.startswith("|") or line.startswith(("|**", "|-")):
                continue
            m = re.match(r'^\|(?:<sub>experimental</sub> )?<a href="#([A-Za-z0-9_.]+)">\1</a>'
                         r'(?: \(deprecated\))?\|([^|]*)\|', line)
            if not m:
                fail(f"{where_name}:{k}", f"cannot read summary row '{line.strip()[:80]}'")
            full = m.group(1)
            for dom in ("ai.onnx.preview.training", "ai.onnx.preview", "ai.onnx.ml"):
                if full.startswith(dom + "."):
                    domain, name = dom, full[len(dom) + 1:]
                    break
            else:
                domain, name = "", full
            vers = re.findall(r'<a href="Changelog(?:-ml)?\.md#' + re.escape(full) + r'-(\d+)">\1</a>', m.group(2))
            if not vers:
                fail(f"{where_name}:{k}", f"no versions in summary row of {full}")
            out.setdefault((domain, name), set()).update(int(v) for v in vers)
    return out


def spec_release(spec):
    try:
        with open(os.path.join(spec, "README.md")) as f:
            m = re.match(r"# ONNX specification, release (\d+\.\d+(?:\.\d+)?)\s*$", f.readline())
            return m.group(1) if m else None
    except OSError:
        return None


def build(spec):
    for name in ("Changelog.md", "Operators-ml.md", "Operators.md", "onnx.proto"):
        if not os.path.isfile(os.path.join(spec, name)):
            fail(spec, f"no {name} in the spec folder")
    dtypes = read_dtypes(os.path.join(spec, "onnx.proto"), DTYPE_H)
    ops = parse_ops(os.path.join(spec, "Changelog.md"), one_version_per_op=False)
    ml = parse_ops(os.path.join(spec, "Operators-ml.md"), one_version_per_op=True)
    history = parse_ops(ML_HISTORY, one_version_per_op=False)
    for o in ml + history:
        if o.domain != "ai.onnx.ml":
            fail(o.where, f"{o.name} is in domain '{o.domain}', expected ai.onnx.ml")
    for o in ops:
        if o.domain == "ai.onnx.ml":
            fail(o.where, "ai.onnx.ml operator in Changelog.md (expected in Operators-ml.md)")

    schemas = {}
    for o in ops + ml + history:
        key = (o.domain, o.name, o.since)
        if key in schemas:
            fail(o.where, f"{o.domain or 'ai.onnx'}.{o.name}-{o.since} is described twice")
        schemas[key] = Schema(o, dtypes)

    # Every version the summary tables name must be here, and nothing else.
    want = summary_versions(os.path.join(spec, "Operators.md"), "Operators.md")
    for k, v in summary_versions(os.path.join(spec, "Operators-ml.md"), "Operators-ml.md").items():
        want.setdefault(k, set()).update(v)
    have = {}
    for (d, n, s), sc in schemas.items():
        if not (sc.experimental and s not in want.get((d, n), ())):
            have.setdefault((d, n), set()).add(s)  # the tables leave out experimental Upsample-1
    for key in sorted(set(want) | set(have)):
        w, h = want.get(key, set()), have.get(key, set())
        label = (key[0] + "." if key[0] else "") + key[1]
        if w - h:
            src = ML_HISTORY if key[0] == "ai.onnx.ml" else "Changelog.md"
            fail("summary tables", f"{label} version(s) {sorted(w - h)} are listed but not described "
                                   f"(no section in {src})")
        if h - w:
            fail("summary tables", f"{label} version(s) {sorted(h - w)} are described but not listed")
    return sorted(schemas.values(), key=lambda s: (s.domain, s.name, s.since)), spec_release(spec)


def render(schemas, release):
    typesets = {}

    def param(p):
        name, type_str, option, homog, masks = p
        idx = typesets.setdefault(masks, len(typesets))
        return f"{name}:{type_str}{option}{'' if homog else '~'}:{idx}"

    rows = []
    max_opset = {}
    for s in schemas:
        max_opset[s.domain] = max(max_opset.get(s.domain, 0), s.since)
        ins = " ".join(param(p) for p in s.inputs)
        outs = " ".join(param(p) for p in s.outputs)
        attrs = " ".join(f"{n}:{t}{'!' if r else ''}" for n, t, r in s.attrs)
        rows.append(f'{{"{s.domain}", "{s.name}", {s.since}, {s.min_in}, {s.max_in}, {s.min_out}, '
                    f'{s.max_out}, {str(s.deprecated).lower()}, "{ins}", "{outs}", "{attrs}"}},')
    opsets = ", ".join(f"{d or 'ai.onnx'} {v}" for d, v in sorted(max_opset.items()))
    source = f"ONNX {release} specification" if release else f"ONNX specification up to opset {opsets}"
    lines = [
        "// Generated by scripts/gen_schemas.py from the ONNX specification text (Changelog.md,",
        "// Operators-ml.md, scripts/schemas_ml_history.md); do not edit.",
        "// Schema rows: domain, op, since, min/max inputs, min/max outputs, deprecated,",
        "// inputs, outputs (name:type_str[?|*][~]:typeset), attributes (name:type[!]).",
        "// Attribute types: f i s t g p y = float int string tensor graph sparse_tensor",
        "// type_proto; upper case = list. '!' = required. '?' optional, '*' variadic,",
        "// '~' heterogeneous variadic. Deprecated versions have no signature in the spec.",
        f'#define ONYX_SCHEMA_SOURCE "{source}"',
        "#ifdef ONYX_SCHEMA_DOMAINS",
        f"// domain, highest opset described ({opsets})",
    ]
    lines += [f'{{"{d}", {v}}},' for d, v in sorted(max_opset.items())]
    lines += ["#endif", "#ifdef ONYX_SCHEMA_TYPESETS",
              "// tensor, seq(tensor), optional(tensor), optional(seq(tensor)) dtype masks; other"]
    for masks, _ in sorted(typesets.items(), key=lambda kv: kv[1]):
        lines.append("{" + ", ".join(hex(m) if i < 4 else str(m) for i, m in enumerate(masks)) + "},")
    lines += ["#endif", "#ifdef ONYX_SCHEMA_ROWS"] + rows + ["#endif"]
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spec", default=DEFAULT_SPEC, help="the ONNX spec folder (default: %(default)s)")
    ap.add_argument("--out", default=DEFAULT_OUT, help="the table to write (default: %(default)s)")
    args = ap.parse_args()
    try:
        schemas, release = build(args.spec)
    except SpecError as e:
        print(f"gen_schemas.py: {e}", file=sys.stderr)
        return 1
    with open(args.out, "w") as f:
        f.write(render(schemas, release))
    return 0


if __name__ == "__main__":
    sys.exit(main())

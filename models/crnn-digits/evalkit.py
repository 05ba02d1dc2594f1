"""What the independent evaluation sets share: writing a set as PNG files with a
labels.tsv, reading it with `onyx ocr`, and the tallies per subset.

A set is a list of rows (dicts) with at least `file` (relative to the set's folder),
`truth` and `subset`; any other keys (font, text height ratio, frames per character...)
are written as further columns of labels.tsv and can be used to break the results down.
Needs numpy and PIL only.
"""
import json
import os
import subprocess
import sys

from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def edit_distance(a, b):
    d = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        prev, d[0] = d[0], i
        for j in range(1, len(b) + 1):
            cur = min(d[j] + 1, d[j - 1] + 1, prev + (a[i - 1] != b[j - 1]))
            prev, d[j] = d[j], cur
    return d[len(b)]


def write_set(out_dir, samples):
    """samples: (uint8 [h, w] image, row dict) pairs -> out_dir/images/*.png, out_dir/labels.tsv."""
    os.makedirs(os.path.join(out_dir, "images"), exist_ok=True)
    rows = []
    for img, row in samples:
        Image.fromarray(img, mode="L").save(os.path.join(out_dir, row["file"]))
        rows.append(row)
    keys = list(rows[0].keys())
    with open(os.path.join(out_dir, "labels.tsv"), "w") as f:
        f.write("\t".join(keys) + "\n")
        for r in rows:
            f.write("\t".join(_fmt(r[k]) for k in keys) + "\n")
    return rows


def _fmt(v):
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def read_set(out_dir):
    lines = [l.rstrip("\n").split("\t") for l in open(os.path.join(out_dir, "labels.tsv"))]
    keys = lines[0]
    return [dict(zip(keys, l)) for l in lines[1:]]


def ocr(onyx, model, files, meta=None):
    """{file: text} as `onyx ocr --json` reads them (meta.json next to the model unless `meta`)."""
    out = {}
    for s in range(0, len(files), 500):  # keep the command line short
        cmd = [onyx, "ocr", model, "--json"] + (["--meta", meta] if meta else []) + files[s:s + 500]
        res = json.loads(subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout)
        for r in res["images"]:
            out[r["file"]] = r["text"]
    if len(out) != len(files):
        sys.exit(f"onyx ocr read {len(out)} of {len(files)} crops")
    return out


def score(rows, texts):
    """Exact-string accuracy and character error rate, overall and per subset."""
    def tally(rs):
        right = sum(texts[r["path"]] == r["truth"] for r in rs)
        errs = sum(edit_distance(texts[r["path"]], r["truth"]) for r in rs)
        chars = sum(len(r["truth"]) for r in rs)
        return {"samples": len(rs), "exact": right, "accuracy": right / max(len(rs), 1),
                "cer": errs / max(chars, 1)}
    result = {"all": tally(rows), "subsets": {}}
    for name in sorted({r["subset"] for r in rows}):
        result["subsets"][name] = tally([r for r in rows if r["subset"] == name])
    return result


def evaluate(onyx, model, set_dir, meta=None):
    """Reads a written set with `onyx ocr`; returns (rows with `read` added, score)."""
    rows = read_set(set_dir)
    for r in rows:
        r["path"] = os.path.join(set_dir, r["file"])
    texts = ocr(onyx, model, [r["path"] for r in rows], meta)
    for r in rows:
        r["read"] = texts[r["path"]]
    return rows, score(rows, texts)


def pct(t):
    return f"{100.0 * t['accuracy']:.1f}% ({t['exact']}/{t['samples']})"


def report(name, result):
    lines = [f"{name}: exact strings {pct(result['all'])}, character error rate {100 * result['all']['cer']:.2f}%"]
    for k, t in result["subsets"].items():
        lines.append(f"  {k:24} {pct(t):>20}  CER {100 * t['cer']:.2f}%")
    return "\n".join(lines)


def main_cli(description, build, default_count, argv=None):
    """The command line both set scripts share: write the set, optionally read it with models."""
    import argparse
    ap = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="folder to write the set to (images/, labels.tsv)")
    ap.add_argument("--count", type=int, default=default_count)
    ap.add_argument("--onyx", default=os.path.join(ROOT, "build", "onyx"))
    ap.add_argument("--model", action="append", default=[],
                    help="read the set with this model (meta.json next to it); may be repeated")
    ap.add_argument("--json", help="write the scores per model to this file")
    ap.add_argument("--errors", type=int, default=10, help="misreadings to list per model")
    a = ap.parse_args(argv)
    build(a.out, a.count)
    results = {}
    for m in a.model:
        rows, res = evaluate(a.onyx, m, a.out)
        results[os.path.basename(m)] = res
        print(report(os.path.basename(m), res))
        for r in [r for r in rows if r["read"] != r["truth"]][:a.errors]:
            print(f"    {r['file']}: true {r['truth']!r}, read {r['read']!r} ({r['subset']})")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    return results

#!/usr/bin/python3
"""Whole-model benchmark: onyx next to onnxruntime-node, on this machine, in one run.

Usage: bench/run.py [--build-dir build] [--rounds 5] [--threads 1,2] [--min-time 0.5]
                    [--only NAME ...] [--out-dir bench]

For each model and thread count it runs `BUILD/onyx bench --json` and
`node bench/ort_bench.js` in turn, as separate processes, on the same .npy inputs, and
repeats the whole sequence --rounds times in the same order (interleaving spreads the
machine's noise over both runtimes). A result is the median over the rounds of each
process's own numbers. Writes OUT_DIR/RESULTS.md and OUT_DIR/results.json.

Models: crnn-digits (input: one reference crop preprocessed by `onyx ocr --save-inputs`),
tiny-cnn (its bundled image.npy), and the parity models of tests/models/export_models.py
(BUILD/models/manifest.json; exported first when torch is importable, else skipped with a
note). Needs numpy only (torch only to export the parity models).
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def rel(p):
    p = os.path.abspath(p)
    return os.path.relpath(p, ROOT) if p.startswith(ROOT + os.sep) else p


def run(cmd, **kw):
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stderr.strip()}")
    return r.stdout


def input_names(onyx, model):
    return [i["name"] for i in json.loads(run([onyx, "inspect", model, "--json"]))["inputs"]]


def crnn_model(onyx, work):
    model = "models/crnn-digits/crnn-digits-v1-opset17.onnx"
    image = "models/crnn-digits/reference/images/0000.png"
    d = os.path.join(work, "crnn-digits")
    run([onyx, "ocr", model, image, "--save-inputs", d])
    name = input_names(onyx, model)[0]
    return {"name": "crnn-digits", "model": model,
            "inputs": {name: os.path.join(d, "0000.npy")},
            "source": f"{image} preprocessed by `onyx ocr --save-inputs`"}


def tiny_cnn_model(onyx, work):
    model = "models/tiny-cnn/tiny-cnn-v1-opset17.onnx"
    name = input_names(onyx, model)[0]
    return {"name": "tiny-cnn", "model": model, "inputs": {name: "models/tiny-cnn/image.npy"},
            "source": "models/tiny-cnn/image.npy"}


def parity_models(build, notes):
    """The models of tests/models/export_models.py, exported if missing and torch is present."""
    out_dir = os.path.join(build, "models")
    manifest = os.path.join(out_dir, "manifest.json")
    if not os.path.exists(manifest):
        print(f"note: {rel(manifest)} is missing; exporting the parity models (needs torch)",
              file=sys.stderr)
        r = subprocess.run([sys.executable, "tests/models/export_models.py", out_dir], cwd=ROOT,
                           capture_output=True, text=True)
        if r.returncode != 0 or not os.path.exists(manifest):
            why = (r.stdout + r.stderr).strip().splitlines()
            notes.append("The PyTorch-exported models (resnet18, mobilenet_v2, lstm, transformer) "
                         f"were skipped: {why[-1] if why else 'export failed'}.")
            print(f"note: {notes[-1]}", file=sys.stderr)
            return []
    models = []
    for entry in json.load(open(manifest)):
        s = entry["sets"][0]
        models.append({"name": entry["name"], "model": entry["model"], "inputs": s["inputs"],
                       "source": f"{rel(s['dir'])} (input set 0 of export_models.py)"})
    return models


def machine():
    cpu = "unknown"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    osname = platform.system()
    try:
        for line in open("/etc/os-release"):
            if line.startswith("PRETTY_NAME="):
                osname = line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "os": f"{osname}, Linux {platform.release()}",
            "node": run(["node", "--version"]).strip()}


def onyx_commit():
    try:
        commit = run(["git", "rev-parse", "--short", "HEAD"]).strip()
        # Tracked changes only: the results files this script writes do not make the build dirty.
        dirty = bool(run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":!bench/RESULTS.md", ":!bench/results.json"]).strip())
        return commit + ("-dirty" if dirty else "")
    except (RuntimeError, OSError):
        return "unknown"


def ort_version():
    with open(os.path.join(ROOT, "node_modules", "onnxruntime-node", "package.json")) as f:
        return json.load(f)["version"]


def bench_cmds(onyx, m, threads, a):
    common = ["--threads", str(threads), "--warmup", str(a.warmup), "--runs", str(a.runs),
              "--min-time", str(a.min_time)]
    feeds = []
    for name, f in m["inputs"].items():
        feeds += ["--input", f"{name}={f}"]
    return {"onyx": [onyx, "bench", m["model"], *feeds, *common, "--json"],
            "ort": ["node", "bench/ort_bench.js", m["model"], *feeds, *common]}


def med(xs):
    return statistics.median(xs) if xs else None


def aggregate(rounds):
    """Median over the rounds of each number one process reported."""
    if not rounds:
        return None
    return {
        "cold_load_ms": med([r["cold"]["load_ms"] for r in rounds]),
        "cold_first_run_ms": med([r["cold"]["first_run_ms"] for r in rounds]),
        "cold_total_ms": med([r["cold"]["total_ms"] for r in rounds]),
        "warm_median_ms": med([r["warm"]["median_ms"] for r in rounds]),
        "warm_p90_ms": med([r["warm"]["p90_ms"] for r in rounds]),
        "warm_mean_ms": med([r["warm"]["mean_ms"] for r in rounds]),
        "warm_min_ms": min(r["warm"]["min_ms"] for r in rounds),
        "round_medians_ms": [r["warm"]["median_ms"] for r in rounds],
        "warm_runs": [r["warm"]["runs"] for r in rounds],
    }


def fmt(ms):
    if ms is None:
        return "–"
    return f"{ms:.3f}" if ms < 1 else f"{ms:.2f}" if ms < 100 else f"{ms:.0f}"


def ratio(a, b):
    return f"{a / b:.2f}×" if a is not None and b else "–"


def spread(xs):
    """(max - min) / median of the per-round medians, in percent."""
    if len(xs) < 2:
        return "–"
    return f"{100.0 * (max(xs) - min(xs)) / statistics.median(xs):.0f}%"


def write_markdown(path, res):
    m = res["machine"]
    L = ["# Whole-model benchmark: onyx and onnxruntime", "",
         "Written by `bench/run.py` (`make bench`); do not edit by hand. What is measured: "
         "[README.md](README.md).", "",
         "| | |", "|---|---|",
         f"| Date | {res['date']} |",
         f"| Machine | {m['cpu']}, {m['cores']} cores, {m['os']} |",
         f"| Load average (1 min) | {res['loadavg_before']:.2f} before, {res['loadavg_after']:.2f} after |",
         f"| onyx | {res['onyx_commit']} (`{res['onyx']}`) |",
         f"| onnxruntime-node | {res['ort_version']} (Node {m['node']}) |",
         f"| Protocol | {res['rounds']} rounds; per process {res['warmup']} warmup runs, then at least "
         f"{res['runs']} runs and {res['min_time']} s; numbers are medians over the rounds |",
         f"| Wall time | {res['seconds']:.0f} s |", ""]
    L += ["Ratio = onyx / onnxruntime: above 1 onyx is slower, below 1 it is faster. "
          "Cold = model load and session creation plus the first run, timed inside the process "
          "(process start and Node's `require` are not included).", ""]
    for note in res["notes"]:
        L += [f"> {note}", ""]
    L += ["## Summary (warm median)", "",
          "| model | " + " | ".join(f"{t} thread{'s' if t > 1 else ''}: onyx / ORT ms, ratio"
                                   for t in res["threads"]) + " |",
          "|---|" + "---|" * len(res["threads"])]
    for mr in res["models"]:
        cells = []
        for t in res["threads"]:
            r = mr["results"].get(str(t), {})
            o, x = r.get("onyx"), r.get("ort")
            if o and x:
                cells.append(f"{fmt(o['warm_median_ms'])} / {fmt(x['warm_median_ms'])}, "
                             f"**{ratio(o['warm_median_ms'], x['warm_median_ms'])}**")
            else:
                cells.append("failed")
        L.append(f"| {mr['name']} | " + " | ".join(cells) + " |")
    L.append("")
    for mr in res["models"]:
        ins = ", ".join(f"`{i['name']}` {i['dtype']}{i['shape']}" for i in mr.get("input_shapes", []))
        L += [f"## {mr['name']}", "", f"`{rel(mr['model'])}`; input {ins} from {mr['source']}.", ""]
        L += ["| threads | cold ms: onyx | ORT | ratio | warm median ms: onyx | ORT | ratio "
              "| warm p90 ms: onyx | ORT | ratio | round spread: onyx | ORT |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for t in res["threads"]:
            r = mr["results"].get(str(t), {})
            o, x = r.get("onyx"), r.get("ort")
            if not (o and x):
                L.append(f"| {t} | " + " | ".join(["failed"] * 11) + " |")
                continue
            L.append(
                f"| {t} | {fmt(o['cold_total_ms'])} | {fmt(x['cold_total_ms'])} | "
                f"{ratio(o['cold_total_ms'], x['cold_total_ms'])} | "
                f"{fmt(o['warm_median_ms'])} | {fmt(x['warm_median_ms'])} | "
                f"**{ratio(o['warm_median_ms'], x['warm_median_ms'])}** | "
                f"{fmt(o['warm_p90_ms'])} | {fmt(x['warm_p90_ms'])} | "
                f"{ratio(o['warm_p90_ms'], x['warm_p90_ms'])} | "
                f"{spread(o['round_medians_ms'])} | {spread(x['round_medians_ms'])} |")
        cold = []
        for t in res["threads"]:
            r = mr["results"].get(str(t), {})
            o, x = r.get("onyx"), r.get("ort")
            if o and x:
                cold.append(f"{t} thread{'s' if t > 1 else ''}: onyx load {fmt(o['cold_load_ms'])} + first run "
                            f"{fmt(o['cold_first_run_ms'])} ms, ORT load {fmt(x['cold_load_ms'])} + first run "
                            f"{fmt(x['cold_first_run_ms'])} ms")
        if cold:
            L += ["", "Cold start split: " + "; ".join(cold) + "."]
        for err in mr.get("errors", []):
            L += ["", f"> error: {err}"]
        L.append("")
    L += ["Round spread: (largest - smallest) / median of the per-round warm medians; a large "
          "spread means the machine was busy and the ratio is less certain.", ""]
    with open(path, "w") as f:
        f.write("\n".join(L).rstrip("\n") + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", default="build", help="build folder with the onyx CLI (default build)")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts (default 1,2)")
    ap.add_argument("--warmup", type=int, default=2, help="warmup runs per process (default 2)")
    ap.add_argument("--runs", type=int, default=5, help="least timed runs per process (default 5)")
    ap.add_argument("--min-time", type=float, default=0.5, help="least seconds of timed runs per process (default 0.5)")
    ap.add_argument("--only", action="append", help="benchmark only these models (repeatable)")
    ap.add_argument("--out-dir", default=os.path.join(ROOT, "bench"), help="where RESULTS.md and results.json go")
    a = ap.parse_args()
    build = os.path.abspath(os.path.join(ROOT, a.build_dir) if not os.path.isabs(a.build_dir) else a.build_dir)
    onyx = os.path.join(build, "onyx")
    if not os.access(onyx, os.X_OK):
        sys.exit(f"run.py: {onyx} not found: build it first (make build)")
    threads = [int(t) for t in a.threads.split(",")]
    work = os.path.join(build, "bench")
    os.makedirs(work, exist_ok=True)

    notes = []
    t_start = time.time()
    models = [crnn_model(onyx, work), tiny_cnn_model(onyx, work)] + parity_models(build, notes)
    if a.only:
        models = [m for m in models if m["name"] in a.only]
    raw = {(m["name"], t, k): [] for m in models for t in threads for k in ("onyx", "ort")}
    errors = {m["name"]: [] for m in models}
    shapes = {}
    load_before = os.getloadavg()[0]
    total = a.rounds * len(models) * len(threads) * 2
    done = 0
    for rnd in range(a.rounds):
        for m in models:
            for t in threads:
                for kind, cmd in bench_cmds(onyx, m, t, a).items():
                    done += 1
                    print(f"[{done}/{total}] round {rnd + 1}: {m['name']}, {t} thread(s), {kind}",
                          file=sys.stderr, flush=True)
                    try:
                        j = json.loads(run(cmd, timeout=600))
                    except (RuntimeError, subprocess.TimeoutExpired, json.JSONDecodeError) as e:
                        msg = str(e).strip().splitlines()
                        msg = f"{kind}, {t} thread(s): " + (msg[-1] if msg else "failed")
                        if msg not in errors[m["name"]]:
                            errors[m["name"]].append(msg)
                        print(f"  {msg}", file=sys.stderr)
                        continue
                    raw[(m["name"], t, kind)].append(j)
                    shapes.setdefault(m["name"], j["inputs"])
    res = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine(),
        "loadavg_before": load_before,
        "loadavg_after": os.getloadavg()[0],
        "onyx": rel(onyx),
        "onyx_commit": onyx_commit(),
        "ort_version": ort_version(),
        "rounds": a.rounds, "threads": threads, "warmup": a.warmup, "runs": a.runs,
        "min_time": a.min_time,
        "seconds": time.time() - t_start,
        "notes": notes,
        "models": [],
    }
    for m in models:
        mr = {"name": m["name"], "model": m["model"], "source": m["source"],
              "inputs": m["inputs"], "input_shapes": shapes.get(m["name"], []),
              "errors": errors[m["name"]], "results": {}, "raw": {}}
        for t in threads:
            mr["results"][str(t)] = {k: aggregate(raw[(m["name"], t, k)]) for k in ("onyx", "ort")}
            mr["raw"][str(t)] = {k: [{"cold": r["cold"], "warm": r["warm"]} for r in raw[(m["name"], t, k)]]
                                 for k in ("onyx", "ort")}
        res["models"].append(mr)
    os.makedirs(a.out_dir, exist_ok=True)
    with open(os.path.join(a.out_dir, "results.json"), "w") as f:
        json.dump(res, f, indent=1)
    write_markdown(os.path.join(a.out_dir, "RESULTS.md"), res)
    print(f"wrote {rel(os.path.join(a.out_dir, 'RESULTS.md'))} and results.json "
          f"in {res['seconds']:.0f} s", file=sys.stderr)
    return 1 if any(errors.values()) else 0


if __name__ == "__main__":
    sys.exit(main())

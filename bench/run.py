#!/usr/bin/python3
"""Whole-model benchmark: onyx next to onnxruntime-node, on this machine, in one run.

Usage: bench/run.py [--build-dir build] [--rounds 5] [--threads 1,2] [--min-time 0.5]
                    [--only NAME ...] [--out-dir bench]

1. Models: crnn-digits and tiny-cnn (bundled in models/), the parity models of
   tests/models/export_models.py (BUILD/models, exported by parity_test.py --export-only)
   and the benchmark models of bench/export_bench_models.py (BUILD/bench-models). Both
   exports are stamped and reused while their script is unchanged; they need torch, and
   without it those models are skipped with a note.
2. Output check, once per run: every model through `onyx run` at each thread count and
   through tests/models/run_ort.js (onnxruntime-node, 1 thread); every output compared as
   the parity tests do (|onyx - ort| <= 1e-4 + 1e-3 |ort|).
3. Timed rounds: for each round, model and thread count, `BUILD/onyx bench --json` and
   `node bench/ort_bench.js` run one after the other as fresh processes on the same .npy
   inputs (onyx first in odd rounds, onnxruntime first in even ones). The peak RSS of each
   process is its ru_maxrss from wait4, taken by bench/peak_rss.cc (built into BUILD/bench
   with $CXX or c++). A result is the median over the rounds.
Writes OUT_DIR/RESULTS.md and OUT_DIR/results.json. Exit status 1 when any model failed or
did not match. Needs numpy (torch only for the exports).
"""
import argparse
import datetime
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "models"))
from parity_test import ATOL, RTOL, compare  # noqa: E402  (one definition of "match")

BUNDLED = ["crnn-digits", "tiny-cnn"]
PARITY = ["resnet18", "mobilenet_v2", "lstm", "transformer"]  # tests/models/export_models.py
PROCESS_TIMEOUT = 600


def rel(p):
    p = os.path.abspath(p)
    return os.path.relpath(p, ROOT) if p.startswith(ROOT + os.sep) else p


def run(cmd, timeout=PROCESS_TIMEOUT):
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}):\n{(r.stderr or r.stdout).strip()}")
    return r.stdout


def last_line(text):
    lines = [l for l in text.strip().splitlines() if l.strip()]
    return lines[-1].strip() if lines else "no message"


PEAK_RSS = None  # BUILD/bench/peak_rss, built by build_peak_rss()


def build_peak_rss(work):
    """Compiles bench/peak_rss.cc (when missing or older than its source) with $CXX or c++."""
    global PEAK_RSS
    src = os.path.join(ROOT, "bench", "peak_rss.cc")
    exe = os.path.join(work, "peak_rss")
    if not os.path.exists(exe) or os.path.getmtime(exe) < os.path.getmtime(src):
        run([os.environ.get("CXX", "c++"), "-O2", "-std=c++20", "-o", exe, src])
    PEAK_RSS = exe


def measured(cmd, timeout=PROCESS_TIMEOUT):
    """Runs cmd as a fresh process, started by bench/peak_rss.cc. Returns (exit code, stdout,
    stderr, peak RSS in KiB or None, wall seconds); the peak RSS is the command's ru_maxrss
    from wait4 (see peak_rss.cc for why it is not Python that waits)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile(mode="r", suffix=".rss") as rss_file:
        t0 = time.monotonic()
        p = subprocess.Popen([PEAK_RSS, rss_file.name, *cmd], cwd=ROOT, stdout=out, stderr=err,
                             start_new_session=True)
        killed = False
        try:
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            killed = True
            os.killpg(p.pid, 9)  # the whole group: peak_rss and the command under it
            p.wait()
        wall = time.monotonic() - t0
        out.seek(0)
        err.seek(0)
        stderr = err.read().decode(errors="replace")
        if killed:
            stderr += f"\ntimed out after {timeout} s"
        text = rss_file.read().strip()
        rss = int(text) if text.isdigit() else None
        return p.returncode, out.read().decode(errors="replace"), stderr, rss, wall


# ---------------------------------------------------------------------------------------
# Models

def inspect(onyx, model):
    j = json.loads(run([onyx, "inspect", model, "--json"]))
    return {"nodes": j["node_count"], "ops": j["ops"], "file_bytes": j["file_bytes"],
            "declared_inputs": [i["type"] for i in j["inputs"]],
            "input_names": [i["name"] for i in j["inputs"]]}


def bundled_models(onyx, work):
    crnn = "models/crnn-digits/crnn-digits-v1-opset17.onnx"
    image = "models/crnn-digits/reference/images/0000.png"
    d = os.path.join(work, "inputs", "crnn-digits")
    run([onyx, "ocr", crnn, image, "--save-inputs", d])
    tiny = "models/tiny-cnn/tiny-cnn-v1-opset17.onnx"
    return [
        {"name": "crnn-digits", "model": crnn,
         "inputs": {inspect(onyx, crnn)["input_names"][0]: os.path.join(d, "0000.npy")},
         "source": f"`{image}` preprocessed by `onyx ocr --save-inputs`"},
        {"name": "tiny-cnn", "model": tiny,
         "inputs": {inspect(onyx, tiny)["input_names"][0]: "models/tiny-cnn/image.npy"},
         "source": "`models/tiny-cnn/image.npy`"},
    ]


def export_failed(what, r):
    lines = (r.stdout + r.stderr).strip().splitlines()
    return f"{what} were skipped: {lines[-1] if lines else f'exit status {r.returncode}'}."


def parity_models(onyx, build, notes):
    """The models of tests/models/export_models.py (input set 0), exported if needed."""
    print("exporting the parity models (reused when unchanged)", file=sys.stderr, flush=True)
    r = subprocess.run([sys.executable, "tests/models/parity_test.py", "--onyx", onyx,
                        "--build-dir", build, "--export-only"], cwd=ROOT, capture_output=True,
                       text=True)
    manifest = os.path.join(build, "models", "manifest.json")
    if r.returncode != 0 or not os.path.exists(manifest):
        notes.append(export_failed("The parity models (" + ", ".join(PARITY) + ")", r))
        print(f"note: {notes[-1]}", file=sys.stderr)
        return []
    return [{"name": e["name"], "model": e["model"], "inputs": e["sets"][0]["inputs"],
             "source": "input set 0 of `tests/models/export_models.py`"}
            for e in json.load(open(manifest))]


def bench_models(build, notes):
    """The models of bench/export_bench_models.py, exported if needed."""
    print("exporting the bench models (reused when unchanged; a fresh export takes minutes)",
          file=sys.stderr, flush=True)
    out = os.path.join(build, "bench-models")
    r = subprocess.run([sys.executable, "bench/export_bench_models.py", out], cwd=ROOT,
                       capture_output=True, text=True)
    manifest = os.path.join(out, "manifest.json")
    if r.returncode != 0 or not os.path.exists(manifest):
        notes.append(export_failed("The models of bench/export_bench_models.py", r))
        print(f"note: {notes[-1]}", file=sys.stderr)
        return []
    return [{"name": e["name"], "model": e["model"], "inputs": e["inputs"],
             "source": f"`bench/export_bench_models.py` (seed {e['seed']}, init {e['init']})",
             "torch_outputs": e["outputs"]}
            for e in json.load(open(manifest))]


def input_shapes(m):
    import numpy as np
    return [{"name": n, "dtype": str(np.load(f, mmap_mode="r").dtype),
             "shape": list(np.load(f, mmap_mode="r").shape)} for n, f in m["inputs"].items()]


def feeds(m):
    out = []
    for name, f in m["inputs"].items():
        out += ["--input", f"{name}={f}"]
    return out


# ---------------------------------------------------------------------------------------
# The output check

def check_outputs(onyx, m, threads, work):
    """onyx at each thread count against onnxruntime at 1 thread, every output."""
    import numpy as np
    d = os.path.join(work, "check", m["name"])
    shutil.rmtree(d, ignore_errors=True)
    ort_dir = os.path.join(d, "ort")
    res = {"ort_error": None, "onyx": {}, "outputs": []}
    code, out, err, _, _ = measured(["node", "tests/models/run_ort.js", m["model"], *feeds(m),
                                     "--output-dir", ort_dir, "--json", "--threads", "1"])
    if code != 0:
        res["ort_error"] = last_line(err or out)
        return res
    ref = json.loads(out)["outputs"]
    for o in ref:
        y = np.load(o["file"])
        numeric = y.dtype.kind in "biuf" and y.size > 0
        res["outputs"].append({"name": o["name"], "shape": o["shape"],
                               "ort_std": float(y.astype(np.float64).std()) if numeric else None})
    for t in threads:
        od = os.path.join(d, f"onyx-{t}")
        code, out, err, _, _ = measured([onyx, "run", m["model"], *feeds(m), "--output-dir", od,
                                         "--threads", str(t), "--json"])
        if code != 0:
            res["onyx"][str(t)] = {"error": last_line(err or out), "ok": False}
            continue
        per, ok = [], True
        for o in ref:
            good, err_abs, note = compare(os.path.join(od, os.path.basename(o["file"])), o["file"])
            per.append({"name": o["name"], "ok": good,
                        "max_abs_err": err_abs if err_abs == err_abs else None, "note": note})
            ok = ok and good
        res["onyx"][str(t)] = {"ok": ok, "outputs": per}
    return res


def check_summary(c):
    """(short cell, longer text) for the table."""
    if c is None:
        return "–", "not checked"
    if c["ort_error"]:
        return "ORT failed", f"onnxruntime failed: {c['ort_error']}"
    cells, texts = set(), []
    for t, r in c["onyx"].items():
        if "error" in r:
            cells.add("onyx failed")
            texts.append(f"{tname(int(t))}: onyx failed: {r['error']}")
        elif not r["ok"]:
            cells.add("**NO**")
            bad = [f"{o['name']}: {o['note']}" for o in r["outputs"] if not o["ok"]]
            texts.append(f"{tname(int(t))}: MISMATCH " + "; ".join(bad))
    errs = [o["max_abs_err"] for r in c["onyx"].values() if "outputs" in r
            for o in r["outputs"] if o["max_abs_err"] is not None]
    worst = f"max abs err {max(errs):.2g}" if errs else ""
    if not cells:
        return f"yes ({max(errs):.1g})" if errs else "yes", "yes" + (", " + worst if worst else "")
    return ", ".join(sorted(cells)), "; ".join(texts) + (f" ({worst} where compared)" if errs else "")


def check_ok(c):
    return c is not None and not c["ort_error"] and all(r.get("ok") for r in c["onyx"].values())


# ---------------------------------------------------------------------------------------
# Machine and versions

def cpu_steal_s():
    """CPU seconds the hypervisor gave to other guests so far (/proc/stat steal, all
    cores), or None where that is not known."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
        return int(fields[8]) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def machine():
    info = {"cpu": "unknown", "cores": os.cpu_count()}
    try:
        fields = {}
        for line in open("/proc/cpuinfo"):
            if ":" in line:
                k, v = (s.strip() for s in line.split(":", 1))
                fields.setdefault(k, v)
            elif fields:
                break
        info["cpu"] = fields.get("model name", "unknown")
        info["cpu_family_model"] = f"family {fields.get('cpu family', '?')} model {fields.get('model', '?')}"
        flags = fields.get("flags", "").split()
        info["simd"] = " ".join(f for f in ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512_bf16",
                                            "avx512_vnni", "amx_tile") if f in flags)
        info["hypervisor"] = "hypervisor" in flags
    except OSError:
        pass
    osname = platform.system()
    try:
        for line in open("/etc/os-release"):
            if line.startswith("PRETTY_NAME="):
                osname = line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    info["os"] = f"{osname}, Linux {platform.release()}"
    info["node"] = run(["node", "--version"]).strip()
    try:
        info["memory_gib"] = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError):
        pass
    return info


def onyx_commit():
    try:
        commit = run(["git", "rev-parse", "--short", "HEAD"]).strip()
        # Tracked changes only: the results files this script writes do not make it dirty.
        dirty = bool(run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".",
                          ":!bench/RESULTS.md", ":!bench/results.json"]).strip())
        return commit + ("-dirty" if dirty else "")
    except (RuntimeError, OSError):
        return "unknown"


def build_type(build):
    try:
        for line in open(os.path.join(build, "CMakeCache.txt")):
            if line.startswith("CMAKE_BUILD_TYPE:"):
                return line.split("=", 1)[1].strip() or "none"
    except OSError:
        pass
    return "unknown"


def ort_version():
    with open(os.path.join(ROOT, "node_modules", "onnxruntime-node", "package.json")) as f:
        return json.load(f)["version"]


def baselines(onyx):
    """Peak RSS of each runtime doing nothing: `onyx --version`, and Node loading
    onnxruntime-node. For reading the RSS columns; nothing is subtracted."""
    ort = os.path.join(ROOT, "node_modules", "onnxruntime-node")
    out = {}
    for k, cmd in (("onyx", [onyx, "--version"]),
                   ("ort", ["node", "-e", f"require({json.dumps(ort)})"])):
        rss = [measured(cmd)[3] or 0 for _ in range(3)]
        out[k] = statistics.median(rss) / 1024
    return out


# ---------------------------------------------------------------------------------------
# Aggregation and the report

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
        "peak_rss_mib": med([r["peak_rss_kib"] / 1024 for r in rounds if r["peak_rss_kib"]]),
        "process_wall_s": med([r["process_wall_s"] for r in rounds]),
        "round_medians_ms": [r["warm"]["median_ms"] for r in rounds],
        "warm_runs": [r["warm"]["runs"] for r in rounds],
    }


def geomean(xs):
    xs = [x for x in xs if x is not None and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def fmt(ms):
    if ms is None:
        return "–"
    return f"{ms:.3f}" if ms < 1 else f"{ms:.2f}" if ms < 100 else f"{ms:.0f}"


def ratio(a, b):
    return a / b if a is not None and b else None


def fr(x, bold=False):
    if x is None:
        return "–"
    s = f"{x:.2f}×"
    return f"**{s}**" if bold else s


def spread(xs):
    """(max - min) / median of the per-round medians, in percent."""
    if len(xs) < 2:
        return "–"
    return f"{100.0 * (max(xs) - min(xs)) / statistics.median(xs):.0f}%"


def pair(mr, t):
    r = mr["results"].get(str(t), {})
    return r.get("onyx"), r.get("ort")


def tname(t):
    return f"{t} thread{'s' if t > 1 else ''}"


def summary_stats(res):
    """Geomeans of onyx/ORT over the models that ran on both and whose outputs match."""
    good = [mr for mr in res["models"] if mr["outputs_match"]]
    out = {"models": [mr["name"] for mr in good],
           "excluded": [mr["name"] for mr in res["models"] if not mr["outputs_match"]],
           "threads": {}}
    for t in res["threads"]:
        rows = [(mr["name"], *pair(mr, t)) for mr in good]
        rows = [(n, o, x) for n, o, x in rows if o and x]
        warm = {n: o["warm_median_ms"] / x["warm_median_ms"] for n, o, x in rows}
        cold = {n: o["cold_total_ms"] / x["cold_total_ms"] for n, o, x in rows}
        rss = {n: o["peak_rss_mib"] / x["peak_rss_mib"] for n, o, x in rows}
        out["threads"][str(t)] = {
            "n": len(rows),
            "warm_ratio": geomean(warm.values()),
            "cold_ratio": geomean(cold.values()),
            "rss_ratio": geomean(rss.values()),
            "warm_above_1_25": sorted((n for n, v in warm.items() if v > 1.25), key=lambda n: -warm[n]),
            "worst_warm": max(warm.items(), key=lambda kv: kv[1]) if warm else None,
            "cold_not_below_1": [n for n, v in cold.items() if v >= 1.0],
            "rss_above_0_8": [n for n, v in rss.items() if v > 0.8],
        }
    if len(res["threads"]) >= 2:
        t1, t2 = res["threads"][0], res["threads"][1]
        for k in ("onyx", "ort"):
            sp = []
            for mr in good:
                a = mr["results"].get(str(t1), {}).get(k)
                b = mr["results"].get(str(t2), {}).get(k)
                if a and b:
                    sp.append(a["warm_median_ms"] / b["warm_median_ms"])
            out[f"speedup_{k}"] = geomean(sp)
        out["speedup_threads"] = [t1, t2]
    return out


def write_markdown(path, res):
    m = res["machine"]
    s = res["summary"]
    th = res["threads"]
    L = ["# Whole-model benchmark: onyx and onnxruntime", "",
         "Written by `bench/run.py` (`make bench`); do not edit by hand. What is measured and "
         "how: [README.md](README.md).", "",
         "| | |", "|---|---|",
         f"| Date | {res['date']} |",
         f"| Machine | {m['cpu']} ({m.get('cpu_family_model', '')}; {m.get('simd', '')}"
         f"{'; virtual machine' if m.get('hypervisor') else ''}), {m['cores']} cores, "
         f"{m.get('memory_gib', '?')} GiB, {m['os']} |",
         f"| Load average (1 min) | {res['loadavg_before']:.2f} before, "
         f"{res['loadavg_max']:.2f} highest seen during, {res['loadavg_after']:.2f} after "
         f"(the machine is shared; ratios are measured interleaved) |",
         *([f"| CPU time stolen | {res['steal_timed_s']:.1f} s of the timed rounds' "
            f"{res['seconds_timed'] * m['cores']:.0f} s of CPU time "
            f"({100 * res['steal_timed_s'] / max(1e-9, res['seconds_timed'] * m['cores']):.1f}%): the "
            f"hypervisor ran other guests on this machine's cores (/proc/stat steal); at a few percent "
            f"and more, 2-thread figures swing most |"] if res.get('steal_timed_s') is not None else []),
         f"| onyx | {res['onyx_commit']} (`{res['onyx']}`, CMake build type {res['build_type']}) |",
         f"| onnxruntime-node | {res['ort_version']} (Node {m['node']}), graph optimization level "
         f"`all`, CPU provider |",
         f"| Protocol | {res['rounds']} interleaved round{'s' if res['rounds'] > 1 else ''}; per process {res['warmup']} warmup runs, "
         f"then at least {res['runs']} runs and {res['min_time']} s; every number is the median "
         f"over the rounds |",
         f"| Peak RSS baseline | `onyx --version` {res['baseline_rss_mib']['onyx']:.1f} MiB; Node "
         f"with onnxruntime-node loaded {res['baseline_rss_mib']['ort']:.1f} MiB (included in the "
         f"figures below, not subtracted) |",
         f"| Wall time | {res['seconds']:.0f} s ({res['seconds_timed']:.0f} s of timed rounds) |", ""]
    L += ["Ratio = onyx / onnxruntime: above 1 onyx is slower (or bigger), below 1 it is faster. "
          "Cold = model load and session creation plus the first run, timed inside the process. "
          "Peak RSS = the process's `ru_maxrss` (whole process, all phases).", ""]
    for note in res["notes"]:
        L += [f"> {note}", ""]

    L += ["## Geomeans", "",
          f"Over the {len(s['models'])} models whose outputs match onnxruntime's"
          + (f" (left out: {', '.join(s['excluded'])})" if s["excluded"] else "") + ".", "",
          "| onyx / ORT | " + " | ".join(tname(t) for t in th) + " |",
          "|---|" + "---|" * len(th)]
    rows = [("warm latency (median)", "warm_ratio"), ("cold start (load + first run)", "cold_ratio"),
            ("peak RSS", "rss_ratio")]
    for label, k in rows:
        L.append(f"| {label} | " + " | ".join(fr(s["threads"][str(t)][k], True) for t in th) + " |")

    def names(xs):
        return ", ".join(xs) if xs else "none"
    L.append("| models warm above 1.25× | " + " | ".join(
        names(s["threads"][str(t)]["warm_above_1_25"]) for t in th) + " |")
    L.append("| slowest warm | " + " | ".join(
        (lambda w: f"{w[0]} {w[1]:.2f}×" if w else "–")(s["threads"][str(t)]["worst_warm"])
        for t in th) + " |")
    L.append("| cold start not below ORT | " + " | ".join(
        names(s["threads"][str(t)]["cold_not_below_1"]) for t in th) + " |")
    L.append("| peak RSS above 0.8× | " + " | ".join(
        names(s["threads"][str(t)]["rss_above_0_8"]) for t in th) + " |")
    if "speedup_threads" in s:
        a, b = s["speedup_threads"]
        L += ["", f"Warm speed-up from {tname(a)} to {tname(b)} (geomean of median {a}t / median "
              f"{b}t): onyx {fr(s['speedup_onyx'])}, onnxruntime {fr(s['speedup_ort'])}."]
    L.append("")
    L += gemm_markdown(res.get("gemm"))

    L += ["## Summary", "",
          "Warm = median latency, ms. Cold and peak RSS at 1 thread. Outputs match: onyx's "
          f"outputs at every thread count against onnxruntime's (rtol {RTOL:g}, atol {ATOL:g}; "
          "the largest abs error in brackets).", "",
          "| model | nodes | outputs match | " +
          " | ".join(f"warm {t}t: onyx / ORT | ratio" for t in th) +
          " | cold ms: onyx / ORT | ratio | peak RSS MiB: onyx / ORT | ratio |",
          "|---|---|---|" + "---|---|" * len(th) + "---|---|---|---|"]
    for mr in res["models"]:
        cells = [mr["name"], str(mr["info"]["nodes"]) if mr.get("info") else "–", mr["match_cell"]]
        for t in th:
            o, x = pair(mr, t)
            cells += [f"{fmt(o['warm_median_ms']) if o else 'failed'} / "
                      f"{fmt(x['warm_median_ms']) if x else 'failed'}",
                      fr(ratio(o and o["warm_median_ms"], x and x["warm_median_ms"]), True)]
        o, x = pair(mr, th[0])
        cells += [f"{fmt(o and o['cold_total_ms'])} / {fmt(x and x['cold_total_ms'])}",
                  fr(ratio(o and o["cold_total_ms"], x and x["cold_total_ms"])),
                  f"{o['peak_rss_mib'] if o else 0:.0f} / {x['peak_rss_mib'] if x else 0:.0f}"
                  if o and x else "–",
                  fr(ratio(o and o["peak_rss_mib"], x and x["peak_rss_mib"]))]
        L.append("| " + " | ".join(cells) + " |")
    L.append("")
    problems = [(mr["name"], mr["match_text"]) for mr in res["models"] if not mr["outputs_match"]]
    # A benchmark process that failed with the message the output check already shows adds
    # nothing.
    problems += [(mr["name"], e) for mr in res["models"] for e in mr["errors"]
                 if e.split(": ", 2)[-1] not in mr["match_text"]]
    if problems:
        L += ["### Problems", ""] + [f"- **{n}**: {t}" for n, t in problems] + [""]

    for mr in res["models"]:
        info = mr.get("info") or {}
        ins = ", ".join(f"`{i['name']}` {i['dtype']}{i['shape']}" for i in mr["input_shapes"])
        ops = ", ".join(f"{k} {v}" for k, v in sorted(info.get("ops", {}).items(), key=lambda kv: -kv[1]))
        L += [f"## {mr['name']}", "",
              f"`{rel(mr['model'])}` ({info.get('file_bytes', 0) / 2**20:.1f} MiB, "
              f"{info.get('nodes', '?')} nodes: {ops}).", "",
              f"Input {ins} from {mr['source']}. Declared: "
              + ", ".join(f"`{d}`" for d in info.get("declared_inputs", [])) + ".", ""]
        c = mr.get("check")
        outs = []
        for o in (c or {}).get("outputs", []):
            sp = f"std {o['ort_std']:.3g}" if o.get("ort_std") is not None else ""
            outs.append(f"`{o['name']}` {o['shape']} {sp}".strip())
        torch_out = {o["name"]: o for o in mr.get("torch_outputs", [])}
        for i, o in enumerate((c or {}).get("outputs", [])):
            tt = torch_out.get(o["name"])
            if tt:
                outs[i] += (f" (torch: std {tt['std']:.3g}, range [{tt['min']:.3g}, {tt['max']:.3g}], "
                            f"changes by std {tt['input_sensitivity_std']:.3g} with another input)")
        if outs:
            L += ["Outputs (onnxruntime's values): " + "; ".join(outs) + ".", ""]
        L += [f"Outputs match: {mr['match_text']}.", ""]
        L += ["| threads | cold ms: onyx | ORT | ratio | warm median ms: onyx | ORT | ratio "
              "| warm p90 ms: onyx | ORT | ratio | peak RSS MiB: onyx | ORT | ratio "
              "| round spread: onyx | ORT |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for t in th:
            o, x = pair(mr, t)
            if not (o or x):
                L.append(f"| {t} | " + " | ".join(["failed"] * 15) + " |")
                continue

            def g(r, k):
                return r[k] if r else None
            L.append(
                f"| {t} | {fmt(g(o, 'cold_total_ms'))} | {fmt(g(x, 'cold_total_ms'))} | "
                f"{fr(ratio(g(o, 'cold_total_ms'), g(x, 'cold_total_ms')))} | "
                f"{fmt(g(o, 'warm_median_ms'))} | {fmt(g(x, 'warm_median_ms'))} | "
                f"{fr(ratio(g(o, 'warm_median_ms'), g(x, 'warm_median_ms')), True)} | "
                f"{fmt(g(o, 'warm_p90_ms'))} | {fmt(g(x, 'warm_p90_ms'))} | "
                f"{fr(ratio(g(o, 'warm_p90_ms'), g(x, 'warm_p90_ms')))} | "
                f"{fmt(g(o, 'peak_rss_mib'))} | {fmt(g(x, 'peak_rss_mib'))} | "
                f"{fr(ratio(g(o, 'peak_rss_mib'), g(x, 'peak_rss_mib')))} | "
                f"{spread(o['round_medians_ms']) if o else '–'} | "
                f"{spread(x['round_medians_ms']) if x else '–'} |")
        cold = []
        for t in th:
            o, x = pair(mr, t)
            if o and x:
                cold.append(f"{tname(t)}: onyx load {fmt(o['cold_load_ms'])} + first run "
                            f"{fmt(o['cold_first_run_ms'])} ms, ORT load {fmt(x['cold_load_ms'])} + "
                            f"first run {fmt(x['cold_first_run_ms'])} ms")
        if cold:
            L += ["", "Cold start split: " + "; ".join(cold) + "."]
        for err in mr["errors"]:
            L += ["", f"> error: {err}"]
        L.append("")
    L += ["Round spread: (largest - smallest) / median of the per-round warm medians; a large "
          "spread means the machine was busy and the ratio is less certain.", ""]
    with open(path, "w") as f:
        f.write("\n".join(L).rstrip("\n") + "\n")


# ---------------------------------------------------------------------------------------

GEMM_SQUARE = "sgemm/square/M:1024/N:1024/K:1024/threads:1/mode:"


def gemm_figures(build):
    """The FMA peak of one core and onyx's SGEMM at M = N = K = 1024 on one thread, B
    prepacked (mode 0) and packed per call (mode 1), from bench/gemm_bench.cc: medians of 5
    repetitions. None when that benchmark is not built."""
    exe = os.path.join(build, "onyx_gemm_bench")
    if not os.access(exe, os.X_OK):
        return None
    flt = "^BM_FmaPeak$|^" + GEMM_SQUARE + "[01]$"
    cmd = [exe, f"--benchmark_filter={flt}", "--benchmark_min_time=0.5",
           "--benchmark_repetitions=5", "--benchmark_report_aggregates_only=true",
           "--benchmark_format=json"]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=PROCESS_TIMEOUT)
        if r.returncode != 0:
            return {"error": f"{rel(exe)}: exit status {r.returncode}: {last_line(r.stderr or r.stdout)}"}
        med = {b["run_name"]: b for b in json.loads(r.stdout)["benchmarks"]
               if b.get("aggregate_name") == "median"}
        peak, pre, per = med["BM_FmaPeak"], med[GEMM_SQUARE + "0"], med[GEMM_SQUARE + "1"]
    except (subprocess.TimeoutExpired, json.JSONDecodeError, KeyError) as e:
        return {"error": f"{rel(exe)}: {type(e).__name__}: {e}"}
    return {"peak_gflops": peak["FLOPS"] / 1e9, "peak_label": peak.get("label", ""),
            "prepacked_gflops": pre["FLOPS"] / 1e9, "packed_per_call_gflops": per["FLOPS"] / 1e9,
            "repetitions": 5}


def gemm_markdown(g):
    if g is None:
        return []
    L = ["## SGEMM", ""]
    if "error" in g:
        return L + [f"> error: {g['error']}", ""]
    pk = g["peak_gflops"]
    L += ["onyx's SGEMM (`src/simd/gemm`) beside the FMA throughput of one core, measured by "
          "`build/onyx_gemm_bench` (bench/gemm_bench.cc: independent FMA chains on the widest "
          f"vectors, {g['peak_label']}); medians of {g['repetitions']} repetitions, before the "
          "timed rounds.", "",
          "| | GFLOP/s | of the peak |", "|---|---|---|",
          f"| FMA peak, one core | {pk:.1f} | 100% |",
          f"| SGEMM M = N = K = 1024, 1 thread, B prepacked (constant weights) | "
          f"{g['prepacked_gflops']:.1f} | **{100 * g['prepacked_gflops'] / pk:.0f}%** |",
          f"| SGEMM M = N = K = 1024, 1 thread, B packed per call | "
          f"{g['packed_per_call_gflops']:.1f} | {100 * g['packed_per_call_gflops'] / pk:.0f}% |", ""]
    return L


def bench_cmds(onyx, m, threads, a):
    common = ["--threads", str(threads), "--warmup", str(a.warmup), "--runs", str(a.runs),
              "--min-time", str(a.min_time)]
    return {"onyx": [onyx, "bench", m["model"], *feeds(m), *common, "--json"],
            "ort": ["node", "bench/ort_bench.js", m["model"], *feeds(m), *common]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", default="build", help="build folder with the onyx CLI (default build)")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts (default 1,2)")
    ap.add_argument("--warmup", type=int, default=2, help="warmup runs per process (default 2)")
    ap.add_argument("--runs", type=int, default=5, help="least timed runs per process (default 5)")
    ap.add_argument("--min-time", type=float, default=0.5,
                    help="least seconds of timed runs per process (default 0.5)")
    ap.add_argument("--only", action="append", metavar="NAME",
                    help="benchmark only these models (repeatable)")
    ap.add_argument("--out-dir", default=os.path.join(ROOT, "bench"),
                    help="where RESULTS.md and results.json go (default bench/)")
    a = ap.parse_args()
    build = os.path.abspath(a.build_dir if os.path.isabs(a.build_dir) else os.path.join(ROOT, a.build_dir))
    onyx = os.path.join(build, "onyx")
    if not os.access(onyx, os.X_OK):
        sys.exit(f"run.py: {onyx} not found: build it first (make build)")
    threads = [int(t) for t in a.threads.split(",")]
    if a.rounds < 1 or not threads or min(threads) < 1:
        sys.exit("run.py: --rounds and --threads must be at least 1")
    work = os.path.join(build, "bench")
    os.makedirs(work, exist_ok=True)
    build_peak_rss(work)

    notes = []
    if build_type(build) != "Release":
        notes.append(f"{rel(build)} is not a Release build (CMake build type: {build_type(build)}): "
                     "onyx's figures are not representative.")
        print(f"note: {notes[-1]}", file=sys.stderr)
    t_start = time.time()
    want = set(a.only or [])
    models = bundled_models(onyx, work)
    if not want or want & set(PARITY):
        models += parity_models(onyx, build, notes)
    if not want or want - set(BUNDLED) - set(PARITY):
        models += bench_models(build, notes)
    if want:
        unknown = want - {m["name"] for m in models}
        if unknown:
            sys.exit(f"run.py: no model named {', '.join(sorted(unknown))} "
                     f"(models: {', '.join(m['name'] for m in models)})")
        models = [m for m in models if m["name"] in want]

    load_before = os.getloadavg()[0]
    load_max = load_before
    steal_before = cpu_steal_s()
    print("measuring baseline RSS", file=sys.stderr, flush=True)
    base = baselines(onyx)
    checks = {}
    for m in models:
        print(f"checking outputs: {m['name']}", file=sys.stderr, flush=True)
        m["info"] = inspect(onyx, m["model"])
        m["input_shapes"] = input_shapes(m)
        checks[m["name"]] = check_outputs(onyx, m, threads, work)
        cell, text = check_summary(checks[m["name"]])
        if not check_ok(checks[m["name"]]):
            print(f"  {text}", file=sys.stderr)

    print("GEMM microbenchmark: FMA peak and SGEMM 1024^3", file=sys.stderr, flush=True)
    gemm = gemm_figures(build)

    t_timed = time.time()
    steal_timed = cpu_steal_s()
    raw = {(m["name"], t, k): [] for m in models for t in threads for k in ("onyx", "ort")}
    errors = {m["name"]: [] for m in models}
    total = a.rounds * len(models) * len(threads) * 2
    done = 0
    for rnd in range(a.rounds):
        for m in models:
            for t in threads:
                cmds = list(bench_cmds(onyx, m, t, a).items())
                if rnd % 2 == 1:
                    cmds.reverse()
                for kind, cmd in cmds:
                    done += 1
                    load_max = max(load_max, os.getloadavg()[0])
                    print(f"[{done}/{total}] round {rnd + 1}: {m['name']}, {tname(t)}, {kind}",
                          file=sys.stderr, flush=True)
                    code, out, err, rss, wall = measured(cmd)
                    try:
                        if code != 0:
                            raise RuntimeError(last_line(err or out))
                        j = json.loads(out)
                    except (RuntimeError, json.JSONDecodeError) as e:
                        msg = f"{kind}, {tname(t)}: {'exit status ' + str(code) + ': ' if code else ''}{e}"
                        if msg not in errors[m["name"]]:
                            errors[m["name"]].append(msg)
                        print(f"  {msg}", file=sys.stderr)
                        continue
                    j["peak_rss_kib"] = rss
                    j["process_wall_s"] = wall
                    raw[(m["name"], t, kind)].append(j)
    load_after = os.getloadavg()[0]
    steal_after = cpu_steal_s()
    res = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine(),
        "loadavg_before": load_before,
        "loadavg_max": max(load_max, load_after),
        "loadavg_after": load_after,
        "steal_s": None if steal_after is None else steal_after - steal_before,
        "steal_timed_s": None if steal_after is None else steal_after - steal_timed,
        "onyx": rel(onyx),
        "onyx_commit": onyx_commit(),
        "build_type": build_type(build),
        "ort_version": ort_version(),
        "rounds": a.rounds, "threads": threads, "warmup": a.warmup, "runs": a.runs,
        "min_time": a.min_time,
        "tolerance": {"rtol": RTOL, "atol": ATOL},
        "baseline_rss_mib": base,
        "seconds": time.time() - t_start,
        "seconds_timed": time.time() - t_timed,
        "notes": notes,
        "gemm": gemm,
        "models": [],
    }
    for m in models:
        c = checks[m["name"]]
        cell, text = check_summary(c)
        mr = {"name": m["name"], "model": m["model"], "source": m["source"],
              "inputs": m["inputs"], "input_shapes": m["input_shapes"], "info": m["info"],
              "torch_outputs": m.get("torch_outputs", []),
              "check": c, "outputs_match": check_ok(c), "match_cell": cell, "match_text": text,
              "errors": errors[m["name"]], "results": {}, "raw": {}}
        for t in threads:
            mr["results"][str(t)] = {k: aggregate(raw[(m["name"], t, k)]) for k in ("onyx", "ort")}
            mr["raw"][str(t)] = {k: [{"cold": r["cold"], "warm": r["warm"],
                                      "peak_rss_kib": r["peak_rss_kib"],
                                      "process_wall_s": r["process_wall_s"]}
                                     for r in raw[(m["name"], t, k)]]
                                 for k in ("onyx", "ort")}
        res["models"].append(mr)
    res["summary"] = summary_stats(res)
    os.makedirs(a.out_dir, exist_ok=True)
    with open(os.path.join(a.out_dir, "results.json"), "w") as f:
        json.dump(res, f, indent=1)
    write_markdown(os.path.join(a.out_dir, "RESULTS.md"), res)
    s = res["summary"]
    for t in threads:
        st = s["threads"][str(t)]
        g = lambda v: f"{v:.2f}x" if v is not None else "-"
        print(f"{tname(t)}: geomean onyx/ORT warm {g(st['warm_ratio'])}, cold {g(st['cold_ratio'])}, "
              f"peak RSS {g(st['rss_ratio'])} over {st['n']} models", file=sys.stderr)
    print(f"wrote {rel(os.path.join(a.out_dir, 'RESULTS.md'))} and results.json "
          f"in {res['seconds']:.0f} s", file=sys.stderr)
    bad = any(errors.values()) or any(not mr["outputs_match"] for mr in res["models"])
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

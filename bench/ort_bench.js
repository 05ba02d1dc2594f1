#!/usr/bin/env node
// The measurement of `onyx bench`, made with onnxruntime-node (the reference), printed
// as JSON in the same shape (tool, model, provider, threads, inputs, cold, warm).
//
//   node bench/ort_bench.js MODEL --input NAME=FILE.npy ... [--threads N] [--warmup N]
//        [--runs N] [--min-time SECONDS]
//
// Cold: InferenceSession.create (read + optimize + plan: onyx's open + session) and the
// first run, each timed once. Warm: after --warmup runs, at least --runs runs and at least
// --min-time seconds of them, each timed alone (await session.run). Session options (echoed
// in the JSON): CPU provider, intraOpNumThreads = --threads, interOpNumThreads 1,
// graphOptimizationLevel 'all', memory arena and patterns on, sequential execution.
// Inputs come from .npy files only, so that both runtimes get the same bytes (the
// exporters write each model's seeded input set as .npy).
'use strict';
const path = require('path');
const { NpyError, readNpy } = require('../tests/models/npy.js');

const ROOT = path.resolve(__dirname, '..');

function die(msg) {
  process.stderr.write(`ort_bench: ${msg}\n`);
  process.exit(2);
}

const USAGE =
  'usage: ort_bench.js MODEL --input NAME=FILE.npy ... [--threads N] [--warmup N] [--runs N] [--min-time S]\n';

function parseArgs(argv) {
  const a = { model: null, inputs: [], threads: 1, warmup: 5, runs: 20, minTime: 1.0 };
  const num = (x, v, min) => {
    const n = Number(v);
    if (!Number.isFinite(n) || n < min) die(`${x} ${v}: expected a number >= ${min}`);
    return n;
  };
  for (let i = 0; i < argv.length; ++i) {
    const x = argv[i];
    const next = () => (i + 1 < argv.length ? argv[++i] : die(`${x} needs a value`));
    if (x === '--input' || x === '-i') {
      const v = next();
      const eq = v.indexOf('=');
      if (eq <= 0) die(`--input ${v}: expected NAME=FILE.npy`);
      a.inputs.push([v.slice(0, eq), v.slice(eq + 1)]);
    } else if (x === '--threads') a.threads = Math.floor(num(x, next(), 1));
    else if (x === '--warmup') a.warmup = Math.floor(num(x, next(), 0));
    else if (x === '--runs') a.runs = Math.floor(num(x, next(), 1));
    else if (x === '--min-time') a.minTime = num(x, next(), 0);
    else if (x === '--help' || x === '-h') {
      process.stdout.write(USAGE);
      process.exit(0);
    } else if (x.startsWith('-')) die(`unknown option ${x}`);
    else if (a.model === null) a.model = x;
    else die(`unexpected argument ${x}`);
  }
  if (!a.model) die('no model given\n' + USAGE);
  return a;
}

/** q-quantile of sorted values, linear interpolation (numpy's default, as onyx bench). */
function quantile(sorted, q) {
  const pos = q * (sorted.length - 1);
  const lo = Math.floor(pos);
  const hi = Math.min(lo + 1, sorted.length - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}

function summarize(times) {
  const v = [...times].sort((x, y) => x - y);
  const mean = v.reduce((s, x) => s + x, 0) / v.length;
  const ss = v.reduce((s, x) => s + (x - mean) * (x - mean), 0);
  return {
    mean_ms: mean,
    median_ms: quantile(v, 0.5),
    p90_ms: quantile(v, 0.9),
    min_ms: v[0],
    max_ms: v[v.length - 1],
    stddev_ms: v.length > 1 ? Math.sqrt(ss / (v.length - 1)) : 0,
  };
}

const msSince = t => Number(process.hrtime.bigint() - t) / 1e6;

async function main() {
  const a = parseArgs(process.argv.slice(2));
  let ort;
  try {
    ort = require(path.join(ROOT, 'node_modules', 'onnxruntime-node'));
  } catch (e) {
    die(`cannot load onnxruntime-node from ${ROOT}/node_modules (run scripts/setup.sh): ${e.message}`);
  }
  // Inputs are read before the clock starts: reading files is not part of either runtime.
  const arrays = a.inputs.map(([name, file]) => [name, readNpy(file)]);
  // Every graph optimization on ('all': basic, extended and layout/NCHWc transforms), the
  // memory arena and memory patterns on (onnxruntime's defaults, stated so the JSON records
  // them), intra-op pool spinning left at its default (on).
  const opts = {
    executionProviders: ['cpu'],
    graphOptimizationLevel: 'all',
    enableCpuMemArena: true,
    enableMemPattern: true,
    executionMode: 'sequential',
    intraOpNumThreads: a.threads,
    interOpNumThreads: 1,
  };

  const t0 = process.hrtime.bigint();
  const session = await ort.InferenceSession.create(a.model, opts);
  const loadMs = msSince(t0);

  const feeds = {};
  for (const [name, t] of arrays) {
    if (!session.inputNames.includes(name))
      die(`--input ${name}: the model has no input of that name (its inputs: ${session.inputNames.join(', ')})`);
    feeds[name] = new ort.Tensor(t.type, t.data, t.dims);
  }
  for (const name of session.inputNames)
    if (!(name in feeds)) die(`input '${name}' is not given: pass --input ${name}=FILE.npy`);

  const t1 = process.hrtime.bigint();
  await session.run(feeds);
  const firstMs = msSince(t1);

  for (let i = 0; i < a.warmup; ++i) await session.run(feeds);
  const times = [];
  const tWarm = process.hrtime.bigint();
  while (times.length < a.runs || msSince(tWarm) < a.minTime * 1000) {
    const t = process.hrtime.bigint();
    await session.run(feeds);
    times.push(msSince(t));
  }
  const warmS = msSince(tWarm) / 1000;
  await session.release();

  const out = {
    tool: 'onnxruntime-node',
    version: require(path.join(ROOT, 'node_modules', 'onnxruntime-node', 'package.json')).version,
    model: a.model,
    provider: 'cpu',
    threads: a.threads,
    session_options: opts,
    inputs: arrays.map(([name, t]) => ({ name, dtype: t.type, shape: Array.from(t.dims) })),
    cold: { load_ms: loadMs, first_run_ms: firstMs, total_ms: loadMs + firstMs },
    warm: { warmup: a.warmup, runs: times.length, seconds: warmS, ...summarize(times) },
  };
  process.stdout.write(JSON.stringify(out, null, 2) + '\n');
}

main().catch(e => die(e instanceof NpyError ? e.message : e && e.stack ? e.stack : String(e)));

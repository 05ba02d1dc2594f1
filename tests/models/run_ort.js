#!/usr/bin/env node
// Runs a model with onnxruntime-node (the reference) on .npy inputs and writes every
// output as OUTPUT_DIR/<output name>.npy, the same layout as `onyx run`.
//
//   node tests/models/run_ort.js MODEL --input NAME=FILE.npy ... --output-dir DIR
//        [--threads N] [--json]
//
// onnxruntime-node is required from the repository's node_modules (pinned in package.json).
'use strict';
const fs = require('fs');
const path = require('path');
const { NpyError, readNpy, writeNpy } = require('./npy.js');

const ROOT = path.resolve(__dirname, '..', '..');

function die(msg) {
  process.stderr.write(`run_ort: ${msg}\n`);
  process.exit(2);
}

// Same rule as onyx's safe_file_name (tools/onyx/util.cc).
function safeFileName(name) {
  let s = name.replace(/[^A-Za-z0-9._-]/g, '_');
  if (s === '' || s === '.' || s === '..') s = 'output';
  return s;
}

/** onnxruntime-node from the repository's node_modules; calls fail(message) when it is missing. */
function loadOrt(fail) {
  try {
    return require(path.join(ROOT, 'node_modules', 'onnxruntime-node'));
  } catch (e) {
    return fail(`cannot load onnxruntime-node from ${ROOT}/node_modules (run scripts/setup.sh): ${e.message}`);
  }
}

function parseArgs(argv) {
  const a = { model: null, inputs: [], outputDir: '.', threads: 0, json: false };
  for (let i = 0; i < argv.length; ++i) {
    const x = argv[i];
    const next = () => (i + 1 < argv.length ? argv[++i] : die(`${x} needs a value`));
    if (x === '--input' || x === '-i') {
      const v = next();
      const eq = v.indexOf('=');
      if (eq <= 0) die(`--input ${v}: expected NAME=FILE.npy`);
      a.inputs.push([v.slice(0, eq), v.slice(eq + 1)]);
    } else if (x === '--output-dir' || x === '-o') a.outputDir = next();
    else if (x === '--threads') a.threads = Number(next());
    else if (x === '--json') a.json = true;
    else if (x === '--help' || x === '-h') {
      process.stdout.write('usage: run_ort.js MODEL --input NAME=FILE.npy ... --output-dir DIR [--threads N] [--json]\n');
      process.exit(0);
    } else if (x.startsWith('-')) die(`unknown option ${x}`);
    else if (a.model === null) a.model = x;
    else die(`unexpected argument ${x}`);
  }
  if (!a.model) die('no model given');
  return a;
}

async function main() {
  const a = parseArgs(process.argv.slice(2));
  const ort = loadOrt(die);
  const opts = { graphOptimizationLevel: 'all' };
  if (a.threads > 0) opts.intraOpNumThreads = a.threads;
  const t0 = process.hrtime.bigint();
  const session = await ort.InferenceSession.create(a.model, opts);
  const t1 = process.hrtime.bigint();
  const feeds = {};
  for (const [name, file] of a.inputs) {
    if (!session.inputNames.includes(name))
      die(`model has no input '${name}' (inputs: ${session.inputNames.join(', ')})`);
    const t = readNpy(file);
    feeds[name] = new ort.Tensor(t.type, t.data, t.dims);
  }
  for (const name of session.inputNames)
    if (!(name in feeds)) die(`input '${name}' is not given: pass --input ${name}=FILE.npy`);
  const t2 = process.hrtime.bigint();
  const results = await session.run(feeds);
  const t3 = process.hrtime.bigint();
  fs.mkdirSync(a.outputDir, { recursive: true });
  const summary = {
    model: a.model,
    load_ms: Number(t1 - t0) / 1e6,
    run_ms: Number(t3 - t2) / 1e6,
    outputs: [],
  };
  for (const name of session.outputNames) {
    const t = results[name];
    const file = path.join(a.outputDir, safeFileName(name) + '.npy');
    writeNpy(file, t.type, t.dims, t.data);
    summary.outputs.push({ name, dtype: t.type, shape: Array.from(t.dims), file });
    if (!a.json) process.stdout.write(`${name}: ${t.type}[${t.dims.join(',')}] -> ${file}\n`);
  }
  if (a.json) process.stdout.write(JSON.stringify(summary, null, 2) + '\n');
  else process.stderr.write(`loaded in ${summary.load_ms.toFixed(0)} ms, ran in ${summary.run_ms.toFixed(1)} ms\n`);
  await session.release();
}

if (require.main === module) {
  main().catch(e => die(e instanceof NpyError ? e.message : e && e.stack ? e.stack : String(e)));
}

module.exports = { readNpy, writeNpy, safeFileName, loadOrt };

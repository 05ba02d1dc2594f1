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

const ROOT = path.resolve(__dirname, '..', '..');

function die(msg) {
  process.stderr.write(`run_ort: ${msg}\n`);
  process.exit(2);
}

// ---- .npy reading and writing (format versions 1.0, 2.0 and 3.0, little-endian, C order) ----

// numpy descr (without byte order) -> [onnxruntime type, TypedArray, element size]
const NPY_TYPES = {
  f4: ['float32', Float32Array, 4],
  f8: ['float64', Float64Array, 8],
  f2: ['float16', Uint16Array, 2],
  i1: ['int8', Int8Array, 1],
  i2: ['int16', Int16Array, 2],
  i4: ['int32', Int32Array, 4],
  i8: ['int64', BigInt64Array, 8],
  u1: ['uint8', Uint8Array, 1],
  u2: ['uint16', Uint16Array, 2],
  u4: ['uint32', Uint32Array, 4],
  u8: ['uint64', BigUint64Array, 8],
  b1: ['bool', Uint8Array, 1],
};
const ORT_TO_NPY = Object.fromEntries(Object.entries(NPY_TYPES).map(([k, v]) => [v[0], k]));

/** Reads a .npy file into {type, dims, data} (data is a TypedArray owning its bytes). */
function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.length < 10 || buf[0] !== 0x93 || buf.toString('latin1', 1, 6) !== 'NUMPY')
    die(`${file}: not a .npy file (bad magic)`);
  const major = buf[6];
  let hlen, hstart;
  if (major === 1) { hlen = buf.readUInt16LE(8); hstart = 10; }
  else if (major === 2 || major === 3) { hlen = buf.readUInt32LE(8); hstart = 12; }
  else die(`${file}: unsupported .npy version ${major}`);
  if (hstart + hlen > buf.length) die(`${file}: truncated header`);
  const header = buf.toString(major === 3 ? 'utf8' : 'latin1', hstart, hstart + hlen);
  const descr = /'descr'\s*:\s*'([^']*)'/.exec(header);
  const fortran = /'fortran_order'\s*:\s*(True|False)/.exec(header);
  const shape = /'shape'\s*:\s*\(([^)]*)\)/.exec(header);
  if (!descr || !fortran || !shape) die(`${file}: cannot parse header ${header.trim()}`);
  if (fortran[1] === 'True') die(`${file}: Fortran-order arrays are not supported; save a C-order array`);
  let d = descr[1];
  const order = d[0];
  if (order === '>') die(`${file}: big-endian dtype ${d} is not supported`);
  if (order === '<' || order === '|' || order === '=') d = d.slice(1);
  const t = NPY_TYPES[d];
  if (!t) die(`${file}: unsupported dtype ${descr[1]}`);
  const dims = shape[1].split(',').map(s => s.trim()).filter(s => s.length).map(Number);
  if (dims.some(n => !Number.isInteger(n) || n < 0)) die(`${file}: bad shape (${shape[1]})`);
  const count = dims.reduce((a, b) => a * b, 1);
  const start = hstart + hlen;
  if (buf.length - start < count * t[2]) die(`${file}: expected ${count * t[2]} data bytes, found ${buf.length - start}`);
  // Copy into a fresh, aligned ArrayBuffer (the Buffer's offset may not be aligned).
  const bytes = new Uint8Array(count * t[2]);
  bytes.set(buf.subarray(start, start + count * t[2]));
  let data = new t[1](bytes.buffer);
  if (t[0] === 'bool') data = Uint8Array.from(data, v => (v ? 1 : 0));
  return { type: t[0], dims, data };
}

/** Writes {type, dims, data} as a version 1.0 .npy file. */
function writeNpy(file, type, dims, data) {
  const d = ORT_TO_NPY[type];
  if (!d) die(`cannot write dtype ${type} to ${file}`);
  const descr = (d === 'b1' || d === 'i1' || d === 'u1' ? '|' : '<') + d;
  const shape = dims.length === 1 ? `(${dims[0]},)` : `(${dims.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  const total = 10 + header.length + 1;
  header += ' '.repeat((64 - (total % 64)) % 64) + '\n';
  const pre = Buffer.alloc(10);
  pre[0] = 0x93;
  pre.write('NUMPY', 1, 'latin1');
  pre[6] = 1;
  pre[7] = 0;
  pre.writeUInt16LE(header.length, 8);
  let body;
  if (type === 'bool') body = Buffer.from(Uint8Array.from(data, v => (v ? 1 : 0)));
  else body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  fs.writeFileSync(file, Buffer.concat([pre, Buffer.from(header, 'latin1'), body]));
}

// Same rule as onyx's safe_file_name (tools/onyx/cmd_run.cc).
function safeFileName(name) {
  let s = name.replace(/[^A-Za-z0-9._-]/g, '_');
  if (s === '' || s === '.' || s === '..') s = 'output';
  return s;
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
  let ort;
  try {
    ort = require(path.join(ROOT, 'node_modules', 'onnxruntime-node'));
  } catch (e) {
    die(`cannot load onnxruntime-node from ${ROOT}/node_modules (run scripts/setup.sh): ${e.message}`);
  }
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
  main().catch(e => die(e && e.stack ? e.stack : String(e)));
}

module.exports = { readNpy, writeNpy, safeFileName };

#!/usr/bin/env node
// Writes reference outputs for `onyx parity` with onnxruntime-node (the pinned reference):
// runs MODEL on every sample of a dataset folder and writes one sample of outputs per input
// sample, same name, same layout (NAME.npz or NAME/ of .npy files), keyed by output name.
// Also writes OUT_DIR/reference.json naming the source, which onyx parity shows.
//
//   node tests/models/ort_reference.js MODEL --inputs DIR --output DIR [--threads N]
//        [--layout npz|npy]      (default: the layout of each input sample)
//
// A dataset sample is NAME.npz (np.savez or np.savez_compressed) or a NAME/ folder of
// .npy files; its arrays are named after the model's inputs (a sample with one array
// feeds a model with one input whatever the array's name).
'use strict';
const fs = require('fs');
const path = require('path');
const zlib = require('zlib');
const crypto = require('crypto');
const { NpyError, parseNpy, npyBytes } = require('./npy.js');
const { safeFileName, loadOrt } = require('./run_ort.js');

const ROOT = path.resolve(__dirname, '..', '..');

function die(msg) {
  process.stderr.write(`ort_reference: ${msg}\n`);
  process.exit(2);
}

// ---- .npz (ZIP) ----

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let i = 0; i < 256; ++i) {
    let c = i;
    for (let k = 0; k < 8; ++k) c = c & 1 ? 0xEDB88320 ^ (c >>> 1) : c >>> 1;
    t[i] = c >>> 0;
  }
  return t;
})();
function crc32(buf) {
  let c = 0xFFFFFFFF;
  for (let i = 0; i < buf.length; ++i) c = CRC_TABLE[(c ^ buf[i]) & 0xff] ^ (c >>> 8);
  return (c ^ 0xFFFFFFFF) >>> 0;
}

function readNpz(file) {
  const b = fs.readFileSync(file);
  let end = -1;
  for (let p = b.length - 22; p >= Math.max(0, b.length - 22 - 65535); --p)
    if (b.readUInt32LE(p) === 0x06054b50) { end = p; break; }
  if (end < 0) die(`${file}: not a .npz (ZIP) file`);
  let count = b.readUInt16LE(end + 10);
  let cdOff = b.readUInt32LE(end + 16);
  if (count === 0xFFFF || cdOff === 0xFFFFFFFF) {
    const z = Number(b.readBigUInt64LE(end - 20 + 8));
    count = Number(b.readBigUInt64LE(z + 32));
    cdOff = Number(b.readBigUInt64LE(z + 48));
  }
  const arrays = {};
  let p = cdOff;
  for (let i = 0; i < count; ++i) {
    if (b.readUInt32LE(p) !== 0x02014b50) die(`${file}: corrupt central directory`);
    const method = b.readUInt16LE(p + 10);
    let csize = b.readUInt32LE(p + 20), usize = b.readUInt32LE(p + 24), off = b.readUInt32LE(p + 42);
    const nlen = b.readUInt16LE(p + 28), xlen = b.readUInt16LE(p + 30), clen = b.readUInt16LE(p + 32);
    const name = b.toString('utf8', p + 46, p + 46 + nlen);
    for (let x = p + 46 + nlen; x + 4 <= p + 46 + nlen + xlen;) {
      const id = b.readUInt16LE(x), len = b.readUInt16LE(x + 2);
      if (id === 1) {
        let q = x + 4;
        if (usize === 0xFFFFFFFF) { usize = Number(b.readBigUInt64LE(q)); q += 8; }
        if (csize === 0xFFFFFFFF) { csize = Number(b.readBigUInt64LE(q)); q += 8; }
        if (off === 0xFFFFFFFF) { off = Number(b.readBigUInt64LE(q)); q += 8; }
      }
      x += 4 + len;
    }
    p += 46 + nlen + xlen + clen;
    if (name.endsWith('/')) continue;
    if (!name.endsWith('.npy')) die(`${file}: entry ${name} is not a .npy array`);
    const start = off + 30 + b.readUInt16LE(off + 26) + b.readUInt16LE(off + 28);
    const raw = b.subarray(start, start + csize);
    let data;
    if (method === 0) data = raw;
    else if (method === 8) data = zlib.inflateRawSync(raw);
    else die(`${file}: entry ${name} uses ZIP method ${method}`);
    if (data.length !== usize) die(`${file}: entry ${name} has the wrong size`);
    arrays[name.slice(0, -4)] = parseNpy(data, `${file}:${name}`);
  }
  return arrays;
}

/** Writes an uncompressed .npz (what np.savez writes). */
function writeNpz(file, entries) {
  const parts = [];
  const central = [];
  let offset = 0;
  for (const [key, bytes] of entries) {
    const name = Buffer.from(key + '.npy', 'utf8');
    const crc = crc32(bytes);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0); local.writeUInt16LE(20, 4); local.writeUInt16LE(0x21, 12);
    local.writeUInt32LE(crc, 14); local.writeUInt32LE(bytes.length, 18); local.writeUInt32LE(bytes.length, 22);
    local.writeUInt16LE(name.length, 26);
    const cd = Buffer.alloc(46);
    cd.writeUInt32LE(0x02014b50, 0); cd.writeUInt16LE(20, 4); cd.writeUInt16LE(20, 6); cd.writeUInt16LE(0x21, 14);
    cd.writeUInt32LE(crc, 16); cd.writeUInt32LE(bytes.length, 20); cd.writeUInt32LE(bytes.length, 24);
    cd.writeUInt16LE(name.length, 28); cd.writeUInt32LE(0x01800000, 38); cd.writeUInt32LE(offset, 42);
    parts.push(local, name, bytes);
    central.push(cd, name);
    offset += 30 + name.length + bytes.length;
  }
  const cdBuf = Buffer.concat(central);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0); end.writeUInt16LE(entries.length, 8); end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(cdBuf.length, 12); end.writeUInt32LE(offset, 16);
  fs.writeFileSync(file, Buffer.concat([...parts, cdBuf, end]));
}

// ---- dataset ----

function listDataset(dir) {
  if (!fs.existsSync(dir) || !fs.statSync(dir).isDirectory()) die(`--inputs ${dir} is not a folder`);
  const samples = [];
  for (const f of fs.readdirSync(dir).sort()) {
    if (f.startsWith('.')) continue;
    const p = path.join(dir, f);
    if (fs.statSync(p).isDirectory()) {
      if (fs.readdirSync(p).some(x => x.endsWith('.npy'))) samples.push({ name: f, path: p, npz: false });
    } else if (f.endsWith('.npz')) {
      samples.push({ name: f.slice(0, -4), path: p, npz: true });
    }
  }
  if (!samples.length) die(`--inputs ${dir} holds no sample (NAME.npz files or NAME/ folders of .npy files)`);
  return samples;
}

function loadSample(s) {
  if (s.npz) return readNpz(s.path);
  const arrays = {};
  for (const f of fs.readdirSync(s.path).sort())
    if (f.endsWith('.npy')) arrays[f.slice(0, -4)] = parseNpy(fs.readFileSync(path.join(s.path, f)), path.join(s.path, f));
  return arrays;
}

function parseArgs(argv) {
  const a = { model: null, inputs: null, output: null, threads: 0, layout: null };
  for (let i = 0; i < argv.length; ++i) {
    const x = argv[i];
    const next = () => (i + 1 < argv.length ? argv[++i] : die(`${x} needs a value`));
    if (x === '--inputs') a.inputs = next();
    else if (x === '--output' || x === '-o') a.output = next();
    else if (x === '--threads') a.threads = Number(next());
    else if (x === '--layout') {
      a.layout = next();
      if (a.layout !== 'npz' && a.layout !== 'npy') die('--layout is npz or npy');
    } else if (x === '--help' || x === '-h') {
      process.stdout.write('usage: ort_reference.js MODEL --inputs DIR --output DIR [--threads N] [--layout npz|npy]\n');
      process.exit(0);
    } else if (x.startsWith('-')) die(`unknown option ${x}`);
    else if (a.model === null) a.model = x;
    else die(`unexpected argument ${x}`);
  }
  if (!a.model || !a.inputs || !a.output) die('usage: ort_reference.js MODEL --inputs DIR --output DIR');
  return a;
}

async function main() {
  const a = parseArgs(process.argv.slice(2));
  const ort = loadOrt(die);
  const version = require(path.join(ROOT, 'node_modules', 'onnxruntime-node', 'package.json')).version;
  const opts = { graphOptimizationLevel: 'all' };
  if (a.threads > 0) opts.intraOpNumThreads = a.threads;
  const session = await ort.InferenceSession.create(a.model, opts);
  const samples = listDataset(a.inputs);
  fs.mkdirSync(a.output, { recursive: true });
  for (const s of samples) {
    const arrays = loadSample(s);
    const keys = Object.keys(arrays);
    const feeds = {};
    for (const name of session.inputNames) {
      let t = arrays[name] || arrays[safeFileName(name)];
      if (!t && session.inputNames.length === 1 && keys.length === 1) t = arrays[keys[0]];
      if (!t) die(`sample ${s.name} has no array for input '${name}' (it has: ${keys.join(', ')})`);
      feeds[name] = new ort.Tensor(t.type, t.data, t.dims);
    }
    const results = await session.run(feeds);
    const entries = session.outputNames.map(n => [safeFileName(n), npyBytes(results[n].type, results[n].dims, results[n].data, n)]);
    const npz = a.layout ? a.layout === 'npz' : s.npz;
    if (npz) {
      writeNpz(path.join(a.output, s.name + '.npz'), entries);
    } else {
      const d = path.join(a.output, s.name);
      fs.mkdirSync(d, { recursive: true });
      for (const [k, bytes] of entries) fs.writeFileSync(path.join(d, k + '.npy'), bytes);
    }
  }
  const sha = crypto.createHash('sha256').update(fs.readFileSync(a.model)).digest('hex');
  fs.writeFileSync(path.join(a.output, 'reference.json'), JSON.stringify({
    source: `onnxruntime-node ${version}`,
    model: path.basename(a.model),
    model_sha256: sha,
    samples: samples.length,
  }, null, 1) + '\n');
  process.stderr.write(`ort_reference: wrote ${samples.length} sample(s) to ${a.output}\n`);
  await session.release();
}

if (require.main === module)
  main().catch(e => die(e instanceof NpyError ? e.message : e && e.stack ? e.stack : String(e)));

module.exports = { readNpz, writeNpz, parseNpy, npyBytes };

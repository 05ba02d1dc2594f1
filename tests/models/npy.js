// .npy arrays for the onnxruntime-node scripts (run_ort.js, ort_reference.js): format
// versions 1.0, 2.0 and 3.0, little-endian, C order, as {type, dims, data} with
// onnxruntime-node's type names. Errors are NpyError, whose message names the array.
'use strict';
const fs = require('fs');

class NpyError extends Error {}

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

function fail(msg) {
  throw new NpyError(msg);
}

/**
 * Parses the bytes of a .npy array into {type, dims, data} (data is a TypedArray owning
 * its bytes; bool values are 0 or 1). `what` names the array in errors (a file name).
 */
function parseNpy(buf, what) {
  if (buf.length < 10 || buf[0] !== 0x93 || buf.toString('latin1', 1, 6) !== 'NUMPY')
    fail(`${what}: not a .npy file (bad magic)`);
  const major = buf[6];
  let hlen, hstart;
  if (major === 1) { hlen = buf.readUInt16LE(8); hstart = 10; }
  else if (major === 2 || major === 3) { hlen = buf.readUInt32LE(8); hstart = 12; }
  else fail(`${what}: unsupported .npy version ${major}`);
  if (hstart + hlen > buf.length) fail(`${what}: truncated header`);
  const header = buf.toString(major === 3 ? 'utf8' : 'latin1', hstart, hstart + hlen);
  const descr = /'descr'\s*:\s*'([^']*)'/.exec(header);
  const fortran = /'fortran_order'\s*:\s*(True|False)/.exec(header);
  const shape = /'shape'\s*:\s*\(([^)]*)\)/.exec(header);
  if (!descr || !fortran || !shape) fail(`${what}: cannot parse header ${header.trim()}`);
  if (fortran[1] === 'True') fail(`${what}: Fortran-order arrays are not supported; save a C-order array`);
  let d = descr[1];
  const order = d[0];
  if (order === '>') fail(`${what}: big-endian dtype ${d} is not supported`);
  if (order === '<' || order === '|' || order === '=') d = d.slice(1);
  const t = NPY_TYPES[d];
  if (!t) fail(`${what}: unsupported dtype ${descr[1]}`);
  const dims = shape[1].split(',').map(s => s.trim()).filter(s => s.length).map(Number);
  if (dims.some(n => !Number.isInteger(n) || n < 0)) fail(`${what}: bad shape (${shape[1]})`);
  const count = dims.reduce((a, b) => a * b, 1);
  const start = hstart + hlen;
  if (buf.length - start < count * t[2]) fail(`${what}: expected ${count * t[2]} data bytes, found ${buf.length - start}`);
  // Copy into a fresh, aligned ArrayBuffer (the Buffer's offset may not be aligned).
  const bytes = new Uint8Array(count * t[2]);
  bytes.set(buf.subarray(start, start + count * t[2]));
  let data = new t[1](bytes.buffer);
  if (t[0] === 'bool') data = Uint8Array.from(data, v => (v ? 1 : 0));
  return { type: t[0], dims, data };
}

/** Reads a .npy file into {type, dims, data}. */
function readNpy(file) {
  return parseNpy(fs.readFileSync(file), file);
}

/** The bytes of {type, dims, data} as a version 1.0 .npy file; `what` names it in errors. */
function npyBytes(type, dims, data, what) {
  const d = ORT_TO_NPY[type];
  if (!d) fail(`${what}: dtype ${type} has no .npy form`);
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
  const body = type === 'bool' ? Buffer.from(Uint8Array.from(data, v => (v ? 1 : 0)))
                               : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  return Buffer.concat([pre, Buffer.from(header, 'latin1'), body]);
}

/** Writes {type, dims, data} as a version 1.0 .npy file. */
function writeNpy(file, type, dims, data) {
  fs.writeFileSync(file, npyBytes(type, dims, data, file));
}

module.exports = { NpyError, parseNpy, readNpy, npyBytes, writeNpy };

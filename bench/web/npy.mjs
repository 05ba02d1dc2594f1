// The .npy inputs of the bench pages (bench.html, roundtrip.html): float32, C order,
// format version 1 or 2.
export function npy(buf) {
  const b = new Uint8Array(buf), dv = new DataView(buf);
  const v1 = b[6] === 1, hl = v1 ? dv.getUint16(8, true) : dv.getUint32(8, true), off = (v1 ? 10 : 12) + hl;
  const h = new TextDecoder().decode(b.subarray(v1 ? 10 : 12, off));
  const shape = /'shape': \(([^)]*)\)/.exec(h)[1].split(',').map((s) => s.trim()).filter(Boolean).map(Number);
  return { shape, data: new Float32Array(buf.slice(off)) };
}

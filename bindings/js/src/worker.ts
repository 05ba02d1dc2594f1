// The Web Worker onyx-web runs in by default: it loads the wasm module once and answers
// requests from index.ts. Buffers of results are transferred back, never copied.

import { Core, type LoadOptions, type WireTensor } from './core.js';
import { toWire } from './errors.js';

let core: Promise<Core> | null = null;

function transferables(ts: WireTensor[]): ArrayBuffer[] {
  const out: ArrayBuffer[] = [];
  for (const t of ts)
    if (!Array.isArray(t.data) && t.data.buffer instanceof ArrayBuffer && !out.includes(t.data.buffer)) out.push(t.data.buffer);
  return out;
}

async function handle(op: string, a: any): Promise<[unknown, ArrayBuffer[]]> {
  if (op === 'load') {
    if (!core) core = Core.load(a as LoadOptions);
    return [(await core).info, []];
  }
  const c = await core!;
  switch (op) {
    case 'create': return [c.createSession(a.model, a.threads, a.strict, a.optimize), []];
    case 'release': c.releaseSession(a.handle); return [null, []];
    case 'run': {
      const r = c.run(a.handle, a.names, a.feeds);
      return [r, transferables(r.tensors)];
    }
    case 'preprocess': {
      const t = c.preprocess(a.rgba, a.width, a.height, a.params);
      return [t, transferables([t])];
    }
    case 'ctc': return [c.ctcDecode(a.scores, a.frames, a.classes, a.blank, a.beamWidth, a.probabilities, a.alphabet), []];
  }
  throw new Error(`unknown request '${op}'`);
}

self.onmessage = async (e: MessageEvent) => {
  const { id, op, args } = e.data;
  try {
    const [result, transfer] = await handle(op, args);
    (self as any).postMessage({ id, ok: true, result }, transfer);
  } catch (err) {
    (self as any).postMessage({ id, ok: false, error: toWire(err) });
  }
};

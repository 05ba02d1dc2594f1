// The Web Worker onyx-web runs in by default: it loads the wasm module once and answers
// requests from index.ts. Buffers of results are transferred back, never copied. Runs may
// also come through the fast lane of channel.ts.

import {
  CLAIMED, LISTEN_MS, LISTENING, OFF, SPIN_MS, POSTED, readTensors, REPLY, REPLY_OK, REPLY_POSTED, REQUEST, STAMP_REPLY,
  STAMP_WAKE, STATE,
  laneBytes, writeError, writeTensors, type ChannelBuffers, type LaneTensor,
} from './channel.js';
import { compileWasm, Core, type CompiledWasm, type LoadOptions, type SessionInfo, type WireTensor } from './core.js';
import { toWire } from './errors.js';

let core: Promise<Core> | null = null;
/** A page that starts this worker early (env.wasm.worker) may name the build it will load
 * (onyx-web-worker.mjs?build=onyx-web or onyx-web-mt): its .wasm downloads and compiles,
 * and its glue is imported, as this worker starts; Core.load takes them (the glue from
 * the module map) when 'load' asks for that build. */
let early: { artifact: string; wasm: Promise<CompiledWasm> } | null = null;
{
  const build = new URLSearchParams(self.location.search).get('build');
  if (build === 'onyx-web' || build === 'onyx-web-mt') {
    const wasm = compileWasm(new URL(`./${build}.wasm`, self.location.href).href);
    wasm.catch(() => {});  // Core.load reports a failure
    early = { artifact: build, wasm };
    import(/* @vite-ignore */ new URL(`./${build}.mjs`, self.location.href).href).catch(() => {});
  }
}
/** Input and output names per session handle (the fast lane sends indices). */
const sessions = new Map<number, { inputs: string[]; outputs: string[] }>();
let lane: { ctl: Int32Array; stamps: Float64Array; data: SharedArrayBuffer } | null = null;
/** Messages taken from the page (compared with the page's POSTED count). */
let taken = 0;

function transferables(ts: WireTensor[]): ArrayBuffer[] {
  const out: ArrayBuffer[] = [];
  for (const t of ts)
    if (!Array.isArray(t.data) && t.data.buffer instanceof ArrayBuffer && !out.includes(t.data.buffer)) out.push(t.data.buffer);
  return out;
}

async function handle(op: string, a: any): Promise<[unknown, ArrayBuffer[]]> {
  if (op === 'load') {
    const o = a as LoadOptions;
    const artifact = o.threaded ? 'onyx-web-mt' : 'onyx-web';
    const base = new URL(o.wasmPaths, self.location.href).href;
    const w = early && early.artifact === artifact && new URL('./', self.location.href).href === base ? early.wasm : undefined;
    if (!core) core = Core.load(o, w);
    return [(await core).info, []];
  }
  if (op === 'channel') {
    const b = a as ChannelBuffers;
    lane = { ctl: new Int32Array(b.ctl), stamps: new Float64Array(b.ctl), data: b.data };
    return [null, []];
  }
  const c = await core!;
  switch (op) {
    case 'create': {
      const info: SessionInfo = c.createSession(a.model, a.threads, a.strict, a.optimize, a.external);
      sessions.set(info.handle, { inputs: info.inputs.map((v) => v.name), outputs: info.outputs.map((v) => v.name) });
      return [info, []];
    }
    case 'release': sessions.delete(a.handle); c.releaseSession(a.handle); return [null, []];
    case 'profile': return [c.profile(a.handle, a.on), []];
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

/** Runs the request in the lane's buffer and writes the reply there. */
function serve(c: Core, data: SharedArrayBuffer): void {
  const dv = new DataView(data);
  const id = dv.getUint32(0, true), handle = dv.getUint32(4, true);
  try {
    const s = sessions.get(handle);
    if (!s) throw new Error('the session was released');
    const feeds = readTensors(data, 8, false);
    const r = c.run(handle, feeds.map((f) => s.inputs[f.index]),
                    feeds.map((f) => ({ type: f.type, dims: f.dims as number[], data: f.bytes })));
    const outs: LaneTensor[] = [];
    let strings = false;
    r.tensors.forEach((t, i) => {
      if (Array.isArray(t.data)) strings = true;
      else outs.push({ index: s.outputs.indexOf(r.names[i]), type: t.type, dims: t.dims,
                       bytes: new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength) });
    });
    const need = laneBytes(8, outs);
    if (strings || need > data.byteLength) {
      dv.setUint32(0, REPLY_POSTED, true);
      dv.setUint32(4, need, true);
      (self as any).postMessage({ id, ok: true, result: r }, transferables(r.tensors));
      return;
    }
    dv.setUint32(0, REPLY_OK, true);
    writeTensors(data, 8, outs);
  } catch (err) {
    writeError(data, toWire(err));
  }
}

/** Returns once the state word is no longer `value` (or, `posts`: the page posted a
 * message), or after `ms`: polls it for SPIN_MS first, then sleeps in Atomics.wait. */
function waitWhile(ctl: Int32Array, value: number, ms: number, posts = false): void {
  const t0 = performance.now();
  const spin = Math.min(SPIN_MS, ms);
  while (Atomics.load(ctl, STATE) === value && !(posts && Atomics.load(ctl, POSTED) !== taken))
    if (performance.now() - t0 >= spin) {
      if (ms > spin) Atomics.wait(ctl, STATE, value, ms - spin);
      return;
    }
}

/** Waits for runs on the fast lane until LISTEN_MS pass without one or the page posts a
 * message (which this worker must then take from its event loop). */
function listen(c: Core): void {
  const l = lane;
  if (!l || c.info.artifact !== 'onyx-web') return;  // pthreads: its event loop must keep turning
  const { ctl } = l;
  if (Atomics.compareExchange(ctl, STATE, OFF, LISTENING) !== OFF) return;
  let idleSince = performance.now();
  for (;;) {
    const s = Atomics.load(ctl, STATE);
    if (s === LISTENING) {
      const left = LISTEN_MS - (performance.now() - idleSince);
      if (left <= 0 || Atomics.load(ctl, POSTED) !== taken) {
        if (Atomics.compareExchange(ctl, STATE, LISTENING, OFF) === LISTENING) return;
        continue;  // the page claimed the lane meanwhile
      }
      waitWhile(ctl, LISTENING, left, true);
    } else if (s === CLAIMED) {
      waitWhile(ctl, CLAIMED, 20);
    } else if (s === REQUEST) {
      l.stamps[STAMP_WAKE] = performance.timeOrigin + performance.now();
      serve(c, lane!.data);
      l.stamps[STAMP_REPLY] = performance.timeOrigin + performance.now();
      Atomics.store(ctl, STATE, REPLY);
      Atomics.notify(ctl, STATE);
    } else if (s === REPLY) {
      waitWhile(ctl, REPLY, 20);
      idleSince = performance.now();
    } else {
      return;
    }
  }
}

self.onmessage = async (e: MessageEvent) => {
  const { id, op, args } = e.data;
  ++taken;
  try {
    const [result, transfer] = await handle(op, args);
    (self as any).postMessage({ id, ok: true, result }, transfer);
    if (op === 'run') listen(await core!);
  } catch (err) {
    (self as any).postMessage({ id, ok: false, error: toWire(err) });
  }
};

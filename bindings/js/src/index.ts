// onyx-web: onyx in the browser with onnxruntime-web's call shape. The wasm module runs in
// a Web Worker by default (env.wasm.proxy = false runs it on the calling thread); the
// pthreads build is used only when the page is cross-origin isolated, and the session says
// which build and how many threads it got, and why.

import type { CtcResult, LoadInfo, ProfileData, SessionInfo, TextLineParams, WireExternal, WireTensor, WireValueMetadata } from './core.js';
import { InvalidArgumentError, makeError, OnyxError, UnsupportedError, type WireError } from './errors.js';
import { fetchModel, warmCacheStorage, type FetchModelOptions, type FetchProgress } from './fetch.js';
import {
  CLAIMED, CTL_BYTES, fastLaneAvailable, PAGE_SPIN_MS, WAKE_EARLY_MAX_MS, WAKE_EARLY_MS, laneBytes, LISTENING, POSTED, readError, readTensors, REPLY, REPLY_OK,
  REPLY_POSTED, REQUEST, STAMP_REPLY, STAMP_WAKE, STATE, writeTensors, type ChannelBuffers, type LaneTensor,
} from './channel.js';
import { Tensor, typeCodes, typeOfCode, viewOfType, type TensorType } from './tensor.js';

export * from './errors.js';
export { Tensor, type TensorType, type TensorData, type DataTypeMap } from './tensor.js';
export { fetchModel, sha256Hex, type FetchModelOptions, type FetchProgress, type FetchedModel } from './fetch.js';
export type { CtcResult, ProfileData, ProfileEntry, TextLineParams } from './core.js';

/** Global settings, as onnxruntime-web's `env`. */
export const env = {
  wasm: {
    /** Threads of a session: 0 picks min(4, ceil(cores / 2)) as onnxruntime-web does. */
    numThreads: 0,
    /** URL prefix of onyx-web*.mjs / .wasm (default: the folder of this file). */
    wasmPaths: undefined as string | undefined,
    /** Run in a Web Worker (default true); false runs on the calling thread. */
    proxy: true,
    /** onyx: a Worker the page started early from this package's onyx-web-worker.mjs
     * (`new Worker(url, { type: 'module' })`, e.g. from the HTML head, so that its start
     * overlaps the page's loading; `?build=onyx-web` or `?build=onyx-web-mt` on its URL
     * makes it download and compile that build's .wasm as it starts); the first backend
     * that needs a worker takes it (and sets this back to undefined) instead of starting
     * one. */
    worker: undefined as Worker | undefined,
  },
};

/** What a session got: the artifact and threads, never a silent fallback. */
export interface ExecutionInfo {
  provider: 'wasm';
  artifact: string;
  version: string;
  threads: number;
  threadsAsked: number;
  /** Why the session got fewer threads than asked, or ''. */
  threadsNote: string;
  /** 'worker' or 'main-thread'. */
  where: 'worker' | 'main-thread';
}

export interface Timings {
  /** Model download (0 when bytes were given; small when from Cache Storage). */
  fetchMs: number;
  fromCache: boolean;
  /** The .wasm request until its response's headers, then its download streamed into
   * compilation and the instantiation (both 0 when the module was loaded before). The
   * module loads while the model downloads, so these overlap fetchMs. */
  wasmFetchMs: number;
  compileMs: number;
  /** Loading, checking and planning the model in onyx. */
  sessionMs: number;
}

export namespace InferenceSession {
  export type ExecutionProviderConfig = string | { name: string };
  export interface SessionOptions {
    executionProviders?: readonly ExecutionProviderConfig[];
    intraOpNumThreads?: number;
    /** onyx: refuse a model with nodes the provider cannot run, listing them. */
    strict?: boolean;
    /** 'disabled' | 'basic' | 'extended' | 'all' (onnxruntime's names; default 'all'). */
    graphOptimizationLevel?: 'disabled' | 'basic' | 'extended' | 'layout' | 'all';
    /** onyx: expected SHA-256 of a model given by URL; a mismatch is refused. */
    sha256?: string;
    /** onyx: download progress of a model given by URL. */
    onProgress?: (p: FetchProgress) => void;
    /** onyx: keep the model in Cache Storage by its hash (default true with sha256). */
    cache?: boolean;
    /** The model's external-data files (weights stored beside the .onnx), as
     * onnxruntime-web takes them: `path` is the location the model's tensors name, `data`
     * a URL to fetch or the bytes; a bare string is both. */
    externalData?: readonly ExternalDataFileType[];
    /** Start profiling at creation, as startProfiling() does. */
    enableProfiling?: boolean;
  }
  export interface ExternalDataFileDescription {
    /** The location the model's tensors name (e.g. 'model.onnx.data'). */
    path: string;
    /** A URL to fetch (with onProgress, and sha256 / cache as for the model), or the bytes. */
    data: string | ArrayBuffer | ArrayBufferView;
    /** onyx: expected SHA-256 of the file; a mismatch is refused. */
    sha256?: string;
  }
  export type ExternalDataFileType = ExternalDataFileDescription | string;
  export interface RunOptions {
    /** onyx: transfer the feeds' buffers to the worker instead of copying (they are detached). */
    transferFeeds?: boolean;
  }
  export type FeedsType = Record<string, Tensor | { type: string; data: any; dims: readonly number[] }>;
  export type ReturnType = Record<string, Tensor>;
  export interface NonTensorValueMetadata {
    readonly name: string;
    readonly isTensor: false;
  }
  export interface TensorValueMetadata {
    readonly name: string;
    readonly isTensor: true;
    readonly type: TensorType;
    readonly shape: ReadonlyArray<number | string>;
  }
  export type ValueMetadata = NonTensorValueMetadata | TensorValueMetadata;
}

interface Backend {
  info: LoadInfo;
  where: 'worker' | 'main-thread';
  call(op: string, args: unknown, transfer?: Transferable[]): Promise<any>;
}

function defaultWasmPaths(): string {
  return env.wasm.wasmPaths ?? new URL('./', import.meta.url).href;
}

class WorkerBackend implements Backend {
  info!: LoadInfo;
  where = 'worker' as const;
  private w: Worker;
  private next = 1;
  private pending = new Map<number, { ok: (v: any) => void; err: (e: Error) => void }>();
  /** The fast lane (channel.ts), where the page can share memory with the worker. */
  private lane: { ctl: Int32Array; data: SharedArrayBuffer } | null = null;
  private laneBusy = false;
  /** Runs served through the lane (for tests). */
  laneRuns = 0;
  /** The last lane run's times (performance.timeOrigin + now(), ms), for
   * bench/web/roundtrip.mjs: entry, request posted, worker woke, reply written, page
   * woke, outputs read. */
  laneStamps = { start: 0, posted: 0, wake: 0, reply: 0, woke: 0, read: 0 };
  /** Set when the worker failed: a run waiting on the lane gives up with it. */
  private failed: Error | null = null;
  /** Bytes the lane's buffer should have (grown when a request or reply did not fit). */
  private laneWant = 0;
  /** How long the worker took for the last lane run (ms), per session handle. */
  private laneMs = new Map<number, number>();
  constructor(workerUrl: string) {
    const early = env.wasm.worker;
    env.wasm.worker = undefined;
    this.w = early ?? new Worker(workerUrl, { type: 'module', name: 'onyx-web' });
    this.w.onmessage = (e: MessageEvent) => {
      const { id, ok, result, error } = e.data as { id: number; ok: boolean; result: any; error: WireError };
      const p = this.pending.get(id);
      if (!p) return;
      this.pending.delete(id);
      if (ok) p.ok(result);
      else p.err(makeError(error.code, error.message));
    };
    if (fastLaneAvailable()) {
      this.lane = { ctl: new Int32Array(new SharedArrayBuffer(CTL_BYTES)), data: new SharedArrayBuffer(1 << 20) };
      this.call('channel', { ctl: this.lane.ctl.buffer as SharedArrayBuffer, data: this.lane.data } satisfies ChannelBuffers);
    }
    this.w.onerror = (e: ErrorEvent) => {
      e.preventDefault();
      const err = new OnyxError('Internal', `the onyx-web worker failed: ${e.message || 'script error (is the worker file served?)'}`);
      this.failed = err;
      for (const p of this.pending.values()) p.err(err);
      this.pending.clear();
    };
  }
  call(op: string, args: unknown, transfer: Transferable[] = []): Promise<any> {
    if (op === 'run' && this.lane && !this.laneBusy && !transfer.length) {
      const r = this.runOnLane(args as RunArgs);
      if (r) return r;
    }
    const id = this.next++;
    return new Promise((ok, err) => {
      this.pending.set(id, { ok, err });
      if (this.lane) {
        // Counted before it is posted, and the worker woken: it leaves the lane to take it.
        Atomics.add(this.lane.ctl, POSTED, 1);
        Atomics.notify(this.lane.ctl, STATE);
      }
      this.w.postMessage({ id, op, args }, transfer);
    });
  }

  /** A run through the fast lane, or null when it cannot take this one now. */
  private runOnLane(a: RunArgs): Promise<any> | null {
    const lane = this.lane!;
    const stamp = () => performance.timeOrigin + performance.now();
    const start = stamp();
    if (this.pending.size) return null;  // the worker has posted requests to take first
    const ins = this.inputIndex.get(a.handle);
    if (!ins) return null;
    const feeds: LaneTensor[] = [];
    for (let i = 0; i < a.names.length; ++i) {
      const f = a.feeds[i];
      const index = ins.get(a.names[i]);
      if (index === undefined || f.type === 'string' || !(f.type in typeCodes) || !ArrayBuffer.isView(f.data)) return null;
      feeds.push({ index, type: f.type, dims: f.dims, bytes: new Uint8Array(f.data.buffer, f.data.byteOffset, f.data.byteLength) });
    }
    const need = laneBytes(8, feeds);
    if (need > lane.data.byteLength || this.laneWant > lane.data.byteLength) {
      this.growLane(Math.max(need, this.laneWant));
      return null;
    }
    if (Atomics.compareExchange(lane.ctl, STATE, LISTENING, CLAIMED) !== LISTENING) return null;
    const id = this.next++;
    // Where the outputs come when they do not fit the lane (the worker posts them).
    const posted = new Promise((ok, err) => this.pending.set(id, { ok, err }));
    const dv = new DataView(lane.data);
    dv.setUint32(0, id, true);
    dv.setUint32(4, a.handle, true);
    writeTensors(lane.data, 8, feeds);
    this.laneBusy = true;
    Atomics.store(lane.ctl, STATE, REQUEST);
    Atomics.notify(lane.ctl, STATE);
    const posted_ = stamp();
    // A run that took under PAGE_SPIN_MS last time: poll for its reply a little first.
    const last = this.laneMs.get(a.handle) ?? Infinity;
    if (last < PAGE_SPIN_MS) {
      const until = performance.now() + Math.min(PAGE_SPIN_MS, 2 * last);
      while (Atomics.load(lane.ctl, STATE) === REQUEST && performance.now() < until);
    }
    return (async () => {
      try {
        if (last >= PAGE_SPIN_MS && last <= WAKE_EARLY_MAX_MS) {
          // Wake before the reply is due, then poll for it (channel.ts, WAKE_EARLY_MS).
          const early = last - WAKE_EARLY_MS - (stamp() - posted_);
          if (early > 0) {
            const w = (Atomics as any).waitAsync(lane.ctl, STATE, REQUEST, early);
            if (w.async) await w.value;
          }
          const until = performance.now() + 2 * WAKE_EARLY_MS;
          while (Atomics.load(lane.ctl, STATE) === REQUEST && performance.now() < until);
        }
        for (;;) {
          const w = (Atomics as any).waitAsync(lane.ctl, STATE, REQUEST, 1000);
          if (w.async) await w.value;
          if (Atomics.load(lane.ctl, STATE) === REPLY) break;
          if (this.failed) throw this.failed;
        }
        const woke = stamp();
        // The worker's own time for the run (its stamps), not the round trip: a round trip
        // includes waitAsync's wake-up when the page did not poll, which alone would push
        // a 0.16 ms run past PAGE_SPIN_MS and keep every later run off the polling path.
        const st = new Float64Array(lane.ctl.buffer);
        const served = st[STAMP_REPLY] - st[STAMP_WAKE];
        this.laneMs.set(a.handle, served > 0 ? served : woke - posted_);
        const status = dv.getUint32(0, true);
        if (status !== REPLY_POSTED) this.pending.delete(id);
        ++this.laneRuns;
        if (status === REPLY_OK) {
          const outs = readTensors(lane.data, 8, true);
          const names = this.outputNames.get(a.handle)!;
          const r = {
            names: outs.map((o) => names[o.index]),
            tensors: outs.map((o) => ({ type: o.type, dims: o.dims as number[],
                                        data: viewOfType(o.type, o.bytes.buffer as ArrayBuffer, o.dims.reduce((x, y) => x * y, 1)) })),
          };
          this.laneStamps = { start, posted: posted_, wake: st[STAMP_WAKE], reply: st[STAMP_REPLY], woke, read: stamp() };
          return r;
        }
        if (status === REPLY_POSTED) {
          this.laneWant = Math.max(this.laneWant, dv.getUint32(4, true));
          return await posted;
        }
        const e = readError(lane.data);
        throw makeError(e.code, e.message);
      } finally {
        this.laneBusy = false;
        Atomics.store(lane.ctl, STATE, LISTENING);
        Atomics.notify(lane.ctl, STATE);
      }
    })();
  }

  private growLane(bytes: number): void {
    const lane = this.lane!;
    const size = Math.min(2 ** 30, 2 ** Math.ceil(Math.log2(Math.max(bytes, 1 << 20))));
    if (size <= lane.data.byteLength) return;
    lane.data = new SharedArrayBuffer(size);
    this.call('channel', { ctl: lane.ctl.buffer as SharedArrayBuffer, data: lane.data } satisfies ChannelBuffers);
  }

  /** Per session: input name -> index, and output names, for the fast lane. */
  private inputIndex = new Map<number, Map<string, number>>();
  private outputNames = new Map<number, string[]>();
  noteSession(info: SessionInfo): void {
    this.inputIndex.set(info.handle, new Map(info.inputs.map((v, i) => [v.name, i])));
    this.outputNames.set(info.handle, info.outputs.map((v) => v.name));
  }
}

interface RunArgs {
  handle: number;
  names: string[];
  feeds: WireTensor[];
}

class MainBackend implements Backend {
  info!: LoadInfo;
  where = 'main-thread' as const;
  private core: any;
  async load(o: any) {
    const { Core } = await import('./core.js');
    this.core = await Core.load(o);
    return this.core.info;
  }
  async call(op: string, a: any): Promise<any> {
    if (op === 'load') return this.load(a);
    const c = this.core;
    switch (op) {
      case 'create': return c.createSession(a.model, a.threads, a.strict, a.optimize, a.external);
      case 'release': return c.releaseSession(a.handle);
      case 'profile': return c.profile(a.handle, a.on);
      case 'run': return c.run(a.handle, a.names, a.feeds);
      case 'preprocess': return c.preprocess(a.rgba, a.width, a.height, a.params);
      case 'ctc': return c.ctcDecode(a.scores, a.frames, a.classes, a.blank, a.beamWidth, a.probabilities, a.alphabet);
    }
    throw new Error(op);
  }
}

/** A backend and when its module is loaded: a worker takes requests before that and
 * serves them after (one round trip through the calling thread fewer). */
interface Started { backend: Backend; loaded: Promise<Backend> }
const backends = new Map<string, Started>();
let lastBackend: Started | null = null;

interface ThreadPlan {
  threaded: boolean;
  threads: number;
  asked: number;
  note: string;
  proxy: boolean;
}

function planThreads(asked0: number | undefined): ThreadPlan {
  const cores = (typeof navigator !== 'undefined' && navigator.hardwareConcurrency) || 1;
  const asked = asked0 && asked0 > 0 ? Math.floor(asked0) : Math.min(4, Math.ceil(cores / 2));
  const proxy = env.wasm.proxy !== false;
  if (asked <= 1) return { threaded: false, threads: 1, asked, note: '', proxy };
  if (!(globalThis as any).crossOriginIsolated)
    return { threaded: false, threads: 1, asked, proxy,
             note: 'the page is not cross-origin isolated (no COOP/COEP headers), so threads (SharedArrayBuffer) are unavailable' };
  if (!proxy)
    return { threaded: false, threads: 1, asked, proxy, note: 'env.wasm.proxy is false: threads need the worker' };
  return { threaded: true, threads: asked, asked, note: '', proxy };
}

function startBackend(plan: ThreadPlan): Started & { loadedNow: boolean } {
  const paths = defaultWasmPaths();
  const key = `${plan.proxy}|${plan.threaded}|${plan.threads}|${paths}`;
  let s = backends.get(key);
  const loadedNow = !s;
  if (!s) {
    const b: Backend = plan.proxy ? new WorkerBackend(paths + 'onyx-web-worker.mjs') : new MainBackend();
    const loaded = (async () => {
      b.info = await b.call('load', { wasmPaths: paths, threaded: plan.threaded, poolSize: plan.threads - 1 });
      return b;
    })();
    const started = { backend: b, loaded };
    s = started;
    backends.set(key, started);
    loaded.catch(() => { if (backends.get(key) === started) backends.delete(key); });
  }
  lastBackend = s;
  return { ...s, loadedNow };
}

/** Sends a request: to a worker at once, on the calling thread once the module is loaded. */
async function callWhenReady(s: Started, op: string, args: unknown, transfer?: Transferable[]): Promise<any> {
  if (!(s.backend instanceof WorkerBackend)) await s.loaded;
  const r = s.backend.call(op, args, transfer);
  r.catch(() => {});  // awaited below, after the module's loading (whose failure comes first)
  await s.loaded;
  return r;
}

function metadata(v: WireValueMetadata): InferenceSession.ValueMetadata {
  if (!v.isTensor) return Object.freeze({ name: v.name, isTensor: false as const });
  return Object.freeze({
    name: v.name,
    isTensor: true as const,
    type: (typeOfCode(v.dtype) ?? (`code ${v.dtype}` as TensorType)),
    shape: Object.freeze(v.hasShape ? [...v.shape] : []),
  });
}

const optimizeLevels = { disabled: 0, basic: 1, extended: 2, layout: 2, all: 2 } as const;

export class InferenceSession {
  readonly inputNames: readonly string[];
  readonly outputNames: readonly string[];
  readonly inputMetadata: readonly InferenceSession.ValueMetadata[];
  readonly outputMetadata: readonly InferenceSession.ValueMetadata[];
  /** onyx: where and how this session runs. */
  readonly execution: ExecutionInfo;
  /** onyx: the cold start of this session, split. */
  readonly timings: Timings;
  /** onyx: facts about the model file. */
  readonly model: { sha256: string; bytes: number; opset: number; producer: string };
  private handle: number;
  private backend: Backend | null;

  private constructor(b: Backend, info: SessionInfo, exec: ExecutionInfo, timings: Timings,
                      model: InferenceSession['model']) {
    this.backend = b;
    this.handle = info.handle;
    this.inputNames = Object.freeze(info.inputs.map((v) => v.name));
    this.outputNames = Object.freeze(info.outputs.map((v) => v.name));
    this.inputMetadata = Object.freeze(info.inputs.map(metadata));
    this.outputMetadata = Object.freeze(info.outputs.map(metadata));
    this.execution = Object.freeze(exec);
    this.timings = Object.freeze(timings);
    this.model = Object.freeze(model);
  }

  /** Loads a model from a URL or bytes. */
  static async create(src: string | ArrayBuffer | ArrayBufferView,
                      options: InferenceSession.SessionOptions = {}): Promise<InferenceSession> {
    const eps = (options.executionProviders ?? ['wasm']).map((e) => (typeof e === 'string' ? e : e.name));
    if (!eps.includes('wasm'))
      throw new UnsupportedError('Unsupported',
        `onyx-web runs the 'wasm' execution provider only; asked for ${eps.map((e) => `'${e}'`).join(', ') || 'none'} (it never falls back silently)`);
    if (eps[0] !== 'wasm')
      throw new UnsupportedError('Unsupported',
        `onyx-web runs the 'wasm' execution provider only; '${eps[0]}' comes first in executionProviders ` +
        `[${eps.join(', ')}]: put 'wasm' first to accept it (onyx-web never falls back silently)`);
    const plan = planThreads(options.intraOpNumThreads ?? env.wasm.numThreads);
    // The module (worker, .wasm download and compilation) loads while the model downloads.
    const started = startBackend(plan);
    started.loaded.catch(() => {});  // awaited below; a failed model fetch must not leave it unhandled
    let bytes: Uint8Array;
    let fetchMs = 0, fromCache = false, sha256 = '';
    // External data downloads beside the model.
    const tExt = performance.now();
    const extP = loadExternalData(options);
    extP.catch(() => {});  // awaited below; a failed model fetch must not leave it unhandled
    if (typeof src === 'string') {
      const f = await fetchModel(src, { sha256: options.sha256, onProgress: options.onProgress, cache: options.cache } as FetchModelOptions);
      bytes = f.bytes;
      fetchMs = f.fetchMs;
      fromCache = f.fromCache;
      sha256 = f.sha256;
    } else if (src instanceof ArrayBuffer) {
      bytes = new Uint8Array(src);
    } else if (ArrayBuffer.isView(src)) {
      bytes = new Uint8Array(src.buffer, src.byteOffset, src.byteLength);
    } else {
      throw new InvalidArgumentError('InvalidArgument', 'InferenceSession.create takes a URL string, an ArrayBuffer or a Uint8Array');
    }
    // Bytes given: their hash (the card's fact, and the check against options.sha256) is
    // computed on this thread while the worker creates the session.
    let shaP: Promise<string> | null = null;
    if (!sha256) {
      const { sha256Hex } = await import('./fetch.js');
      shaP = sha256Hex(bytes);
      shaP.catch(() => {});  // awaited below
      if (options.sha256) {
        // An expected hash is checked before the model is handed over.
        sha256 = await shaP;
        shaP = null;
        if (options.sha256.toLowerCase() !== sha256)
          throw makeError('HashMismatch', `the model bytes have SHA-256 ${sha256}, but ${options.sha256.toLowerCase()} was expected; it was not run`);
      }
    }
    const { external, transfer } = await extP;
    if (options.externalData?.length) fetchMs = Math.max(fetchMs, performance.now() - tExt);
    const { backend, loadedNow } = started;
    const level = optimizeLevels[options.graphOptimizationLevel ?? 'all'] ?? 2;
    // The model is copied into the worker (the caller keeps its bytes); external data that
    // was downloaded here is transferred. The worker takes it while its module may still be
    // loading.
    const info: SessionInfo = await callWhenReady(
      started, 'create', { model: bytes, threads: plan.threads, strict: !!options.strict, optimize: level, external }, transfer);
    if (backend instanceof WorkerBackend) backend.noteSession(info);
    if (shaP) {
      try {
        sha256 = await shaP;
      } catch (e) {
        await backend.call('release', { handle: info.handle }).catch(() => {});
        throw e;
      }
    }
    let note = plan.note;
    if (!note && info.threads < plan.asked)
      note = `the ${backend.info.artifact} build gives ${info.threads} thread${info.threads === 1 ? '' : 's'}`;
    const exec: ExecutionInfo = {
      provider: 'wasm', artifact: backend.info.artifact, version: backend.info.version, threads: info.threads,
      threadsAsked: plan.asked, threadsNote: note, where: backend.where,
    };
    const timings: Timings = {
      fetchMs, fromCache,
      wasmFetchMs: loadedNow ? backend.info.wasmFetchMs : 0,
      compileMs: loadedNow ? backend.info.compileMs : 0,
      sessionMs: info.sessionMs,
    };
    const session = new InferenceSession(backend, info, exec, timings,
                                         { sha256, bytes: bytes.byteLength, opset: info.opset, producer: info.producer });
    if (options.enableProfiling) session.startProfiling();
    return session;
  }

  /** Runs the model; returns the outputs (all, or those named in `fetches`) by name. */
  async run(feeds: InferenceSession.FeedsType, fetches?: readonly string[] | InferenceSession.RunOptions,
            options?: InferenceSession.RunOptions): Promise<InferenceSession.ReturnType> {
    if (!this.backend) throw makeError('Released', 'the session was released');
    if (!Array.isArray(fetches)) options = (fetches as InferenceSession.RunOptions | undefined) ?? options;
    if (typeof feeds !== 'object' || feeds === null)
      throw new InvalidArgumentError('InvalidArgument', `run() takes an object of named Tensors (inputs: ${this.inputNames.join(', ')})`);
    const names: string[] = [];
    const wire: WireTensor[] = [];
    const transfer: ArrayBuffer[] = [];
    for (const [name, t] of Object.entries(feeds)) {
      if (!t || typeof t !== 'object' || !('type' in t) || !('dims' in t) || !('data' in t))
        throw new InvalidArgumentError('InvalidArgument', `feed '${name}' is not a Tensor`);
      names.push(name);
      wire.push({ type: t.type as TensorType, dims: [...t.dims], data: t.data });
      if (options?.transferFeeds && ArrayBuffer.isView(t.data) && t.data.buffer instanceof ArrayBuffer &&
          !transfer.includes(t.data.buffer))
        transfer.push(t.data.buffer);
    }
    const r: { names: string[]; tensors: WireTensor[] } =
      await this.backend.call('run', { handle: this.handle, names, feeds: wire }, transfer);
    const out: InferenceSession.ReturnType = {};
    const want = Array.isArray(fetches) ? new Set(fetches) : null;
    r.names.forEach((n, i) => {
      if (want && !want.has(n)) return;
      const t = r.tensors[i];
      out[n] = new Tensor(t.type, t.data as any, t.dims);
    });
    if (want)
      for (const n of want)
        if (!(n in out))
          throw new InvalidArgumentError('InvalidArgument', `no output '${n}' (outputs: ${this.outputNames.join(', ')})`);
    return out;
  }

  async release(): Promise<void> {
    if (!this.backend) return;
    const b = this.backend;
    this.backend = null;
    await b.call('release', { handle: this.handle });
  }

  /** A failure of the last startProfiling() (it returns before the worker answers),
   * thrown by endProfiling(). */
  private profileError: unknown = null;

  /** Records the time of every node of each run from now on (dropping what an earlier
   * startProfiling() recorded), until endProfiling(). As onnxruntime-web's, it returns at
   * once; runs started after it are recorded. Timing costs a clock read per node. */
  startProfiling(): void {
    if (!this.backend) throw makeError('Released', 'the session was released');
    this.profileError = null;
    this.backend.call('profile', { handle: this.handle, on: true }).catch((e: unknown) => { this.profileError = e; });
  }

  /** Stops profiling and returns what it recorded: each run's nodes in the order they ran,
   * with the planned op type (FusedConv, ...) and wall time in ms (onyx: onnxruntime-web
   * returns nothing and writes its own format). Runs started before this call are recorded
   * whole, later ones not at all. */
  async endProfiling(): Promise<ProfileData> {
    if (!this.backend) throw makeError('Released', 'the session was released');
    const r = await this.backend.call('profile', { handle: this.handle, on: false });
    if (this.profileError) {
      const e = this.profileError;
      this.profileError = null;
      throw e;
    }
    return r as ProfileData;
  }
}

/** The external-data files of `options`, downloaded where given by URL (all at once). */
async function loadExternalData(options: InferenceSession.SessionOptions):
    Promise<{ external: WireExternal[]; transfer: ArrayBuffer[] }> {
  const list = options.externalData ?? [];
  if (!Array.isArray(list))
    throw new InvalidArgumentError('InvalidArgument', 'externalData must be an array of { path, data } (or URL strings)');
  const transfer: ArrayBuffer[] = [];
  const external = await Promise.all(list.map(async (entry, i): Promise<WireExternal> => {
    const e = typeof entry === 'string' ? { path: entry, data: entry } : entry;
    if (!e || typeof e !== 'object' || typeof e.path !== 'string' || !e.path || e.data === undefined)
      throw new InvalidArgumentError('InvalidArgument',
        `externalData[${i}] must be { path: string, data: URL | Uint8Array | ArrayBuffer } or a URL string`);
    const path = e.path.replace(/^(\.\/)+/, '');
    if (typeof e.data === 'string') {
      const f = await fetchModel(e.data, {
        sha256: e.sha256, cache: options.cache, label: `the external data '${e.path}'`,
        onProgress: options.onProgress && ((p) => options.onProgress!({ ...p, file: e.path })),
      });
      if (f.bytes.byteOffset === 0 && f.bytes.byteLength === f.bytes.buffer.byteLength && f.bytes.buffer instanceof ArrayBuffer)
        transfer.push(f.bytes.buffer);
      return { path, data: f.bytes };
    }
    let data: Uint8Array;
    if (e.data instanceof ArrayBuffer) data = new Uint8Array(e.data);
    else if (ArrayBuffer.isView(e.data)) data = new Uint8Array(e.data.buffer, e.data.byteOffset, e.data.byteLength);
    else
      throw new InvalidArgumentError('InvalidArgument',
        `externalData[${i}] ('${e.path}'): data must be a URL string, a Uint8Array or an ArrayBuffer`);
    if (e.sha256) {
      const { sha256Hex } = await import('./fetch.js');
      const got = await sha256Hex(data);
      if (got !== e.sha256.toLowerCase())
        throw makeError('HashMismatch', `the external data '${e.path}' has SHA-256 ${got}, but ${e.sha256.toLowerCase()} was expected; it was not run`);
    }
    return { path, data };
  }));
  return { external, transfer };
}

function anyBackend(): Started {
  return lastBackend ?? startBackend(planThreads(env.wasm.numThreads));
}

/** The digit reader's preprocessing (src/image) of RGBA pixels: float32 [1, 1, H, W]. */
export async function preprocessTextLine(image: { data: Uint8Array | Uint8ClampedArray; width: number; height: number },
                                         params: TextLineParams = {}): Promise<Tensor> {
  const rgba = new Uint8Array(image.data.buffer, image.data.byteOffset, image.data.byteLength);
  const t: WireTensor = await callWhenReady(anyBackend(), 'preprocess', { rgba, width: image.width, height: image.height, params });
  return new Tensor('float32', t.data as Float32Array, t.dims);
}

export interface CtcDecodeOptions {
  /** true (width 10, as `onyx ocr --decoder beam`) or a beam width; default greedy. */
  beam?: boolean | number;
  blank?: number;
  scores?: 'logits' | 'probabilities';
}

/** CTC decoding (src/post) of one sequence of scores [1, T, C], [T, 1, C] or [T, C]. */
export async function ctcDecode(logits: Tensor, alphabet: string, o: CtcDecodeOptions = {}): Promise<CtcResult> {
  const d = logits.dims;
  if (logits.type !== 'float32')
    throw new InvalidArgumentError('InvalidArgument', `ctcDecode takes float32 scores, not ${logits.type}`);
  if (!((d.length === 3 && (d[0] === 1 || d[1] === 1)) || d.length === 2))
    throw new InvalidArgumentError('InvalidArgument',
      `ctcDecode decodes one sequence: scores [1, T, C], [T, 1, C] or [T, C], not [${d.join(', ')}]`);
  const classes = d[d.length - 1];
  const frames = d.length === 2 ? d[0] : d[0] === 1 ? d[1] : d[0];
  const beamWidth = o.beam === true ? 10 : typeof o.beam === 'number' ? Math.max(1, Math.floor(o.beam)) : 0;
  return callWhenReady(anyBackend(), 'ctc', { scores: logits.data, frames, classes, blank: o.blank ?? 0, beamWidth,
                                              probabilities: o.scores === 'probabilities', alphabet });
}

warmCacheStorage();

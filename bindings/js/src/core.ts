// The wasm module and its C entry points (tools/wasm/onyx_web.cc), where the module runs:
// in the Web Worker (worker.ts) or, with env.wasm.proxy = false, on the page's thread.

import { makeError, OnyxError } from './errors.js';
import { typeCodes, typeOfCode, viewOfType, type TensorType } from './tensor.js';

/** A tensor as it crosses the worker boundary (plain data, transferable buffers). */
export interface WireTensor {
  type: TensorType;
  dims: number[];
  /** The typed array (covering its whole buffer for outputs), or strings. */
  data: ArrayBufferView | string[];
}

/** An external-data file of a model, by the location its tensors name. */
export interface WireExternal {
  path: string;
  data: Uint8Array;
}

export interface WireValueMetadata {
  name: string;
  isTensor: boolean;
  dtype: number;
  typeText: string;
  hasShape: boolean;
  shape: (number | string)[];
  hasDefault: boolean;
}

export interface SessionInfo {
  handle: number;
  inputs: WireValueMetadata[];
  outputs: WireValueMetadata[];
  opset: number;
  threads: number;
  producer: string;
  build: string;
  sessionMs: number;
}

export interface LoadInfo {
  /** 'onyx-web' (single-threaded) or 'onyx-web-mt' (pthreads). */
  artifact: string;
  version: string;
  /** Threads the loaded module can give a session. */
  maxThreads: number;
  wasmFetchMs: number;
  compileMs: number;
  wasmBytes: number;
}

export interface LoadOptions {
  /** Folder (URL ending in '/') holding onyx-web*.mjs / .wasm. */
  wasmPaths: string;
  threaded: boolean;
  /** Workers to start with the module (threads - 1); threaded only. */
  poolSize: number;
}

export interface TextLineParams {
  height?: number;
  minWidth?: number;
  scale?: number;
  mean?: number;
  std?: number;
}

/** One node's execution in a profiled run (session.endProfiling()). */
export interface ProfileEntry {
  /** The run, counted from 0 at startProfiling(). */
  run: number;
  /** The node's place in the planned order. */
  index: number;
  /** The node's name ('' when the model gave none). */
  node: string;
  /** As planned: a fused node shows its onyx type (FusedConv, ...). */
  opType: string;
  /** Wall time, ms. */
  ms: number;
}

/** What one profiling period recorded. */
export interface ProfileData {
  runs: number;
  nodes: ProfileEntry[];
}

export interface CtcResult {
  text: string;
  labels: number[];
  /** Greedy decoding: per character, the highest probability over its frames. */
  confidence?: number[];
  /** Beam search: log of the labelling's summed path probability. */
  logProb?: number | null;
}

type Fn = (...a: number[]) => number;
interface EmModule {
  HEAPU8: Uint8Array;
  HEAPF64: Float64Array;
  HEAPU32: Uint32Array;
  UTF8ToString(p: number, max?: number): string;
  stringToUTF8(s: string, p: number, max: number): void;
  lengthBytesUTF8(s: string): number;
  [k: string]: any;
}

const now = () => performance.now();

/** A compiled .wasm: the request until its response's headers (fetchMs), and when those
 * came (performance.timeOrigin + now(), comparable across the page and its worker). */
export interface CompiledWasm {
  module: WebAssembly.Module;
  fetchMs: number;
  headersAt: number;
  bytes: number;
}

/** Downloads and compiles a .wasm, streaming the download into the compiler. */
export async function compileWasm(url: string): Promise<CompiledWasm> {
  const t0 = now();
  let resp: Response;
  try {
    resp = await fetch(url);
  } catch (e) {
    throw makeError('Fetch', `cannot fetch ${url}: ${e instanceof Error ? e.message : e}`);
  }
  if (!resp.ok) throw makeError('Fetch', `cannot fetch ${url}: HTTP ${resp.status}`);
  const t1 = now();  // the response's headers: the body streams into the compiler
  let module: WebAssembly.Module;
  let bytes = Number(resp.headers.get('Content-Length') ?? 0);
  if (typeof WebAssembly.compileStreaming === 'function' &&
      (resp.headers.get('Content-Type') ?? '').split(';')[0].trim() === 'application/wasm') {
    module = await WebAssembly.compileStreaming(resp);
  } else {
    const b = await resp.arrayBuffer();
    bytes = b.byteLength;
    module = await WebAssembly.compile(b);
  }
  return { module, fetchMs: t1 - t0, headersAt: performance.timeOrigin + t1, bytes };
}

/** The loaded module with typed wrappers of its entry points. */
export class Core {
  private constructor(private em: EmModule, readonly info: LoadInfo) {}
  private views: { buf: ArrayBufferLike; u8: Uint8Array; f64: Float64Array; u32: Uint32Array } | null = null;
  /** Heap views that are current: in the pthreads build another thread may have grown
   * the memory, which leaves the module's own views short; read them after every call. */
  private heap(): { u8: Uint8Array; f64: Float64Array; u32: Uint32Array } {
    const mem: WebAssembly.Memory | undefined = this.em.wasmMemory;
    if (!mem) return { u8: this.em.HEAPU8, f64: this.em.HEAPF64, u32: this.em.HEAPU32 };
    if (!this.views || this.views.buf !== mem.buffer) {
      const b = mem.buffer;
      this.views = { buf: b, u8: new Uint8Array(b), f64: new Float64Array(b), u32: new Uint32Array(b) };
    }
    return this.views;
  }

  static async load(o: LoadOptions, compiledP?: Promise<CompiledWasm>): Promise<Core> {
    const artifact = o.threaded ? 'onyx-web-mt' : 'onyx-web';
    const base = o.wasmPaths;
    // The glue (a small ES module) is imported while the .wasm downloads and compiles
    // (compiledP: started before, as the worker started).
    const glue = import(/* @vite-ignore */ base + artifact + '.mjs');
    glue.catch(() => {});  // awaited below
    const w = await (compiledP ?? compileWasm(base + artifact + '.wasm'));
    const compiled = w.module;
    const factory = (await glue).default;
    const m: EmModule = await factory({
      onyxPoolSize: o.threaded ? Math.max(0, o.poolSize) : 0,
      locateFile: (p: string) => base + p,
      mainScriptUrlOrBlob: base + artifact + '.mjs',
      instantiateWasm(imports: WebAssembly.Imports, done: (i: WebAssembly.Instance, m: WebAssembly.Module) => void) {
        WebAssembly.instantiate(compiled, imports).then((inst) => done(inst, compiled));
        return {};
      },
      print: () => {},
      printErr: (s: string) => console.warn('onyx-web:', s),
    });
    const core = new Core(m, {
      artifact,
      version: '',
      maxThreads: 1,
      wasmFetchMs: w.fetchMs,  // to the response's headers
      // download streamed into compilation, then instantiation
      compileMs: performance.timeOrigin + now() - w.headersAt,
      wasmBytes: w.bytes,
    });
    core.info.version = m.UTF8ToString(m._onyx_web_version());
    core.info.maxThreads = o.threaded ? Math.max(1, o.poolSize + 1) : m._onyx_web_max_threads();
    return core;
  }

  /** Throws the module's last error, if the last call set one. */
  private check(): void {
    const code = this.em._onyx_web_last_error_code();
    if (code >= 0) throw makeError(code, this.em.UTF8ToString(this.em._onyx_web_last_error_message()));
  }

  private cstr(s: string): number {
    const n = this.em.lengthBytesUTF8(s) + 1;
    const p = this.em._malloc(n);
    this.em.stringToUTF8(s, p, n);
    return p;
  }

  private dims(d: readonly number[]): number {
    const p = this.em._malloc(Math.max(8, d.length * 8));
    this.heap().f64.set(d, p / 8);
    return p;
  }

  private copyIn(bytes: Uint8Array): number {
    const p = this.em._malloc(Math.max(1, bytes.byteLength));
    if (!p) throw makeError('OutOfMemory', `cannot allocate ${bytes.byteLength} bytes in the WebAssembly heap`);
    this.heap().u8.set(bytes, p);
    return p;
  }

  createSession(model: Uint8Array, threads: number, strict: boolean, optimize: number,
                external: readonly WireExternal[] = []): SessionInfo {
    const t0 = now();
    const m = this.em;
    const ext = m._onyx_web_external_new();
    this.check();
    let h: number;
    try {
      for (const e of external) {
        const np = this.cstr(e.path);
        let dst: number;
        try {
          dst = m._onyx_web_external_add(ext, np, e.data.byteLength);
        } finally {
          m._free(np);
        }
        this.check();
        if (dst) this.heap().u8.set(e.data, dst);
      }
      const p = this.copyIn(model);
      try {
        h = m._onyx_web_session_create(p, model.byteLength, Math.min(threads, this.info.maxThreads), strict ? 1 : 0,
                                       optimize, ext);
      } finally {
        m._free(p);
      }
    } finally {
      m._onyx_web_external_free(ext);  // the session keeps the blobs its tensors view
    }
    this.check();
    const meta = JSON.parse(this.em.UTF8ToString(this.em._onyx_web_session_io_json(h)));
    return { handle: h, ...meta, sessionMs: now() - t0 };
  }

  releaseSession(h: number): void {
    this.em._onyx_web_session_release(h);
  }

  /** Starts recording each run's node times (dropping what was recorded; returns null),
   * or stops and returns what was recorded. */
  profile(h: number, on: boolean): ProfileData | null {
    const b = this.em._onyx_web_session_profile(h, on ? 1 : 0);
    this.check();
    if (on) return null;
    const raw = this.takeJson(b);
    return { runs: raw.runs, nodes: raw.nodes.map((e: any) => ({ run: e.run, index: e.index, node: e.node, opType: e.opType, ms: e.ns / 1e6 })) };
  }

  /** Parses a text buffer of the module as JSON and frees it. */
  private takeJson(b: number): any {
    const m = this.em;
    try {
      return JSON.parse(m.UTF8ToString(m._onyx_web_buffer_data(b), m._onyx_web_buffer_size(b)));
    } finally {
      m._onyx_web_buffer_free(b);
    }
  }

  run(h: number, names: string[], feeds: WireTensor[]): { names: string[]; tensors: WireTensor[] } {
    const m = this.em;
    const r = m._onyx_web_run_begin(h);
    this.check();
    const temps: number[] = [];
    try {
      for (let i = 0; i < feeds.length; ++i) {
        const f = feeds[i];
        const np = this.cstr(names[i]);
        const dp = this.dims(f.dims);
        temps.push(np, dp);
        if (f.type === 'string') {
          const strs = f.data as string[];
          const ptrs = m._malloc(Math.max(4, strs.length * 4));
          const lens = m._malloc(Math.max(4, strs.length * 4));
          temps.push(ptrs, lens);
          const enc = new TextEncoder();
          strs.forEach((s, k) => {
            const b = enc.encode(s);
            const sp = this.copyIn(b);
            temps.push(sp);
            this.heap().u32[ptrs / 4 + k] = sp;
            this.heap().u32[lens / 4 + k] = b.byteLength;
          });
          m._onyx_web_run_string_input(r, np, dp, f.dims.length, ptrs, lens, strs.length);
          this.check();
        } else {
          const code = typeCodes[f.type];
          if (code === undefined) throw makeError('InvalidArgument', `input '${names[i]}': unsupported type '${f.type}'`);
          const dst = m._onyx_web_run_input(r, np, code, dp, f.dims.length);
          this.check();
          const v = f.data as ArrayBufferView;
          if (dst && v.byteLength) this.heap().u8.set(new Uint8Array(v.buffer, v.byteOffset, v.byteLength), dst);
        }
      }
      m._onyx_web_run_execute(r);
      this.check();
      const outNames: string[] = [];
      const tensors: WireTensor[] = [];
      const n = m._onyx_web_run_output_count(r);
      for (let i = 0; i < n; ++i) {
        outNames.push(m.UTF8ToString(m._onyx_web_run_output_name(r, i)));
        const code = m._onyx_web_run_output_dtype(r, i);
        const type = typeOfCode(code);
        const rank = m._onyx_web_run_output_rank(r, i);
        const dp = m._onyx_web_run_output_dims(r, i) / 8;
        const dims = Array.from(this.heap().f64.subarray(dp, dp + rank));
        const numel = dims.reduce((a, b) => a * b, 1);
        if (!type) throw makeError('Unsupported', `output '${outNames[i]}' has element type code ${code}, which onyx-web cannot return`);
        if (type === 'string') {
          const strs: string[] = [];
          for (let k = 0; k < numel; ++k)
            strs.push(m.UTF8ToString(m._onyx_web_run_output_string(r, i, k), m._onyx_web_run_output_string_len(r, i, k)));
          tensors.push({ type, dims, data: strs });
        } else {
          const nb = m._onyx_web_run_output_nbytes(r, i);
          const p = m._onyx_web_run_output_data(r, i);
          // slice: a fresh (non-shared) buffer the worker can transfer.
          const buf = nb ? this.heap().u8.slice(p, p + nb).buffer : new ArrayBuffer(0);
          tensors.push({ type, dims, data: viewOfType(type, buf, numel) });
        }
      }
      return { names: outNames, tensors };
    } finally {
      for (const p of temps) m._free(p);
      m._onyx_web_run_free(r);
    }
  }

  preprocess(rgba: Uint8Array, width: number, height: number, p: TextLineParams): WireTensor {
    const m = this.em;
    const src = this.copyIn(rgba);
    let b: number;
    try {
      b = m._onyx_web_preprocess_rgba(src, width, height, p.height ?? 32, p.minWidth ?? 16, p.scale ?? 1 / 255,
                                  p.mean ?? 0.5, p.std ?? 0.5);
    } finally {
      m._free(src);
    }
    this.check();
    try {
      const dp = m._onyx_web_buffer_dims(b) / 8;
      const dims = Array.from(this.heap().f64.subarray(dp, dp + 4));
      const d = m._onyx_web_buffer_data(b), n = m._onyx_web_buffer_size(b);
      const buf = this.heap().u8.slice(d, d + n).buffer;
      return { type: 'float32', dims, data: new Float32Array(buf) };
    } finally {
      m._onyx_web_buffer_free(b);
    }
  }

  ctcDecode(scores: Float32Array, frames: number, classes: number, blank: number, beamWidth: number,
            probabilities: boolean, alphabet: string): CtcResult {
    const m = this.em;
    const sp = this.copyIn(new Uint8Array(scores.buffer, scores.byteOffset, scores.byteLength));
    const ap = this.cstr(alphabet);
    let b: number;
    try {
      b = m._onyx_web_ctc_decode(sp, frames, classes, blank, beamWidth, probabilities ? 1 : 0, ap);
    } finally {
      m._free(sp);
      m._free(ap);
    }
    this.check();
    return this.takeJson(b);
  }
}

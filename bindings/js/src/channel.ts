// The worker's fast lane for session.run, used when the page is cross-origin isolated
// (SharedArrayBuffer) and has Atomics.waitAsync: after a run the worker waits in
// Atomics.wait on a shared word for a while instead of going back to its event loop, and
// the page writes the next run's feeds into shared memory and wakes it; the page awaits
// the outputs with Atomics.waitAsync. That skips two message dispatches and their
// structured clones, most of the cost of a small model's round trip. Anything else (other
// requests, string tensors, a request larger than the shared buffer, a worker that is not
// waiting) goes by postMessage as before, and a posted message always gets the worker
// out of its wait, so nothing waits behind the fast lane.
//
// Words of the control array (Int32Array over a SharedArrayBuffer):
//   STATE  OFF (the worker is in its event loop) | LISTENING (in Atomics.wait) |
//          CLAIMED (the page is writing a request) | REQUEST | REPLY
//   POSTED messages the page has posted to the worker (the worker counts those it took).
// Only the page moves LISTENING -> CLAIMED -> REQUEST and REPLY -> LISTENING; only the
// worker moves REQUEST -> REPLY; either may move LISTENING -> OFF.

import type { WireError } from './errors.js';
import { typeCodes, typeOfCode, type TensorType } from './tensor.js';

export const STATE = 0;
export const POSTED = 1;
export const OFF = 0;
export const LISTENING = 1;
export const CLAIMED = 2;
export const REQUEST = 3;
export const REPLY = 4;
/** Float64 slots after the control words (byte 16 on): when the worker saw the last
 * request and when it had written the reply (performance.timeOrigin + now(), ms), for
 * bench/web/roundtrip.mjs's split of a run's round trip. */
export const STAMP_WAKE = 2;
export const STAMP_REPLY = 3;
export const CTL_BYTES = 48;
/** How long the worker keeps waiting for the next run before it goes back to its loop. */
export const LISTEN_MS = 50;
/** How long the worker polls the state word before it sleeps in Atomics.wait: in a loop
 * of runs the page hands the lane back and sends the next request within about 0.1 ms of
 * a reply, and waking a worker asleep in Atomics.wait took 40 µs of each round trip
 * (bench/web/roundtrip.mjs). Only the worker polls; the page never blocks. */
export const SPIN_MS = 0.3;
/** The page's side of a short run: when the worker took less than this for the session's
 * last run through the lane (its own stamps, not the round trip, which would include the
 * wake-up below), the page polls the state word for up to twice that time (at most this)
 * before it awaits Atomics.waitAsync, whose wake-up took 75-105 µs of a round trip
 * (bench/web/roundtrip.mjs). Longer runs never poll: the page's thread is busy for at most
 * this long per run. */
export const PAGE_SPIN_MS = 0.25;
/** Longer runs, up to WAKE_EARLY_MAX_MS: the page sleeps in Atomics.waitAsync with a
 * timeout that ends WAKE_EARLY_MS before the reply is due (the worker's time for the
 * session's last run), then polls for it for up to twice WAKE_EARLY_MS. waitAsync's
 * wake-up (75-115 µs, bench/web/roundtrip.mjs) then happens while the worker still runs,
 * instead of after its reply; a reply that comes early wakes the page as before, one that
 * is late past the polling gets the plain wait. The page's thread is busy for at most
 * 2 * WAKE_EARLY_MS per run. */
export const WAKE_EARLY_MS = 0.3;
export const WAKE_EARLY_MAX_MS = 50;

/** The shared memory of one worker's fast lane. */
export interface ChannelBuffers {
  ctl: SharedArrayBuffer;
  data: SharedArrayBuffer;
}

/** True where the fast lane can work: shared memory and Atomics.waitAsync. */
export function fastLaneAvailable(): boolean {
  return typeof SharedArrayBuffer !== 'undefined' && (globalThis as any).crossOriginIsolated === true &&
         typeof (Atomics as any).waitAsync === 'function';
}

/** A feed or output as it sits in shared memory: its index among the session's inputs or
 * outputs, its type, dims and bytes. */
export interface LaneTensor {
  index: number;
  type: TensorType;
  dims: readonly number[];
  bytes: Uint8Array<ArrayBufferLike>;
}

const align8 = (n: number) => (n + 7) & ~7;

/** Bytes a list of tensors takes after a header of `head` bytes. */
export function laneBytes(head: number, ts: readonly { dims: readonly number[]; bytes: { byteLength: number } }[]): number {
  let n = head;
  for (const t of ts) n += 16 + 8 * t.dims.length + 8 + align8(t.bytes.byteLength);
  return n;
}

/** Writes `ts` from byte `at` of `data`; returns the end. The caller checked the size. */
export function writeTensors(data: SharedArrayBuffer, at: number, ts: readonly LaneTensor[]): number {
  const dv = new DataView(data);
  const u8 = new Uint8Array(data);
  dv.setUint32(at, ts.length, true);
  at += 8;
  for (const t of ts) {
    dv.setUint32(at, t.index, true);
    dv.setUint32(at + 4, typeCodes[t.type], true);
    dv.setUint32(at + 8, t.dims.length, true);
    at += 16;
    for (const d of t.dims) {
      dv.setFloat64(at, d, true);
      at += 8;
    }
    dv.setUint32(at, t.bytes.byteLength, true);
    at += 8;
    u8.set(t.bytes, at);
    at += align8(t.bytes.byteLength);
  }
  return at;
}

/** Reads what writeTensors wrote; `copy`: into fresh (unshared) buffers, else views of
 * the shared memory. */
export function readTensors(data: SharedArrayBuffer, at: number, copy: boolean): LaneTensor[] {
  const dv = new DataView(data);
  const n = dv.getUint32(at, true);
  at += 8;
  const out: LaneTensor[] = [];
  for (let i = 0; i < n; ++i) {
    const index = dv.getUint32(at, true);
    const type = typeOfCode(dv.getUint32(at + 4, true)) as TensorType;
    const rank = dv.getUint32(at + 8, true);
    at += 16;
    const dims: number[] = [];
    for (let k = 0; k < rank; ++k, at += 8) dims.push(dv.getFloat64(at, true));
    const len = dv.getUint32(at, true);
    at += 8;
    let bytes: Uint8Array = new Uint8Array(data, at, len);
    if (copy) {
      const own = new Uint8Array(new ArrayBuffer(len));
      own.set(bytes);
      bytes = own;
    }
    out.push({ index, type, dims, bytes });
    at += align8(len);
  }
  return out;
}

/** Reply status words. */
export const REPLY_OK = 0;
export const REPLY_ERROR = 1;
/** The outputs did not fit: they come by postMessage; the next word says how many bytes. */
export const REPLY_POSTED = 2;

/** An error as JSON after the status word. */
export function writeError(data: SharedArrayBuffer, e: WireError): void {
  const b = new TextEncoder().encode(JSON.stringify(e));
  const dv = new DataView(data);
  dv.setUint32(0, REPLY_ERROR, true);
  if (8 + b.byteLength > data.byteLength) {
    const short = new TextEncoder().encode(JSON.stringify({ code: e.code, message: e.message.slice(0, 1000) }));
    dv.setUint32(4, short.byteLength, true);
    new Uint8Array(data).set(short.subarray(0, data.byteLength - 8), 8);
    return;
  }
  dv.setUint32(4, b.byteLength, true);
  new Uint8Array(data).set(b, 8);
}

export function readError(data: SharedArrayBuffer): WireError {
  const dv = new DataView(data);
  const len = Math.min(dv.getUint32(4, true), data.byteLength - 8);
  const own = new Uint8Array(len);
  own.set(new Uint8Array(data, 8, len));  // TextDecoder refuses views of shared memory
  return JSON.parse(new TextDecoder().decode(own));
}

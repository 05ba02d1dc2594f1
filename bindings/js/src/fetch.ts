// Model delivery: fetch with progress, SHA-256 check against the expected hash (a stale
// or corrupted copy is refused, not run), and a Cache Storage copy keyed by that hash so
// a second visit does not download.

import { HashMismatchError, ModelFetchError } from './errors.js';

export interface FetchProgress {
  loaded: number;
  /** Content-Length, or 0 when the server did not send one. */
  total: number;
  /** The external-data file (its path) this is about; absent for the model itself. */
  file?: string;
}

export interface FetchModelOptions {
  /** Hex SHA-256 the file must have (from its card or a manifest). */
  sha256?: string;
  onProgress?: (p: FetchProgress) => void;
  /** Keep a copy in Cache Storage under the hash (default true when sha256 is given). */
  cache?: boolean;
  /** What the file is, in messages (default 'the model'). */
  label?: string;
}

export interface FetchedModel {
  bytes: Uint8Array;
  sha256: string;
  fromCache: boolean;
  fetchMs: number;
}

const CACHE_NAME = 'onyx-web-models-v1';

export async function sha256Hex(bytes: Uint8Array): Promise<string> {
  const d = await crypto.subtle.digest('SHA-256', bytes as unknown as ArrayBuffer);
  return Array.from(new Uint8Array(d), (b) => b.toString(16).padStart(2, '0')).join('');
}

let cacheP: Promise<Cache> | null = null;
function modelCache(): Promise<Cache> {
  if (!cacheP) {
    cacheP = caches.open(CACHE_NAME);
    cacheP.catch(() => { cacheP = null; });
  }
  return cacheP;
}

/** Starts Cache Storage's backend without creating anything (caches.has): in a fresh
 * profile its first open took 20-70 ms of the cold start, on the path to the model's
 * download; after this it takes 1-8 ms. index.ts calls it on import. */
export function warmCacheStorage(): void {
  if (typeof caches !== 'undefined') caches.has(CACHE_NAME).catch(() => {});
}

function cacheKey(hash: string): string {
  return new URL(`/__onyx-web-cache__/sha256/${hash}`, location.href).href;
}

/** Downloads (or takes from the cache) a model file and checks its hash. */
export async function fetchModel(url: string, o: FetchModelOptions = {}): Promise<FetchedModel> {
  const t0 = performance.now();
  performance.mark('onyx:model-fetch');
  const want = o.sha256?.toLowerCase();
  const what = o.label ?? 'the model';
  const useCache = (o.cache ?? true) && !!want && typeof caches !== 'undefined';
  if (useCache) {
    try {
      const cache = await modelCache();
      const hit = await cache.match(cacheKey(want!));
      if (hit) {
        const bytes = new Uint8Array(await hit.arrayBuffer());
        const got = await sha256Hex(bytes);
        if (got === want) {
          o.onProgress?.({ loaded: bytes.byteLength, total: bytes.byteLength });
          return { bytes, sha256: got, fromCache: true, fetchMs: performance.now() - t0 };
        }
        await cache.delete(cacheKey(want!));
      }
    } catch {
      // Cache Storage unavailable (opaque origin, private mode): download instead.
    }
  }
  performance.mark('onyx:model-cache-miss');
  let resp: Response;
  try {
    resp = await fetch(url, { cache: want ? 'no-cache' : 'default' });
  } catch (e) {
    throw new ModelFetchError('Fetch', `cannot download ${what} '${url}': ${e instanceof Error ? e.message : e}`);
  }
  if (!resp.ok) throw new ModelFetchError('Fetch', `cannot download ${what} '${url}': HTTP ${resp.status} ${resp.statusText}`);
  const total = Number(resp.headers.get('Content-Length') ?? 0) || 0;
  let bytes: Uint8Array;
  if (resp.body && o.onProgress) {
    const reader = resp.body.getReader();
    const parts: Uint8Array[] = [];
    let loaded = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      parts.push(value);
      loaded += value.byteLength;
      o.onProgress({ loaded, total });
    }
    bytes = new Uint8Array(loaded);
    let off = 0;
    for (const p of parts) {
      bytes.set(p, off);
      off += p.byteLength;
    }
  } else {
    bytes = new Uint8Array(await resp.arrayBuffer());
  }
  performance.mark('onyx:model-bytes');
  const got = await sha256Hex(bytes);
  performance.mark('onyx:model-hashed');
  if (want && got !== want)
    throw new HashMismatchError('HashMismatch',
      `${what} '${url}' has SHA-256 ${got}, but ${want} was expected (a stale or corrupted copy?); it was not run`);
  if (useCache) {
    // Not awaited: the model is usable now; a failed write (quota) only means the next
    // visit downloads again.
    modelCache()
      .then((cache) => cache.put(cacheKey(got), new Response(bytes.slice() as unknown as BodyInit,
                                                             { headers: { 'Content-Type': 'application/octet-stream' } })))
      .catch(() => {});
  }
  return { bytes, sha256: got, fromCache: false, fetchMs: performance.now() - t0 };
}

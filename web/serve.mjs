// A small static server for the digit reader page (make web) and its tests: web/ at /,
// bindings/js/dist/ at /dist/, models/ at /models/, onnxruntime-web's dist at /ort/, and
// the native build's exported models (build/models) at /build-models/. It sends COOP/COEP
// so the page is cross-origin isolated and onyx-web can use its pthreads build
// (--no-isolation leaves them out, to see the single-threaded path). /manifest.json gives
// each model of models/ with the SHA-256 its card (MODEL.md) states.
//
//   node web/serve.mjs [--port 8080] [--host 127.0.0.1] [--build build] [--no-isolation]
import { createServer } from 'node:http';
import { createReadStream, existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { extname, join, normalize, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(fileURLToPath(new URL('..', import.meta.url)));

function arg(name, def) {
  const i = process.argv.indexOf(name);
  return i > 0 && i + 1 < process.argv.length ? process.argv[i + 1] : def;
}

const types = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.mjs': 'text/javascript',
  '.css': 'text/css', '.json': 'application/json', '.wasm': 'application/wasm', '.png': 'image/png',
  '.jpg': 'image/jpeg', '.onnx': 'application/octet-stream', '.svg': 'image/svg+xml', '.map': 'application/json',
  '.txt': 'text/plain; charset=utf-8', '.tsv': 'text/plain; charset=utf-8',
};

/** Every models/<name>/ and models/<name>/<version>/ with a card (key `name` or
 * `name/version`): its .onnx, the card's SHA-256 and meta.json. */
export function manifest() {
  const models = {};
  const dir = join(root, 'models');
  const add = (key) => {
    const card = join(dir, key, 'MODEL.md');
    if (!existsSync(card)) return;
    const text = readFileSync(card, 'utf8');
    const file = /\| File \| `([^`]+)` \|/.exec(text)?.[1];
    const sha256 = /\| SHA-256 \| `([0-9a-f]{64})` \|/.exec(text)?.[1];
    if (!file || !sha256) return;
    const metaPath = join(dir, key, 'meta.json');
    models[key] = {
      url: `/models/${key}/${file}`,
      sha256,
      card: `/models/${key}/MODEL.md`,
      meta: existsSync(metaPath) ? JSON.parse(readFileSync(metaPath, 'utf8')) : null,
    };
  };
  for (const name of readdirSync(dir)) {
    if (!statSync(join(dir, name)).isDirectory()) continue;
    add(name);
    for (const sub of readdirSync(join(dir, name)))
      if (statSync(join(dir, name, sub)).isDirectory()) add(`${name}/${sub}`);
  }
  return { models };
}

export function startServer({ port = 8080, host = '127.0.0.1', build = 'build', isolation = true, quiet = false, extra = [] } = {}) {
  const mounts = [
    ...extra,
    ['/dist/', join(root, 'bindings/js/dist')],
    ['/models/', join(root, 'models')],
    ['/ort/', join(root, 'node_modules/onnxruntime-web/dist')],
    ['/build-models/', resolve(root, build, 'models')],
    ['/bench/', join(root, 'bench/web')],
    ['/tests/', join(root, 'tests/web')],
    ['/', join(root, 'web')],
  ];
  const server = createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    const headers = { 'Cache-Control': 'no-cache', 'Cross-Origin-Resource-Policy': 'same-origin' };
    if (isolation) {
      headers['Cross-Origin-Opener-Policy'] = 'same-origin';
      headers['Cross-Origin-Embedder-Policy'] = 'require-corp';
    }
    if (url.pathname === '/manifest.json') {
      res.writeHead(200, { ...headers, 'Content-Type': 'application/json' });
      res.end(JSON.stringify(manifest()));
      return;
    }
    let path = decodeURIComponent(url.pathname);
    if (path.endsWith('/')) path += 'index.html';
    for (const [prefix, d] of mounts) {
      if (!path.startsWith(prefix)) continue;
      const dir = resolve(d);
      const file = normalize(join(dir, path.slice(prefix.length)));
      if (file !== dir && !file.startsWith(dir + sep)) break;
      let st;
      try {
        st = statSync(file);
      } catch {
        break;
      }
      if (!st.isFile()) break;
      // A validator, as any static host or CDN gives: with Cache-Control: no-cache the
      // browser asks again each time and a 304 lets it use the bytes it has (a preload's,
      // a previous visit's) instead of downloading them again.
      const etag = `"${st.size.toString(16)}-${Math.floor(st.mtimeMs).toString(16)}"`;
      if (req.headers['if-none-match'] === etag) {
        res.writeHead(304, { ...headers, ETag: etag });
        return res.end();
      }
      res.writeHead(200, { ...headers, 'Content-Type': types[extname(file)] ?? 'application/octet-stream',
                           'Content-Length': st.size, ETag: etag });
      if (req.method === 'HEAD') return res.end();
      createReadStream(file).pipe(res);
      return;
    }
    res.writeHead(404, { ...headers, 'Content-Type': 'text/plain' });
    res.end(`not found: ${url.pathname}\n`);
  });
  return new Promise((ok, err) => {
    server.on('error', err);
    server.listen(port, host, () => {
      const a = server.address();
      const u = `http://${host === '0.0.0.0' ? 'localhost' : host}:${a.port}/`;
      if (!quiet) console.log(`onyx-web: serving the digit reader at ${u}${isolation ? '' : ' (no COOP/COEP: single-threaded)'}`);
      ok({ server, url: u });
    });
  });
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  if (!existsSync(join(root, 'bindings/js/dist/index.mjs')))
    console.error('onyx-web: bindings/js/dist/ is not built; run `make web-build` first');
  await startServer({
    port: Number(arg('--port', '8080')),
    host: arg('--host', '127.0.0.1'),
    build: arg('--build', 'build'),
    isolation: !process.argv.includes('--no-isolation'),
  });
}

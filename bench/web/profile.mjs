// Where a warm run's time goes in onyx-web, per node and per op type, in headless Chromium
// (session.startProfiling / endProfiling): the browser's view of `onyx bench --profile`.
// Medians over --runs profiled runs after 2 s of untimed ones; not a part of make bench-web.
//
//   node bench/web/profile.mjs [--build build] [--model URL] [--input URL.npy] [--threads 1]
//                              [--proxy 0|1] [--runs 40] [--top 12]
// URLs as web/serve.mjs serves them: /models/... (the repo's models/), /build-models/...
// (BUILD/models/, written by `ctest -R models_export`). Default: the digit reader on its
// reference crop 0000, on the page thread (--proxy 1: through the worker).
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { startServer } from '../../web/serve.mjs';

const root = resolve(fileURLToPath(new URL('../..', import.meta.url)));
const arg = (n, d) => { const i = process.argv.indexOf(n); return i > 0 ? process.argv[i + 1] : d; };
const build = resolve(root, arg('--build', 'build'));
const work = join(build, 'bench-web');
mkdirSync(work, { recursive: true });
let input = arg('--input', '');
if (!input) {
  execFileSync(join(build, 'onyx'), ['ocr', join(root, 'models/crnn-digits/crnn-digits-v1-opset17.onnx'),
                                     join(root, 'models/crnn-digits/reference/images/0000.png'), '--save-inputs', join(work, 'crnn')],
               { stdio: ['ignore', 'ignore', 'pipe'] });
  input = '/work/crnn/0000.npy';
}
const q = new URLSearchParams({ model: arg('--model', '/models/crnn-digits/crnn-digits-v1-opset17.onnx'), input,
                                threads: arg('--threads', '1'), proxy: arg('--proxy', '0'), runs: arg('--runs', '40') });
const { server, url } = await startServer({ port: 0, build, quiet: true, extra: [['/work/', work]] });
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', args: ['--no-sandbox'] });
try {
  const page = await (await browser.newContext()).newPage();
  await page.goto(`${url}bench/profile.html?${q}`);
  await page.waitForFunction(() => window.result, null, { timeout: 300000 });
  const r = await page.evaluate(() => window.result);
  if (r.error) throw new Error(r.error);
  const median = (v) => { const s = [...v].sort((a, b) => a - b), n = s.length; return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2; };
  const nodes = new Map();
  for (const e of r.profile.nodes) {
    if (!nodes.has(e.index)) nodes.set(e.index, { ...e, v: [] });
    nodes.get(e.index).v.push(e.ms);
  }
  const rows = [...nodes.values()].map((x) => ({ ...x, med: median(x.v) })).sort((a, b) => b.med - a.med);
  const sum = rows.reduce((a, x) => a + x.med, 0);
  const ops = new Map();
  for (const x of rows) ops.set(x.opType, { n: (ops.get(x.opType)?.n ?? 0) + 1, ms: (ops.get(x.opType)?.ms ?? 0) + x.med });
  const e = r.execution;
  console.log(`${q.get('model')}: ${e.artifact}, ${e.threads} thread(s), ${e.where}; ${r.profile.runs} profiled runs`);
  console.log(`run() median ${median(r.walls).toFixed(3)} ms; sum of the nodes' medians ${sum.toFixed(3)} ms ` +
              `(clock: performance.now(), 5 µs steps when cross-origin isolated)`);
  console.log('  by op type              nodes         ms   share');
  for (const [op, x] of [...ops].sort((a, b) => b[1].ms - a[1].ms))
    console.log(`  ${op.padEnd(22)} ${String(x.n).padStart(6)} ${x.ms.toFixed(3).padStart(10)} ${(100 * x.ms / sum).toFixed(1).padStart(6)}%`);
  console.log(`  slowest nodes`);
  for (const x of rows.slice(0, Number(arg('--top', '12'))))
    console.log(`  #${String(x.index).padEnd(5)} ${x.opType.padEnd(22)} ${x.med.toFixed(3).padStart(8)} ${(100 * x.med / sum).toFixed(1).padStart(6)}%  ${x.node}`);
} finally {
  await browser.close();
  server.close();
}

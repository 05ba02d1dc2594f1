// make bench-web: onyx-web against onnxruntime-web 1.30 (WASM provider) in headless
// Chromium, on the digit reader, mobilenet_v2, resnet18 and the transformer encoder of
// tests/models, 1 thread and all threads; cold start (navigation to the first output, a
// fresh browser context each time: nothing cached; the two runtimes alternate) and warm
// median (both runtimes in one page, taking turns block by block). Writes
// bench/RESULTS-web.md and bench/web/results.json.
//
//   node bench/web/run.mjs [--build build] [--rounds 3] [--warm 30] [--blocks 6] [--page-loads 3]
//                          [--only crnn,...]
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { chromium } from 'playwright-core';
import { startServer } from '../../web/serve.mjs';

const root = resolve(fileURLToPath(new URL('../..', import.meta.url)));
const arg = (n, d) => { const i = process.argv.indexOf(n); return i > 0 ? process.argv[i + 1] : d; };
const build = resolve(root, arg('--build', 'build'));
const rounds = Number(arg('--rounds', '3'));
// Loads of the digit reader page per runtime and round: one load's cold start moves by
// +-80 ms on this kind of machine, so the page's ratio takes more than one per round.
const pageLoads = Number(arg('--page-loads', '3'));
const warmRuns = Number(arg('--warm', '30'));
const blocks = Number(arg('--blocks', '6'));
const only = (arg('--only', '') ?? '').split(',').filter(Boolean);
const work = join(build, 'bench-web');
mkdirSync(work, { recursive: true });

// The reader's input: reference crop 0000 as `onyx ocr --save-inputs` preprocesses it.
const crnnModel = join(root, 'models/crnn-digits/crnn-digits-v1-opset17.onnx');
execFileSync(join(build, 'onyx'), ['ocr', crnnModel, join(root, 'models/crnn-digits/reference/images/0000.png'),
                                   '--save-inputs', join(work, 'crnn')], { stdio: ['ignore', 'ignore', 'inherit'] });
const models = [
  { name: 'crnn-digits (reader)', key: 'crnn', model: '/models/crnn-digits/crnn-digits-v1-opset17.onnx', input: '/work/crnn/0000.npy' },
  { name: 'mobilenet_v2', key: 'mobilenet_v2', model: '/build-models/mobilenet_v2/model.onnx', input: '/build-models/mobilenet_v2/set_0/input.npy' },
  { name: 'resnet18', key: 'resnet18', model: '/build-models/resnet18/model.onnx', input: '/build-models/resnet18/set_0/input.npy' },
  { name: 'transformer encoder', key: 'transformer', model: '/build-models/transformer/model.onnx', input: '/build-models/transformer/set_0/x.npy' },
].filter((m) => !only.length || only.includes(m.key));
for (const m of models)
  if (m.model.startsWith('/build-models/') && !existsSync(join(build, m.model.replace('/build-models/', 'models/'))))
    throw new Error(`${m.model} is missing: run \`ctest -R models_export\` in ${build}`);

const { server, url } = await startServer({ port: 0, build, quiet: true, extra: [['/work/', work]] });
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', args: ['--no-sandbox'] });
const probe = await (await browser.newContext()).newPage();
await probe.goto(url + 'manifest.json');
const cores = await probe.evaluate(() => navigator.hardwareConcurrency);
await probe.context().close();
const threadCounts = [...new Set([1, cores])];

/** Waits until `expression` is truthy in the page, asking through a raw DevTools session
 * everyMs. Not page.waitForFunction: that evaluates Playwright's injected script
 * (~330 KB) in the page on its first call, a 40-80 ms task on the page's main thread in
 * the middle of a cold start (seen in a trace), added to both runtimes' times alike. */
async function until(page, expression, timeoutMs, everyMs = 20) {
  const cdp = await page.context().newCDPSession(page);
  for (const t0 = Date.now(); ;) {
    const r = await cdp.send('Runtime.evaluate', { expression: `!!(${expression})`, returnByValue: true });
    if (r.result.value) break;
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${expression}`);
    await new Promise((res) => setTimeout(res, everyMs));
  }
  await cdp.detach();
}

// The cold start of one runtime: a fresh browser context (nothing cached), bench.html.
async function cold(runtime, m, threads) {
  const ctx = await browser.newContext();
  const page = await ctx.newPage();
  const q = new URLSearchParams({ runtime, model: m.model, input: m.input, threads: String(threads), warm: '0' });
  await page.goto(`${url}bench/bench.html?${q}`);
  await until(page, 'window.result', 300000);
  const r = await page.evaluate(() => window.result);
  await ctx.close();
  if (r.error) throw new Error(`${runtime} ${m.key} ${threads} threads: ${r.error}`);
  return r;
}

// The warm runs of both runtimes in one page, block by block (warm.html); at 1 thread also
// onyx-web with env.wasm.proxy = false ('onyx-main'), on the page thread where
// onnxruntime-web runs by default (threads need the worker), to show the worker's share.
async function warm(m, threads) {
  const ctx = await browser.newContext();
  const page = await ctx.newPage();
  const q = new URLSearchParams({ model: m.model, input: m.input, threads: String(threads), blocks: String(blocks),
                                  per: String(Math.ceil(warmRuns / blocks)), main: threads === 1 ? '1' : '0' });
  await page.goto(`${url}bench/warm.html?${q}`);
  await until(page, 'window.result', 600000, 500);  // polled seldom: the timed runs are going on
  const r = await page.evaluate(() => window.result);
  await ctx.close();
  if (r.error) throw new Error(`warm ${m.key} ${threads} threads: ${r.error}`);
  return r;
}

/** The digit reader page itself: navigation to the first string shown, read by onyx-web
 * or (runtime=ort) with onnxruntime-web running the model. */
async function pageCold(runtime) {
  const ctx = await browser.newContext();
  const page = await ctx.newPage();
  await page.goto(url + `?warm=1&threads=1${runtime === 'ort' ? '&runtime=ort' : ''}`);
  await until(page, "['done', 'error'].includes(document.body.dataset.state)", 120000);
  const r = await page.evaluate(() => ({ ms: window.onyxPage.coldMs, state: document.body.dataset.state,
                                         error: document.getElementById('error').textContent }));
  await ctx.close();
  if (r.state !== 'done') throw new Error(`the digit reader page (${runtime}) failed: ${r.error}`);
  return r.ms;
}

const median = (v) => { const s = [...v].sort((a, b) => a - b); const n = s.length; return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2; };
const colds = {}, warms = {};
const pageColds = { onyx: [], ort: [] };
for (let r = 0; r < rounds; ++r) {
  for (const m of models)
    for (const t of threadCounts) {
      for (const rt of r % 2 ? ['ort', 'onyx'] : ['onyx', 'ort']) {
        const c = await cold(rt, m, t);
        (colds[`${m.key}|${t}|${rt}`] ??= []).push(c);
        console.log(`round ${r + 1} ${m.key} ${t}t ${rt}: cold ${c.cold.toFixed(0)} ms (${c.artifact}, ${c.threads} threads)`);
      }
      const w = await warm(m, t);
      for (const [rt, x] of Object.entries(w)) {
        (warms[`${m.key}|${t}|${rt}`] ??= []).push(x);
        console.log(`round ${r + 1} ${m.key} ${t}t ${rt}: warm ${x.warm.toFixed(2)} ms, fastest ${x.min.toFixed(2)} ms (${x.artifact}, ${x.threads} threads)`);
      }
    }
  if (!only.length || only.includes('crnn'))
    for (let k = 0; k < pageLoads; ++k)
      for (const rt of (r + k) % 2 ? ['ort', 'onyx'] : ['onyx', 'ort']) {
        pageColds[rt].push(await pageCold(rt));
        console.log(`round ${r + 1} digit reader page ${rt}: cold ${pageColds[rt].at(-1).toFixed(0)} ms`);
      }
}
await browser.close();
server.close();

const sizes = [];
const size = (label, file) => {
  const b = readFileSync(file);
  sizes.push({ label, raw: b.length, gzip: gzipSync(b, { level: 9 }).length });
};
const dist = join(root, 'bindings/js/dist'), ortDist = join(root, 'node_modules/onnxruntime-web/dist');
size('onyx-web.wasm (single-threaded)', join(dist, 'onyx-web.wasm'));
size('onyx-web.mjs (its glue)', join(dist, 'onyx-web.mjs'));
size('onyx-web-mt.wasm (pthreads)', join(dist, 'onyx-web-mt.wasm'));
size('onyx-web-mt.mjs + .worker.js (its glue)', join(dist, 'onyx-web-mt.mjs'));
sizes.at(-1).raw += statSync(join(dist, 'onyx-web-mt.worker.js')).size;
sizes.at(-1).gzip += gzipSync(readFileSync(join(dist, 'onyx-web-mt.worker.js')), { level: 9 }).length;
size('index.mjs + onyx-web-worker.mjs (the package)', join(dist, 'index.mjs'));
sizes.at(-1).raw += statSync(join(dist, 'onyx-web-worker.mjs')).size;
sizes.at(-1).gzip += gzipSync(readFileSync(join(dist, 'onyx-web-worker.mjs')), { level: 9 }).length;
size('onnxruntime-web 1.30 ort-wasm-simd-threaded.wasm', join(ortDist, 'ort-wasm-simd-threaded.wasm'));
size('onnxruntime-web 1.30 ort-wasm-simd-threaded.mjs', join(ortDist, 'ort-wasm-simd-threaded.mjs'));
size('onnxruntime-web 1.30 ort.wasm.min.mjs', join(ortDist, 'ort.wasm.min.mjs'));

const rows = [];
const geo = { warm: [], cold: [], min: [], main: [] };
for (const m of models)
  for (const t of threadCounts) {
    const a = colds[`${m.key}|${t}|onyx`], b = colds[`${m.key}|${t}|ort`];
    const wa = warms[`${m.key}|${t}|onyx`], wb = warms[`${m.key}|${t}|ort`];
    const row = {
      model: m.name, threads: t, onyxThreads: wa[0].threads, onyxArtifact: wa[0].artifact,
      onyxCold: median(a.map((x) => x.cold)), ortCold: median(b.map((x) => x.cold)),
      onyxWarm: median(wa.map((x) => x.warm)), ortWarm: median(wb.map((x) => x.warm)),
      onyxMin: Math.min(...wa.map((x) => x.min)), ortMin: Math.min(...wb.map((x) => x.min)),
    };
    const c = warms[`${m.key}|${t}|onyx-main`];
    if (c) row.onyxMainWarm = median(c.map((x) => x.warm));
    rows.push(row);
    if (t === 1) {
      geo.warm.push(row.onyxWarm / row.ortWarm); geo.cold.push(row.onyxCold / row.ortCold);
      geo.min.push(row.onyxMin / row.ortMin);
      if (row.onyxMainWarm !== undefined) geo.main.push(row.onyxMainWarm / row.ortWarm);
    }
  }
const gmean = (v) => Math.exp(v.reduce((s, x) => s + Math.log(x), 0) / v.length);
const cpu = cpus()[0]?.model ?? 'unknown CPU';
const chromeVersion = execFileSync(process.env.CHROMIUM ?? '/usr/bin/chromium', ['--version']).toString().trim();
const f = (x) => (x < 10 ? x.toFixed(2) : x.toFixed(1));
const kb = (n) => `${(n / 1024).toFixed(0)} KiB`;
let md = `# onyx-web against onnxruntime-web (headless Chromium)\n\n`;
md += `Written by \`make bench-web\` (bench/web/run.mjs) on ${new Date().toISOString().slice(0, 10)}: ${cpu}, ${cores} threads as the browser sees them, `;
md += `${(totalmem() / 2 ** 30).toFixed(0)} GiB, ${chromeVersion}, pages served from loopback with COOP/COEP. The machine is shared with other builds, so absolute times wander; `;
md += `each of ${rounds} rounds measures both runtimes, and each figure is the median of the rounds.\n\n`;
md += `- **cold**: a fresh browser context (empty HTTP and code caches), navigation start to the first run's output in hand: the runtime's JS and .wasm download and compile, the model download, session creation, the input (.npy) download and the first run (bench/web/bench.html). The harness watches for the end through a DevTools session polled every 20 ms, which puts nothing into the page (Playwright's waitForFunction, used before 2026-12-07 15:00, evaluated its 330 KB script on the page's main thread mid-start: 40-80 ms more for both runtimes).\n`;
md += `- **warm**: both runtimes in one page (bench/web/warm.html), each after at least 1 s of untimed runs, taken in turns as the timed blocks are (V8 starts wasm in its baseline compiler and optimizes the hot functions in the background as they run; warmed one after the other, onyx-web's worker sat idle through the others' seconds and its first timed blocks paid for it); then ${blocks} blocks of ${Math.ceil(warmRuns / blocks)} timed runs of each, the runtimes taking turns block by block with no pause between, so that a burst of load from the machine's other tenants falls on both alike (runs in separate pages seconds apart saw different machines); the median of each runtime's ${blocks * Math.ceil(warmRuns / blocks)} runs of the same input, as \`await session.run(feeds)\` sees it (onyx-web: a round trip to its worker; onnxruntime-web: on the page thread).\n`;
md += `- Both get the same \`env.wasm.numThreads\`; onnxruntime-web 1.30 ships only its threaded .wasm, used for 1 thread too.\n`;
md += `- **fastest**: the fastest single warm run of all rounds, onyx-web / onnxruntime-web: on a loaded machine the median includes time the threads waited for a core, and onyx-web's round trip to its worker is two such waits.\n`;
md += `- **page thread**: onyx-web's warm median with \`env.wasm.proxy = false\` (no worker, where onnxruntime-web runs), 1 thread, a third runtime taking its turns in the same page.\n\n`;
md += `| model | threads | onyx-web cold | onnxruntime-web cold | ratio | onyx-web warm | onnxruntime-web warm | ratio | fastest | page thread |\n|---|---|---|---|---|---|---|---|---|---|\n`;
for (const r of rows)
  md += `| ${r.model} | ${r.threads}${r.onyxThreads !== r.threads ? ` (onyx: ${r.onyxThreads})` : ''} | ${f(r.onyxCold)} ms | ${f(r.ortCold)} ms | ${(r.onyxCold / r.ortCold).toFixed(2)}x | ${f(r.onyxWarm)} ms | ${f(r.ortWarm)} ms | ${(r.onyxWarm / r.ortWarm).toFixed(2)}x | ${f(r.onyxMin)} / ${f(r.ortMin)} ms | ${r.onyxMainWarm === undefined ? '' : `${f(r.onyxMainWarm)} ms (${(r.onyxMainWarm / r.ortWarm).toFixed(2)}x)`} |\n`;
md += `\nGeomean onyx-web / onnxruntime-web over the ${geo.warm.length} models, 1 thread: warm **${gmean(geo.warm).toFixed(2)}x**, cold ${gmean(geo.cold).toFixed(2)}x; fastest run ${gmean(geo.min).toFixed(2)}x; warm on the page thread ${gmean(geo.main).toFixed(2)}x.\n`;
if (pageColds.onyx.length) {
  const a = median(pageColds.onyx), b = median(pageColds.ort);
  md += `\nThe digit reader page itself (web/, 1 thread, a fresh context each load, the two alternating): navigation to the first string shown, with the PNG's download and decoding, preprocessing, the model's first run and CTC decoding. `;
  md += `onyx-web: median **${f(a)} ms**; the same page with onnxruntime-web running the model (\`?runtime=ort\`; preprocessing and decoding still by onyx-web, whose module loads beside it without a model session): median **${f(b)} ms**; ratio **${(a / b).toFixed(2)}x** (${pageColds.onyx.length} loads each).\n`;
}
md += `\n## Sizes\n\n| file | raw | gzip -9 |\n|---|---|---|\n`;
for (const s of sizes) md += `| ${s.label} | ${s.raw.toLocaleString('en')} bytes (${kb(s.raw)}) | ${s.gzip.toLocaleString('en')} bytes (${kb(s.gzip)}) |\n`;
writeFileSync(join(root, 'bench/RESULTS-web.md'), md);
writeFileSync(join(root, 'bench/web/results.json'), JSON.stringify({ date: new Date().toISOString(), cpu, cores, chromeVersion, rounds, warmRuns, blocks, rows, sizes, pageColds, colds, warms }, null, 1) + '\n');
console.log(md);

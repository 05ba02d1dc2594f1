// Where the worker's round trip goes (issue 11): a warm run of the transformer encoder (or
// --model/--input) through onyx-web's worker fast lane, split into its parts by the
// stamps bindings/js keeps, beside the same run on the page thread and onnxruntime-web's.
// Medians of --runs runs in each of --rounds fresh pages; not a part of make bench-web.
//
//   node bench/web/roundtrip.mjs [--build build] [--runs 300] [--rounds 3]
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadavg } from 'node:os';
import { chromium } from 'playwright-core';
import { startServer } from '../../web/serve.mjs';

const root = resolve(fileURLToPath(new URL('../..', import.meta.url)));
const arg = (n, d) => { const i = process.argv.indexOf(n); return i > 0 ? process.argv[i + 1] : d; };
const build = resolve(root, arg('--build', 'build'));
const runs = arg('--runs', '300');
const rounds = Number(arg('--rounds', '3'));
const model = arg('--model', '/build-models/transformer/model.onnx');
const input = arg('--input', '/build-models/transformer/set_0/x.npy');

const { server, url } = await startServer({ port: 0, build, quiet: true });
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', args: ['--no-sandbox'] });
const results = [];
for (let r = 0; r < rounds; ++r) {
  const ctx = await browser.newContext();
  const page = await ctx.newPage();
  await page.goto(`${url}bench/roundtrip.html?${new URLSearchParams({ model, input, runs })}`);
  await page.waitForFunction(() => window.result, null, { timeout: 300000 });
  const res = await page.evaluate(() => window.result);
  await ctx.close();
  if (res.error) throw new Error(res.error);
  results.push(res);
}
await browser.close();
server.close();
const med = (v) => { const s = [...v].sort((a, b) => a - b), n = s.length; return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2; };
const us = (ms) => `${(ms * 1000).toFixed(0).padStart(5)} µs`;
console.log(`${model}, 1 thread, medians of ${runs} runs, median of ${rounds} pages (load ${loadavg().map((x) => x.toFixed(1)).join(' ')}):`);
const names = {
  enter: 'run() to the lane (feeds checked)', write: 'request written, worker notified', workerWake: 'worker wakes',
  serve: 'worker: feeds in, run, outputs out', pageWake: 'page wakes (waitAsync)', read: 'outputs read', leave: 'Tensors made, run() returns',
  total: 'total (await session.run)',
};
for (const [k, label] of Object.entries(names)) console.log(`  ${label.padEnd(38)} ${us(med(results.map((x) => x.parts[k])))}`);
console.log(`  ${'page thread (proxy = false)'.padEnd(38)} ${us(med(results.map((x) => x.pageThread)))}`);
console.log(`  ${'onnxruntime-web (page thread)'.padEnd(38)} ${us(med(results.map((x) => x.ort)))}`);
console.log('  (the two wake-ups compare the page\'s and the worker\'s performance.timeOrigin, which can be tens of µs\n' +
            '   apart: their sum is exact, the split between them is not)');
console.log(`  lane runs: ${results.map((x) => x.laneRuns).join(', ')} of ${runs}; isolated: ${results.every((x) => x.isolated)}`);

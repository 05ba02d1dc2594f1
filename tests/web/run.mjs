// Playwright tests of onyx-web and the digit reader page in headless Chromium
// (scripts/test_web.sh runs them). The references are not computed by onyx-web:
//   - the strings and preprocessed tensors of `onyx ocr --json --save-inputs` (the native
//     CLI) on the 200 reference crops of models/crnn-digits/v2 (the page's default reader),
//   - onnxruntime-web 1.30 running the same onnxruntime-web program on the encoder model,
//   - fixed expectations (the digits drawn, the error messages of broken models).
// Screenshots go to the output folder (default build/test-web).
//
//   node tests/web/run.mjs [--build build] [--out build/test-web] [--only NAME[,NAME]]
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { startServer } from '../../web/serve.mjs';

const root = resolve(fileURLToPath(new URL('../..', import.meta.url)));
const arg = (n, d) => { const i = process.argv.indexOf(n); return i > 0 ? process.argv[i + 1] : d; };
const build = resolve(root, arg('--build', 'build'));
const out = resolve(root, arg('--out', join(build, 'test-web')));
const only = arg('--only', '')?.split(',').filter(Boolean) ?? [];
const chromiumPath = process.env.CHROMIUM ?? '/usr/bin/chromium';
const crnn = join(root, 'models/crnn-digits/v2');
const modelFile = join(crnn, 'crnn-digits-v2-opset17.onnx');

const failures = [];
let passed = 0;
function check(cond, what, detail = '') {
  if (cond) return true;
  failures.push(`${what}${detail ? `: ${detail}` : ''}`);
  console.log(`  FAIL ${what}${detail ? `: ${detail}` : ''}`);
  return false;
}

/** Float32 data of a little-endian .npy file. */
function readNpyF32(path) {
  const b = readFileSync(path);
  const v1 = b[6] === 1;  // magic (6 bytes), major, minor, header length (u16 in v1, u32 after)
  const start = v1 ? 10 : 12;
  const off = start + (v1 ? b.readUInt16LE(8) : b.readUInt32LE(8));
  const header = b.subarray(start, off).toString('latin1');
  if (!header.includes("'<f4'")) throw new Error(`${path}: not float32 (${header})`);
  const shape = /'shape': \(([^)]*)\)/.exec(header)[1].split(',').map((s) => s.trim()).filter(Boolean).map(Number);
  const data = new Float32Array(b.buffer.slice(b.byteOffset + off, b.byteOffset + b.length));
  return { shape, data };
}

// --- references from the native CLI ---------------------------------------------------------------
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
const onyxBin = join(build, 'onyx');
if (!existsSync(onyxBin)) { console.error(`tests/web: ${onyxBin} is missing (build the native CLI first)`); process.exit(1); }
const images = readdirSync(join(crnn, 'reference/images')).filter((f) => f.endsWith('.png')).sort();
const ocrInputs = join(out, 'ocr-inputs');
const ocr = JSON.parse(execFileSync(onyxBin, ['ocr', modelFile, ...images.map((f) => join(crnn, 'reference/images', f)),
                                              '--json', '--save-inputs', ocrInputs], { maxBuffer: 64 << 20 }).toString());
const expected = new Map(ocr.images.map((r) => [basename(r.file), r.text]));
const beamImages = images.slice(0, 25);
const ocrLogits = join(out, 'ocr-logits');
const ocrBeam = JSON.parse(execFileSync(onyxBin, ['ocr', modelFile, ...beamImages.map((f) => join(crnn, 'reference/images', f)),
                                                  '--json', '--decoder', 'beam', '--save-logits', ocrLogits], { maxBuffer: 64 << 20 }).toString());
const expectedGreedy = new Map(ocr.images.map((r) => [basename(r.file), r]));
const expectedBeam = new Map(ocrBeam.images.map((r) => [basename(r.file), r]));
const fixtures = join(out, 'fixtures');
execFileSync('/usr/bin/python3', [join(root, 'tests/web/make_fixtures.py'), fixtures, modelFile,
                                   join(build, 'models/transformer/model.onnx')]);

const { server, url } = await startServer({ port: 0, build, quiet: true, extra: [['/fixtures/', fixtures]] });
const { server: server2, url: url2 } = await startServer({ port: 0, build, quiet: true, isolation: false });
const browser = await chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox'] });

async function newPage(viewport = { width: 1280, height: 900 }, opts = {}) {
  const ctx = await browser.newContext({ viewport, deviceScaleFactor: opts.scale ?? 1, isMobile: !!opts.mobile, hasTouch: !!opts.mobile });
  const page = await ctx.newPage();
  page.on('pageerror', (e) => console.log(`  page error: ${e.message}`));
  page.on('console', (m) => { if (m.type() === 'error') console.log(`  console: ${m.text()}`); });
  return page;
}
const waitState = (page, states, timeout = 120000) =>
  page.waitForFunction((s) => s.includes(document.body.dataset.state), states, { timeout });

/** A page with onyx-web loaded (tests/ort_program.html) for the tests that run the encoder
 * of tests/models; null (the check failed) when that model was not exported. */
async function encoderPage() {
  const model = join(build, 'models/transformer/model.onnx');
  if (!check(existsSync(model), 'the encoder model is exported', `${model} is missing: run ctest -R models_export in ${build}`)) return null;
  const page = await newPage();
  await page.goto(`${url}tests/ort_program.html?runtime=onyx`);
  await page.waitForFunction(() => document.body.dataset.ready === '1');
  return page;
}

const tests = {
  async cold_read_and_screenshots() {
    const page = await newPage();
    await page.goto(url);
    await waitState(page, ['done', 'error']);
    const text = await page.textContent('#text');
    check(text === expected.get('0000.png'), 'the page reads reference crop 0000 on load', `${text} vs ${expected.get('0000.png')}`);
    const exec = await page.textContent('#exec');
    const cores = await page.evaluate(() => navigator.hardwareConcurrency);
    const want = Math.min(4, Math.ceil(cores / 2));
    const artifact = want > 1 ? 'onyx-web-mt' : 'onyx-web';
    check(exec.includes(`wasm · ${artifact} · ${want} thread`), 'the page shows provider, build and threads', exec);
    check(!exec.includes('asked'), 'no thread note when isolated', exec);
    for (const id of ['t-fetch', 't-compile', 't-session', 't-first', 't-cold', 't-warm'])
      check(/\d/.test(await page.textContent(`#${id}`)), `timing ${id} is shown`);
    const facts = await page.textContent('#facts');
    check(facts.includes('crnn-digits v2') && facts.includes('ai.onnx 17') && facts.includes(readFileSync(join(crnn, 'MODEL.md'), 'utf8').match(/SHA-256 \| `([0-9a-f]+)`/)[1]),
          'card facts: name, opset, hash', facts.slice(0, 200));
    await page.screenshot({ path: join(out, 'desktop.png'), fullPage: true });
    // Compare with onnxruntime-web beside it.
    await page.check('#compare');
    await page.click('#samples button[data-sample="1"]');
    await page.waitForFunction(() => document.body.dataset.state === 'done' && document.querySelector('#o-warm').textContent !== '', null, { timeout: 120000 });
    const [a, b] = [await page.textContent('#t-text'), await page.textContent('#o-text')];
    check(a === expected.get('0001.png') && b === a, 'onyx-web and onnxruntime-web read sample 0001 alike', `${a} / ${b}`);
    await page.screenshot({ path: join(out, 'desktop-compare.png'), fullPage: true });
    await page.context().close();

    // runtime=ort (bench/web's cold start of the same page with the other runtime): the
    // first crop read with onnxruntime-web running the model, said so, same string.
    const op = await newPage();
    await op.goto(url + '?runtime=ort&threads=1');
    await waitState(op, ['done', 'error']);
    check((await op.textContent('#text')) === expected.get('0000.png'), 'runtime=ort: onnxruntime-web reads crop 0000 as onyx ocr',
          await op.textContent('#text'));
    const oexec = await op.textContent('#exec');
    check(oexec.includes('onnxruntime-web 1.30 · wasm · 1 thread'), 'runtime=ort: the page says onnxruntime-web read it', oexec);
    check(/\d/.test(await op.textContent('#o-cold')) && (await op.evaluate(() => window.onyxPage.coldMs)) > 0,
          'runtime=ort: its cold start is shown');
    await op.context().close();

    const phone = await newPage({ width: 390, height: 844 }, { mobile: true, scale: 2 });
    // Two threads asked for: the pthreads build, side by side with onnxruntime-web's two.
    await phone.goto(url + '?ort=1&threads=2');
    await waitState(phone, ['done', 'error']);
    const pexec = await phone.textContent('#exec');
    check(pexec.includes('wasm · onyx-web-mt · 2 threads'), 'threads=2: the pthreads build with 2 threads', pexec);
    await phone.waitForFunction(() => document.querySelector('#o-warm').textContent !== '', null, { timeout: 120000 });
    check((await phone.textContent('#text')) === expected.get('0000.png'), 'phone width: reads crop 0000');
    const overflow = await phone.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    check(overflow <= 0, 'phone width: no horizontal scrolling', `${overflow}px too wide`);
    await phone.screenshot({ path: join(out, 'phone.png'), fullPage: true });
    await phone.context().close();
  },

  async reference_crops() {
    const page = await newPage();
    await page.goto(url + '?auto=0&warm=1');
    await waitState(page, ['ready', 'error']);
    const got = await page.evaluate(async (names) => {
      const res = [];
      for (const n of names) {
        const blob = await (await fetch(`/models/crnn-digits/v2/reference/images/${n}`)).blob();
        await window.onyxPage.read(await window.onyxPage.decode(blob), n);
        const r = window.onyxPage.results.at(-1);
        const x = r.input;
        const bytes = new Uint8Array(x.data.buffer, x.data.byteOffset, x.data.byteLength);
        let s = '';
        for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
        res.push({ name: n, label: r.label, text: document.querySelector('#text').textContent, dims: [...x.dims], b64: btoa(s) });
      }
      return res;
    }, images);
    let textOk = 0, tensorOk = 0, maxDiff = 0;
    for (const r of got) {
      const want = expected.get(r.name);
      if (check(r.text === (want || '(nothing read)'), `crop ${r.name}: the page shows what onyx ocr reads`, `${r.text} vs ${want}`)) textOk++;
      const ref = readNpyF32(join(ocrInputs, r.name.replace('.png', '.npy')));
      const buf = Buffer.from(r.b64, 'base64');
      const mine = new Float32Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length));
      let same = ref.shape.join() === r.dims.join() && mine.length === ref.data.length;
      for (let i = 0; same && i < mine.length; ++i) maxDiff = Math.max(maxDiff, Math.abs(mine[i] - ref.data[i]));
      if (same && check(mine.every((v, i) => Object.is(v, ref.data[i])), `crop ${r.name}: browser tensor equals onyx ocr --save-inputs`)) tensorOk++;
      else if (!same) check(false, `crop ${r.name}: tensor shape`, `${r.dims} vs ${ref.shape}`);
    }
    console.log(`  ${textOk}/${got.length} strings as onyx ocr, ${tensorOk}/${got.length} tensors bit-identical (max |diff| ${maxDiff})`);
    check(got.length === images.length && images.length === 200, 'all 200 reference crops were read', `${got.length}`);
    // ctcDecode on the native CLI's logits (--save-logits), greedy and beam (width 10),
    // against what onyx ocr decoded from them: the same text, confidences, log-probability.
    const logits = beamImages.map((n) => ({ n, ...readNpyF32(join(ocrLogits, n.replace('.png', '.npy'))) }));
    const dec = await page.evaluate(async (ls) => {
      const onyx = await import('/dist/index.mjs');
      const res = {};
      for (const l of ls) {
        const t = new onyx.Tensor('float32', Float32Array.from(l.data), l.shape);
        res[l.n] = { greedy: await onyx.ctcDecode(t, '0123456789'), beam: await onyx.ctcDecode(t, '0123456789', { beam: true }) };
      }
      return res;
    }, logits.map((l) => ({ n: l.n, shape: l.shape, data: Array.from(l.data) })));
    let decOk = 0;
    const close = (a, b) => Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(b));
    for (const n of beamImages) {
      const wb = expectedBeam.get(n), wg = expectedGreedy.get(n), d = dec[n];
      const ok = d.beam.text === wb.text && close(d.beam.logProb, wb.log_prob) && d.greedy.text === wg.text &&
                 d.greedy.confidence.length === wg.confidence.length && d.greedy.confidence.every((c, i) => close(c, wg.confidence[i]));
      if (check(ok, `crop ${n}: ctcDecode greedy and beam as onyx ocr on the same logits`,
                JSON.stringify({ got: d, want: { beam: [wb.text, wb.log_prob], greedy: [wg.text, wg.confidence] } }))) decOk++;
    }
    console.log(`  ctcDecode: ${decOk}/${beamImages.length} crops decode (greedy with confidences, beam with log-probability) as onyx ocr`);
    await page.context().close();
  },

  async drawn_digits() {
    const page = await newPage();
    await page.goto(url + '?auto=0&warm=1');
    await waitState(page, ['ready', 'error']);
    const box = await page.locator('#pad').boundingBox();
    // Strokes of "147" in canvas units (the pad is 600 x 150), drawn as a pen would.
    const strokes = [
      [[130, 40], [150, 28], [150, 122]],                       // 1
      [[235, 28], [205, 92], [262, 92]], [[250, 60], [250, 122]], // 4
      [[310, 30], [370, 30], [330, 122]],                       // 7
    ];
    const sx = box.width / 600, sy = box.height / 150;
    for (const s of strokes) {
      await page.mouse.move(box.x + s[0][0] * sx, box.y + s[0][1] * sy);
      await page.mouse.down();
      for (let i = 1; i < s.length; ++i) {
        const [x0, y0] = s[i - 1], [x1, y1] = s[i];
        for (let k = 1; k <= 12; ++k)
          await page.mouse.move(box.x + (x0 + (x1 - x0) * k / 12) * sx, box.y + (y0 + (y1 - y0) * k / 12) * sy);
      }
      await page.mouse.up();
    }
    await page.click('#read-drawing');
    await waitState(page, ['done', 'error']);
    const text = await page.textContent('#text');
    check(text === '147', 'a drawn "147" is read', text);
    await page.screenshot({ path: join(out, 'drawn.png'), fullPage: true });
    await page.context().close();
  },

  async error_messages() {
    const cases = [
      ['corrupt', '?model=/fixtures/corrupt.onnx', 'InvalidModel', /malformed protobuf/],
      ['hash-mismatch', `?sha256=${'0'.repeat(64)}`, 'HashMismatch', /has SHA-256 [0-9a-f]{64}, but 0{64} was expected.*it was not run/],
      ['strict-unsupported', '?model=/fixtures/regex.onnx&strict=1&auto=0', 'Unsupported',
       /strict: the wasm provider cannot run 1 of 2 nodes:\s+RegexFullMatch 'match_id' \(opset 20\)/],
    ];
    for (const [name, query, code, re] of cases) {
      const page = await newPage({ width: 900, height: 700 });
      await page.goto(url + query);
      await waitState(page, ['error', 'done', 'ready'], 60000);
      const shown = await page.locator('#error').isVisible();
      const text = shown ? await page.textContent('#error') : '';
      const c = await page.getAttribute('#error', 'data-code');
      check(shown && c === code && re.test(text), `${name}: the page shows a clear ${code} message`, text || '(no message)');
      check(!/Aborted|unreachable|RuntimeError/.test(text), `${name}: no Aborted()/unreachable`, text);
      await page.screenshot({ path: join(out, `error-${name}.png`) });
      await page.context().close();
    }
    // Errors of run(): the input's name, rank and NCHW shape, through the API.
    const page = await newPage();
    await page.goto(url + '?auto=0');
    await waitState(page, ['ready', 'error']);
    const errs = await page.evaluate(async () => {
      const onyx = await import('/dist/index.mjs');
      const s = window.onyxPage.state.session;
      const tries = {
        name: { nope: new onyx.Tensor('float32', new Float32Array(32 * 16), [1, 1, 32, 16]) },
        dtype: { input: new onyx.Tensor('int32', new Int32Array(32 * 16), [1, 1, 32, 16]) },
        nhwc: { input: new onyx.Tensor('float32', new Float32Array(32 * 16), [1, 32, 16, 1]) },
      };
      const r = {};
      for (const [k, feeds] of Object.entries(tries)) {
        try { await s.run(feeds); r[k] = 'no error'; } catch (e) { r[k] = `${e.constructor.name} ${e.code}: ${e.message}`; }
      }
      return r;
    });
    check(/^InvalidArgumentError InvalidArgument: .*'nope'/.test(errs.name), 'run(): unknown input name', errs.name);
    check(/^InvalidArgumentError InvalidArgument: .*int32.*float/.test(errs.dtype), 'run(): wrong dtype', errs.dtype);
    check(/^InvalidArgumentError InvalidArgument: .*looks like NHWC \(channels last\) while the model expects NCHW/.test(errs.nhwc), 'run(): NHWC given, NCHW hint', errs.nhwc);
    await page.context().close();
  },

  async ort_program_unchanged() {
    const model = join(build, 'models/transformer/model.onnx');
    if (!check(existsSync(model), 'the encoder model is exported', `${model} is missing: run ctest -R models_export in ${build}`)) return;
    const x = readNpyF32(join(build, 'models/transformer/set_0/x.npy'));
    const res = {};
    for (const runtime of ['ort', 'onyx']) {
      const page = await newPage();
      await page.goto(`${url}tests/ort_program.html?runtime=${runtime}`);
      await page.waitForFunction(() => document.body.dataset.ready === '1');
      res[runtime] = await page.evaluate((a) => window.runProgram(a), {
        modelUrl: '/build-models/transformer/model.onnx', wasmPaths: runtime === 'onyx' ? '/dist/' : '/ort/', threads: 2,
        x: Array.from(x.data), xDims: x.shape,
      });
      await page.context().close();
    }
    const { ort, onyx } = res;
    for (const k of ['inputNames', 'outputNames', 'inputMetadata', 'outputMetadata', 'type', 'dims', 'isFloat32Array'])
      check(JSON.stringify(ort[k]) === JSON.stringify(onyx[k]), `ort program: ${k} as onnxruntime-web`, `${JSON.stringify(onyx[k])} vs ${JSON.stringify(ort[k])}`);
    let maxDiff = 0;
    for (let i = 0; i < ort.data.length; ++i) maxDiff = Math.max(maxDiff, Math.abs(ort.data[i] - onyx.data[i]));
    check(ort.data.length === onyx.data.length && maxDiff < 1e-4, 'ort program: outputs match onnxruntime-web', `max |diff| ${maxDiff}`);
    console.log(`  encoder output ${onyx.dims}: max |onyx-web - onnxruntime-web| = ${maxDiff.toExponential(2)}`);
  },

  // The worker's fast lane (bindings/js/src/channel.ts, used when the page is isolated):
  // runs of changing shapes, an error, concurrent runs and buffers larger than the lane,
  // each compared with onnxruntime-web or with values computed here.
  async worker_fast_lane() {
    const page = await encoderPage();
    if (!page) return;
    const r = await page.evaluate(async () => {
      const onyx = await import('/dist/index.mjs');
      const ort = await import('/ort/ort.wasm.min.mjs');
      onyx.env.wasm.numThreads = 1;
      ort.env.wasm.numThreads = 1;
      ort.env.wasm.wasmPaths = '/ort/';
      const bytes = new Uint8Array(await (await fetch('/build-models/transformer/model.onnx')).arrayBuffer());
      const so = await onyx.InferenceSession.create(bytes);
      const sr = await ort.InferenceSession.create(bytes, { executionProviders: ['wasm'] });
      let seed = 7;
      const rand = (n) => Float32Array.from({ length: n }, () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648) * 2 - 1);
      const out = { isolated: crossOriginIsolated, artifact: so.execution.artifact, diffs: [], dims: [] };
      const both = async (seq) => {
        const x = rand(seq * 16);
        const [a, b] = await Promise.all([so.run({ x: new onyx.Tensor('float32', x, [1, seq, 16]) }),
                                          sr.run({ x: new ort.Tensor('float32', x, [1, seq, 16]) })]);
        let d = 0;
        for (let i = 0; i < b.y.data.length; ++i) d = Math.max(d, Math.abs(a.y.data[i] - b.y.data[i]));
        return { seq, dims: [...a.y.dims].join(','), want: [...b.y.dims].join(','), d, n: a.y.data.length === b.y.data.length };
      };
      const laneRuns = () => so.backend.laneRuns;
      out.before = laneRuns();
      for (const seq of [10, 3, 10, 7, 3, 10, 1, 10, 3]) out.diffs.push(await both(seq));
      out.sequential = laneRuns() - out.before;
      try {
        await so.run({ x: new onyx.Tensor('float32', rand(160), [10, 16]) });
        out.err = 'no error';
      } catch (e) { out.err = `${e.constructor.name} ${e.code}: ${e.message}`; }
      out.afterError = await both(5);
      out.concurrent = await Promise.all([4, 9, 4, 2].map((s) => both(s)));
      // Relu + Shape over 300,000 floats (1.2 MB: more than the lane's first 1 MiB), then small, then big again.
      const relu = await onyx.InferenceSession.create(new Uint8Array(await (await fetch('/fixtures/relu.onnx')).arrayBuffer()));
      out.relu = [];
      for (const n of [1000, 300000, 1000, 300000, 300000]) {
        const x = rand(n);
        const o = await relu.run({ x: new onyx.Tensor('float32', x, [n]) });
        let ok = o.y.data.length === n && o.n.data.length === 1 && o.n.data[0] === BigInt(n) && o.n.data instanceof BigInt64Array;
        for (let i = 0; ok && i < n; ++i) ok = o.y.data[i] === Math.max(x[i], 0);
        out.relu.push({ n, ok });
      }
      out.total = laneRuns() - out.before;
      return out;
    });
    check(r.isolated && r.artifact === 'onyx-web', 'fast lane: an isolated page with the single-threaded build', JSON.stringify(r).slice(0, 200));
    for (const x of [...r.diffs, r.afterError, ...r.concurrent])
      check(x.dims === x.want && x.n && x.d < 1e-4, `fast lane: encoder seq ${x.seq} matches onnxruntime-web`, JSON.stringify(x));
    check(r.sequential >= 6, 'fast lane: sequential runs go through it', `${r.sequential} of 9`);
    check(/^InvalidArgumentError InvalidArgument: input 'x': expected rank 3, got rank 2/.test(r.err), 'fast lane: an error keeps its class and message', r.err);
    for (const x of r.relu) check(x.ok, `fast lane: Relu and Shape of ${x.n} floats`);
    console.log(`  fast lane: ${r.sequential} of 9 sequential runs, ${r.total} runs in all; encoder max |diff| ${Math.max(...r.diffs.map((x) => x.d)).toExponential(2)}`);
    await page.context().close();
  },

  // session.startProfiling() / endProfiling(): each run's nodes with their planned op types
  // and times, through the worker (fast lane and messages), on the page thread and in the
  // pthreads build; the nodes must be the ones the native CLI's `onyx bench --profile`
  // plans and times for the same model (the same optimizer and planner), and each run's
  // node times must fit inside the time its run() took.
  async profiling() {
    const page = await encoderPage();
    if (!page) return;
    const native = JSON.parse(execFileSync(onyxBin, ['bench', join(build, 'models/transformer/model.onnx'), '--input',
                                                     `x=${join(build, 'models/transformer/set_0/x.npy')}`,
                                                     '--profile', '--json', '--runs', '1', '--min-time', '0', '--warmup', '0'],
                                           { stdio: ['ignore', 'pipe', 'ignore'] }).toString()).profile.nodes;
    const want = native.map((n) => `${n.index} ${n.op_type} ${n.name}`).sort();
    const r = await page.evaluate(async () => {
      const onyx = await import('/dist/index.mjs');
      const bytes = new Uint8Array(await (await fetch('/build-models/transformer/model.onnx')).arrayBuffer());
      const x = new onyx.Tensor('float32', Float32Array.from({ length: 7 * 16 }, (_, i) => Math.sin(i)), [1, 7, 16]);
      const out = {};
      for (const [name, threads, proxy] of [['worker', 1, true], ['page thread', 1, false], ['pthreads', 2, true]]) {
        onyx.env.wasm.numThreads = threads;
        onyx.env.wasm.proxy = proxy;
        const s = await onyx.InferenceSession.create(bytes.slice(), { enableProfiling: true });
        const walls = [];
        const timed = async () => { const t = performance.now(); await s.run({ x }); walls.push(performance.now() - t); };
        await timed();
        const first = await s.endProfiling();  // the run since creation (enableProfiling)
        s.startProfiling();
        for (let k = 0; k < 3; ++k) await timed();
        await Promise.all([s.run({ x }), s.run({ x })]);  // two at once: the second goes by message
        let failed = 'no error';  // refused before any node runs: a run of no nodes
        try { await s.run({ x: new onyx.Tensor('float32', new Float32Array(16), [16]) }); } catch (e) { failed = e.code; }
        const p = await s.endProfiling();
        await s.run({ x });
        const after = await s.endProfiling();
        await s.release();
        let released;
        try { s.startProfiling(); released = 'no error'; } catch (e) { released = `${e.constructor.name} ${e.code}`; }
        out[name] = { artifact: s.execution.artifact, first, p, walls, after, released, failed };
      }
      return out;
    });
    await page.context().close();
    for (const [name, x] of Object.entries(r)) {
      const runs = [0, 1, 2, 3, 4].map((k) => x.p.nodes.filter((e) => e.run === k));
      // The first run of an input signature also runs the nodes whose results later runs of
      // it reuse (Shape and the arithmetic on it): more nodes, among them every later one.
      const firstKeys = x.first.nodes.map((e) => `${e.index} ${e.opType} ${e.node}`);
      check(x.first.runs === 1 && firstKeys.length > want.length && want.every((k) => firstKeys.includes(k)),
            `profiling (${name}): enableProfiling records the first run, a superset of later runs' nodes`,
            `${x.first.runs} runs, ${firstKeys.length} nodes`);
      check(x.p.runs === 6 && runs.every((v) => v.length === want.length), `profiling (${name}): 6 runs (5 that ran), ${want.length} nodes each`,
            `${x.p.runs} runs: ${runs.map((v) => v.length).join(', ')}`);
      check(x.failed === 'InvalidArgument' && !x.p.nodes.some((e) => e.run === 5),
            `profiling (${name}): a refused run counts as a run of no nodes`, `${x.failed}; ${x.p.nodes.filter((e) => e.run === 5).length} nodes`);
      for (const [k, v] of runs.entries()) {
        const got = v.map((e) => `${e.index} ${e.opType} ${e.node}`).sort();
        if (!check(JSON.stringify(got) === JSON.stringify(want), `profiling (${name}) run ${k}: the nodes onyx bench --profile lists`,
                   `${got.filter((g) => !want.includes(g)).slice(0, 3)} not native; ${want.filter((g) => !got.includes(g)).slice(0, 3)} missing`)) break;
        const sum = v.reduce((a, e) => a + e.ms, 0);
        check(v.every((e) => Number.isFinite(e.ms) && e.ms >= 0) && sum > 0 && (k > 2 || sum <= x.walls[k + 1]),
              `profiling (${name}) run ${k}: node times fit inside the run`, `sum ${sum} ms, run() took ${x.walls[k + 1]} ms`);
      }
      check(x.after.runs === 0 && x.after.nodes.length === 0, `profiling (${name}): nothing recorded after endProfiling`, JSON.stringify(x.after).slice(0, 200));
      check(/^OnyxError Released$/.test(x.released), `profiling (${name}): startProfiling on a released session throws`, x.released);
    }
    check(r.pthreads.artifact === 'onyx-web-mt', 'profiling: the pthreads build was used', r.pthreads.artifact);
    const w = r.worker.p.nodes.filter((e) => e.run === 0).sort((a, b) => b.ms - a.ms)[0];
    console.log(`  profiling: ${want.length} nodes per run; slowest in the worker ${w.opType} '${w.node}' ${w.ms.toFixed(3)} ms`);
  },

  // The pthreads build's errors carry onyx's class, code and message as the single-threaded
  // build's do. Linked with em++ 3.1.6's own libunwind, -pthread -fwasm-exceptions never
  // matched a typed catch clause (tools/wasm/wasm_eh_pthreads.cc says why): every error of
  // that build (the one a cross-origin-isolated page with 2+ threads gets) reached JS as
  // "internal error: unknown exception", and a malformed file as "exception of type
  // N9protozero23end_of_buffer_exceptionE" instead of InvalidModel.
  async pthreads_build_errors() {
    const page = await encoderPage();
    if (!page) return;
    const r = await page.evaluate(async () => {
      const onyx = await import('/dist/index.mjs');
      const bytes = new Uint8Array(await (await fetch('/build-models/transformer/model.onnx')).arrayBuffer());
      const out = {};
      for (const threads of [1, 2]) {
        onyx.env.wasm.numThreads = threads;
        const s = await onyx.InferenceSession.create(bytes.slice());
        const tries = {
          rank: { x: new onyx.Tensor('float32', new Float32Array(16), [16]) },
          dtype: { x: new onyx.Tensor('int32', new Int32Array(16), [1, 1, 16]) },
          name: { nope: new onyx.Tensor('float32', new Float32Array(16), [1, 1, 16]) },
        };
        const got = { artifact: s.execution.artifact };
        for (const [k, feeds] of Object.entries(tries)) {
          try { await s.run(feeds); got[k] = 'no error'; } catch (e) { got[k] = `${e.constructor.name} ${e.code}: ${e.message}`; }
        }
        // Malformed files: the loader's own typed catches (protobuf errors become
        // InvalidModel) must match in the pthreads build too.
        const bad = { truncated: bytes.slice(0, bytes.length >> 1), garbage: new Uint8Array([8, 7, 0x12, 0xff, 0xff, 1, 2, 3]) };
        for (const [k, b] of Object.entries(bad)) {
          try { await onyx.InferenceSession.create(b); got[k] = 'no error'; } catch (e) { got[k] = `${e.constructor.name} ${e.code}: ${e.message}`; }
        }
        s.release();
        out[threads] = got;
      }
      return out;
    });
    await page.context().close();
    check(r[1].artifact === 'onyx-web' && r[2].artifact === 'onyx-web-mt', 'pthreads errors: both builds used', JSON.stringify(r));
    for (const k of ['rank', 'dtype', 'name', 'truncated', 'garbage']) {
      const want = ['truncated', 'garbage'].includes(k) ? /^InvalidModelError InvalidModel: / : /^InvalidArgumentError InvalidArgument: /;
      check(want.test(r[1][k]), `single-threaded build: ${k} error`, r[1][k]);
      check(r[2][k] === r[1][k], `pthreads build: the ${k} error as the single-threaded build's`, `${r[2][k]} vs ${r[1][k]}`);
    }
  },

  // External-data weights (options.externalData, onnxruntime-web's shape): the encoder
  // saved by onnx with every initializer in encoder.onnx.data, given by URL, as bytes, on
  // the page thread and in the pthreads build, each compared with the native CLI's `onyx
  // run` of the same files;
  // then a missing entry and a hash mismatch.
  async external_data() {
    const dir = join(fixtures, 'encoder-ext');
    const xPath = join(build, 'models/transformer/set_0/x.npy');
    if (!check(existsSync(join(dir, 'encoder.onnx')) && existsSync(xPath), 'the external-data encoder fixture is made',
               `${dir} or ${xPath} is missing: run ctest -R models_export in ${build}`)) return;
    const modelBytes = readFileSync(join(dir, 'encoder.onnx')).length;
    const dataBytes = readFileSync(join(dir, 'encoder.onnx.data')).length;
    const wholeBytes = readFileSync(join(build, 'models/transformer/model.onnx')).length;
    check(dataBytes > modelBytes && modelBytes < wholeBytes / 2, 'the fixture keeps its weights in encoder.onnx.data',
          `${modelBytes} B model + ${dataBytes} B data, ${wholeBytes} B in one file`);
    const refDir = join(out, 'external-ref');
    execFileSync(onyxBin, ['run', join(dir, 'encoder.onnx'), '--input', `x=${xPath}`, '-o', refDir], { stdio: 'ignore' });
    const ref = readNpyF32(join(refDir, 'y.npy'));
    const x = readNpyF32(xPath);
    const page = await newPage();
    await page.goto(`${url}tests/ort_program.html?runtime=onyx`);
    await page.waitForFunction(() => document.body.dataset.ready === '1');
    const r = await page.evaluate(async (a) => {
      const onyx = await import('/dist/index.mjs');
      onyx.env.wasm.numThreads = 1;
      const base = '/fixtures/encoder-ext/';
      const feeds = () => ({ x: new onyx.Tensor('float32', Float32Array.from(a.x), a.xDims) });
      const out = {};
      const once = async (name, model, options) => {
        try {
          const s = await onyx.InferenceSession.create(model, options);
          const y = (await s.run(feeds())).y;
          out[name] = { dims: [...y.dims], data: Array.from(y.data), where: `${s.execution.where}, ${s.execution.artifact}` };
          await s.release();
        } catch (e) { out[name] = { err: `${e.constructor.name} ${e.code}: ${e.message}` }; }
      };
      const progress = [];
      await once('url', base + 'encoder.onnx', {
        externalData: [{ path: 'encoder.onnx.data', data: base + 'encoder.onnx.data' }],
        onProgress: (p) => progress.push(p),
      });
      out.progress = progress.filter((p) => p.file === 'encoder.onnx.data').at(-1) ?? null;
      const model = new Uint8Array(await (await fetch(base + 'encoder.onnx')).arrayBuffer());
      const data = await (await fetch(base + 'encoder.onnx.data')).arrayBuffer();
      await once('bytes', model, { externalData: [{ path: './encoder.onnx.data', data: new Uint8Array(data) }] });
      onyx.env.wasm.proxy = false;
      await once('pageThread', model, { externalData: [{ path: 'encoder.onnx.data', data }] });
      onyx.env.wasm.proxy = true;
      onyx.env.wasm.numThreads = 2;  // the pthreads build (the page is isolated)
      await once('threads', model, { externalData: [{ path: 'encoder.onnx.data', data }] });
      onyx.env.wasm.numThreads = 1;
      await once('missing', model, { externalData: [{ path: 'weights.bin', data }] });
      await once('none', model, {});
      await once('hash', model, { externalData: [{ path: 'encoder.onnx.data', data: base + 'encoder.onnx.data', sha256: '0'.repeat(64) }] });
      return out;
    }, { x: Array.from(x.data), xDims: x.shape });
    for (const k of ['url', 'bytes', 'pageThread', 'threads']) {
      const o = r[k];
      if (!check(o && !o.err, `external data (${k}): the session runs`, o?.err)) continue;
      let d = 0;
      for (let i = 0; i < ref.data.length; ++i) d = Math.max(d, Math.abs(o.data[i] - ref.data[i]));
      check(o.dims.join() === ref.shape.join() && o.data.length === ref.data.length && d < 1e-4,
            `external data (${k}, ${o.where}): outputs match onyx run of the same files`, `dims ${o.dims} vs ${ref.shape}, max |diff| ${d}`);
      if (k === 'url') console.log(`  external data: encoder ${o.dims} max |onyx-web - onyx run| = ${d.toExponential(2)}`);
    }
    check(!r.threads.err && r.threads.where === 'worker, onyx-web-mt', 'external data: the pthreads build loads it too', r.threads.where ?? r.threads.err);
    check(r.progress && r.progress.loaded === dataBytes, 'external data: onProgress reports the data file', JSON.stringify(r.progress));
    check(/^InvalidModelError InvalidModel: .*external data 'encoder\.onnx\.data' was not given \(given: 'weights\.bin'\)/.test(r.missing.err ?? ''),
          'external data: a missing entry names the location the model asks for', r.missing.err ?? 'no error');
    check(/^InvalidModelError InvalidModel: .*external data 'encoder\.onnx\.data' was not given \(given: none\)/.test(r.none.err ?? ''),
          'external data: none given names the location', r.none.err ?? 'no error');
    check(/^HashMismatchError HashMismatch: the external data 'encoder\.onnx\.data' '.*' has SHA-256 [0-9a-f]{64}, but 0{64} was expected/.test(r.hash.err ?? ''),
          'external data: a hash mismatch is refused', r.hash.err ?? 'no error');
    await page.context().close();
  },

  async model_cache_second_visit() {
    // The page gives the manifest's SHA-256: the first visit downloads the model and keeps
    // it in Cache Storage by that hash; a second visit (same profile) takes it from there
    // and requests nothing for the model.
    const page = await newPage();
    const modelRequests = [];
    page.on('request', (r) => { if (r.url().endsWith('.onnx')) modelRequests.push(r.url()); });
    await page.goto(url);
    await waitState(page, ['done', 'error']);
    check((await page.textContent('#t-fetch')).includes('ms') && !(await page.textContent('#t-fetch')).includes('cache'),
          'first visit: the model is downloaded', await page.textContent('#t-fetch'));
    const first = modelRequests.length;
    check(first === 1, 'first visit: one request for the model', modelRequests.join(', '));
    // The cache write is not awaited by create(): wait for it.
    for (let t = Date.now(); Date.now() - t < 10000;) {
      if (await page.evaluate(async () => (await (await caches.open('onyx-web-models-v1')).keys()).length > 0)) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    await page.reload();
    await waitState(page, ['done', 'error']);
    check((await page.textContent('#text')) === expected.get('0000.png'), 'second visit: reads crop 0000');
    check((await page.textContent('#t-fetch')).includes('(cache)'), 'second visit: the model comes from Cache Storage',
          await page.textContent('#t-fetch'));
    check(modelRequests.length === first, 'second visit: no request for the model', modelRequests.join(', '));
    await page.context().close();
  },

  async not_isolated_says_so() {
    const page = await newPage();
    await page.goto(url2);
    await waitState(page, ['done', 'error']);
    const exec = await page.textContent('#exec');
    const cores = await page.evaluate(() => navigator.hardwareConcurrency);
    const want = Math.min(4, Math.ceil(cores / 2));
    check((await page.textContent('#text')) === expected.get('0000.png'), 'without COOP/COEP: still reads crop 0000');
    check(exec.includes('onyx-web · 1 thread') && (want === 1 || exec.includes('not cross-origin isolated')),
          'without COOP/COEP: the single-threaded build, and the page says why', exec);
    await page.context().close();
  },
};

const t0 = Date.now();
for (const [name, fn] of Object.entries(tests)) {
  if (only.length && !only.includes(name)) continue;
  const before = failures.length;
  const t = Date.now();
  try {
    await fn();
  } catch (e) {
    check(false, `${name} threw`, e.stack ?? String(e));
  }
  const ok = failures.length === before;
  if (ok) passed++;
  console.log(`${ok ? 'PASS' : 'FAIL'} ${name} (${((Date.now() - t) / 1000).toFixed(1)} s)`);
}
await browser.close();
server.close();
server2.close();
console.log(`tests/web: ${passed} passed, ${failures.length ? `${failures.length} checks failed` : 'no failures'}; ` +
            `screenshots in ${out} (${((Date.now() - t0) / 1000).toFixed(0)} s)`);
process.exit(failures.length ? 1 : 0);

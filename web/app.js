// The digit reader page: a crop (drawn, uploaded, dropped or a reference sample) goes
// through onyx-web's preprocessing, model and CTC decoding, all in the worker; the page
// shows the string, per-character confidence, the cold start split and the warm median,
// and where it ran. Optionally onnxruntime-web 1.30 reads the same tensor beside it.
//
// Query parameters (used by tests/web and bench/web): model=URL, sha256=HEX (override the
// manifest), strict=1, threads=N, warm=N (warm runs), auto=0 (do not read a sample on load),
// ort=1 (compare from the start), runtime=ort (read the first crop with onnxruntime-web
// running the model, for bench/web's cold start of the same page), sample=K, reader=KEY (a model of the manifest: the
// default crnn-digits/v2, or crnn-digits for v1; its reference crops are the samples).
import * as onyx from '/dist/index.mjs';

performance.mark('page:script');  // the cold start's steps as marks (DevTools, bench/web)
const q = new URLSearchParams(location.search);
const $ = (id) => document.getElementById(id);
const WARM_RUNS = Math.max(1, Number(q.get('warm') ?? 20));
const READER = q.get('reader') ?? 'crnn-digits/v2';
const SAMPLE_DIR = `/models/${READER}/reference/images`;
$('n-warm').textContent = String(WARM_RUNS);

const state = { session: null, meta: null, manifest: null, first: true, ort: null, ortSession: null, busy: false,
                ortFirst: true, ortTimings: null };
window.onyxPage = { state, results: [] };

const fmt = (ms) => (ms === undefined || ms === null ? '–' : ms < 10 ? `${ms.toFixed(2)} ms` : `${ms.toFixed(1)} ms`);
const median = (v) => { const s = [...v].sort((a, b) => a - b); const n = s.length; return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2; };

function showError(title, e) {
  const box = $('error');
  box.hidden = false;
  box.innerHTML = '';
  const b = document.createElement('b');
  b.textContent = title;
  box.append(b, document.createTextNode(e instanceof onyx.OnyxError ? `${e.name} (${e.code}): ${e.message}` : String(e?.message ?? e)));
  box.dataset.code = e?.code ?? 'Error';
  if (!state.session) { $('exec').textContent = 'No model loaded.'; $('text').textContent = ''; }
  document.body.dataset.state = 'error';
}
function clearError() { $('error').hidden = true; }

function execText(x) {
  const t = `${x.threads} thread${x.threads === 1 ? '' : 's'}`;
  return `${x.provider} · ${x.artifact} · ${t}${x.threadsNote ? ` (asked ${x.threadsAsked}: ${x.threadsNote})` : ''}`;
}

function showFacts(s, m) {
  const dl = $('facts');
  dl.innerHTML = '';
  const add = (k, v, code) => {
    const dt = document.createElement('dt'); dt.textContent = k;
    const dd = document.createElement('dd');
    if (code) { const c = document.createElement('code'); c.textContent = v; dd.append(c); } else dd.textContent = v;
    dl.append(dt, dd);
  };
  add('name', m?.name ?? '(no card)');
  add('file', `${state.modelUrl} · ${s.model.bytes.toLocaleString('en')} bytes`);
  add('SHA-256', `${s.model.sha256}${state.expectedSha ? ' ✓ matches the card' : ' (no expected hash given)'}`, true);
  add('opset', `ai.onnx ${s.model.opset}`);
  add('producer', s.model.producer || '–');
  add('inputs', s.inputMetadata.map((v) => `${v.name}: ${v.type}[${v.shape.join(', ')}]`).join('; '));
  add('outputs', s.outputMetadata.map((v) => `${v.name}: ${v.type}[${v.shape.join(', ')}]`).join('; '));
  add('runtime', `${s.execution.version}, in a ${s.execution.where === 'worker' ? 'Web Worker' : 'the page thread'}`);
  if (m?.limitations) add('limitations', m.limitations);
}

/** state[key] ??= load(), kept while it succeeds; after a failure the next call tries again. */
function once(key, load) {
  if (!state[key]) {
    const p = load();
    state[key] = p;
    p.catch(() => { if (state[key] === p) state[key] = null; });
  }
  return state[key];
}

/** The session, loaded once: started as the page opens, beside the first crop's decoding. */
const sessionReady = () => once('sessionP', loadSession);

/** The reader's manifest entry: model URL, expected hash and card facts (state.meta). */
async function loadManifest() {
  // index.html's head script requested it as the page opened.
  const boot = window.onyxBoot?.manifest;
  if (window.onyxBoot) window.onyxBoot.manifest = null;
  const man = await (boot ?? fetch('/manifest.json').then((r) => r.json()));
  const entry = man.models[READER];
  if (!entry && !q.get('model')) throw new Error(`no model '${READER}' in the manifest (${Object.keys(man.models).join(', ')})`);
  state.meta = entry?.meta ?? null;
  state.modelUrl = q.get('model') ?? entry.url;
  state.expectedSha = q.get('sha256') ?? (q.get('model') ? null : entry.sha256);
}
const manifestReady = () => once('manifestP', loadManifest);

const THREADS = q.get('threads') ? Number(q.get('threads')) : undefined;
// The session's and preprocessTextLine's (which may come first) plans agree: one worker.
if (THREADS) onyx.env.wasm.numThreads = THREADS;
// onyx-web's worker, started by index.html's head script.
if (window.onyxBoot?.worker) onyx.env.wasm.worker = window.onyxBoot.worker;

async function loadSession() {
  await manifestReady();
  const threads = THREADS;
  $('exec').textContent = 'loading the model…';
  const s = await onyx.InferenceSession.create(state.modelUrl, {
    executionProviders: ['wasm'], intraOpNumThreads: threads, strict: q.get('strict') === '1',
    sha256: state.expectedSha ?? undefined,
    onProgress: (p) => { $('exec').textContent = `downloading the model… ${Math.round(p.loaded / 1024)} KiB${p.total ? ` of ${Math.round(p.total / 1024)}` : ''}`; },
  });
  state.session = s;
  return s;
}

/** The session's build, threads and model facts, once: read() shows them after the first
 * string (their layout would compete with the worker's first run). */
function showSession() {
  const s = state.session;
  if (!s || state.sessionShown) return;
  state.sessionShown = true;
  const x = s.execution;
  $('exec').innerHTML = '';
  const b = document.createElement('b');
  b.textContent = execText(x);
  $('exec').append('Running on ', b);
  document.body.dataset.threads = String(x.threads);
  document.body.dataset.artifact = x.artifact;
  $('t-exec').textContent = `${x.provider} · ${x.threads}`;
  showFacts(s, state.meta);
}

function preprocessParams() {
  const p = state.meta?.preprocessing ?? {};
  const scale = typeof p.scale === 'string' && p.scale.includes('/') ? p.scale.split('/').reduce((a, b) => Number(a) / Number(b)) : Number(p.scale ?? 1 / 255);
  return { height: p.resize?.height ?? 32, minWidth: p.resize?.min_width ?? 16, scale,
           mean: (p.mean ?? [0.5])[0], std: (p.std ?? [0.5])[0] };
}

function alphabet() { return state.meta?.postprocessing?.alphabet ?? '0123456789'; }

/** RGBA pixels of an image file or URL, decoded by the browser (PNG gray/RGB are exact;
 * see tests/web for what differs with alpha). */
async function decode(blob) {
  const bmp = await createImageBitmap(blob, { premultiplyAlpha: 'none', colorSpaceConversion: 'none' });
  const c = new OffscreenCanvas(bmp.width, bmp.height);
  const g = c.getContext('2d', { willReadFrequently: true });
  g.drawImage(bmp, 0, 0);
  return g.getImageData(0, 0, bmp.width, bmp.height, { colorSpace: 'srgb' });
}

function showSeen(x) {
  const [, , h, w] = x.dims;
  const c = $('seen');
  c.width = w; c.height = h;
  const img = new ImageData(w, h);
  for (let i = 0; i < w * h; ++i) {
    const v = Math.max(0, Math.min(255, Math.round((x.data[i] * 0.5 + 0.5) * 255)));
    img.data.set([v, v, v, 255], i * 4);
  }
  c.getContext('2d').putImageData(img, 0, 0);
  c.style.width = `${Math.min(w * 1.5, 600)}px`;
}

function showResult(r) {
  $('text').textContent = r.text || '(nothing read)';
  const conf = $('conf');
  conf.innerHTML = '';
  [...r.text].forEach((ch, i) => {
    const p = r.confidence?.[i];
    const s = document.createElement('span');
    if (p !== undefined && p < 0.9) s.className = 'low';
    s.textContent = ch;
    const sm = document.createElement('small');
    sm.textContent = p === undefined ? '' : `${(p * 100).toFixed(p > 0.995 ? 1 : 0)}%`;
    s.append(sm);
    conf.append(s);
  });
}

async function readOnyx(x) {
  const s = state.session;
  const t0 = performance.now();
  const out = await s.run({ [s.inputNames[0]]: x });
  const runMs = performance.now() - t0;
  const r = await onyx.ctcDecode(out[s.outputNames[0]], alphabet());
  return { r, runMs, out };
}

async function warm(x) {
  const v = [];
  for (let i = 0; i < WARM_RUNS; ++i) {
    const t0 = performance.now();
    await state.session.run({ [state.session.inputNames[0]]: x });
    v.push(performance.now() - t0);
  }
  return median(v);
}

/** onnxruntime-web's session of the same model, loaded once. */
const ortReady = () => once('ortP', loadOrt);

async function loadOrt() {
  if (state.ortSession) return state.ortSession;
  const t0 = performance.now();
  const ort = await import('/ort/ort.wasm.min.mjs');
  ort.env.wasm.wasmPaths = '/ort/';
  ort.env.wasm.numThreads = state.session?.execution.threads ?? Number(q.get('threads') ?? 1);
  await manifestReady();
  const bytes = await (await fetch(state.modelUrl)).arrayBuffer();
  const t1 = performance.now();
  const s = await ort.InferenceSession.create(bytes, { executionProviders: ['wasm'] });
  const t2 = performance.now();
  state.ort = ort;
  state.ortSession = s;
  state.ortTimings = { fetch: t1 - t0, create: t2 - t1 };
  $('o-fetch').textContent = fmt(t1 - t0);
  $('o-wasmfetch').textContent = 'in creation';
  $('o-compile').textContent = 'in creation';
  $('o-session').textContent = fmt(t2 - t1);
  $('o-exec').textContent = `wasm · ${ort.env.wasm.numThreads}`;
  return s;
}

async function readOrt(x) {
  try {
    const s = await ortReady();
    const ort = state.ort;
    const feed = new ort.Tensor('float32', x.data, x.dims);
    const t0 = performance.now();
    const out = await s.run({ [s.inputNames[0]]: feed });
    const runMs = performance.now() - t0;
    const y = out[s.outputNames[0]];
    const r = await onyx.ctcDecode(new onyx.Tensor('float32', y.data, y.dims), alphabet());
    $('o-text').textContent = r.text;
    if (state.ortFirst) {
      state.ortFirst = false;
      $('o-first').textContent = fmt(runMs);
      $('o-cold').textContent = fmt(state.ortTimings.fetch + state.ortTimings.create + runMs);
    }
    const v = [];
    for (let i = 0; i < WARM_RUNS; ++i) {
      const t = performance.now();
      await s.run({ [s.inputNames[0]]: feed });
      v.push(performance.now() - t);
    }
    $('o-warm').textContent = fmt(median(v));
    return r.text;
  } catch (e) {
    showError('onnxruntime-web failed', e);
    return null;
  }
}

/** Reads one image: ImageData-like {data, width, height}. */
async function read(img, label) {
  if (state.busy) return;
  state.busy = true;
  document.body.dataset.state = 'busy';
  clearError();
  try {
    performance.mark('page:crop-decoded');
    // Preprocessing needs the card's parameters (the manifest), not the session: it is
    // asked for now, and the worker runs it beside the session's creation.
    const sessionP = sessionReady();
    await manifestReady();
    const xP = onyx.preprocessTextLine(img, preprocessParams());
    xP.catch(() => {});  // awaited below, after the session's failure if both fail
    await sessionP;
    performance.mark('page:session');
    const x = await xP;
    performance.mark('page:preprocessed');
    const { r, runMs } = await readOnyx(x);
    performance.mark('page:read');
    showResult(r);
    const entry = { label, text: r.text, confidence: r.confidence, runMs, input: x };
    window.onyxPage.results.push(entry);
    if (state.first) {
      state.first = false;
      const cold = performance.now();
      const t = state.session.timings;
      $('t-fetch').textContent = `${fmt(t.fetchMs)}${t.fromCache ? ' (cache)' : ''}`;
      $('t-wasmfetch').textContent = fmt(t.wasmFetchMs);
      $('t-compile').textContent = fmt(t.compileMs);
      $('t-session').textContent = fmt(t.sessionMs);
      $('t-first').textContent = fmt(runMs);
      $('t-cold').textContent = fmt(cold);
      window.onyxPage.coldMs = cold;
      showThumbnails();
    }
    // After the string: their layout would compete with the worker's first run.
    showSeen(x);
    showSession();
    document.body.dataset.state = 'warm';
    $('t-text').textContent = r.text;
    $('t-warm').textContent = fmt(await warm(x));
    if ($('compare').checked) entry.ortText = await readOrt(x);
    document.body.dataset.state = 'done';
    document.body.dataset.text = r.text;
  } catch (e) {
    showError(state.session ? 'Could not read the crop' : 'Could not load the model', e);
  } finally {
    state.busy = false;
    showSession();
    showThumbnails();
  }
}
window.onyxPage.read = read;
window.onyxPage.decode = decode;

// Samples. Their thumbnails load once the first string is shown (or the first read
// failed, or nothing is read on load): before, their requests and decoding would compete
// with the cold start's.
const SAMPLES = ['0000', '0001', '0002', '0003', '0004', '0005'];
for (const [i, k] of SAMPLES.entries()) {
  const b = document.createElement('button');
  const im = document.createElement('img');
  im.dataset.src = `${SAMPLE_DIR}/${k}.png`;
  im.alt = `reference crop ${k}`;
  im.width = 112; im.height = 28;  // the thumbnail's box while it loads
  b.append(im);
  b.title = `reference crop ${k}`;
  b.dataset.sample = String(i);
  b.onclick = async () => read(await decode(await (await fetch(im.dataset.src)).blob()), `sample ${k}`);
  $('samples').append(b);
}
let thumbsShown = false;
function showThumbnails() {
  if (thumbsShown) return;
  thumbsShown = true;
  for (const im of $('samples').querySelectorAll('img')) { im.removeAttribute('width'); im.removeAttribute('height'); im.src = im.dataset.src; }
}

// Tabs.
for (const [tab, pane] of [['tab-draw', 'pane-draw'], ['tab-file', 'pane-file']]) {
  $(tab).onclick = () => {
    for (const [t2, p2] of [['tab-draw', 'pane-draw'], ['tab-file', 'pane-file']]) {
      $(t2).setAttribute('aria-selected', String(t2 === tab));
      $(p2).hidden = p2 !== pane;
    }
  };
}

// Upload and drop.
$('file').onchange = async (e) => { const f = e.target.files[0]; if (f) read(await decode(f), f.name); };
const drop = $('drop');
drop.ondragover = (e) => { e.preventDefault(); drop.classList.add('over'); };
drop.ondragleave = () => drop.classList.remove('over');
drop.ondrop = async (e) => {
  e.preventDefault();
  drop.classList.remove('over');
  const f = e.dataTransfer.files[0];
  if (f) read(await decode(f), f.name);
};

// Drawing pad (mouse, pen, touch).
const pad = $('pad');
const pg = pad.getContext('2d', { willReadFrequently: true });
function clearPad() { pg.fillStyle = '#fff'; pg.fillRect(0, 0, pad.width, pad.height); }
clearPad();
let drawing = false;
const pos = (e) => { const r = pad.getBoundingClientRect(); return [(e.clientX - r.left) * pad.width / r.width, (e.clientY - r.top) * pad.height / r.height]; };
pad.onpointerdown = (e) => {
  drawing = true;
  pad.setPointerCapture(e.pointerId);
  pg.strokeStyle = '#111'; pg.lineWidth = 11; pg.lineCap = 'round'; pg.lineJoin = 'round';
  pg.beginPath(); pg.moveTo(...pos(e)); pg.lineTo(...pos(e)); pg.stroke();
};
pad.onpointermove = (e) => { if (!drawing) return; pg.lineTo(...pos(e)); pg.stroke(); };
pad.onpointerup = pad.onpointercancel = () => { drawing = false; };
$('clear').onclick = clearPad;
/** The ink's bounding box with a margin, like a tightly cropped table cell. */
function padCrop() {
  const all = pg.getImageData(0, 0, pad.width, pad.height);
  let x0 = pad.width, y0 = pad.height, x1 = -1, y1 = -1;
  for (let y = 0; y < pad.height; ++y)
    for (let x = 0; x < pad.width; ++x)
      if (all.data[(y * pad.width + x) * 4] < 128) { x0 = Math.min(x0, x); x1 = Math.max(x1, x); y0 = Math.min(y0, y); y1 = Math.max(y1, y); }
  if (x1 < 0) return null;
  const m = Math.round((y1 - y0 + 1) * 0.15) + 2;
  x0 = Math.max(0, x0 - m); y0 = Math.max(0, y0 - m); x1 = Math.min(pad.width - 1, x1 + m); y1 = Math.min(pad.height - 1, y1 + m);
  return pg.getImageData(x0, y0, x1 - x0 + 1, y1 - y0 + 1);
}
$('read-drawing').onclick = () => {
  const img = padCrop();
  if (!img) { showError('Nothing drawn', new Error('draw some digits on the pad first')); return; }
  read(img, 'drawing');
};

$('compare').onchange = () => { $('times').classList.toggle('with-ort', $('compare').checked); };
if (q.get('ort') === '1') { $('compare').checked = true; $('times').classList.add('with-ort'); }

// Cold start: read a reference crop as soon as the page loads.
/** ?runtime=ort: the first crop read with onnxruntime-web running the model, for the
 * same page's cold start with the other runtime (bench/web). Preprocessing and CTC
 * decoding stay onyx-web's (the page has no other implementation of them), from its
 * module loaded in its worker beside onnxruntime-web, without a model session. */
async function readFirstWithOrt(img) {
  state.busy = true;
  document.body.dataset.state = 'busy';
  try {
    await manifestReady();
    const x = await onyx.preprocessTextLine(img, preprocessParams());
    showSeen(x);
    const s = await ortReady();
    const feed = new state.ort.Tensor('float32', x.data, x.dims);
    const t0 = performance.now();
    const out = await s.run({ [s.inputNames[0]]: feed });
    const runMs = performance.now() - t0;
    const y = out[s.outputNames[0]];
    const r = await onyx.ctcDecode(new onyx.Tensor('float32', y.data, y.dims), alphabet());
    showResult(r);
    const cold = performance.now();
    state.ortFirst = false;
    $('o-text').textContent = r.text;
    $('o-first').textContent = fmt(runMs);
    $('o-cold').textContent = fmt(cold);
    window.onyxPage.coldMs = cold;
    showThumbnails();
    $('exec').innerHTML = '';
    const b = document.createElement('b');
    b.textContent = `onnxruntime-web 1.30 · wasm · ${state.ort.env.wasm.numThreads} thread${state.ort.env.wasm.numThreads === 1 ? '' : 's'}`;
    $('exec').append('First crop read by ', b, ' (preprocessing and decoding by onyx-web)');
    $('cold-note').textContent = 'onnxruntime-web cold start (runtime=ort): from navigation to the first string shown, the model run by onnxruntime-web, preprocessing and decoding by onyx-web.';
    document.body.dataset.text = r.text;
    document.body.dataset.state = 'done';
  } catch (e) {
    showError('onnxruntime-web failed', e);
  } finally {
    state.busy = false;
    showThumbnails();
  }
}

// The model loads (fetch, hash check, the wasm module in its worker, session) while the
// crop downloads and decodes.
if (q.get('runtime') === 'ort') {
  $('compare').checked = true;
  $('times').classList.add('with-ort');
  onyx.env.wasm.numThreads = 1;  // preprocessing and decoding only: the single-threaded module
  const k = SAMPLES[Number(q.get('sample') ?? 0)] ?? SAMPLES[0];
  ortReady().catch(() => {});  // readFirstWithOrt reports a failure
  fetch(`${SAMPLE_DIR}/${k}.png`).then((r) => r.blob()).then(decode)
    .then(readFirstWithOrt).catch((e) => { showError('Could not load the sample', e); showThumbnails(); });
} else if (q.get('auto') !== '0') {
  const k = SAMPLES[Number(q.get('sample') ?? 0)] ?? SAMPLES[0];
  sessionReady().catch(() => {});  // read() reports a failure
  fetch(`${SAMPLE_DIR}/${k}.png`).then((r) => r.blob()).then(decode)
    .then((img) => read(img, `sample ${k}`)).catch((e) => { showError('Could not load the sample', e); showThumbnails(); });
} else {
  showThumbnails();
  sessionReady().then(showSession, (e) => showError('Could not load the model', e)).then(() => { document.body.dataset.state = document.body.dataset.state ?? 'ready'; });
}

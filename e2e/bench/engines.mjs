// Speed in each engine, in one run: Chromium (Playwright), Firefox ESR and WebKitGTK (the
// drivers of e2e/engines/), each with the worker build it starts, and Chromium once more with
// the SIMD128 build forced (what the relaxed-SIMD build gains). A benchmark, not a test.
//   trunk build --release && node e2e/bench/engines.mjs [ROUNDS]
//
// Per engine and round, in a fresh page:
// - navigation to the first heatmap on screen (the page's `first-heatmap` performance mark);
// - steps/s on tiny and small: the worker's `?bench`, engine::workload::median_step_ms, the
//   same workload as the native `bench_step`.
// Rounds alternate the engines, since this machine's speed drifts; medians are reported, and
// each engine's speed also as a ratio to Chromium's in the same round.
// Wasm sizes (raw, gzip, brotli) are those of dist/.
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { fileURLToPath } from 'node:url';
import { serveDir, launch } from '../harness.mjs';
import { firefox, webkit } from '../engines/drivers.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const dist = path.join(root, 'dist');
const rounds = Number(process.argv[2] || 3);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const server = await serveDir(dist);
const base = `http://127.0.0.1:${server.address().port}/`;

// What each page measures: the first heatmap, then the worker's benchmark.
const firstHeatmapMs = `async () => {
  for (;;) {
    const mark = performance.getEntriesByName('first-heatmap')[0];
    if (mark) return mark.startTime;
    await new Promise((r) => setTimeout(r, 50));
  }
}`;
const benchResult = `async () => {
  for (;;) {
    const el = document.getElementById('bench');
    if (el && el.dataset.done === 'true') return { build: document.documentElement.dataset.workerSimd, results: JSON.parse(el.textContent) };
    await new Promise((r) => setTimeout(r, 200));
  }
}`;

// Chromium through Playwright, in the drivers' shape (goto, run, close).
async function chromium({ withoutRelaxed = false } = {}) {
  const browser = await launch();
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  if (withoutRelaxed) {
    // The relaxed-SIMD probe (assets/worker-build.js) is the only 37-byte module the worker validates.
    await context.route('**/worker.js', async (route) => {
      const response = await route.fetch();
      const prefix = '{ const v = WebAssembly.validate; WebAssembly.validate = (b) => b.byteLength !== 37 && v(b); }\n';
      await route.fulfill({ response, body: prefix + await response.text() });
    });
  }
  return {
    name: withoutRelaxed ? 'Chromium, SIMD128 forced' : 'Chromium',
    version: browser.version(),
    async goto(url) { await page.goto(url); },
    async run(fn) { return page.evaluate(`(${fn})()`); },
    async close() { await browser.close(); },
  };
}

const ENGINES = [
  { name: 'Chromium', open: () => chromium() },
  { name: 'Chromium, SIMD128 forced', open: () => chromium({ withoutRelaxed: true }) },
  { name: 'Firefox', open: firefox },
  { name: 'WebKit', open: webkit },
];

async function measure(engine) {
  const session = await engine.open();
  try {
    await session.goto(base);
    const first = await session.run(firstHeatmapMs);
    await session.goto(`${base}?bench`);
    const { build, results } = await session.run(benchResult);
    const stepsPerSecond = Object.fromEntries(Object.entries(results).map(([preset, ms]) => [preset, 1000 / ms]));
    return { version: session.version, first, build, stepsPerSecond };
  } finally {
    await session.close();
  }
}

const rows = Object.fromEntries(ENGINES.map((e) => [e.name, []]));
for (let round = 1; round <= rounds; round++) {
  for (const engine of ENGINES) {
    const r = await measure(engine);
    rows[engine.name].push(r);
    console.log(`round ${round} ${engine.name} (${r.build}): first heatmap ${r.first.toFixed(0)} ms, ` +
      Object.entries(r.stepsPerSecond).map(([p, s]) => `${p} ${s.toFixed(1)} steps/s`).join(', '));
  }
}
server.close();

console.log('\nengine                     worker build   first heatmap   tiny steps/s   small steps/s   vs Chromium (tiny, small)');
for (const engine of ENGINES) {
  const rs = rows[engine.name];
  const ratio = (preset) => median(rs.map((r, i) => r.stepsPerSecond[preset] / rows.Chromium[i].stepsPerSecond[preset]));
  console.log(`${engine.name.padEnd(26)} ${rs[0].build.padEnd(14)} ${`${median(rs.map((r) => r.first)).toFixed(0)} ms`.padStart(13)}` +
    ` ${median(rs.map((r) => r.stepsPerSecond.tiny)).toFixed(1).padStart(14)} ${median(rs.map((r) => r.stepsPerSecond.small)).toFixed(2).padStart(15)}` +
    `   ${ratio('tiny').toFixed(2)}, ${ratio('small').toFixed(2)}`);
}

console.log('\nwasm file                                   raw        gzip      brotli');
for (const file of fs.readdirSync(dist).filter((f) => f.endsWith('.wasm')).sort()) {
  const bytes = fs.readFileSync(path.join(dist, file));
  const kb = (n) => `${(n / 1024).toFixed(0)} KB`.padStart(10);
  const gzip = zlib.gzipSync(bytes, { level: 9 }).length;
  const brotli = zlib.brotliCompressSync(bytes, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 11 } }).length;
  console.log(`${file.padEnd(40)} ${kb(bytes.length)} ${kb(gzip)} ${kb(brotli)}`);
}

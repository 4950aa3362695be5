// Heatmap redraw benchmark in Chromium, against the release build (run `trunk build --release`
// first; DIST=dir to use another build). A benchmark, not a test: it prints numbers.
//
// A 30-word sentence gives T = 32 tokens. Every heatmap draw is logged by the app when the page
// defines `window.__heatmapDraws` (see src/heatmap/render.rs): its time from the plotters pixel
// buffer to the last label, and its canvas size.
//  - model view: switching the mask redraws every thumbnail; "one layer" = H of those draws.
//  - labelled: clicking each head of layer 1 in turn redraws its full, labelled T×T heatmaps.
//  - baseline, same run: one putImageData of the same pixel area (what the app does at least),
//    and a naive canvas fillRect per cell (what it avoids).
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { serveDir, launch } from '../harness.mjs';
import { figure, stage } from '../names.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const dist = process.env.DIST || path.resolve(here, '..', '..', 'dist');
const ROUNDS = 15;

const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
const fmt = (x) => x.toFixed(x < 0.1 ? 3 : 2);

const server = await serveDir(dist);
const baseUrl = `http://127.0.0.1:${server.address().port}/`;
const browser = await launch();
const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
const page = await context.newPage();
await page.addInitScript(() => { window.__heatmapDraws = []; });
await page.goto(baseUrl);
await page.waitForSelector('ol.tokens li', { timeout: 30000 });

const words = 'the dog chases a red ball in the park and the cat sleeps under the tree while the sun is warm and the sky is blue today yes it is'.split(' ');
await page.getByLabel('Second sentence').fill('');
await page.getByLabel('Sentence', { exact: true }).fill(words.slice(0, 30).join(' '));
await page.waitForFunction(() => document.querySelectorAll('ol.tokens li').length === 32, null, { timeout: 15000 });
const heads = await page.locator('.model-view .mv-head').count();
const layers = await page.locator('.model-view .mv-layer').count();
await page.waitForTimeout(300);

const drawsSince = (n) => page.evaluate((k) => window.__heatmapDraws.slice(k), n);
const logLength = () => page.evaluate(() => window.__heatmapDraws.length);

// Model view: each mask switch redraws L×H thumbnails (and the labelled figures).
const thumbRounds = [];
const toggleToPaint = [];
for (let r = 0; r < ROUNDS; r++) {
  const start = await logLength();
  const mode = r % 2 === 0 ? 'Causal' : 'Padding';
  // Clicked in the page, and the frames watched there: Playwright's own check() waits for
  // actionability and its polling adds round trips, which are not the page's time.
  const [t0, painted] = await page.evaluate(([mode, k, n]) => new Promise((res) => {
    const radio = [...document.querySelectorAll('input[type=radio]')].find((r) => r.value === mode);
    const t0 = performance.now();
    radio.click();
    const watch = () => {
      if (window.__heatmapDraws.slice(k).filter((d) => !d.labels).length >= n) {
        requestAnimationFrame(() => res([t0, performance.now()]));
      } else {
        requestAnimationFrame(watch);
      }
    };
    requestAnimationFrame(watch);
  }), [mode, start, layers * heads]);
  toggleToPaint.push(painted - t0);
  const thumbs = (await drawsSince(start)).filter((d) => !d.labels);
  thumbRounds.push(thumbs);
}
const thumbLayer = thumbRounds.map((ds) => ds.slice(0, heads).reduce((s, d) => s + d.ms, 0));
const thumbArea = thumbRounds[0].slice(0, heads).reduce((s, d) => s + d.width * d.height, 0);

// The page redraws only figures near the viewport (src/paint.rs). The sections below time the
// draws of figures from the model view down to the stepper's, so they get a screen tall enough
// to hold them all; what one draw costs does not depend on the screen's height.
await page.setViewportSize({ width: 1280, height: 2400 });
await page.evaluate(() => window.scrollTo(0, 0));
await page.waitForTimeout(300);

// Labelled: select each head of layer 1 in turn; the summary figure (T×T) redraws each time.
await page.locator(stage('scores')).click();
const scores = `.stage-panel ${figure('raw-scores')}`;
const labelledRounds = [];
let labelledArea = 0;
for (let r = 0; r < ROUNDS; r++) {
  let total = 0;
  let area = 0;
  // 2, 3, …, H, 1: every click changes the selection (head 1 is selected at first).
  for (let i = 1; i <= heads; i++) {
    const h = (i % heads) + 1;
    const start = await logLength();
    await page.getByRole('button', { name: `Layer 1 · Head ${h}`, exact: true }).click();
    const caption = `Layer 1 · Head ${h} · scores QKᵀ`;
    await page.waitForFunction(([css, c]) => document.querySelector(`${css} figcaption`)?.textContent === c, [scores, caption]);
    await page.waitForFunction((k) => window.__heatmapDraws.slice(k).filter((d) => d.labels).length >= 2, start);
    // The stage figure: the largest labelled draw of this selection.
    const drawn = (await drawsSince(start)).filter((d) => d.labels);
    const big = drawn.reduce((a, d) => (d.width * d.height > a.width * a.height ? d : a));
    total += big.ms;
    area += big.width * big.height;
  }
  labelledRounds.push(total);
  labelledArea = area;
}

// The stages around attention: each click on the stepper redraws that stage's labelled figures
// (and, for the feed-forward stage, the GELU chart, which is not a heatmap and not in the log).
// A stage's redraw = the sum of its heatmap draws; "to frame" = click to the next frame after them.
const STAGES = [['embeddings', 5], ['attention-add-norm', 3], ['feed-forward', 3], ['output-add-norm', 3]];
const stageRounds = STAGES.map(() => ({ draw: [], frame: [] }));
for (let r = 0; r < 5; r++) {
  for (const [k, [name, figures]] of STAGES.entries()) {
    await page.locator(stage('scores')).click();
    await page.waitForTimeout(50);
    const start = await logLength();
    // Clicked in the page, and the frame awaited there: Playwright's own click waits for
    // frames (actionability) and its polling adds more, which is not the page's time.
    const [t0, painted] = await page.evaluate(([css, k, n]) => new Promise((res) => {
      const button = document.querySelector(css);
      const t0 = performance.now();
      button.click();
      const wait = () => {
        if (window.__heatmapDraws.slice(k).filter((d) => d.labels).length >= n) {
          requestAnimationFrame(() => res([t0, performance.now()]));
        } else {
          setTimeout(wait, 0);
        }
      };
      wait();
    }), [stage(name), start, figures]);
    const drawn = (await drawsSince(start)).filter((d) => d.labels);
    stageRounds[k].draw.push(drawn.reduce((s, d) => s + d.ms, 0));
    stageRounds[k].frame.push(painted - t0);
  }
}

// Baselines in the same page: one putImageData of the same pixel area, and fillRect per cell.
const baseline = await page.evaluate(([thumbArea, labelledArea, t, heads, rounds]) => {
  const canvas = document.createElement('canvas');
  const side = Math.ceil(Math.sqrt(labelledArea));
  canvas.width = side; canvas.height = side;
  const ctx = canvas.getContext('2d');
  // performance.now() ticks in 0.1 ms steps here: time batches of 20 calls, report per call.
  const timeIt = (f) => {
    const xs = [];
    for (let i = 0; i < rounds; i++) {
      const t0 = performance.now();
      for (let k = 0; k < 20; k++) f();
      xs.push((performance.now() - t0) / 20);
    }
    xs.sort((a, b) => a - b);
    return xs[Math.floor(xs.length / 2)];
  };
  const put = (area) => {
    const s = Math.ceil(Math.sqrt(area));
    const img = new ImageData(s, s);
    for (let i = 0; i < img.data.length; i += 4) { img.data[i] = (i * 7) & 255; img.data[i + 1] = 120; img.data[i + 2] = 60; img.data[i + 3] = 255; }
    return () => { ctx.putImageData(img, 0, 0); ctx.getImageData(0, 0, 1, 1); };
  };
  const cellRects = () => {
    for (let h = 0; h < heads; h++) for (let r = 0; r < t; r++) for (let c = 0; c < t; c++) {
      ctx.fillStyle = `rgb(${(r * 8) & 255},${(c * 8) & 255},${h * 40})`;
      ctx.fillRect(c * 10, r * 10, 9, 9);
    }
    ctx.getImageData(0, 0, 1, 1);
  };
  return { putThumbs: timeIt(put(thumbArea)), putLabelled: timeIt(put(labelledArea)), fillRect: timeIt(cellRects) };
}, [thumbArea, labelledArea, 32, heads, 41]);

const ua = await page.evaluate(() => navigator.userAgent.match(/Chrome\/[\d.]+/)?.[0] ?? navigator.userAgent);
const t = 32;
console.log(`heatmap redraw benchmark (${ua}, release build, T = ${t}, ${layers} layers × ${heads} heads, median of ${ROUNDS})`);
console.log(`  model view, one layer (${heads} thumbnails, ${thumbArea} px): ${fmt(median(thumbLayer))} ms`
  + `  | putImageData of the same area: ${fmt(baseline.putThumbs)} ms  | ratio ${fmt(median(thumbLayer) / Math.max(baseline.putThumbs, 1e-3))}×`);
console.log(`  labelled, one layer (${heads} T×T figures with token labels and colour bar, ${labelledArea} px): ${fmt(median(labelledRounds))} ms`
  + `  | putImageData of the same area: ${fmt(baseline.putLabelled)} ms  | ratio ${fmt(median(labelledRounds) / Math.max(baseline.putLabelled, 1e-3))}×`);
console.log(`  naive canvas fillRect per cell (${heads}×${t}×${t} calls): ${fmt(baseline.fillRect)} ms`);
console.log(`  mask switch → next frame, whole page (worker inspect + all ${layers * heads} thumbnails + figures): ${fmt(median(toggleToPaint))} ms`);
for (const [k, [name, figures]] of STAGES.entries()) {
  const draw = median(stageRounds[k].draw);
  console.log(`  stage "${name}": ${figures} labelled figures drawn in ${fmt(draw)} ms (target < 16 ms: ${draw < 16 ? 'met' : 'NOT met'}), click → next frame ${fmt(median(stageRounds[k].frame))} ms (median of 5)`);
}
const target = median(labelledRounds);
console.log(`  target < 16 ms for all heads of one layer: ${target < 16 ? 'met' : 'NOT met'} (labelled ${fmt(target)} ms, thumbnails ${fmt(median(thumbLayer))} ms)`);
await browser.close();
server.close();

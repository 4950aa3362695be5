// Steps per second with several training workers against one, in Chromium, in the same run.
//   trunk build --release && node e2e/bench/workers.mjs [ROUNDS] [--phone] [--hidden] [--cpu] [--case 'small b8'] [--against DIR]
//
// Each case is set through the settings the page keeps (localStorage), then for each worker
// count a fresh page plays for a while: the first seconds warm up (the gradient workers start
// and build their copies), the next ones are counted. Rounds alternate the counts back to back,
// since this machine's speed drifts; each round's ratio against one worker is kept and the
// median over rounds reported. `--phone` runs the same in Chromium's phone emulation (a
// 390 px touch screen) with 1, 2 and 4 workers. `--hidden` hides the page (display: none) once
// it plays, so it lays out and paints nothing: what the workers reach when the page's drawing
// takes no core from them, the most that drawing less could give. `--cpu` (Linux) also gives
// the cores Chromium's threads used while counted, from /proc: its workers' threads, and the
// rest (the page, its compositing and the browser around it). `--against DIR` also serves another
// build (say, dist/ copied before a change) and measures it in the same rounds, case by case right
// after this one: its steps/s are the baseline each of this build's figures is a ratio against.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { serveDir, launch } from '../harness.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const rounds = Number(process.argv.find((a) => /^\d+$/.test(a)) || 3);
const phone = process.argv.includes('--phone');
const hidden = process.argv.includes('--hidden');
const cpu = process.argv.includes('--cpu');
const counts = phone ? [1, 2, 4] : [1, 2];
const only = process.argv.includes('--case') ? process.argv[process.argv.indexOf('--case') + 1] : null;
const against = process.argv.includes('--against') ? process.argv[process.argv.indexOf('--against') + 1] : null;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const BASE = { preset: 'Tiny', learning_rate: 1e-3, batch_size: 8, mask_prob: 0.15, seed: 0, optimizer: 'Adam', train_mask: 'Padding', max_len: 32 };
const ALL_CASES = [
  { name: 'tiny b8', settings: BASE, warm: 2000, count: 4000 },
  { name: 'small b8', settings: { ...BASE, preset: 'Small' }, warm: 4000, count: 8000 },
  { name: 'small b32', settings: { ...BASE, preset: 'Small', batch_size: 32 }, warm: 6000, count: 12000 },
  { name: 'seq2seq Reverse', settings: { ...BASE, task: 'Reverse' }, warm: 3000, count: 6000 },
  { name: 'Compare tiny', settings: { ...BASE, compare: { positions: 'rotary' } }, warm: 2000, count: 4000 },
];
const CASES = ALL_CASES.filter((c) => !only || c.name === only);
if (CASES.length === 0) throw new Error(`no case ${only}: ${ALL_CASES.map((c) => c.name).join(', ')}`);
const TARGETS = { 'tiny b8': 1.0, 'small b8': 1.6, 'small b32': 1.6, 'seq2seq Reverse': 1.6, 'Compare tiny': 1.7 };

const server = await serveDir(path.join(root, 'dist'));
const baseUrl = `http://127.0.0.1:${server.address().port}/`;
const otherServer = against && await serveDir(path.resolve(against));
const otherUrl = against && `http://127.0.0.1:${otherServer.address().port}/`;
const browser = await launch();
const step = (page) => page.evaluate(() => Number(document.querySelector('[data-step]')?.dataset.step));

async function stepsPerSecond(c, workers, url = baseUrl) {
  const context = await browser.newContext(phone
    ? { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 3 }
    : { viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  await page.goto(url);
  await page.evaluate((s) => { localStorage.clear(); localStorage.setItem('attention-lab/settings', JSON.stringify(s)); }, c.settings);
  await page.reload();
  await page.waitForSelector('figure.heatmap canvas', { timeout: 60000 });
  await page.waitForFunction(() => !document.querySelector('.busy'), null, { timeout: 60000 });
  await page.locator('.controls label.workers select').selectOption(String(workers));
  await page.waitForFunction((n) => document.querySelector('.workers-facts')?.dataset.workers === String(n), workers, { timeout: 10000 });
  await page.getByRole('button', { name: 'Play', exact: true }).click();
  if (hidden) await page.evaluate(() => { document.body.style.display = 'none'; });
  await page.waitForTimeout(c.warm);
  const [s0, t0, ticks0] = [await step(page), Date.now(), cpu && threadTicks()];
  await page.waitForTimeout(c.count);
  const [s1, t1, ticks1] = [await step(page), Date.now(), cpu && threadTicks()];
  await context.close();
  const seconds = (t1 - t0) / 1000;
  if (cpu) cores[`${c.name} ${workers}`] = coresUsed(ticks0, ticks1, seconds);
  return (s1 - s0) / seconds;
}

/// Each Chromium thread's CPU time so far (clock ticks), by process/thread id, with its name.
function threadTicks() {
  const ticks = new Map();
  for (const pid of fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      if (!fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('chromium')) continue;
      for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
        const stat = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
        const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        ticks.set(`${pid}/${tid}`, { name, ticks: Number(fields[11]) + Number(fields[12]) });
      }
    } catch { /* a process or thread that ended meanwhile */ }
  }
  return ticks;
}

/// Cores used between two `threadTicks`: each worker thread's, and all other threads' together.
function coresUsed(before, after, seconds) {
  const TICKS_PER_SECOND = 100;
  const workers = [];
  let rest = 0;
  for (const [id, { name, ticks }] of after) {
    const used = (ticks - (before.get(id)?.ticks ?? 0)) / TICKS_PER_SECOND / seconds;
    if (name.startsWith('DedicatedWorker')) { if (used >= 0.01) workers.push(used); } else rest += used;
  }
  return { workers: workers.sort((a, b) => b - a), rest };
}

const results = {};
const baseline = {};
const cores = {};
for (let round = 1; round <= rounds; round++) {
  for (const c of CASES) {
    const sps = {};
    for (const n of counts) sps[n] = await stepsPerSecond(c, n);
    (results[c.name] ??= []).push(sps);
    console.log(`round ${round} ${c.name}: ${counts.map((n) => `${n}: ${sps[n].toFixed(1)} steps/s`).join(', ')}`);
    if (against) {
      const other = {};
      for (const n of counts) other[n] = await stepsPerSecond(c, n, otherUrl);
      (baseline[c.name] ??= []).push(other);
      console.log(`round ${round} ${c.name} (${against}): ${counts.map((n) => `${n}: ${other[n].toFixed(1)} steps/s`).join(', ')}`);
    }
    for (const n of cpu ? counts : []) {
      const { workers, rest } = cores[`${c.name} ${n}`];
      console.log(`    ${n} worker${n > 1 ? 's' : ''}: workers' threads ${workers.map((w) => w.toFixed(2)).join(' + ')} cores, the rest ${rest.toFixed(2)}`);
    }
  }
}
await browser.close();
server.close();
if (otherServer) otherServer.close();

console.log(`\n${phone ? 'phone emulation' : 'desktop'}${hidden ? ', page hidden' : ''}; ratios = median over rounds of each round's steps/s against 1 worker`);
for (const c of CASES) {
  const rs = results[c.name];
  const parts = counts.slice(1).map((n) => {
    const ratio = median(rs.map((r) => r[n] / r[1]));
    return `${n} workers ${ratio.toFixed(2)}×`;
  });
  const two = median(rs.map((r) => r[2] / r[1]));
  const target = TARGETS[c.name];
  console.log(`${c.name.padEnd(16)} 1 worker ${median(rs.map((r) => r[1])).toFixed(1).padStart(6)} steps/s; ${parts.join(', ')}  (target ≥ ${target}× with 2: ${two >= target ? 'met' : 'MISSED'})`);
}
if (against) {
  console.log(`\nthis build against ${against}: median over rounds of each round's steps/s ratio (1.00× = the same speed)`);
  for (const c of CASES) {
    const ratios = counts.map((n) => `${n} worker${n > 1 ? 's' : ''} ${median(results[c.name].map((r, i) => r[n] / baseline[c.name][i][n])).toFixed(2)}×`);
    console.log(`${c.name.padEnd(16)} ${ratios.join(', ')}`);
  }
}

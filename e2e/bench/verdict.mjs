// Time from Play to a claim's verdict in the page, in Chromium, at the page's default seed:
// the claim is Run at step 0 and measured again as the model trains.
//   trunk build --release && node e2e/bench/verdict.mjs heads|induction [ROUNDS] [--against DIR]
//
//   heads      the page as it opens (the default run); the verdict is the Heads claim's first
//              "Borne out" (two heads with different roles).
//   induction  Objective "Next token", Task "Repeat" (which brings Repeat's setting); the
//              verdict is the change: the first measurement with the second copy's accuracy at
//              0.9 or more.
//
// Each round is a fresh page. The same number of steps is then trained natively by
// `attention-lab train` (one thread, the same run) in the same round: the baseline the page's
// time is a ratio against. `--against DIR` serves another build (dist/ of an earlier commit)
// in the same rounds, alternating with this one.
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { serveDir, launch } from '../harness.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const args = process.argv.slice(2);
const rounds = Number(args.find((a) => /^\d+$/.test(a)) || 3);
const against = args.includes('--against') ? args[args.indexOf('--against') + 1] : null;
const cli = path.join(root, 'target/release/attention-lab');
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const CLAIMS = {
  heads: {
    card: 'article.claim[data-claim="Heads"]',
    // Past every unseen seed's step (3,400 at worst) and the earlier default run's 6,893.
    budget: 10000,
    async choose() {},
    native: (steps, seed) => ['train', '--seed', seed, '--steps', steps, '--threads', '1'],
  },
  induction: {
    card: 'article.claim[data-claim="InductionHeads"]',
    budget: 3000,
    // Chosen as a learner does (and as earlier builds allow): Objective, then Task Repeat,
    // which brings Repeat's measured setting.
    async choose(page) {
      await page.getByLabel('Objective').selectOption('next-token');
      await page.waitForFunction(() => document.querySelector('header')?.textContent.includes('decoder'), null, { timeout: 60000 });
      await page.locator('[data-next-token-task]').selectOption('repeat');
      await page.waitForFunction(() => document.querySelector('header')?.textContent.includes('Repeat'), null, { timeout: 120000 });
    },
    native: (steps, seed) => {
      const config = path.join(fs.mkdtempSync('/tmp/verdict-bench-'), 'tiny.json');
      fs.writeFileSync(config, JSON.stringify({ vocab_size: 100, hidden_size: 64, num_hidden_layers: 2, num_attention_heads: 4, intermediate_size: 256, max_position_embeddings: 128 }));
      return ['train', '--init', config, '--task', 'repeat', '--seed', seed, '--steps', steps, '--eval-every', steps, '--threads', '1'];
    },
  },
};
const which = args.find((a) => a in CLAIMS);
if (!which) {
  console.error(`usage: node e2e/bench/verdict.mjs ${Object.keys(CLAIMS).join('|')} [ROUNDS] [--against DIR]`);
  process.exit(2);
}
const claim = CLAIMS[which];

async function timeToVerdict(browser, baseUrl) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  // The page's load: from the address to the first heatmap drawn, nothing busy.
  const opened = Date.now();
  await page.goto(baseUrl);
  await page.waitForSelector('figure.heatmap canvas', { timeout: 60000 });
  await page.waitForFunction(() => !document.querySelector('.busy'), null, { timeout: 60000 });
  const load = (Date.now() - opened) / 1000;
  await claim.choose(page);
  await page.waitForSelector('figure.heatmap canvas', { timeout: 60000 });
  await page.waitForFunction(() => !document.querySelector('.busy'), null, { timeout: 60000 });
  const seed = await page.getByLabel('Seed', { exact: true }).inputValue();
  // Reset, then the claim at step 0, then Play: the clocks run from the Reset and from Play.
  const reset = Date.now();
  await page.getByRole('button', { name: 'Reset', exact: true }).first().click();
  await page.waitForFunction(() => document.querySelector('[data-step]')?.dataset.step === '0' && !document.querySelector('.busy'), null, { timeout: 60000 });
  await page.locator(claim.card).getByRole('button', { name: 'Run', exact: true }).click();
  await page.waitForFunction((c) => document.querySelector(c)?.dataset.state === 'done', claim.card, { timeout: 60000 });
  const play = Date.now();
  await page.getByRole('button', { name: 'Play', exact: true }).click();
  // Run in the page (the page's CSP forbids evaluating text, so one function holds both
  // claims' tests).
  const reached = await page.waitForFunction(([which, card, budget]) => {
    let at = null;
    if (which === 'heads') {
      // The step the card measured when it first said "Borne out".
      const verdict = document.querySelector(`${card} .verdict`);
      const step = Number(document.querySelector(`${card} [data-measured-step]`)?.dataset.measuredStep);
      at = verdict?.dataset.verdict === 'borne-out' ? step : null;
    } else {
      // The step of the first point with the second copy's accuracy at 0.9 or more.
      const figure = document.querySelector(`${card} figure.claim-chart`);
      const second = figure && JSON.parse(figure.dataset.series)[1];
      const i = second?.y.findIndex((v) => v >= 0.9) ?? -1;
      at = i >= 0 ? second.x[i] : null;
    }
    if (at !== null && Number.isFinite(at)) return { step: at, reached: true };
    const step = Number(document.querySelector('[data-step]')?.dataset.step);
    return step >= budget ? { step, reached: false } : null;
  }, [which, claim.card, claim.budget], { timeout: 1800000, polling: 100 }).then((h) => h.jsonValue());
  const end = Date.now();
  await context.close();
  return { seed, load, fromPlay: (end - play) / 1000, fromReset: (end - reset) / 1000, ...reached };
}

/// The same steps natively, one thread: seconds.
function nativeSeconds(steps, seed) {
  const started = process.hrtime.bigint();
  const r = spawnSync(cli, claim.native(String(steps), String(seed)), { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`the CLI failed: ${r.stderr}`);
  return Number(process.hrtime.bigint() - started) / 1e9;
}

const builds = [{ name: 'this build', dir: path.join(root, 'dist') }, ...(against ? [{ name: against, dir: path.resolve(against) }] : [])];
const servers = await Promise.all(builds.map((b) => serveDir(b.dir)));
const browser = await launch();
const results = builds.map(() => []);
for (let r = 0; r < rounds; r++) {
  for (const [i, b] of builds.entries()) {
    const page = await timeToVerdict(browser, `http://127.0.0.1:${servers[i].address().port}/`);
    const native = fs.existsSync(cli) ? nativeSeconds(page.step, page.seed) : NaN;
    results[i].push({ ...page, native, ratio: page.fromPlay / native });
    console.log(`round ${r + 1} ${b.name}: seed ${page.seed}, ${page.reached ? `reached at step ${page.step}` : `not reached by step ${page.step}`}, `
      + `${page.fromPlay.toFixed(1)} s from Play (${page.fromReset.toFixed(1)} s from Reset; the page loaded in ${page.load.toFixed(2)} s); natively ${native.toFixed(1)} s for those steps (page ÷ native ${(page.fromPlay / native).toFixed(2)})`);
  }
}
await browser.close();
servers.forEach((s) => s.close());
const span = (xs) => `[${Math.min(...xs).toFixed(1)}–${Math.max(...xs).toFixed(1)}]`;
for (const [i, b] of builds.entries()) {
  const rs = results[i];
  console.log(`${which}, ${b.name}: median ${median(rs.map((x) => x.fromPlay)).toFixed(1)} s from Play to the verdict ${span(rs.map((x) => x.fromPlay))}, `
    + `median step ${median(rs.map((x) => x.step))}, median ${median(rs.map((x) => x.ratio)).toFixed(2)}× the native time of the same steps; reached in ${rs.filter((x) => x.reached).length} of ${rs.length}; `
    + `the page loaded in ${median(rs.map((x) => x.load)).toFixed(2)} s (median) ${span(rs.map((x) => x.load))}`);
}
if (against && results[1].length) {
  const ratio = median(results[0].map((x) => x.fromPlay)) / median(results[1].map((x) => x.fromPlay));
  const load = median(results[0].map((x) => x.load)) / median(results[1].map((x) => x.load));
  console.log(`${which}: this build's median time from Play is ${ratio.toFixed(2)}× ${against}'s, and its load ${load.toFixed(2)}×, in the same rounds`);
}

// Time from Reset to the induction heads' change in the page, at Repeat's default seed, in
// Chromium: the Induction heads claim is Run at step 0 and measured again as the model trains;
// the change is the first measurement with the second copy's accuracy at 0.9 or more.
//   trunk build --release && node e2e/bench/induction.mjs [ROUNDS] [--against DIR] [--cpus N]
//
// Each round is a fresh page, Objective "Next token" and Task "Repeat" chosen in it. The same
// number of steps is then trained natively by `attention-lab train --task repeat` (one thread)
// in the same round: the baseline the page's time is a ratio against. `--against DIR` serves
// another build (dist/ of an earlier commit) in the same rounds. `--cpus N` pins Chromium to
// N cores (taskset), as a 2-core machine has.
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
const CLAIM = 'article.claim[data-claim="InductionHeads"]';
const BUDGET_STEPS = 3000;

async function timeToChange(browser, baseUrl) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  // Chosen as a learner does (and as earlier builds allow): Objective, then Task Repeat, which
  // brings Repeat's measured setting.
  await page.goto(baseUrl);
  await page.waitForSelector('figure.heatmap canvas', { timeout: 60000 });
  await page.getByLabel('Objective').selectOption('next-token');
  await page.waitForFunction(() => document.querySelector('header')?.textContent.includes('decoder'), null, { timeout: 60000 });
  await page.locator('[data-next-token-task]').selectOption('repeat');
  await page.waitForFunction(() => document.querySelector('header')?.textContent.includes('Repeat'), null, { timeout: 120000 });
  await page.waitForSelector('figure.heatmap canvas', { timeout: 60000 });
  await page.waitForFunction(() => !document.querySelector('.busy'), null, { timeout: 60000 });
  const seed = await page.getByLabel('Seed', { exact: true }).inputValue();
  // Reset, then the claim at step 0, then Play: the clock runs from the Reset.
  const started = Date.now();
  await page.getByRole('button', { name: 'Reset', exact: true }).first().click();
  await page.waitForFunction(() => document.querySelector('[data-step]')?.dataset.step === '0' && !document.querySelector('.busy'), null, { timeout: 60000 });
  await page.locator(CLAIM).getByRole('button', { name: 'Run', exact: true }).click();
  await page.waitForFunction((c) => document.querySelector(c)?.dataset.state === 'done', CLAIM, { timeout: 60000 });
  await page.getByRole('button', { name: 'Play', exact: true }).click();
  const change = await page.waitForFunction(([c, budget]) => {
    const figure = document.querySelector(`${c} figure.claim-chart`);
    const series = figure && JSON.parse(figure.dataset.series);
    const second = series?.[1];
    const step = Number(document.querySelector('[data-step]')?.dataset.step);
    const at = second?.y.findIndex((v) => v >= 0.9) ?? -1;
    if (at >= 0) return { step: second.x[at], changed: true };
    return step >= budget ? { step, changed: false } : null;
  }, [CLAIM, BUDGET_STEPS], { timeout: 1200000, polling: 100 }).then((h) => h.jsonValue());
  const seconds = (Date.now() - started) / 1000;
  await context.close();
  return { seed, seconds, ...change };
}

/// The same steps natively, one thread: seconds.
function nativeSeconds(steps, seed) {
  const config = path.join(fs.mkdtempSync('/tmp/induction-bench-'), 'tiny.json');
  fs.writeFileSync(config, JSON.stringify({ vocab_size: 100, hidden_size: 64, num_hidden_layers: 2, num_attention_heads: 4, intermediate_size: 256, max_position_embeddings: 128 }));
  const started = process.hrtime.bigint();
  const r = spawnSync(cli, ['train', '--init', config, '--task', 'repeat', '--seed', String(seed), '--steps', String(steps),
    '--eval-every', String(steps), '--threads', '1'], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`the CLI failed: ${r.stderr}`);
  return Number(process.hrtime.bigint() - started) / 1e9;
}

const builds = [{ name: 'this build', dir: path.join(root, 'dist') }, ...(against ? [{ name: against, dir: path.resolve(against) }] : [])];
const servers = await Promise.all(builds.map((b) => serveDir(b.dir)));
const browser = await launch();
const results = builds.map(() => []);
for (let r = 0; r < rounds; r++) {
  for (const [i, b] of builds.entries()) {
    const page = await timeToChange(browser, `http://127.0.0.1:${servers[i].address().port}/`);
    const native = fs.existsSync(cli) ? nativeSeconds(page.step, page.seed) : NaN;
    results[i].push({ ...page, native, ratio: page.seconds / native });
    console.log(`round ${r + 1} ${b.name}: seed ${page.seed}, ${page.changed ? `changed at step ${page.step}` : `no change by step ${page.step}`}, `
      + `${page.seconds.toFixed(1)} s from Reset; natively ${native.toFixed(1)} s for those steps (page ÷ native ${(page.seconds / native).toFixed(2)})`);
  }
}
await browser.close();
servers.forEach((s) => s.close());
for (const [i, b] of builds.entries()) {
  const rs = results[i];
  console.log(`${b.name}: median ${median(rs.map((x) => x.seconds)).toFixed(1)} s from Reset to the change `
    + `[${Math.min(...rs.map((x) => x.seconds)).toFixed(1)}–${Math.max(...rs.map((x) => x.seconds)).toFixed(1)}], `
    + `median ${median(rs.map((x) => x.ratio)).toFixed(2)}× the native time of the same steps; changed in ${rs.filter((x) => x.changed).length} of ${rs.length}`);
}

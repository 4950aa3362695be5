// The Claims panel: every claim run to completion in the worker, its figure's data-series
// read back and checked against the claim; Cancel stops a run and the page stays responsive.
import fs from 'node:fs';
import path from 'node:path';
import { openPage, openReady, assert, framesRendered } from '../harness.mjs';
import { figure } from '../names.mjs';


/// A fresh page, ready, that records its long main-thread tasks from here on.
async function openWatched(browser, baseUrl, viewport) {
  const opened = await openReady(browser, baseUrl, viewport);
  await opened.page.evaluate(() => {
    window.__longTasks = [];
    new PerformanceObserver((list) => list.getEntries().forEach((e) => window.__longTasks.push(e.duration)))
      .observe({ type: 'longtask', buffered: false });
  });
  return opened;
}

const card = (page, claim) => page.locator(`article.claim[data-claim="${claim}"]`);

async function run(page, claim, timeout = 240000) {
  await card(page, claim).getByRole('button', { name: 'Run', exact: true }).click();
  await page.waitForFunction((c) => {
    const s = document.querySelector(`article.claim[data-claim="${c}"]`)?.dataset.state;
    return s === 'done' || s === 'failed';
  }, claim, { timeout });
  const state = await card(page, claim).getAttribute('data-state');
  const error = state === 'failed' ? await card(page, claim).locator('.error').textContent() : '';
  return { state, error };
}

async function seriesOf(page, claim) {
  return JSON.parse(await card(page, claim).locator('figure.claim-chart').getAttribute('data-series'));
}

// Least-squares slope of log y on log x, over positive points.
function slope({ x, y }) {
  const pts = x.map((v, i) => [v, y[i]]).filter(([a, b]) => a > 0 && b > 0).map(([a, b]) => [Math.log(a), Math.log(b)]);
  const mx = pts.reduce((s, p) => s + p[0], 0) / pts.length;
  const my = pts.reduce((s, p) => s + p[1], 0) / pts.length;
  const sxy = pts.reduce((s, p) => s + (p[0] - mx) * (p[1] - my), 0);
  const sxx = pts.reduce((s, p) => s + (p[0] - mx) ** 2, 0);
  return sxy / sxx;
}

export const tests = [
  {
    name: 'claims: every claim runs to completion and its data-series bears the claim out',
    async run({ browser, baseUrl, artifacts }) {
      const { page, context, problems } = await openWatched(browser, baseUrl);
      await page.getByLabel('Sentence', { exact: true }).fill('the dog chases a red ball');
      // The worker has the sentence once its tokens come back ("red" where the default has [MASK]).
      await page.waitForFunction(() => [...document.querySelectorAll('ol.tokens li')].some((li) => li.firstChild?.textContent === 'red'),
        null, { timeout: 10000 });

      // 1. Leakage: exact zeros before the changed word under causal, movement with padding.
      let r = await run(page, 'Leakage');
      assert(r.state === 'done', `leakage: ${r.error}`);
      const [padding, causal] = await seriesOf(page, 'Leakage');
      assert(padding.name === 'Padding' && causal.name === 'Causal', `${padding.name}, ${causal.name}`);
      const changed = causal.y.findIndex((v) => v > 0);
      assert(changed === 6, `the first moved position under causal is ${changed}: ${causal.y}`);
      assert(causal.y.slice(0, changed).every((v) => v === 0), `causal before the change: ${causal.y}`);
      assert(padding.y.every((v) => v > 0), `padding: ${padding.y}`);

      // 2. Memory: tiled grows at most about linearly.
      r = await run(page, 'Memory');
      assert(r.state === 'done', `memory: ${r.error}`);
      const memory = await seriesOf(page, 'Memory');
      const caption = await card(page, 'Memory').locator('figcaption').textContent();
      assert(caption.startsWith('Memory'), caption);
      assert(memory.map((s) => s.name).join() === 'Full,Tiled', memory.map((s) => s.name).join());
      const [fullMem, tiledMem] = memory;
      const memSlopes = [slope(fullMem), slope(tiledMem)];
      assert(memSlopes[1] < 1.3, `tiled memory slope ${memSlopes[1]}`);
      const ratio = fullMem.y.at(-1) / tiledMem.y.at(-1);
      await card(page, 'Memory').screenshot({ path: path.join(artifacts, 'claims-memory.png') });

      // 3. Time: linear grows at most about linearly.
      r = await run(page, 'Time');
      assert(r.state === 'done', `time: ${r.error}`);
      const time = await seriesOf(page, 'Time');
      assert(time.map((s) => s.name).join() === 'Full,Tiled,Window (W = 64),Linear', time.map((s) => s.name).join());
      const timeSlopes = Object.fromEntries(time.map((s) => [s.name, slope(s)]));
      // Times are the clock's: their slopes are reported below, not asserted (the memory ones,
      // counted in bytes, are).
      await card(page, 'Time').screenshot({ path: path.join(artifacts, 'claims-time.png') });

      // 4. KV cache: bytes per token shrink in proportion to G.
      r = await run(page, 'KvCache');
      assert(r.state === 'done', `kv cache: ${r.error}`);
      const [mine] = await seriesOf(page, 'KvCache');
      assert(mine.x[0] === 4 && mine.y[0] === 2 * 2 * 4 * 16 * 4, `this model: ${JSON.stringify(mine)}`);

      // 5. Extrapolation trains models of its own (19-extrapolation runs it to the end): it
      // starts on any model, and Cancel stops it.
      await card(page, 'Extrapolation').getByRole('button', { name: 'Run', exact: true }).click();
      await page.waitForFunction(() => /of 270/.test(document.querySelector('article.claim[data-claim="Extrapolation"] .claim-count')?.textContent ?? ''), null, { timeout: 30000 });
      // It takes minutes: a claim run meanwhile goes first and ends, then it goes on.
      const done = (text) => Number(/(\d+) of 270/.exec(text)?.[1] ?? -1);
      const extrapolationCount = () => card(page, 'Extrapolation').locator('.claim-count').textContent();
      await page.waitForFunction(() => /[1-9]\d* of 270/.test(document.querySelector('article.claim[data-claim="Extrapolation"] .claim-count')?.textContent ?? ''), null, { timeout: 120000 });
      r = await run(page, 'Leakage', 60000);
      assert(r.state === 'done', `leakage while extrapolation trains: ${r.error}`);
      const before = done(await extrapolationCount());
      await page.waitForFunction((n) => {
        const m = /(\d+) of 270/.exec(document.querySelector('article.claim[data-claim="Extrapolation"] .claim-count')?.textContent ?? '');
        return m && Number(m[1]) > n;
      }, before, { timeout: 120000 });
      const extrapolationState = await card(page, 'Extrapolation').getAttribute('data-state');
      assert(extrapolationState === 'running', `extrapolation after Leakage went first: ${extrapolationState}`);
      console.log(`     Leakage ran and ended while Extrapolation trained; Extrapolation went on past ${before} of 270`);
      await card(page, 'Extrapolation').getByRole('button', { name: 'Cancel', exact: true }).click();
      await page.waitForFunction(() => document.querySelector('article.claim[data-claim="Extrapolation"]')?.dataset.state === 'cancelled', null, { timeout: 60000 });

      const longest = await page.evaluate(() => Math.max(0, ...window.__longTasks));
      console.log(`     claims: memory slopes full ${memSlopes[0].toFixed(2)} tiled ${memSlopes[1].toFixed(2)}, `
        + `full ÷ tiled at T = ${fullMem.x.at(-1)}: ${ratio.toFixed(0)}×; time slopes `
        + Object.entries(timeSlopes).map(([k, v]) => `${k} ${v.toFixed(2)}`).join(', ')
        + `; longest main-thread task ${longest.toFixed(0)} ms`);
      await page.locator('section.claims').screenshot({ path: path.join(artifacts, 'claims-panel.png') });
      assert(problems.length === 0, problems.join('\n'));
      await context.close();
    },
  },
  {
    name: 'claims: Cancel stops a run, and the model is as it was',
    async run({ browser, baseUrl }) {
      const { page, context, problems } = await openWatched(browser, baseUrl);
      const summary = figure('summary-weights');
      const weights = () => page.locator(summary).getAttribute('data-matrix');
      const before = await weights();
      await card(page, 'Time').getByRole('button', { name: 'Run', exact: true }).click();
      await card(page, 'Time').locator('progress').waitFor({ timeout: 10000 });
      await card(page, 'Time').getByRole('button', { name: 'Cancel', exact: true }).click();
      await page.waitForFunction(() => document.querySelector('article.claim[data-claim="Time"]')?.dataset.state === 'cancelled', null, { timeout: 30000 });
      const note = await card(page, 'Time').locator('.notice').textContent();
      assert(note.startsWith('Cancelled'), note);
      // The explorer still answers, with the same weights.
      await page.getByLabel('Sentence', { exact: true }).fill('the ball rolls under the tree .');
      await page.waitForFunction(([css, b]) => {
        const f = document.querySelector(css);
        return f && f.dataset.matrix !== b;
      }, [summary, before], { timeout: 10000 });
      await page.getByLabel('Sentence', { exact: true }).fill('the dog chases a [MASK] ball .');
      await page.waitForFunction(([css, b]) => {
        const f = document.querySelector(css);
        return f && f.dataset.matrix === b;
      }, [summary, before], { timeout: 10000 });
      // Run again after a cancel: it completes.
      await card(page, 'KvCache').getByRole('button', { name: 'Run', exact: true }).click();
      await page.waitForFunction(() => document.querySelector('article.claim[data-claim="KvCache"]')?.dataset.state === 'done', null, { timeout: 10000 });
      assert(problems.length === 0, problems.join('\n'));
      await context.close();
    },
  },
  {
    name: 'claims: a claim runs in a worker of its own while training goes on; its death ends only the claim',
    async run({ browser, baseUrl, artifacts }) {
      const { page, context, problems } = await openPage(browser, `${baseUrl}?test-hooks`);
      await page.waitForSelector('ol.tokens li', { timeout: 30000 });
      await page.waitForFunction(() => !document.querySelector('.busy'), null, { timeout: 30000 });
      const step = async () => Number(await page.locator('[data-step]').first().getAttribute('data-step'));
      const done = (c) => document.querySelector(`article.claim[data-claim="${c}"]`)?.dataset.state;
      await page.getByRole('button', { name: 'Play', exact: true }).click();
      await page.waitForFunction(() => Number(document.querySelector('[data-step]')?.dataset.step) >= 20, null, { timeout: 30000 });
      // Time measures unit by unit; training steps on beside it.
      await card(page, 'Time').getByRole('button', { name: 'Run', exact: true }).click();
      await card(page, 'Time').locator('progress').waitFor({ timeout: 10000 });
      const atStart = await step();
      // Its worker dies while it measures (at once, so no race with its end decides the test):
      // the claim ends with why, and training does not stop.
      await page.evaluate(() => window.__attentionLabTest.crashWorker('claim-worker'));
      await page.waitForFunction((c) => document.querySelector(`article.claim[data-claim="${c}"]`)?.dataset.state === 'failed', 'Time', { timeout: 10000 });
      const error = await card(page, 'Time').locator('.error').textContent();
      assert(/claims' worker stopped.*asked to panic.*Run again/.test(error), `the claim's error: ${error}`);
      assert(await page.locator('.crashed').count() === 0, 'no trainer crash banner');
      const afterDeath = await step();
      await page.waitForFunction((n) => Number(document.querySelector('[data-step]')?.dataset.step) >= n, afterDeath + 20, { timeout: 30000 });
      await card(page, 'Time').screenshot({ path: path.join(artifacts, 'claims-worker-died.png') });
      // Run again: a new claim worker measures it to the end, still beside training.
      await card(page, 'KvCache').getByRole('button', { name: 'Run', exact: true }).click();
      await page.waitForFunction(done, 'KvCache', { timeout: 30000 });
      await page.waitForFunction((c) => document.querySelector(`article.claim[data-claim="${c}"]`)?.dataset.state === 'done', 'KvCache', { timeout: 30000 });
      const rerun = await step();
      const result = await run(page, 'Time');
      assert(result.state === 'done', `Time after its worker died: ${result.state} ${result.error}`);
      const end = await step();
      console.log(`     ${end - atStart} steps while Time ran and died and ran again (steps ${atStart} → ${end}; ${end - rerun} during the second run): "${error}"`);
      assert(end > rerun, 'training went on during the second run');
      await page.getByRole('button', { name: 'Pause', exact: true }).click();
      const rest = problems.filter((p) => !/asked to panic|RuntimeError|unreachable|panicked/.test(p));
      assert(rest.length === 0, rest.join('\n'));
      await context.close();
    },
  },
  {
    // Memory then Time at once used to leave Memory at "13 of 14" for ever.
    name: 'claims: Runs clicked one after another all end, the later ones waiting their turn visibly',
    async run({ browser, baseUrl, artifacts }) {
      const { page, context, problems } = await openWatched(browser, baseUrl);
      const all = ['Memory', 'Time', 'Leakage', 'KvCache'];
      for (const claim of all) await card(page, claim).getByRole('button', { name: 'Run', exact: true }).click();
      await page.waitForFunction(() => document.querySelector('article.claim[data-claim="Time"]')?.dataset.state === 'queued'
        || document.querySelector('article.claim[data-claim="Time"]')?.dataset.state === 'done', null, { timeout: 10000 });
      const waiting = (await card(page, 'Time').locator('.claim-count').allInnerTexts()).join(' ');
      await page.locator('section.claims').screenshot({ path: path.join(artifacts, 'claims-queued.png') });
      await page.waitForFunction((claims) => claims.every((c) =>
        ['done', 'failed'].includes(document.querySelector(`article.claim[data-claim="${c}"]`)?.dataset.state)), all, { timeout: 240000 });
      const states = {};
      for (const claim of all) states[claim] = await card(page, claim).getAttribute('data-state');
      console.log(`     while Memory ran, Time read "${waiting}"; then ${JSON.stringify(states)}`);
      for (const claim of all) assert(states[claim] === 'done', `${claim}: ${states[claim]}`);
      assert(problems.length === 0, problems.join('\n'));
      await context.close();
    },
  },
  {
    name: 'claims: Scaling (√d_k) saturates softmax without ÷√d_k, and reads Compare\'s ÷√d_k and None models side by side',
    async run({ browser, baseUrl, artifacts }) {
      const { page, context, problems } = await openWatched(browser, baseUrl);
      // 1. Random q and k: four plots against d_k, each a figure with data-series.
      let r = await run(page, 'Scaling');
      assert(r.state === 'done', `scaling: ${r.error}`);
      const figures = card(page, 'Scaling').locator('figure.claim-chart');
      assert(await figures.count() === 4, `${await figures.count()} plots without Compare`);
      const plot = async (i) => JSON.parse(await figures.nth(i).getAttribute('data-series'));
      const [scaled, unscaled] = await plot(1);
      assert(scaled.name === '÷√d_k' && unscaled.name === 'None', `${scaled.name}, ${unscaled.name}`);
      assert(unscaled.x[0] === 4 && unscaled.x.at(-1) === 1024, `d_k ${unscaled.x}`);
      // Without scaling the largest weight grows toward 1 as d_k grows; with it, it stays flat.
      assert(unscaled.y.every((y, i) => i === 0 || y > unscaled.y[i - 1] - 0.01), `None: ${unscaled.y}`);
      assert(unscaled.y.at(-1) > 0.9 && unscaled.y[0] < 0.5, `None: ${unscaled.y}`);
      const spread = Math.max(...scaled.y) - Math.min(...scaled.y);
      assert(spread < 0.05, `÷√d_k is not flat: ${scaled.y}`);
      const [gradScaled, gradUnscaled] = await plot(3);
      assert(gradUnscaled.y.at(-1) < gradScaled.y.at(-1) / 2, `gradient ${gradUnscaled.y.at(-1)} vs ${gradScaled.y.at(-1)}`);
      const verdict = await card(page, 'Scaling').locator('.verdict').textContent();
      assert(verdict.startsWith('Borne out'), verdict);
      const numbers = (await card(page, 'Scaling').locator('dl.claim-numbers').innerText()).replace(/\s+/g, ' ');
      assert(numbers.includes('turn on Compare'), numbers);
      console.log(`     d_k = 1024: largest weight ÷√d_k ${scaled.y.at(-1).toFixed(3)}, None ${unscaled.y.at(-1).toFixed(3)}; `
        + `‖∂L/∂s‖ ${gradScaled.y.at(-1).toFixed(3)} vs ${gradUnscaled.y.at(-1).toFixed(3)}`);

      // 2. The panel's Scaling: model A ÷√d_k, model B None, preset small (d_k = 64).
      const select = (model, label) => page.locator(`fieldset.architecture[data-model="${model}"] label`, { hasText: label }).locator('select');
      const options = await select('A', 'Scaling').locator('option').allTextContents();
      assert(JSON.stringify(options) === JSON.stringify(['÷√d_k', 'None']), `Scaling offers ${options}`);
      await page.locator('.layout label').filter({ hasText: /^\s*Preset/ }).locator('select').first().selectOption('small');
      await page.getByLabel('Compare', { exact: true }).check();
      await select('B', 'Scaling').selectOption('none');
      await page.getByRole('button', { name: 'Reset', exact: true }).first().click();
      await page.waitForSelector('.model-switch', { timeout: 30000 });
      await page.waitForFunction(() => !document.querySelector('.busy'), null, { timeout: 30000 });
      const facts = await page.locator('header .compare-facts').innerText();
      assert(facts.includes('B multi-head · absolute · softmax · unscaled'), `header: ${facts}`);
      await page.getByRole('button', { name: 'Play', exact: true }).click();
      await page.waitForFunction(() => Number(document.querySelector('[data-step]')?.dataset.step) >= 40, null, { timeout: 240000 });
      await page.getByRole('button', { name: 'Pause', exact: true }).click();
      r = await run(page, 'Scaling');
      assert(r.state === 'done', `scaling with Compare: ${r.error}`);
      assert(await figures.count() === 5, `${await figures.count()} plots with Compare`);
      const [a, b] = await plot(4);
      assert(a.name === 'A: ÷√d_k' && b.name === 'B: None', `${a.name}, ${b.name}`);
      assert(a.x.length >= 2 && a.x.at(-1) >= 40, `steps ${a.x}`);
      assert([...a.y, ...b.y].every((y) => y > 0 && y <= 1), `weights ${a.y} ${b.y}`);
      const trainedVerdict = await card(page, 'Scaling').locator('.verdict').textContent();
      assert(trainedVerdict.includes('Trained side by side (d_k = 64)'), trainedVerdict);
      console.log(`     trained ${a.x.at(-1)} steps: mean largest weight A ÷√d_k ${a.y.at(-1).toFixed(3)}, B None ${b.y.at(-1).toFixed(3)}`);
      await card(page, 'Scaling').screenshot({ path: path.join(artifacts, 'claims-scaling.png') });
      assert(problems.length === 0, problems.join('\n'));
      await context.close();
    },
  },
  {
    name: 'claims: Heads at seed 18 plots each head\'s largest share as it trains, and its verdict names the roles with share and error',
    async run({ browser, baseUrl, artifacts }) {
      const { page, context, problems } = await openWatched(browser, baseUrl);
      const step = async () => Number(await page.locator('[data-step]').first().getAttribute('data-step'));
      // A seed the default run's setting was not chosen on (docs/heads.md: borne out at
      // step 1,400 natively), not the page's default.
      const seedInput = page.getByLabel('Seed', { exact: true });
      assert(await seedInput.inputValue() !== '18', 'the default seed is another');
      await seedInput.fill('18');
      await seedInput.press('Enter');
      await page.getByRole('button', { name: 'Reset', exact: true }).click();
      await page.waitForFunction(() => document.querySelector('[data-step]')?.dataset.step === '0' && !document.querySelector('.busy'), null, { timeout: 30000 });

      const r = await run(page, 'Heads');
      assert(r.state === 'done', `heads: ${r.error}`);
      const heads = card(page, 'Heads');
      assert((await heads.locator('h3').textContent()) === 'Heads', 'the title');
      // The card reads plainly first; the method is folded under "How it is measured".
      assert((await heads.locator('p.lead').textContent()).startsWith('Does each head of the model you train learn a job of its own?'), 'the lead');
      const method = heads.locator('details.method');
      assert(await method.locator('summary').textContent() === 'How it is measured', 'the method\'s summary');
      assert(!(await method.locator('p').isVisible()), 'the method is folded');
      assert((await method.locator('p').textContent()).includes('What to expect on another seed: in the default run two heads took different roles on 20 of 20 seeds'), 'the unseen-seed rate');
      const first = await heads.locator('.verdict').textContent();
      assert(first.startsWith('Not yet measurable'), `at step 0: ${first}`);
      // Three plots: roles forming, the ablation, then distances and spread.
      const charts = heads.locator('figure.claim-chart');
      assert(await charts.count() === 3, `${await charts.count()} plots`);
      const seriesAt = async (i) => JSON.parse(await charts.nth(i).getAttribute('data-series'));
      const names = ['L1 H1', 'L1 H2', 'L1 H3', 'L1 H4', 'L2 H1', 'L2 H2', 'L2 H3', 'L2 H4'];
      let forming = await seriesAt(0);
      assert(forming.map((s) => s.name).join() === names.join(), forming.map((s) => s.name).join());
      assert(forming.every((s) => s.x.length === 1 && s.x[0] === 0), 'one point each, at step 0');
      const byHead = [...await seriesAt(1), ...await seriesAt(2)];
      assert(byHead.map((s) => s.name).join() === 'Ablation: Δ MLM loss,JS distance to the others, now,JS distance to the others, fresh,Spread (entropy ÷ ln keys), now',
        byHead.map((s) => s.name).join());
      assert(byHead.every((s) => s.x.length === 8 && s.y.every(Number.isFinite)), 'one point per head, 2 layers × 4 heads');
      const figure = heads.locator('figure[data-matrix]');
      const readMatrix = async () => JSON.parse(await figure.getAttribute('data-matrix'));
      const roles = await readMatrix();
      assert(roles.length === 8 && roles.every((row) => row.length === 6), `a row per layer × head: ${JSON.stringify(roles)}`);
      assert(roles.every((row) => Math.abs(row.reduce((a, b) => a + b, 0) - 1) < 1e-3), 'each row sums to 1');

      // Play until the claim, measured again as the model trains, is borne out: by steps,
      // not the clock (6,000 is past every unseen seed's step, 3,400 at worst).
      await page.getByRole('button', { name: 'Play', exact: true }).click();
      const started = Date.now();
      await page.waitForFunction(() => {
        const v = document.querySelector('article.claim[data-claim="Heads"] .verdict')?.dataset.verdict;
        return v === 'borne-out' || Number(document.querySelector('[data-step]')?.dataset.step) >= 6000;
      }, null, { timeout: 600000, polling: 250 });
      const seconds = (Date.now() - started) / 1000;
      await page.getByRole('button', { name: 'Pause', exact: true }).click();
      // Pause measures it at the step training stopped on (the page's counter catches up).
      await page.waitForFunction(() => {
        const f = document.querySelector('article.claim[data-claim="Heads"] figure[data-matrix] figcaption');
        const n = document.querySelector('[data-step]')?.dataset.step;
        return f && f.textContent.endsWith(`(step ${n})`);
      }, null, { timeout: 30000 });
      const verdict = await heads.locator('.verdict').textContent();
      const form = await heads.locator('.verdict').getAttribute('data-verdict');
      assert(form === 'borne-out', `at step ${await step()}: ${verdict}`);
      // "L1 H3 previous (63% ± 3%)": each head that took a role, its share and error.
      const named = [...verdict.matchAll(/(L\d H\d) (self|previous|next|\[CLS\]|\[SEP\]) \((\d+)% ± ([\d.]+)%\)/g)];
      assert(/^Borne out: after \d+ steps \d of 8 heads took a role: /.test(verdict) && named.length >= 2, verdict);
      assert(new Set(named.map((m) => m[2])).size >= 2, `two different roles: ${verdict}`);
      forming = await seriesAt(0);
      const steps = forming[0].x;
      assert(steps.length >= 3 && steps.every((x, i) => i === 0 || x > steps[i - 1]), `steps ${steps}`);
      assert(steps.at(-1) === await step(), `last point at ${steps.at(-1)}, the page at ${await step()}`);
      for (const [, head, , share] of named) {
        const line = forming.find((s) => s.name === head);
        assert(Math.abs(line.y.at(-1) * 100 - Number(share)) <= 0.51, `${head}: plotted ${line.y.at(-1)}, said ${share}%`);
        assert(line.y.at(-1) >= 0.5 && line.y[0] < 0.5, `${head} rose past the bar: ${line.y}`);
      }
      assert(JSON.stringify(await readMatrix()) !== JSON.stringify(roles), 'the heatmap follows training');
      const numbers = await heads.locator('.claim-numbers').innerText();
      // A figure out of view is drawn when it comes into view: each is brought there first.
      const shoot = async (width) => {
        for (const f of await heads.locator('figure').all()) {
          await f.scrollIntoViewIfNeeded();
          await framesRendered(page);
        }
        await heads.screenshot({ path: path.join(artifacts, `claims-heads-${width}.png`) });
      };
      await shoot(1280);
      await page.setViewportSize({ width: 390, height: 844 });
      await shoot(390);
      console.log(`     seed 18: borne out ${seconds.toFixed(0)} s after Play, at step ${await step()}:\n${numbers.split('\n').map((l) => `       ${l}`).join('\n')}\n     verdict: ${verdict}`);
      assert(problems.length === 0, problems.join('\n'));
      await context.close();
    },
  },
  {
    name: 'claims: Heads on the real MiniLM, loaded from its files: its roles, without an ablation (it has no loss)',
    async run({ browser, baseUrl, artifacts }) {
      const dir = process.env.MINILM_DIR;
      assert(dir && fs.existsSync(path.join(dir, 'model.safetensors')), `MiniLM not found in MINILM_DIR=${dir}`);
      const { page, context, problems } = await openWatched(browser, baseUrl);
      const files = ['config.json', 'model.safetensors', 'vocab.txt', 'tokenizer_config.json'].map((f) => path.join(dir, f));
      await page.locator('input[type=file]').first().setInputFiles(files);
      await page.waitForFunction(() => document.querySelectorAll('.model-view .thumb').length === 72, null, { timeout: 120000 });
      const r = await run(page, 'Heads', 600000);
      assert(r.state === 'done', `heads on MiniLM: ${r.error}`);
      const heads = card(page, 'Heads');
      const roles = JSON.parse(await heads.locator('figure[data-matrix]').getAttribute('data-matrix'));
      assert(roles.length === 72 && roles.every((row) => row.length === 6), `a row per head: ${roles.length}`);
      assert(await heads.locator('figure.claim-chart').count() === 2, 'roles and diversity, no ablation plot: MiniLM has no loss');
      // Roles forming, at step 0 alone: the eight heads of 72 with the largest shares.
      const forming = heads.locator('figure.claim-chart').first();
      const lines = JSON.parse(await forming.getAttribute('data-series'));
      assert(lines.length === 8 && lines.every((s) => /^L\d H\d+$/.test(s.name) && s.x.join() === '0'), lines.map((s) => s.name).join());
      assert((await forming.locator('figcaption').textContent()).includes('(the 8 heads with the largest shares now, of 72)'), 'says which heads it shows');
      const numbers = await heads.locator('.claim-numbers').innerText();
      assert(/Ablation\s+none: this checkpoint has no pre-training heads/.test(numbers), numbers);
      const verdict = await heads.locator('.verdict').textContent();
      assert(/^(Borne out|Not borne out here|Not decided): in the loaded weights /.test(verdict), verdict);
      // A role at half a head's attention is what pretrained heads do: MiniLM has them.
      const taken = roles.filter((row) => row.slice(0, 5).some((v) => v >= 0.5)).length;
      console.log(`     MiniLM: ${taken} of 72 heads give one relation half or more of their attention\n     verdict: ${verdict}`);
      await heads.scrollIntoViewIfNeeded();
      for (const f of await heads.locator('figure').all()) {
        await f.scrollIntoViewIfNeeded();
        await framesRendered(page);
      }
      await heads.screenshot({ path: path.join(artifacts, 'claims-heads-minilm-1280.png') });
      assert(problems.length === 0, problems.join('\n'));
      await page.evaluate(() => { localStorage.clear(); indexedDB.deleteDatabase('attention-lab'); });
      await context.close();
    },
  },
];

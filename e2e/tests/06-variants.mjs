// The attention variants, chosen in the page as a user would: the explorer's Window and
// Attention (Full/Tiled) on the same weights, and the training panel's Architecture (KV heads,
// Positions, Attention) for a new model at Reset. Each choice must change what is drawn.
import path from 'node:path';
import { openPage, openReady, assert } from '../harness.mjs';
import { figure, stage } from '../names.mjs';

const WEIGHTS = 'Layer 1 · Head 1 · softmax weights';
// The selected head's weights beside the model view.
const SUMMARY = figure('summary-weights');

async function matrix(page, css) {
  return JSON.parse(await page.locator(css).getAttribute('data-matrix'));
}

// The stepper's figure named `name` (its data-figure: protocol::figure::FigureName).
const stageFigure = (page, name) => page.locator(`.stage-panel ${figure(name)}`);
const stageMatrix = async (page, name) => JSON.parse(await stageFigure(page, name).getAttribute('data-matrix'));
// The Tiles panel's figure named `name`.
const tilesMatrix = (page, name) => matrix(page, `.tiles-panel ${figure(name)}`);

// Waits until the summary's caption says `caption` and it holds a matrix other than `before`.
async function changed(page, caption, before, timeout = 15000) {
  await page.waitForFunction(([css, c, b]) => {
    const f = document.querySelector(css);
    return f && f.querySelector('figcaption').textContent.includes(c) && f.dataset.matrix !== b;
  }, [SUMMARY, caption, JSON.stringify(before)], { timeout });
  return matrix(page, SUMMARY);
}

const explorerField = (page, label) => page.locator('.probe-form label.field', { has: page.locator('.field-label', { hasText: label }) });
const architecture = (page, label) => page.locator('fieldset.architecture label', { hasText: label }).locator('select');
const facts = (page) => page.locator('.model-facts').textContent();

async function resetWith(page, label, value, factsText) {
  await architecture(page, label).selectOption(value);
  await page.getByRole('button', { name: 'Reset', exact: true }).first().click();
  await page.waitForFunction((t) => document.querySelector('.model-facts')?.textContent.includes(t), factsText, { timeout: 20000 });
  await page.waitForFunction(() => !document.querySelector('.busy'), null, { timeout: 30000 });
}

export const tests = [
  {
    name: 'variants: a window hides far keys, and Tiled adds a Tiles stage that ends equal to Full',
    async run({ browser, baseUrl, artifacts }) {
      const { page, context, problems } = await openReady(browser, baseUrl);
      assert(await page.locator(`${SUMMARY} figcaption`).textContent() === WEIGHTS, 'the first head is shown');
      const full = await matrix(page, SUMMARY);
      const T = full.length;
      // Window 2: query i sees key j only if |i − j| < 2.
      await explorerField(page, 'Window').locator('input').fill('2');
      const windowed = await changed(page, WEIGHTS, full);
      windowed.forEach((row, i) => row.forEach((w, j) => {
        if (Math.abs(i - j) >= 2) assert(w === 0, `window 2: weight ${w} at (${i}, ${j})`);
      }));
      // A window longer than the text is a message beside the field, and nothing changes.
      await explorerField(page, 'Window').locator('input').fill(String(T + 5));
      await page.waitForSelector('.window-error', { timeout: 5000 });
      assert(JSON.stringify(await matrix(page, SUMMARY)) === JSON.stringify(windowed), 'a bad window changed the weights');
      await explorerField(page, 'Window').locator('input').fill('');
      await changed(page, WEIGHTS, windowed);

      // Tiled: the same weights, and a Tiles stage after "· V".
      await explorerField(page, 'Attention').locator('select').selectOption('Tiled');
      await page.locator(stage('tiles')).waitFor({ timeout: 15000 });
      await page.locator(stage('tiles')).click();
      const title = await page.locator('.stage-title').textContent();
      assert(title.startsWith('Step 8 of 13 — Tiles'), title);
      const panel = page.locator('.tiles-panel');
      const steps = Number(await panel.getAttribute('data-tile-steps'));
      assert(steps === Math.ceil(T / 4) ** 2, `${steps} tile steps for T = ${T}`);
      // It plays by itself: the framed block moves. Step and frame are read together, since
      // it may have moved on (every 900 ms) since the stage opened.
      const framed = (after) => {
        const panel = document.querySelector('.tiles-panel');
        const step = Number(panel?.dataset.tileStep);
        return step > after && { step, outline: panel.querySelector('figure.heatmap').dataset.outline };
      };
      const first = await (await page.waitForFunction(framed, 0)).jsonValue();
      assert(first.step < steps, `the blocks had played to the end before they were read (step ${first.step} of ${steps})`);
      const later = await (await page.waitForFunction(framed, first.step, { timeout: 10000 })).jsonValue();
      assert(first.outline !== later.outline, `the block did not move from step ${first.step} to ${later.step}: ${first.outline}`);
      await page.getByRole('button', { name: 'Pause blocks', exact: true }).click();
      await page.locator('.tiles-panel').screenshot({ path: path.join(artifacts, 'variants-tiles-running.png') });
      await page.getByRole('button', { name: 'Last block', exact: true }).click();
      const check = page.locator('.tiles-check[data-max-difference]');
      await check.waitFor({ timeout: 5000 });
      const diff = Number(await check.getAttribute('data-max-difference'));
      assert(diff < 1e-5, `tiles against full: ${diff}`);
      const fromTiles = await tilesMatrix(page, 'tiles-weights');
      const fullAgain = await tilesMatrix(page, 'weights');
      fromTiles.forEach((row, i) => row.forEach((w, j) => assert(Math.abs(w - fullAgain[i][j]) < 1e-5, `(${i}, ${j})`)));
      await page.locator('.tiles-panel').screenshot({ path: path.join(artifacts, 'variants-tiles-end.png') });
      assert(problems.length === 0, problems.join('\n'));
      await context.close();
    },
  },
  {
    name: 'variants: each Architecture choice builds a model that the explorer shows and that trains',
    async run({ browser, baseUrl, artifacts }) {
      const { page, context, problems } = await openReady(browser, baseUrl);
      // Head 4: its K/V group changes with every KV-heads choice below (head 1 keeps group 1,
      // whose weights a fresh model of the same seed draws alike).
      await page.getByRole('button', { name: 'Layer 1 · Head 4', exact: true }).click();
      const HEAD4 = 'Layer 1 · Head 4 · softmax weights';
      await page.waitForFunction(([css, c]) => document.querySelector(`${css} figcaption`)?.textContent === c,
        [SUMMARY, HEAD4], { timeout: 5000 });
      const before = await matrix(page, SUMMARY);

      // Multi-query: one K/V group for every head, banded in the model view.
      await resetWith(page, 'KV heads', '1', 'multi-query');
      await page.waitForFunction(() => document.querySelectorAll('.mv-kv').length === 1, null, { timeout: 10000 });
      const mqa = await changed(page, HEAD4, before);
      await page.locator('.model-card').screenshot({ path: path.join(artifacts, 'variants-mqa-model.png') });

      // Grouped-query with 2 groups: two bands.
      await resetWith(page, 'KV heads', '2', 'GQA 2 KV heads');
      await page.waitForFunction(() => document.querySelectorAll('.mv-kv').length === 2, null, { timeout: 10000 });
      const gqa = await changed(page, HEAD4, mqa);
      await page.locator('.model-card').screenshot({ path: path.join(artifacts, 'variants-gqa-model.png') });

      // Rotary: the projections stage shows the rotated q and k and a dial per position.
      await resetWith(page, 'Positions', 'rotary', 'rotary');
      const rotary = await changed(page, HEAD4, gqa);
      await page.locator(stage('projections')).click();
      await stageFigure(page, 'rotated-queries').waitFor({ timeout: 10000 });
      const angles = JSON.parse(await page.locator('figure.rotation').getAttribute('data-angles'));
      assert(angles[0] === 0 && Math.abs(angles[3] - 3) < 1e-9, `pair 0 angles ${angles}`);
      await page.locator('.stage-panel').screenshot({ path: path.join(artifacts, 'variants-rotary-stage.png') });

      // Linear: φ(Q) and φ(K), implied weights, and no scores stage, with the reason.
      await resetWith(page, 'Attention', 'linear', 'linear attention');
      // The summary beside the model view: the weights linear attention implies, not rotary's.
      await changed(page, 'implied weights', rotary);
      await page.locator(stage('feature-maps')).click();
      await stageFigure(page, 'phi-queries').waitFor({ timeout: 10000 });
      const steps = await page.locator('.stepper .step .short').allTextContents();
      assert(!steps.includes('QKᵀ') && !steps.includes('softmax'), `linear stepper: ${steps}`);
      const title = await page.locator('.stage-title').textContent();
      assert(title.startsWith('Step 3 of 10 — feature maps'), title);
      const hint = await page.locator('.stage-hint').textContent();
      assert(hint.includes('never formed'), hint);
      await page.locator('.stage-panel').screenshot({ path: path.join(artifacts, 'variants-linear-stage.png') });

      // The last of them trains: the step counter moves.
      await page.getByRole('button', { name: 'Step', exact: true }).first().click();
      await page.waitForFunction(() => Number(document.querySelector('[data-step]')?.dataset.step) >= 1, null, { timeout: 20000 });
      assert(problems.length === 0, problems.join('\n'));
      await context.close();
    },
  },
  {
    name: 'variants: ALiBi positions show their bias at "+ M" and refuse linear attention',
    async run({ browser, baseUrl, artifacts }) {
      const { page, context, problems } = await openReady(browser, baseUrl);
      const offered = await architecture(page, 'Positions').locator('option').allTextContents();
      assert(offered.includes('ALiBi'), `Positions offers ${offered}`);
      await resetWith(page, 'Positions', 'alibi', 'ALiBi');

      // "+ M": head 1's bias −m·|i − j| with m = 1/4 (BLOOM's first slope of 4 heads), and
      // the masked scores are the scaled ones plus it.
      await page.locator(stage('masked')).click();
      await stageFigure(page, 'alibi-bias').waitFor({ timeout: 10000 });
      const bias = await stageMatrix(page, 'alibi-bias');
      const t = bias.length;
      assert(t > 3, `bias of ${t} rows`);
      for (let i = 0; i < t; i++) {
        for (let j = 0; j < t; j++) assert(bias[i][j] === -0.25 * Math.abs(i - j), `bias[${i}][${j}] = ${bias[i][j]}`);
      }
      const hint = await page.locator('.stage-hint').textContent();
      assert(hint.startsWith('ALiBi positions'), hint);
      const masked = await stageMatrix(page, 'masked-scores');
      assert(masked.length === t, 'masked scores beside the bias');
      await page.locator('.stage-panel').screenshot({ path: path.join(artifacts, 'variants-alibi-stage.png') });

      // Linear attention has no scores to bias: not offered, and the option says why.
      const linear = architecture(page, 'Attention').locator('option[value="linear"]');
      assert(await linear.isDisabled(), 'linear attention offered with ALiBi');
      assert((await linear.getAttribute('title')).includes('linear attention has no scores'), 'no reason given');

      assert(problems.length === 0, problems.join('\n'));
      await page.evaluate(() => { localStorage.clear(); indexedDB.deleteDatabase('attention-lab'); });
      await context.close();
    },
  },
];

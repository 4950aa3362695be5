// Compare, as a user does it: tick "Compare", give model B its own architecture, Reset, Play.
// Both models train in lockstep on the same batches; the curves, the explorer, History and a
// reload cover both.
import fs from 'node:fs';
import path from 'node:path';
import { openPage, ready, assert, pause, poll, waitKept } from '../harness.mjs';
import { figure } from '../names.mjs';

const stepCount = async (page) => Number(await page.locator('[data-step]').first().getAttribute('data-step'));
const smoothedLoss = async (page, model) =>
  Number(await page.locator(`.readout[data-model="${model}"]`).getAttribute('data-smoothed-loss'));
const lossChart = (page) => page.locator('figure.curve-chart[data-chart="loss"]');
const modelB = (page, label) => page.locator('fieldset.architecture[data-model="B"] label', { hasText: label }).locator('select');
// The selected head's weights beside the model view (Layer 1 · Head 1: the page's first).
const matrixIn = (scope) => scope.locator(figure('summary-weights')).getAttribute('data-matrix');

async function startComparing(page) {
  await page.getByLabel('Compare', { exact: true }).check();
  await modelB(page, 'Positions').selectOption('rotary');
  await modelB(page, 'KV heads').selectOption('1');
  await page.getByRole('button', { name: 'Reset', exact: true }).first().click();
  await page.waitForSelector('.model-switch', { timeout: 30000 });
  await ready(page);
}

export const tests = [
  {
    name: 'compare: two models train 750 steps in lockstep and both curves fall; the explorer shows A, B and both',
    async run({ browser, baseUrl, artifacts }) {
      const { page, context, problems } = await openPage(browser, baseUrl);
      await ready(page);
      await startComparing(page);
      const header = await page.locator('header .compare-facts').innerText();
      assert(header.includes('A multi-head · absolute · softmax') && header.includes('B multi-query · rotary · softmax'), `header: ${header}`);

      await page.getByRole('button', { name: 'Play', exact: true }).click();
      await page.waitForFunction(() => Number(document.querySelector('[data-step]')?.dataset.step) >= 5, null, { timeout: 30000 });
      const first = { A: await smoothedLoss(page, 'A'), B: await smoothedLoss(page, 'B') };
      // Bounded by steps, however long they take.
      await page.waitForFunction(() => Number(document.querySelector('[data-step]')?.dataset.step) >= 750, null, { timeout: 300000 });
      await page.getByRole('button', { name: 'Pause', exact: true }).click();
      // Paused: the worker's reply carries the last points of both models.
      await page.waitForFunction(() => !document.querySelector('button.play')?.disabled, null, { timeout: 10000 });
      await page.waitForFunction(() => {
        const step = document.querySelector('[data-step]')?.dataset.step;
        return document.querySelector('.curve-readout-b')?.textContent.startsWith(`B · step ${step}`);
      }, null, { timeout: 10000 });
      const steps = await stepCount(page);
      const last = { A: await smoothedLoss(page, 'A'), B: await smoothedLoss(page, 'B') };
      const [points, pointsB] = await lossChart(page).evaluate((f) => [Number(f.dataset.points), Number(f.dataset.pointsB)]);
      console.log(`     ${steps} steps of both; smoothed loss A ${first.A.toFixed(3)} → ${last.A.toFixed(3)}, B ${first.B.toFixed(3)} → ${last.B.toFixed(3)}; curve points ${points} / ${pointsB}`);
      assert(last.A < first.A && last.B < first.B, `a curve did not fall: A ${first.A} → ${last.A}, B ${first.B} → ${last.B}`);
      assert(points === pointsB && points > 0, `model A has ${points} curve points, model B ${pointsB}`);
      assert(last.A !== last.B, 'A and B report the same loss: B is not a model of its own');
      await page.screenshot({ path: path.join(artifacts, 'e2e-compare.png') });

      // The explorer: A's heatmaps, B's, and both side by side for the same sentence.
      const a = await matrixIn(page.locator('.explorer'));
      await page.locator('.model-switch button[data-model="B"]').click();
      await page.waitForFunction((m) => [...document.querySelectorAll('.explorer figure.heatmap')]
        .some((f) => f.dataset.matrix && f.dataset.matrix !== m), a, { timeout: 10000 });
      const b = await matrixIn(page.locator('.explorer'));
      assert(a !== b, "model B's weights are model A's");
      await page.locator('.model-switch button[data-model="Both"]').click();
      const columns = page.locator('.side-by-side .model-column');
      await columns.nth(1).locator('figure.heatmap').first().waitFor({ timeout: 10000 });
      const headings = await page.locator('.side-by-side .model-heading').allInnerTexts();
      assert(headings.length === 2 && headings[0].startsWith('Model A') && headings[1].startsWith('Model B · multi-query · rotary'), `columns: ${headings}`);
      const [ca, cb] = [await columns.nth(0).locator('figure.heatmap').first().getAttribute('data-matrix'),
        await columns.nth(1).locator('figure.heatmap').first().getAttribute('data-matrix')];
      assert(ca && cb && ca !== cb, 'the two columns show the same heatmap');

      // One Step moves both models by one step.
      const before = await stepCount(page);
      await page.getByRole('button', { name: 'Step', exact: true }).click();
      await page.waitForFunction((n) => Number(document.querySelector('[data-step]')?.dataset.step) === n + 1, before, { timeout: 10000 });
      await page.waitForFunction((n) => document.querySelector('.curve-readout-b')?.textContent.startsWith(`B · step ${n + 1}`), before, { timeout: 10000 });
      assert(problems.length === 0, problems.join('\n'));
      await page.evaluate(() => { localStorage.clear(); indexedDB.deleteDatabase('attention-lab'); });
      await context.close();
    },
  },
  {
    name: 'compare: a reload brings both models back, with their curves; History takes both back',
    async run({ browser, baseUrl }) {
      const { page, context, problems } = await openPage(browser, baseUrl);
      await ready(page);
      await startComparing(page);
      await page.getByRole('button', { name: 'Play', exact: true }).click();
      await page.waitForFunction(() => Number(document.querySelector('[data-step]')?.dataset.step) >= 30, null, { timeout: 30000 });
      // Paused: the model is kept at once (Live::keep_if_due), both of its models.
      const before = await pause(page);
      await waitKept(page, before);
      const lossB = await smoothedLoss(page, 'B');
      await page.reload();
      await ready(page);
      await page.waitForSelector('.model-switch', { timeout: 10000 });
      const after = await stepCount(page);
      const [points, pointsB] = await lossChart(page).evaluate((f) => [Number(f.dataset.points), Number(f.dataset.pointsB)]);
      const restoredB = await smoothedLoss(page, 'B');
      console.log(`     step ${before} before the reload, ${after} after; curve points ${points} / ${pointsB}; B's smoothed loss ${lossB} → ${restoredB}`);
      assert(after === before, `reload restored step ${after}, was at ${before}`);
      assert(pointsB === points && pointsB > 0, `B's curve came back with ${pointsB} points, A's with ${points}`);
      assert(restoredB === lossB, `B's loss was ${lossB}, is ${restoredB} after the reload`);
      assert(await page.getByLabel('Compare', { exact: true }).isChecked(), 'Compare is off after the reload');

      // Download checkpoint: both models' files, told apart by A- and B-.
      const names = [];
      const configs = {};
      page.on('download', async (d) => {
        names.push(d.suggestedFilename());
        if (d.suggestedFilename().endsWith('config.json') && !d.suggestedFilename().includes('tokenizer')) {
          configs[d.suggestedFilename()] = JSON.parse(fs.readFileSync(await d.path(), 'utf8'));
        }
      });
      const want = ['config.json', 'model.safetensors', 'tokenizer_config.json', 'vocab.txt'].flatMap((f) => [`A-${f}`, `B-${f}`]).sort();
      await page.getByRole('button', { name: 'Download checkpoint' }).click();
      // Every file, not only the two configs: on a busy machine B's other files came after them.
      await poll(() => names.length >= want.length && Object.keys(configs).length >= 2, (all) => all,
        () => `downloads: ${names}; configs read: ${Object.keys(configs)}`, 10000);
      assert(names.sort().join() === want.join(), `downloads: ${names}`);
      assert(configs['A-config.json']?.position_embedding_type === 'absolute' && configs['B-config.json']?.position_embedding_type === 'rotary',
        `configs: ${JSON.stringify(configs).slice(0, 300)}`);

      // History: the slider takes both models back to the weights of step 0.
      await page.locator('.model-switch button[data-model="Both"]').click();
      const columns = page.locator('.side-by-side .model-column');
      await columns.nth(1).locator('figure.heatmap').first().waitFor({ timeout: 10000 });
      const first = (i) => columns.nth(i).locator('figure.heatmap').first().getAttribute('data-matrix');
      const now = [await first(0), await first(1)];
      await page.waitForFunction(() => Number(document.querySelector('label.history input[type=range]')?.max) >= 2, null, { timeout: 10000 });
      await page.getByLabel('History').evaluate((el) => { el.value = '0'; el.dispatchEvent(new Event('input', { bubbles: true })); });
      await page.waitForFunction(() => document.querySelector('.history-at')?.textContent.startsWith('step 0'), null, { timeout: 5000 });
      await page.waitForFunction(([wa, wb]) => {
        const shown = [...document.querySelectorAll('.side-by-side .model-column')]
          .map((c) => c.querySelector('figure.heatmap')?.dataset.matrix);
        return shown.length === 2 && shown[0] !== wa && shown[1] !== wb;
      }, now, { timeout: 10000 });
      assert(problems.length === 0, problems.join('\n'));
      await page.evaluate(() => { localStorage.clear(); indexedDB.deleteDatabase('attention-lab'); });
      await context.close();
    },
  },
];

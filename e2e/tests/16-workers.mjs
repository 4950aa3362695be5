// Training over several workers: each step's batch is cut into shares, each worker computes a
// share's gradients, the training worker sums them in order. Two workers must train as one does
// (the same batches, losses equal to float rounding), the same every time for two, and a
// gradient worker that dies is noticed and Restart continues with two.
import path from 'node:path';
import { openPage, ready, assert, pause, poll, keptSteps } from '../harness.mjs';

const stepCount = async (page) => Number(await page.locator('[data-step]').first().getAttribute('data-step'));

async function setWorkers(page, value) {
  await page.locator('.controls label.workers select').selectOption(value);
}

// The header's count, once the training worker says it.
async function workersInUse(page, n) {
  await page.waitForFunction((n) => document.querySelector('.workers-facts')?.dataset.workers === String(n), n, { timeout: 10000 });
  return page.locator('.workers-facts').innerText();
}

// A fresh model (same seed), `steps` Steps, and its loss curve (`which`: 'b' for Compare's B).
async function train(page, steps, which = 'a') {
  await page.getByRole('button', { name: 'Reset', exact: true }).click();
  await page.waitForFunction(() => Number(document.querySelector('[data-step]')?.dataset.step) === 0, null, { timeout: 30000 });
  await ready(page);
  for (let i = 1; i <= steps; i += 1) {
    await page.getByRole('button', { name: 'Step', exact: true }).click();
    await page.waitForFunction((n) => Number(document.querySelector('[data-step]')?.dataset.step) >= n, i, { timeout: 30000 });
  }
  await page.waitForFunction(([n, w]) => JSON.parse(window.__attentionLabTest.losses(w)).length >= n, [steps, which], { timeout: 10000 });
  return JSON.parse(await page.evaluate((w) => window.__attentionLabTest.losses(w), which));
}

// The largest difference of `run`'s losses from `base`'s, relative to the loss (at least 1).
function differs(base, run) {
  return base.reduce((m, [step, loss], i) => {
    assert(run[i][0] === step, `step ${run[i][0]} against ${step}`);
    return Math.max(m, Math.abs(run[i][1] - loss) / Math.max(1, Math.abs(loss)));
  }, 0);
}

const STEPS = 25;

export const tests = [
  {
    name: 'workers: two and three workers train as one does (losses equal to float rounding), two the same every time, played or stepped',
    async run({ browser, baseUrl, artifacts }) {
      const { page, context, problems } = await openPage(browser, `${baseUrl}?test-hooks`);
      await ready(page);
      const auto = await workersInUse(page, await page.evaluate(() => Math.min(4, Math.max(1, navigator.hardwareConcurrency - 1))));
      console.log(`     auto on ${await page.evaluate(() => navigator.hardwareConcurrency)} cores: "${auto}"`);

      await setWorkers(page, '1');
      await workersInUse(page, 1);
      const one = await train(page, STEPS);
      await setWorkers(page, '2');
      const header = await workersInUse(page, 2);
      const two = await train(page, STEPS);
      const twoAgain = await train(page, STEPS);
      assert(header === 'Training on 2 workers', `header: ${header}`);
      // Three: shares of 3, 3 and 2 rows, the weights sent to two gradient workers.
      await setWorkers(page, '3');
      await workersInUse(page, 3);
      const three = await train(page, STEPS);

      const [worst, worst3] = [differs(one, two), differs(one, three)];
      console.log(`     ${STEPS} steps: loss ${one[0][1].toFixed(4)} → ${one[STEPS - 1][1].toFixed(4)} on one worker, ${two[STEPS - 1][1].toFixed(4)} on two, ${three[STEPS - 1][1].toFixed(4)} on three; largest relative difference ${worst.toExponential(2)} (two), ${worst3.toExponential(2)} (three)`);
      assert(one[STEPS - 1][1] < one[0][1], 'the model did not learn');
      assert(worst < 1e-3, `two workers' losses differ from one's by ${worst} (relative)`);
      assert(worst3 < 1e-3, `three workers' losses differ from one's by ${worst3} (relative)`);
      assert(JSON.stringify(two) === JSON.stringify(twoAgain), 'two workers gave another run the second time');
      // Played, the training worker makes the views (snapshot, Batch view) while the gradient
      // worker computes its share: the steps are still the ones Step takes.
      await setWorkers(page, '2');
      await workersInUse(page, 2);
      await page.getByRole('button', { name: 'Reset', exact: true }).click();
      await page.waitForFunction(() => Number(document.querySelector('[data-step]')?.dataset.step) === 0, null, { timeout: 30000 });
      await ready(page);
      await page.getByRole('button', { name: 'Play', exact: true }).click();
      await page.waitForFunction((n) => Number(document.querySelector('[data-step]')?.dataset.step) >= n, STEPS, { timeout: 30000 });
      await page.getByRole('button', { name: 'Pause', exact: true }).click();
      await page.waitForFunction((n) => JSON.parse(window.__attentionLabTest.losses('a')).length >= n, STEPS, { timeout: 10000 });
      const played = JSON.parse(await page.evaluate(() => window.__attentionLabTest.losses('a'))).slice(0, STEPS);
      assert(JSON.stringify(played) === JSON.stringify(two), `played on two workers: ${JSON.stringify(played.slice(-3))} against stepped ${JSON.stringify(two.slice(-3))}`);
      await page.screenshot({ path: path.join(artifacts, 'workers-two.png') });
      assert(problems.length === 0, problems.join('\n'));
      await page.evaluate(() => { localStorage.clear(); indexedDB.deleteDatabase('attention-lab'); });
      await context.close();
    },
  },
  {
    name: 'workers: with Compare, model B trains in the gradient worker as it does beside A',
    async run({ browser, baseUrl }) {
      const { page, context, problems } = await openPage(browser, `${baseUrl}?test-hooks`);
      await ready(page);
      await page.getByLabel('Compare', { exact: true }).check();
      await page.locator('fieldset.architecture[data-model="B"] label', { hasText: 'Positions' }).locator('select').selectOption('rotary');
      await setWorkers(page, '1');
      await workersInUse(page, 1);
      const oneA = await train(page, STEPS);
      await page.waitForSelector('.compare-facts', { timeout: 30000 });
      const oneB = JSON.parse(await page.evaluate(() => window.__attentionLabTest.losses('b')));
      await setWorkers(page, '2');
      await workersInUse(page, 2);
      const twoA = await train(page, STEPS);
      const twoB = JSON.parse(await page.evaluate(() => window.__attentionLabTest.losses('b')));
      assert(oneB.length === STEPS && twoB.length === STEPS, `model B's curves: ${oneB.length} and ${twoB.length} points`);
      const [a, b] = [differs(oneA, twoA), differs(oneB, twoB)];
      console.log(`     model B: loss ${oneB[0][1].toFixed(4)} → ${oneB[STEPS - 1][1].toFixed(4)} beside A, ${twoB[STEPS - 1][1].toFixed(4)} in its own worker; largest relative differences A ${a.toExponential(2)}, B ${b.toExponential(2)}`);
      // On two workers each model is one share, the same arithmetic as on one worker, and the
      // gradient worker runs the same build: the curves are equal, not merely close.
      assert(a === 0, `model A alone in the training worker changed: ${a}`);
      assert(b === 0, `model B in its own worker differs by ${b} (relative)`);
      assert(problems.length === 0, problems.join('\n'));
      await page.evaluate(() => { localStorage.clear(); indexedDB.deleteDatabase('attention-lab'); });
      await context.close();
    },
  },
  {
    name: 'workers: a batch of one row on two workers still steps (its one share stays in the training worker)',
    async run({ browser, baseUrl }) {
      const { page, context, problems } = await openPage(browser, `${baseUrl}?test-hooks`);
      await ready(page);
      await setWorkers(page, '2');
      await workersInUse(page, 2);
      const batchSize = page.getByLabel('Batch size', { exact: true });
      await batchSize.fill('1');
      await batchSize.dispatchEvent('change');
      const losses = await train(page, 5);
      console.log(`     5 steps at batch 1: ${losses.map(([, l]) => l.toFixed(3)).join(', ')}`);
      assert(losses.length === 5 && losses.every(([, l]) => Number.isFinite(l)), JSON.stringify(losses));
      assert(problems.length === 0, problems.join('\n'));
      await page.evaluate(() => { localStorage.clear(); indexedDB.deleteDatabase('attention-lab'); });
      await context.close();
    },
  },
  {
    name: 'workers: the Workers setting is kept for the next visit; a kept value that is not a choice is auto again, and says so',
    async run({ browser, baseUrl, artifacts }) {
      const { page, context, problems } = await openPage(browser, baseUrl);
      await ready(page);
      const select = page.locator('.controls label.workers select');
      await setWorkers(page, '3');
      await workersInUse(page, 3);
      await page.reload();
      await ready(page);
      assert(await select.inputValue() === '3', `after a reload the select reads ${await select.inputValue()}`);
      const header = await workersInUse(page, 3);
      await page.getByRole('button', { name: 'Step', exact: true }).click();
      await page.waitForFunction(() => Number(document.querySelector('[data-step]')?.dataset.step) >= 1, null, { timeout: 30000 });
      // A hand edit, or an older version's value.
      await page.evaluate(() => localStorage.setItem('attention-lab/workers', JSON.stringify('🦀')));
      await page.reload();
      await ready(page);
      assert(await select.inputValue() === 'auto', `a bad kept value: the select reads ${await select.inputValue()}`);
      const note = await page.locator('.restore-notes').innerText();
      assert(note.includes('Workers kept from the last visit: Workers must be auto or 1 to 4, not "🦀", so Workers is auto again.'), note);
      await page.locator('.restore-notes').screenshot({ path: path.join(artifacts, 'workers-restore-note.png') });
      console.log(`     after a reload: "${header}"; a bad value: "${note.split('\n')[0]}"`);
      assert(problems.length === 0, problems.join('\n'));
      await page.evaluate(() => { localStorage.clear(); indexedDB.deleteDatabase('attention-lab'); });
      await context.close();
    },
  },
  {
    name: 'workers: a gradient worker that dies is noticed; Restart continues training on two workers',
    async run({ browser, baseUrl, artifacts }) {
      const { page, context, problems } = await openPage(browser, `${baseUrl}?test-hooks`);
      await ready(page);
      await setWorkers(page, '2');
      await workersInUse(page, 2);
      await page.getByRole('button', { name: 'Play', exact: true }).click();
      await page.waitForFunction(() => Number(document.querySelector('[data-step]')?.dataset.step) >= 30, null, { timeout: 30000 });
      // Pause keeps the model, which Restart starts from. (A shared step under way when Pause
      // came may still land, and be kept, after it.)
      const paused = await pause(page);
      const { model: kept } = await poll(() => keptSteps(page), (k) => k.model >= paused && k.curves === k.model,
        (k) => `paused at step ${paused}; kept: model ${k.model}, curves ${k.curves}`);
      await page.getByRole('button', { name: 'Play', exact: true }).click();
      await page.waitForFunction((n) => Number(document.querySelector('[data-step]')?.dataset.step) >= n, kept + 10, { timeout: 30000 });

      await page.evaluate(() => window.__attentionLabTest.crashWorker('gradient-worker'));
      await page.waitForSelector('.crashed', { timeout: 10000 });
      const text = await page.locator('.crashed').innerText();
      console.log(`     "${text.split('\n')[0]}"`);
      assert(/^The trainer stopped: a gradient worker stopped: .*asked to panic/.test(text), `banner: ${text}`);
      const dead = await stepCount(page);
      await page.screenshot({ path: path.join(artifacts, 'workers-gradient-worker-died.png') });

      await page.getByRole('button', { name: 'Restart', exact: true }).click();
      await page.waitForFunction(() => !document.querySelector('.crashed'), null, { timeout: 5000 });
      await ready(page);
      const restarted = await stepCount(page);
      assert(restarted > 0 && restarted <= dead, `restarted at step ${restarted}, kept ${kept}, dead at ${dead}`);
      await workersInUse(page, 2);
      await page.getByRole('button', { name: 'Play', exact: true }).click();
      await page.waitForFunction((n) => Number(document.querySelector('[data-step]')?.dataset.step) >= n, dead + 10, { timeout: 30000 });
      await page.getByRole('button', { name: 'Pause', exact: true }).click();
      const losses = JSON.parse(await page.evaluate(() => window.__attentionLabTest.losses()));
      const last = losses[losses.length - 1];
      console.log(`     restarted at step ${restarted} (kept ${kept}, died at ${dead}); on to step ${last[0]}, loss ${last[1].toFixed(4)}`);
      assert(Number.isFinite(last[1]) && last[0] >= dead + 10, `after the restart: ${JSON.stringify(last)}`);
      const rest = problems.filter((p) => !/asked to panic|RuntimeError|unreachable|panicked/.test(p));
      assert(rest.length === 0, rest.join('\n'));
      await page.evaluate(() => { localStorage.clear(); indexedDB.deleteDatabase('attention-lab'); });
      await context.close();
    },
  },
];

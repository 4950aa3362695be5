// Encoder–decoders, as a user meets them: Objective "Sequence to sequence", Task "Reverse",
// train for at most 60 s, then Generate turns a 4-word sentence it never saw into its reverse.
// The model view has an Encoder and a Decoder (Self, Cross) section; a cross-attention head
// shows the anti-diagonal; the stepper walks cross-attention and says where Q and K, V come
// from.
import path from 'node:path';
import { openPage, ready, assert, pause, untilStep, waitKept } from '../harness.mjs';
import { figure, stage } from '../names.mjs';

const HELD_OUT = 'blue sky is warm'; // four corpus words, in no corpus sentence in this order
const REVERSED = ['warm', 'is', 'sky', 'blue'];
const REVERSED_AND_STOP = [...REVERSED, '[SEP]'];
// The issue's target is at most 60 s of training; it is reported, not asserted (a busy machine
// makes fewer steps a second). The test fails only if 2,400 steps (about 60 s here) do not do it,
// however long they take. Generate is tried after every slice of 300 steps (about 7.5 s here).
const TARGET_MS = 60000;
const STEP_BUDGET = 2400;
const SLICE_STEPS = 300;

async function setField(page, label, value) {
  const input = page.getByLabel(label, { exact: true });
  await input.fill(String(value));
  await input.press('Enter');
  await input.dispatchEvent('change');
}

const generatedTokens = async (page) => JSON.parse(await page.locator('[data-generated]').getAttribute('data-generated'));
const step = async (page) => Number(await page.locator('[data-step]').first().getAttribute('data-step'));

async function generate(page) {
  await page.getByRole('button', { name: 'Generate', exact: true }).click();
  await page.waitForFunction(() => document.querySelector('[data-generated]')?.dataset.running === 'false'
    && JSON.parse(document.querySelector('[data-generated]').dataset.generated).length > 0, null, { timeout: 30000 });
  return generatedTokens(page);
}

// The selected head's weights beside the model view.
const SUMMARY = figure('summary-weights');
const summaryMatrix = async (page) => JSON.parse(await page.locator(SUMMARY).getAttribute('data-matrix'));

export const tests = [
  {
    name: 'seq2seq: train "Reverse" (60 s target, reported), greedy Generate reverses a held-out sentence, and a cross-attention head shows the anti-diagonal',
    async run({ browser, baseUrl, artifacts }) {
      const { page, problems } = await openPage(browser, baseUrl, { width: 1400, height: 1000 });
      await ready(page);
      await page.getByLabel('Objective').selectOption('seq2seq');
      await page.waitForFunction(() => document.querySelector('header')?.textContent.includes('encoder–decoder'), null, { timeout: 30000 });
      await ready(page);
      const tasks = await page.getByLabel('Task').locator('option').allInnerTexts();
      assert(JSON.stringify(tasks) === JSON.stringify(['Copy', 'Reverse', 'Reply']), `tasks: ${tasks}`);
      assert(await page.getByLabel('Task').inputValue() === 'reverse', 'Reverse is not the task');
      const why = await page.locator('.settings p.why').allInnerTexts();
      assert(why.some((w) => w.includes('not square')), `no why line on the non-square matrix: ${why}`);
      // Short examples train fast: sentences and 2–8 random words fit 12 positions.
      await setField(page, 'Learning rate', '0.003');
      await setField(page, 'Batch size', '16');
      await setField(page, 'Training length', '12');

      // The model view: Encoder, then the decoder's Self and Cross.
      assert(await page.locator('.mv-section[data-part=encoder] h4').innerText() === 'Encoder', 'no Encoder section');
      assert(await page.locator('.mv-section[data-part=decoder] h4').innerText() === 'Decoder', 'no Decoder section');
      const grids = await page.locator('.mv-section[data-part=decoder] h5').allInnerTexts();
      assert(JSON.stringify(grids) === JSON.stringify(['Self', 'Cross']), `decoder grids: ${grids}`);
      assert(await page.getByText('Target', { exact: true }).count() === 1, 'no Target field');

      // Train until the held-out sentence comes back reversed, trying greedy Generate after
      // every slice of training.
      await page.locator('.probe-form input[type=text]').first().fill(HELD_OUT);
      await page.locator('.generate-controls .max-new input').fill('6');
      let trainedMs = 0;
      let tokens = [];
      const tries = [];
      while ((await step(page)) < STEP_BUDGET) {
        const before = await step(page);
        await page.getByRole('button', { name: 'Play', exact: true }).click();
        const started = Date.now();
        await untilStep(page, before + SLICE_STEPS, 120000)
          .catch(async () => { throw new Error(`hung: from step ${before}, only to ${await step(page)} in 120 s of Play`); });
        await pause(page);
        trainedMs += Date.now() - started;
        tokens = await generate(page);
        tries.push(`${await step(page)} steps: ${tokens.join(' ')}`);
        if (JSON.stringify(tokens) === JSON.stringify(REVERSED_AND_STOP)) break;
      }
      console.log(`     ${tries.join('; ')} (${(trainedMs / 1000).toFixed(0)} s of training; target ≤ ${TARGET_MS / 1000} s)`);
      // The reversal, then [SEP]: the model also learned where the target ends.
      assert(JSON.stringify(tokens) === JSON.stringify(REVERSED_AND_STOP), `"${HELD_OUT}" gave ${tokens.join(' ')} after ${await step(page)} steps (${trainedMs} ms)`);
      // Generate fills the Target; the decoder's rows are [CLS] and the target.
      await page.waitForFunction((want) => document.querySelector('.probe-form .target input')?.value === want, REVERSED.join(' '), { timeout: 10000 });
      const prompt = await page.locator('.generated .token.prompt').allInnerTexts();
      assert(JSON.stringify(prompt) === '["[CLS]"]', `decoder start: ${prompt}`);
      // Beside the growing self-attention cache, the source's cross-attention K and V, made once:
      // 2 layers × (k, v) × 6 source tokens × 64 × 4 bytes.
      const cross = Number(await page.locator('.kv-cache').getAttribute('data-cross-kv-bytes'));
      assert(cross === 2 * 2 * 6 * 64 * 4, `cross-attention K/V bytes ${cross}`);

      // Every cross-attention head: Tt × Ts, rows summing to 1; one draws the anti-diagonal
      // (target token i reads source token n + 1 − i).
      const best = [];
      for (let layer = 1; layer <= 2; layer++) {
        for (let head = 1; head <= 4; head++) {
          await page.getByRole('button', { name: `Cross · Layer ${layer} · Head ${head}`, exact: true }).click();
          const caption = `Layer ${layer} · Head ${head} · cross-attention weights`;
          await page.waitForFunction(([css, c]) => document.querySelector(`${css} figcaption`)?.textContent === c,
            [SUMMARY, caption], { timeout: 10000 });
          const m = await summaryMatrix(page);
          // [CLS] warm is sky blue ([SEP]) × [CLS] blue sky is warm [SEP]
          assert(m[0].length === 6 && (m.length === 5 || m.length === 6), `cross weights ${m.length} × ${m[0].length}`);
          assert(m.every((row) => Math.abs(row.reduce((a, b) => a + b, 0) - 1) < 1e-4), 'a cross-attention row does not sum to 1');
          // Query i predicts target token i + 1: at [CLS] the head may read "warm" (column 4)
          // to write it, or at "warm" read "warm" itself; either way an anti-diagonal.
          const argmax = (row) => row.indexOf(Math.max(...row));
          const along = (offset) => [4, 3, 2, 1].filter((col, i) => m[i + offset] && argmax(m[i + offset]) === col).length;
          const hits = Math.max(along(0), along(1));
          best.push({ layer, head, hits });
        }
      }
      best.sort((a, b) => b.hits - a.hits);
      console.log(`     anti-diagonal hits per cross head: ${best.map((b) => `L${b.layer}H${b.head} ${b.hits}/4`).join(', ')}`);
      assert(best[0].hits >= 3, `no cross-attention head follows the anti-diagonal: ${JSON.stringify(best)}`);
      const { layer, head } = best[0];
      await page.getByRole('button', { name: `Cross · Layer ${layer} · Head ${head}`, exact: true }).click();
      await page.locator('.summary figure.heatmap').screenshot({ path: path.join(artifacts, 'e2e-seq2seq-cross.png') });

      // The stepper on cross-attention: its formula says where Q and K, V come from.
      await page.locator(stage('softmax')).click();
      const sources = await page.locator('.formula-sources').innerText();
      assert(sources.includes('from the decoder') && sources.includes("from the encoder's output"), `formula: ${sources}`);
      const steps = await page.locator('.stepper .step .short').allInnerTexts();
      assert(JSON.stringify(steps) === JSON.stringify(['X', 'Q K V', 'QKᵀ', '÷√d_k', '+ M', 'softmax', '· V']), `cross steps: ${steps}`);
      await page.locator(stage('scores')).click();
      const equation = await page.locator('.stage-panel .equation').innerText();
      assert(equation.includes('not square'), `scores equation: ${equation}`);
      await page.screenshot({ path: path.join(artifacts, 'e2e-seq2seq.png'), fullPage: true });

      // A reload brings the encoder–decoder back (kept on Pause), at its step.
      const trainedSteps = await step(page);
      await waitKept(page, trainedSteps);
      await page.reload();
      await ready(page);
      await page.waitForFunction(() => document.querySelector('header')?.textContent.includes('encoder–decoder'), null, { timeout: 30000 });
      await page.waitForFunction((n) => Number(document.querySelector('[data-step]')?.dataset.step) === n, trainedSteps, { timeout: 30000 });
      assert(await page.locator('.mv-section[data-part=decoder]').count() === 1, 'the reloaded model view has no Decoder section');
      await page.locator('.probe-form input[type=text]').first().fill(HELD_OUT);
      const again = await generate(page);
      assert(JSON.stringify(again.slice(0, 4)) === JSON.stringify(REVERSED), `after a reload "${HELD_OUT}" gave ${again.join(' ')}`);

      // Bad input: an empty source is a message beside Generate.
      await page.locator('.probe-form input[type=text]').first().fill('');
      await page.getByRole('button', { name: 'Generate', exact: true }).click();
      await page.waitForFunction(() => document.querySelector('.generate-card .field-error')?.textContent.includes('source sentence'), null, { timeout: 10000 });
      assert(problems.length === 0, `page problems: ${problems.join('; ')}`);
    },
  },
];

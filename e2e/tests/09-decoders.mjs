// Decoders, as a user meets them: Objective "Next token", train, then Generate from the
// Sentence. Tokens arrive one at a time in the worker; the weights heatmap gains a row per
// token (the causal triangle grows); the KV cache readout grows by the same bytes per token;
// the page's longest main-thread task meanwhile is reported (target 50 ms, measured by
// e2e/bench/longtasks.mjs), not asserted: no clock decides a test.
import path from 'node:path';
import { openPage, ready, assert } from '../harness.mjs';
import { figure } from '../names.mjs';

// The selected head's weights beside the model view (Layer 1 · Head 1: the page's first).
const SUMMARY = figure('summary-weights');

const smoothedLoss = async (page) => Number(await page.locator('p.readout').first().getAttribute('data-smoothed-loss'));
const generatedTokens = async (page) => JSON.parse(await page.locator('[data-generated]').getAttribute('data-generated'));

async function generate(page) {
  await page.getByRole('button', { name: 'Generate', exact: true }).click();
  await page.waitForFunction(() => document.querySelector('[data-generated]')?.dataset.running === 'false'
    && JSON.parse(document.querySelector('[data-generated]').dataset.generated).length > 0, null, { timeout: 30000 });
}

export const tests = [
  {
    name: 'decoders: train "Next token", then Generate writes tokens one at a time, the triangle grows and the KV cache grows linearly',
    async run({ browser, baseUrl, artifacts }) {
      const { page, problems } = await openPage(browser, baseUrl);
      await ready(page);
      await page.getByLabel('Objective').selectOption('next-token');
      await page.waitForFunction(() => document.querySelector('header')?.textContent.includes('decoder'), null, { timeout: 30000 });
      await ready(page);
      assert(await page.locator('.generate-card').count() === 1, 'no Generate for a decoder');

      await page.getByRole('button', { name: 'Play', exact: true }).click();
      await page.waitForFunction(() => Number(document.querySelector('[data-step]')?.dataset.step) >= 5, null, { timeout: 30000 });
      const first = await smoothedLoss(page);
      // Bounded by steps, however long they take.
      await page.waitForFunction(() => Number(document.querySelector('[data-step]')?.dataset.step) >= 1500, null, { timeout: 300000 });
      await page.getByRole('button', { name: 'Pause', exact: true }).click();
      await page.waitForFunction(() => !document.querySelector('button.play')?.disabled, null, { timeout: 10000 });
      const last = await smoothedLoss(page);
      const readout = await page.locator('p.readout').first().innerText();
      console.log(`     next-token loss ${first.toFixed(3)} → ${last.toFixed(3)}; ${readout}`);
      assert(readout.includes('next-token loss') && readout.includes('next-token acc'), `readout: ${readout}`);
      assert(last < first, `the next-token loss did not fall: ${first} → ${last}`);
      const charts = await page.locator('figure.curve-chart').allInnerTexts();
      assert(charts.join(' ').includes('next token') && !charts.join(' ').includes('NSP'), `curves: ${charts}`);

      // Generate from "the cat", greedy: record every KV readout and the weights' rows as they come.
      // The probe alone first ([CLS] the cat [SEP]: 4 rows), so its inspection cannot arrive
      // among the generated ones.
      await page.locator('.probe-form input[type=text]').first().fill('the cat');
      await page.locator('.probe-form input[type=text]').nth(1).fill('');
      await page.waitForFunction((css) => {
        const f = document.querySelector(css);
        return f && JSON.parse(f.dataset.matrix || '[]').length === 4;
      }, SUMMARY, { timeout: 10000 });
      await page.evaluate((css) => {
        window.__longTasks = [];
        new PerformanceObserver((list) => list.getEntries().forEach((e) => window.__longTasks.push(e.duration)))
          .observe({ type: 'longtask', buffered: false });
        window.__kv = [];
        window.__rows = [];
        new MutationObserver(() => {
          const kv = document.querySelector('.kv-cache')?.dataset.kvBytes;
          if (kv && window.__kv[window.__kv.length - 1] !== Number(kv)) window.__kv.push(Number(kv));
          const f = document.querySelector(css);
          const rows = f ? JSON.parse(f.dataset.matrix || '[]').length : 0;
          if (rows && window.__rows[window.__rows.length - 1] !== rows) window.__rows.push(rows);
        }).observe(document.body, { subtree: true, childList: true, attributes: true, attributeFilter: ['data-kv-bytes', 'data-matrix'] });
      }, SUMMARY);
      await page.locator('.generate-controls .max-new input').fill('10');
      await generate(page);
      const tokens = await generatedTokens(page);
      const kv = await page.evaluate(() => window.__kv);
      const rows = await page.evaluate(() => window.__rows);
      const longest = Math.max(0, ...await page.evaluate(() => window.__longTasks));
      console.log(`     generated ${JSON.stringify(tokens)}; KV bytes ${kv.join(', ')}; weight rows ${rows.join(', ')}; longest main-thread task ${longest.toFixed(0)} ms`);
      assert(tokens.length >= 2 && tokens.length <= 10, `generated ${tokens.length} tokens`);
      assert(kv.length === tokens.length, `${kv.length} KV readouts for ${tokens.length} tokens: ${kv}`);
      const per = kv.length > 1 ? kv[1] - kv[0] : 0;
      assert(per > 0 && kv.every((b, i) => b === kv[0] + i * per), `the KV cache did not grow by the same bytes per token: ${kv}`);
      // tiny preset: 2 layers × (k, v) × 64 floats × 4 bytes a position.
      assert(per === 2 * 2 * 64 * 4, `${per} bytes a token`);
      const promptLen = await page.locator('.generated .token.prompt').count();
      assert(kv[0] === (promptLen + 1) * per, `KV bytes ${kv[0]} after the first token of a ${promptLen}-token prompt`);
      // The weights gain a row per token: [CLS] the cat, then one more each time.
      assert(rows.at(-1) === promptLen + tokens.length, `weights end with ${rows.at(-1)} rows, expected ${promptLen + tokens.length}`);
      assert(rows.length >= 3 && rows.every((r, i) => i === 0 || r > rows[i - 1]), `rows did not grow one by one: ${rows}`);
      const matrix = JSON.parse(await page.locator(SUMMARY).getAttribute('data-matrix'));
      assert(matrix.every((row, i) => row.every((w, j) => j <= i || w === 0)), 'a generated row attends to a later token');
      const candidates = await page.locator('table.candidates tbody tr').count();
      assert(candidates === tokens.length, `${candidates} candidate rows for ${tokens.length} tokens`);
      await page.screenshot({ path: path.join(artifacts, 'e2e-generate.png'), fullPage: false });

      // Greedy again gives the same tokens; Sample with a temperature gives a clear error at 0.
      await generate(page);
      assert(JSON.stringify(await generatedTokens(page)) === JSON.stringify(tokens), 'greedy generation changed');
      await page.getByRole('button', { name: 'Sample', exact: true }).click();
      await page.locator('.generate-controls .temperature input').fill('0');
      await page.getByRole('button', { name: 'Generate', exact: true }).click();
      const error = page.locator('.generate-card .field-error');
      await error.waitFor({ timeout: 10000 });
      const message = await error.innerText();
      assert(message.includes('must be above 0'), `temperature 0: ${message}`);
      await page.locator('.generate-controls .temperature input').fill('0.8');
      await page.locator('.generate-controls .max-new input').fill('100000');
      await page.getByRole('button', { name: 'Generate', exact: true }).click();
      await page.waitForFunction(() => document.querySelector('.generate-card .field-error')?.textContent.includes('fit'), null, { timeout: 10000 });
      await page.locator('.generate-controls .max-new input').fill('6');
      await page.locator('.probe-form input[type=text]').first().fill('');
      await page.getByRole('button', { name: 'Generate', exact: true }).click();
      await page.waitForFunction(() => document.querySelector('.generate-card .field-error')?.textContent.includes('empty'), null, { timeout: 10000 });
      await page.locator('.probe-form input[type=text]').first().fill('🙂 the dog');
      await generate(page);
      assert((await generatedTokens(page)).length >= 1, 'no tokens after an emoji prompt');
      assert(problems.length === 0, `page problems: ${problems.join('; ')}`);
    },
  },
];

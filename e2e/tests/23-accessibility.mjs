// The page for every learner: axe-core (WCAG 2.0, 2.1 and 2.2, A and AA) finds no violation as
// the page opens, with the tour open, with the PyTorch view open, after a claim ran, in the dark
// colour scheme and at 390 px; the skip links reach the sentence, Play, the figures and the
// claims in a few presses of Tab; and a heatmap is read by keyboard: its summary, and the cell
// under the arrow keys' cursor announced (aria-live) with the value `data-matrix` holds.
import fs from 'node:fs';
import { openReady, ready, assert, openCode, WCAG } from '../harness.mjs';
import { figure, CURRENT_STAGE } from '../names.mjs';

const AXE = fs.readFileSync(new URL('../../node_modules/axe-core/axe.min.js', import.meta.url), 'utf8');
const SUMMARY = figure('summary-weights');

/// axe-core's violations on the page as it is now, one line each.
async function violations(page) {
  await page.evaluate(AXE);
  const result = await page.evaluate((tags) => window.axe.run(document, { runOnly: { type: 'tag', values: tags } }), WCAG);
  return result.violations.map((v) => `${v.id} ×${v.nodes.length}: ${v.help} (${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(', ')})`);
}

async function noViolations(page, state) {
  const found = await violations(page);
  assert(found.length === 0, `${state}: ${found.length} violations:\n  ${found.join('\n  ')}`);
  console.log(`     ${state}: no WCAG A/AA violation`);
}

/// A value as the page's tooltip and readout write it (src/heatmap/reading.rs, value_text).
function valueText(v) {
  if (v === null) return '−∞ (masked)';
  if (v === 0) return '0 (exactly)';
  return v.toFixed(6);
}

export const tests = [
  {
    name: 'axe-core finds no WCAG A/AA violation: as it opens, tour, PyTorch view, a claim run, dark mode, 390 px',
    async run({ browser, baseUrl }) {
      const { page, context, problems } = await openReady(browser, baseUrl);
      await noViolations(page, 'as it opens');
      await openCode(page);
      await noViolations(page, 'the PyTorch view open');
      const card = page.locator('article.claim[data-claim="KvCache"]');
      await card.getByRole('button', { name: 'Run', exact: true }).click();
      await page.waitForFunction(() => document.querySelector('article.claim[data-claim="KvCache"]')?.dataset.state === 'done', null, { timeout: 60000 });
      await noViolations(page, 'a claim run');
      await page.getByRole('button', { name: 'Tour', exact: true }).click();
      await page.waitForSelector('aside.tour h2', { timeout: 15000 });
      await noViolations(page, 'the tour open');
      assert(problems.length === 0, problems.join('\n'));
      await context.close();

      const dark = await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: 'dark' });
      const darkPage = await dark.newPage();
      await darkPage.goto(baseUrl);
      await ready(darkPage);
      await noViolations(darkPage, 'dark colour scheme');
      await dark.close();

      const phone = await openReady(browser, baseUrl, { width: 390, height: 844 });
      await noViolations(phone.page, '390 px wide');
      await phone.context.close();
    },
  },
  {
    name: 'skip links: a few presses of Tab reach the sentence, Play, the figures and the claims',
    async run({ browser, baseUrl }) {
      const { page, context, problems } = await openReady(browser, baseUrl);
      const reached = [];
      for (const [link, target] of [['Skip to the sentence', 'sentence'], ['Skip to Play', 'play'], ['Skip to the figures', 'figures'], ['Skip to the claims', 'claims']]) {
        // From the top of the page each time, as a learner who starts again.
        await page.evaluate(() => {
          // Tab's next stop is the first after the page's start.
          let top = document.getElementById('test-top');
          if (!top) {
            top = Object.assign(document.createElement('span'), { id: 'test-top', tabIndex: -1 });
            document.body.prepend(top);
          }
          top.focus();
          window.scrollTo(0, 0);
        });
        let presses = 0;
        let focused = '';
        while (focused !== link && presses < 6) {
          await page.keyboard.press('Tab');
          presses += 1;
          focused = await page.evaluate(() => document.activeElement?.textContent ?? '');
        }
        assert(focused === link, `"${link}" not reached in ${presses} presses of Tab (at "${focused}")`);
        const visible = await page.evaluate(() => document.activeElement.getBoundingClientRect().left >= 0);
        assert(visible, `"${link}" is focused but off screen`);
        await page.keyboard.press('Enter');
        const at = await page.evaluate(() => document.activeElement?.id);
        assert(at === target, `"${link}" moved the focus to #${at}, not #${target}`);
        reached.push(`${target} in ${presses + 1}`);
      }
      assert(problems.length === 0, problems.join('\n'));
      console.log(`     presses (Tab…, Enter): ${reached.join(', ')}`);
      await context.close();
    },
  },
  {
    name: 'a heatmap by keyboard: focusable, summed up, and the arrow keys\' cell announced with its data-matrix value',
    async run({ browser, baseUrl }) {
      const { page, context, problems } = await openReady(browser, baseUrl);
      const fig = page.locator(SUMMARY);
      assert(await fig.getAttribute('tabindex') === '0', 'the summary heatmap is not focusable');
      const summaryId = await fig.getAttribute('aria-describedby');
      const summary = await page.locator(`#${summaryId}`).textContent();
      const caption = await fig.locator('figcaption').textContent();
      assert(summary.startsWith(`${caption}: `) && /\d+ rows × \d+ columns/.test(summary) && summary.includes('largest'),
        `the summary says: ${summary}`);
      const stageBefore = await page.locator(CURRENT_STAGE).getAttribute('data-stage');
      await fig.focus();
      const matrix = JSON.parse(await fig.getAttribute('data-matrix'));
      const cols = matrix[0].length;
      const readout = fig.locator('[aria-live]');
      assert(await readout.count() === 1, 'no aria-live readout in the figure');
      // Each key, and the cell it must reach from the one before.
      const moves = [['ArrowDown', 1, 0], ['ArrowRight', 1, 1], ['End', 1, cols - 1], ['ArrowRight', 1, cols - 1], ['Home', 1, 0], ['ArrowUp', 0, 0]];
      for (const [key, row, col] of moves) {
        await page.keyboard.press(key);
        await page.waitForFunction(([css, r, c]) => {
          const out = document.querySelector(`${css} [aria-live]`);
          return out && out.dataset.row === String(r) && out.dataset.col === String(c);
        }, [SUMMARY, row, col], { timeout: 5000 });
        const text = await readout.textContent();
        const want = valueText(matrix[row][col]);
        assert(text.endsWith(`= ${want}`) && text.includes(` #${row} → `) && text.includes(` #${col} = `),
          `${key}: the readout says "${text}", not row ${row}, column ${col} = ${want}`);
        const tip = await fig.locator('.tooltip').textContent();
        assert(tip.replace(/\s+/g, ' ').trim() === text.replace(/\s+/g, ' ').trim(), `${key}: the tooltip shows "${tip}", the readout "${text}"`);
      }
      // The arrows were the figure's: the stepper stayed where it was.
      assert(await page.locator(CURRENT_STAGE).getAttribute('data-stage') === stageBefore, 'the arrows moved the stepper too');
      assert(problems.length === 0, problems.join('\n'));
      console.log(`     ${moves.length} keys on a ${matrix.length} × ${cols} heatmap, each cell read as data-matrix holds it`);
      await context.close();
    },
  },
  {
    name: 'a plot by keyboard: a claim\'s chart and a training curve read point by point, each reading the point its data holds',
    async run({ browser, baseUrl }) {
      const { page, context, problems } = await openReady(browser, baseUrl);
      const card = page.locator('article.claim[data-claim="KvCache"]');
      await card.getByRole('button', { name: 'Run', exact: true }).click();
      await page.waitForFunction(() => document.querySelector('article.claim[data-claim="KvCache"]')?.dataset.state === 'done', null, { timeout: 60000 });
      const chart = card.locator('figure.claim-chart').first();
      assert(await chart.getAttribute('tabindex') === '0', 'the claim chart is not focusable');
      const series = JSON.parse(await chart.getAttribute('data-series'));
      await chart.focus();
      const read = async (key, s, p) => {
        await page.keyboard.press(key);
        const out = chart.locator('[aria-live]');
        await page.waitForFunction(([el, s, p]) => el.dataset.seriesIndex === String(s) && el.dataset.point === String(p),
          [await out.elementHandle(), s, p], { timeout: 5000 });
        const text = await out.textContent();
        assert(text.startsWith(`${series[s].name}, `) && text.endsWith(`(point ${p + 1} of ${series[s].x.length})`), `${key}: "${text}"`);
        return text;
      };
      const first = await read('ArrowRight', 0, 0);
      const last = await read('End', 0, series[0].x.length - 1);
      const readings = [first, last];
      if (series.length > 1) readings.push(await read('ArrowDown', 1, Math.min(series[0].x.length, series[1].x.length) - 1));
      // A training curve: Play a few steps, then the arrows walk its points.
      await page.locator('button.play').click();
      await page.waitForFunction(() => Number(document.querySelector('[data-step]')?.dataset.step) >= 20, null, { timeout: 60000 });
      await page.getByRole('button', { name: 'Pause', exact: true }).click();
      const curve = page.locator('figure.curve-chart[data-chart="loss"]');
      await curve.focus();
      await page.keyboard.press('Home');
      await page.keyboard.press('ArrowRight');
      await page.waitForFunction((el) => el.dataset.point === '1', await curve.locator('[aria-live="polite"]').elementHandle(), { timeout: 5000 });
      const said = await curve.locator('[aria-live="polite"]').textContent();
      const shown = await curve.locator('.curve-readout').first().textContent();
      const step = said.match(/^step (\d+):/)?.[1];
      assert(step && shown.includes(`step ${step}`), `the curve says "${said}", its readout shows "${shown}"`);
      assert(problems.length === 0, problems.join('\n'));
      console.log(`     ${readings.join(' | ')}; curve: ${said}`);
      await context.close();
    },
  },
];

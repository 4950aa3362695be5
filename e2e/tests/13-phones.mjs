// A phone: 390 × 844, touch, no hover (Chromium's phone emulation). Nothing scrolls sideways,
// every control works by tap, a tap on a heatmap cell shows its exact value, a tap on a
// thumbnail selects that head. Screenshots of the explorer, the training panel, the stepper
// and the claims at this size go to artifacts/ to be looked at.
import path from 'node:path';
import { assert } from '../harness.mjs';
import { figure as figureCss, CURRENT_STAGE } from '../names.mjs';

// The selected head's weights beside the model view.
const SUMMARY = figureCss('summary-weights');
const PHONE = { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2 };

export const tests = [
  {
    name: 'phones: nothing scrolls sideways at 390 × 844; taps train, step, select a head and show a cell\'s exact value',
    async run({ browser, baseUrl, artifacts }) {
      const context = await browser.newContext(PHONE);
      const page = await context.newPage();
      const errors = [];
      page.on('pageerror', (e) => errors.push(e.message));
      page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
      await page.goto(baseUrl);
      await page.waitForFunction(() => document.querySelector('figure.heatmap canvas') && !document.querySelector('.busy'), null, { timeout: 30000 });
      const sideways = () => page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      assert(await sideways() <= 0, `the page scrolls sideways by ${await sideways()} px`);
      await page.screenshot({ path: path.join(artifacts, 'phone-explorer.png') });

      // A tap on a cell of the weights heatmap: its tokens and exact value, as the mouse's hover gives.
      const figure = page.locator(SUMMARY);
      const canvas = figure.locator('canvas');
      const box = await canvas.boundingBox();
      await canvas.tap({ position: { x: box.width * 0.45, y: box.height * 0.6 } });
      const tip = figure.locator('.tooltip');
      await tip.waitFor({ timeout: 3000 });
      const text = await tip.innerText();
      const m = text.match(/#(\d+) → .* #(\d+) = (.*)$/);
      assert(m, `the tap's tooltip reads "row #i → col #j = value": ${text}`);
      const data = JSON.parse(await figure.getAttribute('data-matrix'));
      const shown = m[3] === '0 (exactly)' ? 0 : parseFloat(m[3]);
      assert(Math.abs(shown - data[+m[1]][+m[2]]) < 5e-7, `tooltip ${m[3]} vs data-matrix ${data[+m[1]][+m[2]]}`);
      await page.screenshot({ path: path.join(artifacts, 'phone-tap-value.png') });

      // A tap on a thumbnail selects its head.
      await page.getByRole('button', { name: 'Layer 2 · Head 3' }).tap();
      await page.waitForFunction((css) => document.querySelector(`${css} figcaption`)?.textContent.startsWith('Layer 2 · Head 3'),
        SUMMARY, { timeout: 5000 });

      // The stepper by tap.
      const before = await page.locator(CURRENT_STAGE).getAttribute('data-stage');
      await page.getByRole('button', { name: 'Next' }).tap();
      await page.waitForFunction(([css, was]) => document.querySelector(css)?.dataset.stage !== was,
        [CURRENT_STAGE, before], { timeout: 5000 });
      await page.locator('.stage-panel').scrollIntoViewIfNeeded();
      await page.screenshot({ path: path.join(artifacts, 'phone-stepper.png') });

      // Play, Pause and Step by tap.
      await page.getByRole('button', { name: 'Play', exact: true }).tap();
      await page.waitForFunction(() => Number(document.querySelector('[data-step]')?.dataset.step) >= 20, null, { timeout: 30000 });
      await page.getByRole('button', { name: 'Pause', exact: true }).tap();
      await page.waitForFunction(() => !document.querySelector('button.play')?.disabled, null, { timeout: 10000 });
      const paused = Number(await page.locator('[data-step]').first().getAttribute('data-step'));
      await page.getByRole('button', { name: 'Step', exact: true }).tap();
      await page.waitForFunction((n) => Number(document.querySelector('[data-step]')?.dataset.step) === n + 1, paused, { timeout: 10000 });
      await page.locator('aside.training').scrollIntoViewIfNeeded();
      await page.screenshot({ path: path.join(artifacts, 'phone-training.png') });
      await page.locator('section.claims').scrollIntoViewIfNeeded();
      await page.screenshot({ path: path.join(artifacts, 'phone-claims.png') });
      await page.screenshot({ path: path.join(artifacts, 'phone-full.png'), fullPage: true });
      assert(await sideways() <= 0, `after training, the page scrolls sideways by ${await sideways()} px`);
      assert(errors.length === 0, errors.join('\n'));
      await context.close();
    },
  },
];

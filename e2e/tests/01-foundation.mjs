import path from 'node:path';
import { openPage, assert, inkFraction, foreignRequests, poll } from '../harness.mjs';

export const tests = [
  {
    name: 'the app renders a plotters heatmap with no console error and no foreign request',
    async run({ browser, baseUrl, artifacts }) {
      const { page, context, problems, requests } = await openPage(browser, baseUrl);
      await page.waitForSelector('figure.heatmap canvas', { timeout: 20000 });
      const canvas = page.locator('figure.heatmap canvas').first();
      // Drawn from the first inspection, which may come after the canvas.
      await poll(() => inkFraction(canvas), (ink) => ink > 0.05, (ink) => `heatmap canvas is blank (ink ${ink})`, 20000);
      const matrix = JSON.parse(await page.locator('figure.heatmap').first().getAttribute('data-matrix'));
      assert(Array.isArray(matrix) && matrix.length > 0, 'data-matrix is not a non-empty array');
      await page.screenshot({ path: path.join(artifacts, 'e2e-home.png'), fullPage: true });
      const foreign = foreignRequests(requests, baseUrl);
      assert(foreign.length === 0, `requests outside the app: ${foreign.join(', ')}`);
      assert(problems.length === 0, problems.join('\n'));
      await context.close();
    },
  },
];

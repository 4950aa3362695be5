// The page talks to nothing but its own origin, under a Content-Security-Policy that allows only
// 'self' and 'wasm-unsafe-eval', and nothing it does violates that policy.
import { openPage, assert, foreignRequests } from '../harness.mjs';

const POLICY = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'";

export const tests = [
  {
    name: 'security: a CSP of only self and wasm-unsafe-eval, no violation while training, every request to the own origin',
    async run({ browser, baseUrl }) {
      const { page, context, problems, requests } = await openPage(browser, baseUrl);
      await page.waitForSelector('figure.heatmap canvas', { timeout: 30000 });
      await page.waitForFunction(() => !document.querySelector('.busy'), null, { timeout: 30000 });
      const policy = await page.evaluate(() => document.querySelector('meta[http-equiv="Content-Security-Policy"]')?.content);
      assert(policy === POLICY, `policy: ${policy}`);
      assert(await page.evaluate(() => document.querySelectorAll('script:not([src])').length === 0), 'an inline script is left');
      // Train, draw the curves, hover them: every view that sets styles or draws.
      await page.getByRole('button', { name: 'Play', exact: true }).click();
      await page.waitForFunction(() => Number(document.querySelector('[data-step]')?.dataset.step) >= 20, null, { timeout: 30000 });
      await page.getByRole('button', { name: 'Pause', exact: true }).click();
      const chart = page.locator('figure.curve-chart canvas').first();
      await chart.hover();
      await page.waitForTimeout(500);
      assert(await page.locator('.curve-marker').count() > 0, 'no hover marker on the curves');
      const foreign = foreignRequests(requests, baseUrl);
      assert(foreign.length === 0, `requests outside the page's origin: ${foreign.join(', ')}`);
      assert(requests.some((u) => u.includes('attention-lab-worker')), 'the worker was not loaded');
      assert(problems.length === 0, problems.join('\n'));

      // The policy is in force: an inline script is refused (and reported).
      await page.addScriptTag({ content: 'window.__inlineRan = true;' }).catch(() => {});
      await page.waitForTimeout(200);
      assert(!(await page.evaluate(() => window.__inlineRan === true)), 'an inline script ran');
      assert(problems.some((p) => p.startsWith('CSP violation')), 'the refused inline script was not reported');
      await page.evaluate(() => { localStorage.clear(); indexedDB.deleteDatabase('attention-lab'); });
      await context.close();
    },
  },
];

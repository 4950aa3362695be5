// The page talks to nothing but its own origin, under a Content-Security-Policy that allows only
// 'self' and 'wasm-unsafe-eval' (and, for fetch alone, https and this computer's http: a model
// from a web address, checkpoint=), and nothing it does violates that policy.
import { openPage, assert, foreignRequests, poll } from '../harness.mjs';

const POLICY = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; connect-src 'self' https: http://127.0.0.1:* http://localhost:*";

export const tests = [
  {
    name: 'security: a CSP of only self and wasm-unsafe-eval (fetch: https and this computer too), no violation while training, every request to the own origin',
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
      await page.locator('.curve-marker').first().waitFor({ timeout: 5000 })
        .catch(() => { throw new Error('no hover marker on the curves'); });
      const foreign = foreignRequests(requests, baseUrl);
      assert(foreign.length === 0, `requests outside the page's origin: ${foreign.join(', ')}`);
      assert(requests.some((u) => u.includes('attention-lab-worker')), 'the worker was not loaded');
      assert(problems.length === 0, problems.join('\n'));

      // The policy is in force: an inline script is refused (and reported).
      await page.addScriptTag({ content: 'window.__inlineRan = true;' }).catch(() => {});
      // The report is the event that says the script was refused (after it, it never runs).
      await poll(() => problems.some((p) => p.startsWith('CSP violation')), (reported) => reported,
        () => 'the refused inline script was not reported', 5000);
      assert(!(await page.evaluate(() => window.__inlineRan === true)), 'an inline script ran');
      await page.evaluate(() => { localStorage.clear(); indexedDB.deleteDatabase('attention-lab'); });
      await context.close();
    },
  },
];

// Length extrapolation, run to its end in the page: the claim trains nine decoders of its own
// (absolute, rotary, ALiBi × seeds 1–3) on Repeat at L ≤ 8 until each copies, then reads them
// at every L up to 16. The test recomputes what each model keeps from the plotted series and
// checks the verdict's form against the spreads, whichever way they come out. Bounded by the
// claim's own units (270 checks at most), never by the clock: the timeout is a watchdog.
import path from 'node:path';
import { openPage, ready, assert, framesRendered } from '../harness.mjs';

const CLAIM = 'article.claim[data-claim="Extrapolation"]';
// engine::experiments::extrapolation: TRAINED.max_len and LONGEST.
const TRAINED_MAX = 8;
const LONGEST = 16;

const mean = (v) => v.reduce((a, b) => a + b, 0) / v.length;

export const tests = [
  {
    name: 'extrapolation: nine models of its own learn Repeat within T, are read up to 2T, and the verdict follows the seeds\' spreads',
    async run({ browser, baseUrl, artifacts }) {
      const { page, problems } = await openPage(browser, baseUrl);
      await ready(page);
      const claim = page.locator(CLAIM);
      assert((await claim.locator('h3').textContent()) === 'Length extrapolation (RoPE)', 'the title');
      const started = Date.now();
      await claim.getByRole('button', { name: 'Run', exact: true }).click();
      await page.waitForFunction((c) => ['done', 'failed'].includes(document.querySelector(c)?.dataset.state), CLAIM, { timeout: 1800000 });
      if (await claim.getAttribute('data-state') !== 'done') throw new Error(`extrapolation: ${await claim.locator('.error').textContent()}`);
      const seconds = ((Date.now() - started) / 1000).toFixed(0);

      const figures = claim.locator('figure.claim-chart');
      assert(await figures.count() === 3, `${await figures.count()} plots`);
      const kept = {};
      const learned = {};
      for (const [i, kind] of ['Absolute', 'Rotary', 'ALiBi'].entries()) {
        const caption = await figures.nth(i).locator('figcaption').textContent();
        assert(caption.startsWith(kind), caption);
        const series = JSON.parse(await figures.nth(i).getAttribute('data-series'));
        assert(series.length === 3 && series.every((s, k) => s.name.startsWith(`seed ${k + 1}`)), series.map((s) => s.name).join());
        kept[kind] = [];
        learned[kind] = series.every((s) => !s.name.includes('not learned'));
        for (const s of series) {
          assert(s.x.join() === Array.from({ length: LONGEST - 3 }, (_, k) => k + 4).join(), `${kind} ${s.name}: L ${s.x}`);
          assert(s.y.every((a) => a >= 0 && a <= 1), `${kind} ${s.name}: ${s.y}`);
          const within = mean(s.y.filter((_, k) => s.x[k] <= TRAINED_MAX));
          const past = mean(s.y.filter((_, k) => s.x[k] > TRAINED_MAX));
          // A model that learned copies the trained lengths at least 90% right on average.
          if (!s.name.includes('not learned')) assert(within >= 0.8, `${kind} ${s.name} learned but reads ${within} within T`);
          kept[kind].push(past / within);
        }
      }
      const verdict = await claim.locator('.verdict').textContent();
      const numbers = (await claim.locator('dl.claim-numbers').innerText()).replace(/\s+/g, ' ');
      const [r, a] = [kept.Rotary, kept.Absolute];
      const expected = !(learned.Rotary && learned.Absolute) ? 'Not decided: not every model learned'
        : Math.min(...r) > Math.max(...a) ? 'Borne out here'
          : Math.max(...r) <= Math.min(...a) ? 'Not borne out here' : 'Not decided';
      console.log(`     extrapolation in ${seconds} s; kept: rotary ${r.map((k) => k.toFixed(3)).join(' ')}, absolute ${a.map((k) => k.toFixed(3)).join(' ')}, ALiBi ${kept.ALiBi.map((k) => k.toFixed(3)).join(' ')}\n     verdict: ${verdict}`);
      assert(verdict.startsWith(expected), `expected "${expected}…": ${verdict}`);
      assert(verdict.includes('seeds 1, 2 and 3') && numbers.includes('Rotary seed 1'), `${verdict} | ${numbers}`);

      for (const figure of await claim.locator('figure').all()) {
        await figure.scrollIntoViewIfNeeded();
        await framesRendered(page);
      }
      await claim.screenshot({ path: path.join(artifacts, 'claims-extrapolation-1280.png') });
      await page.setViewportSize({ width: 390, height: 844 });
      await framesRendered(page);
      for (const figure of await claim.locator('figure').all()) {
        await figure.scrollIntoViewIfNeeded();
        await framesRendered(page);
      }
      await claim.screenshot({ path: path.join(artifacts, 'claims-extrapolation-390.png') });
      assert(problems.length === 0, problems.join('\n'));
    },
  },
];

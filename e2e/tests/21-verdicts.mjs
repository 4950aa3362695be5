// Each form of a claim's verdict (borne out, not borne out, not decided, not measured) is drawn
// in its own colour, its text at least 4.5:1 on its background (WCAG AA), in the light and the
// dark colour scheme; and a real verdict carries its form.
import { openPage, assert } from '../harness.mjs';

const FORMS = ['borne-out', 'not-borne-out', 'not-decided', 'not-measured'];

/// WCAG 2 contrast of two CSS colours `rgb(r, g, b)`.
function contrast(a, b) {
  const luminance = (css) => {
    const [r, g, bl] = css.match(/[\d.]+/g).slice(0, 3).map(Number).map((v) => {
      const c = v / 255;
      return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * bl;
  };
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (hi + 0.05) / (lo + 0.05);
}

export const tests = [
  {
    name: 'verdicts: each form its own colour, at least 4.5:1, light and dark; a real verdict carries its form',
    async run({ browser, baseUrl }) {
      for (const colorScheme of ['light', 'dark']) {
        const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme });
        const page = await context.newPage();
        await page.goto(baseUrl);
        await page.waitForSelector('article.claim');
        // One verdict of each form in a claim card, drawn by the page's own style sheet.
        const drawn = await page.evaluate((forms) => {
          const card = document.querySelector('article.claim');
          return forms.map((form) => {
            const p = document.createElement('p');
            p.className = 'verdict';
            p.dataset.verdict = form;
            p.textContent = form;
            card.appendChild(p);
            const style = getComputedStyle(p);
            const out = { form, color: style.color, background: style.backgroundColor, border: style.borderLeftColor };
            p.remove();
            return out;
          });
        }, FORMS);
        for (const d of drawn) {
          const ratio = contrast(d.color, d.background);
          assert(ratio >= 4.5, `${colorScheme}: ${d.form} is ${d.color} on ${d.background}: ${ratio.toFixed(2)}:1`);
          console.log(`     ${colorScheme}: ${d.form} ${d.color} on ${d.background}, ${ratio.toFixed(2)}:1`);
        }
        const colours = new Set(drawn.map((d) => `${d.color}|${d.background}|${d.border}`));
        assert(colours.size === FORMS.length, `${colorScheme}: forms share a colour: ${JSON.stringify(drawn)}`);
        await context.close();
      }
      // A claim run in the page: its verdict says its form.
      const { page, context, problems } = await openPage(browser, baseUrl);
      const card = page.locator('article.claim[data-claim="KvCache"]');
      await card.getByRole('button', { name: 'Run', exact: true }).click();
      await page.waitForFunction(() => document.querySelector('article.claim[data-claim="KvCache"]')?.dataset.state === 'done', null, { timeout: 60000 });
      const form = await card.locator('.verdict').getAttribute('data-verdict');
      const text = await card.locator('.verdict').innerText();
      assert(form === 'borne-out' && text.startsWith('Borne out'), `${form}: ${text}`);
      assert(problems.length === 0, problems.join('\n'));
      await context.close();
    },
  },
];

// The attention explorer, driven as a user would, against the release build.
import fs from 'node:fs';
import path from 'node:path';
import { openPage, openReady, assert, inkFraction, framesRendered } from '../harness.mjs';
import { figure as figureCss, stage } from '../names.mjs';

const WEIGHTS = (l, h) => `Layer ${l} · Head ${h} · softmax weights`;
// The selected head's weights beside the model view.
const SUMMARY = figureCss('summary-weights');

// The weights of the selected head beside the model view (Layer 1 · Head 1 when the page opens).
function summary(page) {
  return page.locator(SUMMARY);
}

async function summaryMatrix(page) {
  return JSON.parse(await summary(page).getAttribute('data-matrix'));
}

// The stepper's figure named `name` (its data-figure: protocol::figure::FigureName).
async function stageMatrix(page, name) {
  return JSON.parse(await page.locator(`.stage-panel ${figureCss(name)}`).getAttribute('data-matrix'));
}

async function tokens(page) {
  return page.locator('ol.tokens li').evaluateAll((els) => els.map((e) => ({
    text: [...e.childNodes].filter((n) => n.nodeType === 3).map((n) => n.textContent).join(''), cls: e.className,
  })));
}

/// Waits until the token chips read `expected` (the worker answers asynchronously).
async function waitTokens(page, expected) {
  await page.waitForFunction((want) => {
    const got = [...document.querySelectorAll('ol.tokens li')]
      .map((e) => [...e.childNodes].filter((n) => n.nodeType === 3).map((n) => n.textContent).join(''));
    return got.join(' ') === want;
  }, expected.join(' '), { timeout: 15000 });
}

function clean(problems, requests, baseUrl) {
  const foreign = requests.filter((u) => !u.startsWith(baseUrl) && !u.startsWith('data:') && !u.startsWith('blob:'));
  assert(foreign.length === 0, `requests outside the app: ${foreign.join(', ')}`);
  assert(problems.length === 0, problems.join('\n'));
}

export const tests = [
  {
    name: 'explorer: type a sentence and a pair, see the tokens as chips',
    async run({ browser, baseUrl, artifacts }) {
      const { page, context, problems, requests } = await openReady(browser, baseUrl);
      await page.getByLabel('Second sentence').fill('');
      await page.getByLabel('Sentence', { exact: true }).fill('The cat sleeps under the tree.');
      await waitTokens(page, ['[CLS]', 'the', 'cat', 'sleeps', 'under', 'the', 'tree', '.', '[SEP]']);
      await page.getByLabel('Second sentence').fill('a zebra [MASK] .');
      await waitTokens(page, ['[CLS]', 'the', 'cat', 'sleeps', 'under', 'the', 'tree', '.', '[SEP]', 'a', '[UNK]', '[MASK]', '.', '[SEP]']);
      const chips = await tokens(page);
      assert(chips[0].cls.includes('special') && chips[8].cls.includes('special'), 'specials look distinct');
      assert(chips[1].cls.includes('seg-a') && chips[9].cls.includes('seg-b'), `segments: ${chips[1].cls} / ${chips[9].cls}`);
      assert(chips[10].cls.includes('unk'), `[UNK] flagged: ${chips[10].cls}`);
      assert(chips[11].cls.includes('mask'), `[MASK] distinct: ${chips[11].cls}`);
      const predictions = await page.locator('.predictions').innerText();
      assert(predictions.includes('[MASK] #11') && predictions.includes('P(IsNext)'), predictions);
      assert(await page.locator('ol.top5 li').count() === 5, 'top-5 for the one [MASK]');
      await page.locator('.probe-card').screenshot({ path: path.join(artifacts, 'explorer-tokens.png') });
      clean(problems, requests, baseUrl);
      await context.close();
    },
  },
  {
    name: 'explorer: switching the mask to Causal zeroes the upper triangle, same weights otherwise',
    async run({ browser, baseUrl, artifacts }) {
      const { page, context, problems, requests } = await openReady(browser, baseUrl);
      assert(await summary(page).locator('figcaption').textContent() === WEIGHTS(1, 1), 'the first head is shown');
      const before = await summaryMatrix(page);
      const t = before.length;
      assert(before[0][t - 1] > 0, 'padding mask: query 0 sees the last key');
      await page.getByRole('radio', { name: 'Causal' }).check();
      await page.waitForFunction((css) => {
        const f = document.querySelector(css);
        return f && JSON.parse(f.dataset.matrix)[0][1] === 0;
      }, SUMMARY, { timeout: 15000 });
      const after = await summaryMatrix(page);
      for (let i = 0; i < t; i++) {
        for (let j = i + 1; j < t; j++) assert(after[i][j] === 0, `causal weight[${i}][${j}] = ${after[i][j]}`);
      }
      assert(after[0][0] === 1, `query 0 sees only itself: ${after[0][0]}`);
      // Step to the mask stage: M is hatched above the diagonal, masked scores are null there.
      await page.locator(stage('masked')).click();
      const masked = await stageMatrix(page, 'masked-scores');
      assert(masked[0][1] === null && masked[1][0] !== null, 'masked scores: null above the diagonal');
      await page.locator('.stage-panel').screenshot({ path: path.join(artifacts, 'explorer-causal-mask.png') });
      await page.getByRole('radio', { name: 'Padding' }).check();
      await page.waitForFunction((css) => {
        const f = document.querySelector(css);
        return f && JSON.parse(f.dataset.matrix)[0][1] > 0;
      }, SUMMARY, { timeout: 15000 });
      const again = await summaryMatrix(page);
      assert(JSON.stringify(again) === JSON.stringify(before), 'back to Padding: the same weights as before');
      clean(problems, requests, baseUrl);
      await context.close();
    },
  },
  {
    name: 'explorer: selecting a head in the model view',
    async run({ browser, baseUrl, artifacts }) {
      const { page, context, problems, requests } = await openReady(browser, baseUrl);
      const cells = page.locator('.model-view button.thumb');
      assert(await cells.count() >= 2, 'model view has cells');
      for (const i of [0, 1]) { const ink = await inkFraction(cells.nth(i).locator('canvas')); assert(ink > 0.5, `thumbnail ${i} is drawn (ink ${ink})`); }
      await page.getByRole('button', { name: 'Layer 2 · Head 3' }).click();
      await page.waitForFunction(([css, c]) => document.querySelector(`${css} figcaption`)?.textContent === c,
        [SUMMARY, WEIGHTS(2, 3)], { timeout: 5000 });
      assert(await page.getByLabel('Layer', { exact: true }).inputValue() === '1', 'Layer selector shows 2');
      assert(await page.getByLabel('Head', { exact: true }).inputValue() === '2', 'Head selector shows 3');
      assert(await page.locator('.thumb.selected').getAttribute('aria-label') === 'Layer 2 · Head 3', 'cell marked');
      await page.getByLabel('Head', { exact: true }).selectOption('0');
      await page.waitForFunction(([css, c]) => document.querySelector(`${css} figcaption`)?.textContent === c,
        [SUMMARY, WEIGHTS(2, 1)], { timeout: 5000 });
      await page.locator('.overview').screenshot({ path: path.join(artifacts, 'explorer-model-view.png') });
      clean(problems, requests, baseUrl);
      await context.close();
    },
  },
  {
    name: 'explorer: hovering a cell shows its tokens and exact value',
    async run({ browser, baseUrl, artifacts }) {
      const { page, context, problems, requests } = await openReady(browser, baseUrl);
      const fig = summary(page);
      const canvas = fig.locator('canvas');
      const box = await canvas.boundingBox();
      await page.mouse.move(box.x + box.width * 0.45, box.y + box.height * 0.6);
      const tip = fig.locator('.tooltip');
      await tip.waitFor({ timeout: 3000 });
      const text = await tip.innerText();
      const m = text.match(/#(\d+) → .* #(\d+) = (.*)$/);
      assert(m, `tooltip reads "row #i → col #j = value": ${text}`);
      const data = await summaryMatrix(page);
      const v = data[+m[1]][+m[2]];
      const shown = m[3] === '0 (exactly)' ? 0 : parseFloat(m[3]);
      assert(Math.abs(shown - v) < 5e-7, `tooltip ${m[3]} vs data-matrix ${v}`);
      const around = await fig.boundingBox();
      await page.screenshot({ path: path.join(artifacts, 'explorer-tooltip.png'),
        clip: { x: around.x, y: around.y, width: around.width + 200, height: around.height } });
      await page.mouse.move(0, 0);
      await tip.waitFor({ state: 'detached', timeout: 3000 });
      clean(problems, requests, baseUrl);
      await context.close();
    },
  },
  {
    name: 'explorer: stepping through every stage (embeddings, attention, Add & Norm, feed-forward) with buttons and arrow keys',
    async run({ browser, baseUrl, artifacts }) {
      const { page, context, problems, requests } = await openReady(browser, baseUrl);
      await page.getByLabel('Pad to').fill('20');
      await page.waitForFunction(() => document.querySelectorAll('ol.tokens li.pad').length > 0, null, { timeout: 15000 });
      const title = page.locator('.stage-title');
      const at = (n) => page.waitForFunction((n) => document.querySelector('.stage-title').textContent.startsWith(`Step ${n} of 12`), n);
      assert((await title.innerText()).startsWith('Step 1 of 12'), await title.innerText());
      for (let k = 2; k <= 12; k++) {
        await page.getByRole('button', { name: 'Next' }).click();
        await at(k);
        const captions = await page.locator('.stage-panel figure.heatmap figcaption').allInnerTexts();
        assert(captions.length > 0 && captions.every((c) => c.startsWith('Layer 1 · ')), `step ${k}: ${captions}`);
        const hl = await page.locator('.formula .part.hl').count();
        assert(hl > 0, `step ${k} highlights part of the formula`);
        await page.locator('.stage-panel').screenshot({ path: path.join(artifacts, `explorer-stage-${k}.png`) });
      }
      assert((await title.innerText()).includes('Add & Norm'), await title.innerText());
      assert(await page.getByRole('button', { name: 'Next' }).isDisabled(), 'Next stops at the last stage');
      await page.getByRole('button', { name: 'Previous' }).click();
      await at(11);
      // The feed-forward stage draws GELU beside its heatmaps, with this layer's values on it.
      const dots = Number(await page.locator('figure.gelu-chart').getAttribute('data-gelu-dots'));
      assert(dots > 100, `GELU dots: ${dots}`);
      await title.click();
      for (let k = 10; k >= 0; k--) {
        await page.keyboard.press('ArrowLeft');
        await at(k);
      }
      const embeddings = await page.locator('.stage-panel figure.heatmap figcaption').allInnerTexts();
      assert(embeddings.length === 5 && embeddings.every((c) => c.startsWith('Embeddings · ')), `${embeddings}`);
      assert(await page.getByRole('button', { name: 'Previous' }).isDisabled(), 'Previous stops at the embeddings');
      await page.locator('.stage-panel').screenshot({ path: path.join(artifacts, 'explorer-stage-0.png') });
      await page.keyboard.press('ArrowRight');
      await page.keyboard.press('ArrowRight');
      await page.keyboard.press('ArrowRight');
      await page.keyboard.press('ArrowRight');
      await at(4);
      const why = await page.locator('.stage-panel .why').innerText();
      assert(/√d_k = 4\b/.test(why), `stage 4 names √d_k for this model: ${why}`);
      clean(problems, requests, baseUrl);
      await context.close();
    },
  },
  {
    name: 'explorer: export the heatmap as PNG and its values as CSV',
    async run({ browser, baseUrl, artifacts }) {
      const { page, context, problems, requests } = await openReady(browser, baseUrl);
      await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: baseUrl });
      const fig = summary(page);
      const [download] = await Promise.all([
        page.waitForEvent('download', { timeout: 5000 }),
        fig.getByRole('button', { name: 'Save PNG' }).click(),
      ]);
      assert(download.suggestedFilename() === 'layer-1-head-1-softmax-weights.png', download.suggestedFilename());
      const file = path.join(artifacts, 'explorer-export.png');
      await download.saveAs(file);
      const bytes = fs.readFileSync(file);
      assert(bytes.length > 2000 && bytes.subarray(1, 4).toString() === 'PNG', `a PNG file (${bytes.length} bytes)`);
      const [svgDownload] = await Promise.all([
        page.waitForEvent('download', { timeout: 5000 }),
        fig.getByRole('button', { name: 'Save SVG' }).click(),
      ]);
      assert(svgDownload.suggestedFilename() === 'layer-1-head-1-softmax-weights.svg', svgDownload.suggestedFilename());
      const svgFile = path.join(artifacts, 'explorer-export.svg');
      await svgDownload.saveAs(svgFile);
      const svg = fs.readFileSync(svgFile, 'utf8');
      const cells = (await summaryMatrix(page)).flat().length;
      assert(svg.startsWith('<svg') && svg.trimEnd().endsWith('</svg>'), 'an SVG document');
      assert(svg.includes('Layer 1 · Head 1 · softmax weights') && svg.includes('[CLS]'), 'caption and labels as text');
      assert((svg.match(/<rect /g) || []).length > cells, `a rect per cell (${cells} cells)`);
      // A browser reads it back as a well-formed SVG and draws it (on a blank page: the app's
      // Content-Security-Policy refuses blob: and data: images).
      const viewer = await context.newPage();
      await viewer.setContent('<body style="margin:0"></body>');
      const parsed = await viewer.evaluate((text) => {
        const doc = new DOMParser().parseFromString(text, 'image/svg+xml');
        if (doc.querySelector('parsererror')) return null;
        document.body.appendChild(document.importNode(doc.documentElement, true));
        const box = document.querySelector('svg').getBoundingClientRect();
        return [box.width, box.height];
      }, svg);
      assert(parsed && parsed[0] >= 320 && parsed[1] > 100, `SVG is well-formed and drawn: ${parsed}`);
      await viewer.screenshot({ path: path.join(artifacts, 'explorer-export-svg.png') });
      await viewer.close();
      await fig.getByRole('button', { name: 'Copy CSV' }).click();
      await fig.locator('.export-status', { hasText: 'Copied' }).waitFor({ timeout: 5000 });
      const csv = await page.evaluate(() => navigator.clipboard.readText());
      const lines = csv.trim().split('\n');
      const data = await summaryMatrix(page);
      assert(lines.length === data.length + 1, `CSV has a header and ${data.length} rows`);
      assert(lines[0].startsWith('query \\ key,[CLS],'), lines[0]);
      assert(Math.abs(parseFloat(lines[1].split(',')[1]) - data[0][0]) < 1e-7, 'CSV values are exact');
      clean(problems, requests, baseUrl);
      await context.close();
    },
  },
  {
    name: 'explorer: the mask None gives [PAD] keys weight; Padding gives them 0',
    async run({ browser, baseUrl, artifacts }) {
      for (const [name, viewport] of [['wide', { width: 1280, height: 800 }], ['narrow', { width: 390, height: 844 }]]) {
        const { page, context, problems, requests } = await openReady(browser, baseUrl, viewport);
        const real = await page.locator('ol.tokens li').count();
        await page.getByLabel('Pad to').fill(String(real + 3));
        await page.waitForFunction((n) => document.querySelectorAll('ol.tokens li').length === n, real + 3, { timeout: 15000 });
        await page.locator('.mask-choice input[value=None]').check();
        await page.waitForFunction(({ css, real }) => {
          const f = document.querySelector(css);
          const m = f && JSON.parse(f.dataset.matrix);
          return m && m.length === real + 3 && m.every((row) => row.slice(real).every((w) => w > 0));
        }, { css: SUMMARY, real }, { timeout: 15000 });
        for (let k = 0; k < 4; k++) await page.getByRole('button', { name: 'Next' }).click();
        await page.locator(`${stage('masked')}[aria-current="step"]`).waitFor();
        const equation = await page.locator('.equation').innerText();
        assert(equation.includes('0 everywhere'), `${name}: ${equation}`);
        const overflow = await page.locator('.explorer').evaluate((e) => e.scrollWidth - e.clientWidth);
        assert(overflow <= 1, `${name}: the explorer overflows sideways by ${overflow}px`);
        await page.screenshot({ path: path.join(artifacts, `explorer-mask-none-${name}.png`) });
        await page.locator('.stage-panel').screenshot({ path: path.join(artifacts, `explorer-mask-none-stage-${name}.png`) });
        await page.locator('.mask-choice input[value=Padding]').check();
        await page.waitForFunction(({ css, real }) => {
          const f = document.querySelector(css);
          const m = f && JSON.parse(f.dataset.matrix);
          return m && m.every((row) => row.slice(real).every((w) => w === 0));
        }, { css: SUMMARY, real }, { timeout: 15000 });
        clean(problems, requests, baseUrl);
        await context.close();
      }
    },
  },
  {
    name: 'explorer: bad input gives a clear message, never a panic',
    async run({ browser, baseUrl, artifacts }) {
      const { page, context, problems, requests } = await openReady(browser, baseUrl);
      const sentence = page.getByLabel('Sentence', { exact: true });
      await page.getByLabel('Second sentence').fill('');
      await sentence.fill('');
      await page.locator('.error-box').waitFor({ timeout: 15000 });
      assert((await page.locator('.error-box').innerText()).includes('empty'), await page.locator('.error-box').innerText());
      assert(await page.locator('figure.heatmap').count() === 0, 'no stale heatmaps beside the message');
      await page.screenshot({ path: path.join(artifacts, 'explorer-error.png') });

      await sentence.fill('a b c d e f g h i j '.repeat(500));
      await page.locator('.notice', { hasText: 'Truncated' }).waitFor({ timeout: 15000 });
      assert(await page.locator('ol.tokens li').count() === 128, 'cut to the model\'s 128 positions');

      await sentence.fill('the 🐶 dog 犬 runs\u0007 \u0000 in the 公园 park');
      await page.waitForFunction(() => document.querySelectorAll('ol.tokens li.unk').length >= 3, null, { timeout: 15000 });
      assert(await page.locator('.error-box').count() === 0, 'emoji and CJK are [UNK], not an error');

      await page.getByLabel('Pad to').fill('500');
      await page.locator('.error-box', { hasText: '500' }).waitFor({ timeout: 15000 });
      await page.getByLabel('Pad to').fill('3');
      await page.locator('.notice', { hasText: 'shorter than' }).waitFor({ timeout: 15000 });
      await page.screenshot({ path: path.join(artifacts, 'explorer-bad-input.png'), fullPage: true });
      clean(problems, requests, baseUrl);
      await context.close();
    },
  },
  {
    name: 'explorer: readable at 1280×800 and usable at 390×844',
    async run({ browser, baseUrl, artifacts }) {
      for (const [name, viewport] of [['wide', { width: 1280, height: 800 }], ['narrow', { width: 390, height: 844 }]]) {
        const { page, context, problems, requests } = await openReady(browser, baseUrl, viewport);
        await framesRendered(page);
        const overflow = await page.locator('.explorer').evaluate((e) => e.scrollWidth - e.clientWidth);
        assert(overflow <= 1, `${name}: the explorer overflows sideways by ${overflow}px`);
        const next = page.getByRole('button', { name: 'Next' });
        await next.click();
        const title = await page.locator('.stage-title').innerText();
        assert(title.startsWith('Step 2 of 12'), `${name}: ${title}`);
        await page.screenshot({ path: path.join(artifacts, `explorer-${name}.png`) });
        await page.screenshot({ path: path.join(artifacts, `explorer-${name}-full.png`), fullPage: true });
        clean(problems, requests, baseUrl);
        await context.close();
      }
    },
  },
];

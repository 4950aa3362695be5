// The stepper's PyTorch view: every stage quotes the module's lines that compute its figures,
// names the figure's tensor with shapes that match the figure, follows the model (rotary,
// linear, a decoder's causal mask), and fits a phone without moving the page sideways.
import path from 'node:path';
import { openPage, ready, assert, framesRendered, openCode } from '../harness.mjs';
import { stage as stageButton, CURRENT_STAGE } from '../names.mjs';

// Ready once the stepper's stage has drawn a figure.
const STAGE_DRAWN = { figure: '.stage-panel figure.heatmap canvas', timeout: 60000 };

/// The code view of the stage on screen, as the page lays it out.
function codeView(page) {
  return page.evaluate(() => {
    const pre = document.querySelector('pre[data-code="pytorch"]');
    if (!pre) return null;
    const figure = pre.dataset.figure;
    const drawn = [...document.querySelectorAll('.stage-panel figure.heatmap[data-figure]')].map((f) => f.dataset.figure);
    const matrix = document.querySelector(`.stage-panel figure.heatmap[data-figure="${figure}"]`)?.dataset.matrix;
    const m = matrix ? JSON.parse(matrix) : null;
    return {
      figure,
      tensor: pre.dataset.tensor,
      slice: pre.dataset.slice,
      shapes: JSON.parse(pre.dataset.shapes),
      lit: [...pre.querySelectorAll('.line.lit')].map((l) => l.textContent),
      text: pre.textContent,
      drawn,
      size: m ? [m.length, m[0].length] : null,
      title: document.querySelector('.stage-title')?.textContent,
    };
  });
}

/// Clicks stage `name` (its data-stage) in the stepper and waits for it to be on screen with the
/// code quoting one of its figures.
async function stage(page, name) {
  await page.locator(stageButton(name)).click();
  await page.waitForFunction(([current, name]) => {
    const pre = document.querySelector('pre[data-code="pytorch"]');
    const figures = [...document.querySelectorAll('.stage-panel figure.heatmap[data-figure]')].map((f) => f.dataset.figure);
    return document.querySelector(current)?.dataset.stage === name && pre && figures.includes(pre.dataset.figure);
  }, [CURRENT_STAGE, name], { timeout: 15000 });
  return codeView(page);
}

function checkView(v, where) {
  assert(v, `${where}: no code view`);
  assert(v.lit.length > 0, `${where}: no line lit`);
  assert(!v.text.includes('# stage:'), `${where}: the marks are shown`);
  assert(v.tensor && v.shapes[v.tensor], `${where}: the tensor ${v.tensor} has no shape in ${JSON.stringify(v.shapes)}`);
  assert(v.drawn.includes(v.figure), `${where}: data-figure ${v.figure} is not a figure of the stage (${v.drawn})`);
  const shape = v.shapes[v.tensor];
  assert(shape[0] === 1, `${where}: batch ${shape[0]}`);
  assert(JSON.stringify(shape.slice(-2)) === JSON.stringify(v.size),
    `${where}: ${v.tensor} ${JSON.stringify(shape)} against the figure's ${JSON.stringify(v.size)}`);
  assert(v.slice.startsWith(`${v.tensor}`), `${where}: slice ${v.slice}`);
}

export const tests = [
  {
    name: 'pytorch: every stage of a BERT quotes its lines and names its tensor with the figure\'s shape',
    async run({ browser, baseUrl, artifacts }) {
      const { page, context, problems } = await openPage(browser, `${baseUrl}?layer=2&head=3`);
      await ready(page, STAGE_DRAWN);
      await openCode(page);
      const names = await page.locator('.stepper .step').evaluateAll((steps) => steps.map((s) => s.dataset.stage));
      assert(names.length === 13, `stages: ${names}`);
      const seen = {};
      for (const name of names) {
        const v = await stage(page, name);
        checkView(v, name);
        seen[name] = v;
      }
      // The tutorial's classes, lit where the stage computes.
      assert(seen.scores.text.includes('class ScaledDotProductAttention'), 'QKᵀ quotes ScaledDotProductAttention');
      assert(seen.scores.slice === 'scores[0, 2]', `layer 2, head 3: ${seen.scores.slice}`);
      assert(JSON.stringify(seen.softmax.shapes[seen.softmax.tensor].slice(0, 2)) === '[1,4]', 'weights: batch, heads');
      assert(seen.projections.text.includes('class MultiHeadAttention'), 'Q K V quotes MultiHeadAttention');
      assert(seen.embeddings.text.includes('class Embedding'), 'Embeddings quotes Embedding');
      assert(seen['feed-forward'].text.includes('class PoswiseFeedForwardNet'), 'Feed-forward quotes PoswiseFeedForwardNet');
      assert(seen.masked.lit.some((l) => l.includes('get_attn_pad_mask(')), '+ M lights the padding mask');
      assert(!seen.masked.lit.some((l) => l.includes('get_attn_subsequent_mask(')), 'a BERT has no causal mask');
      // It can be copied as text.
      await context.grantPermissions(['clipboard-read', 'clipboard-write']);
      await page.getByRole('button', { name: 'Copy code', exact: true }).click();
      await page.waitForFunction(() => document.querySelector('.pytorch-actions [role=status]')?.textContent.includes('Copied'), null, { timeout: 5000 });
      const copied = await page.evaluate(() => navigator.clipboard.readText());
      assert(copied.includes('class PoswiseFeedForwardNet') || copied.includes('def '), `copied: ${copied.slice(0, 200)}`);
      await stage(page, 'softmax');
      await page.locator('details.pytorch').scrollIntoViewIfNeeded();
      await framesRendered(page);
      await page.locator('.stage-panel').screenshot({ path: path.join(artifacts, 'e2e-pytorch-1280.png') });
      assert(problems.length === 0, problems.join('\n'));
      await context.close();
    },
  },
  {
    name: 'pytorch: the code follows the model: rotation for rotary, φ for linear, the causal mask for a decoder',
    async run({ browser, baseUrl }) {
      const cases = [
        ['positions=rotary', 'projections', (v) => v.lit.some((l) => l.includes('apply_rotary')) && v.shapes.q_s, 'rotary lights apply_rotary'],
        ['attention=linear', 'feature-maps', (v) => v.figure === 'phi-queries' && v.text.includes('class LinearAttention'), 'linear quotes LinearAttention'],
        ['objective=next-token', 'masked', (v) => v.lit.some((l) => l.includes('get_attn_subsequent_mask(')), 'a decoder lights the causal mask'],
        ['positions=alibi', 'masked', (v) => v.lit.some((l) => l.includes('bias')), 'ALiBi lights its bias'],
        ['kv=2', 'projections', (v) => v.shapes.k_s?.[1] === 2 && v.text.includes('repeat_interleave'), 'GQA: 2 K/V groups'],
      ];
      for (const [query, name, holds, what] of cases) {
        const { page, context, problems } = await openPage(browser, `${baseUrl}?${query}`);
        await ready(page, STAGE_DRAWN);
        await openCode(page);
        const v = await stage(page, name);
        checkView(v, `${query} ${name}`);
        assert(holds(v), `${what}: ${JSON.stringify({ figure: v.figure, lit: v.lit, shapes: v.shapes })}`);
        assert(problems.length === 0, problems.join('\n'));
        await context.close();
      }
    },
  },
  {
    name: 'pytorch: at 390 px the code scrolls inside itself and the page never sideways',
    async run({ browser, baseUrl, artifacts }) {
      const { page, context, problems } = await openPage(browser, `${baseUrl}?stage=scaled`, { width: 390, height: 844 });
      await ready(page, STAGE_DRAWN);
      await openCode(page);
      const v = await codeView(page);
      checkView(v, 'phone');
      const sizes = await page.evaluate(() => {
        const pre = document.querySelector('pre[data-code="pytorch"]');
        return { page: document.documentElement.scrollWidth, window: window.innerWidth, pre: pre.scrollWidth, box: pre.clientWidth,
          right: pre.getBoundingClientRect().right };
      });
      assert(sizes.page <= sizes.window, `the page scrolls sideways: ${JSON.stringify(sizes)}`);
      assert(sizes.right <= sizes.window, `the code leaves the window: ${JSON.stringify(sizes)}`);
      assert(sizes.pre > sizes.box, `long lines scroll inside the code: ${JSON.stringify(sizes)}`);
      await page.locator('details.pytorch').scrollIntoViewIfNeeded();
      await framesRendered(page);
      await page.screenshot({ path: path.join(artifacts, 'e2e-pytorch-390.png') });
      assert(problems.length === 0, problems.join('\n'));
      await context.close();
    },
  },
];

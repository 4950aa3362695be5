// The guided tour, as a learner takes it: open "Tour", read each chapter, answer its question
// through the page, Next. Every answer is worked out here from what the page shows (the
// figures' data-matrix, the token chips, the predictions), not from the tour, and the tour
// must call it right. A question is asked only once the model decides its answer: the test
// waits for that, logs each chapter's margin and the steps it took, and checks the margin.
// Then the keyboard (the arrows, and the tour by keyboard alone), Esc, resuming after a reload,
// and a screenshot of every chapter at 1280 × 800 and 390 × 844.
import path from 'node:path';
import { openPage, ready, assert, poll, framesRendered, stepOf } from '../harness.mjs';
import { figure, CURRENT_STAGE } from '../names.mjs';

// The lead the right choice needs over the runner-up (src/tour/question.rs, DECIDED_LEAD).
// Kept here on its own, so that lowering it there fails here.
const DECIDED_LEAD = 1.5;
// How long a chapter may train before its question must be decided.
const DECIDE_WITHIN_MS = 240000;
// The Induction heads chapter, and the steps it trains before an undecided question is
// accepted as this run's outcome (the change came within 3,000 steps in 17 of 20 unseen seeds
// natively, the page's seed 6 by 900).
const INDUCTION_CHAPTER = 13;
const INDUCTION_STEPS = 3000;

const panel = (page) => page.locator('aside.tour');
const chapterOf = async (page) => Number(await panel(page).getAttribute('data-tour-chapter'));

// The matrix of the first figure `selector` finds.
async function matrix(page, selector) {
  const fig = page.locator(selector).first();
  await fig.waitFor({ timeout: 30000 });
  return JSON.parse(await fig.getAttribute('data-matrix'));
}
const summary = (page) => matrix(page, figure('summary-weights'));
// The stepper's figure named `name` (its data-figure: protocol::figure::FigureName).
const stage = (page, name) => matrix(page, `.stage-panel ${figure(name)}`);
// The stepper's stage on screen (its data-stage: protocol::stage::Stage::name).
const currentStage = (page) => page.locator(CURRENT_STAGE).getAttribute('data-stage');

// The chips: token text and whether it is padding.
async function tokens(page) {
  return page.locator('ol.tokens > li').evaluateAll((lis) =>
    lis.map((li) => ({ text: li.firstChild.textContent.trim(), pad: li.className.includes('pad') })));
}

const argmax = (row) => row.reduce((best, v, i) => (v !== null && (best < 0 || v > row[best]) ? i : best), -1);

// The choice's label for key j, as the tour names keys: "[PAD]" for any padding, "word (j)"
// for a word that comes twice.
function keyLabel(keys, j) {
  if (keys[j].pad) return '[PAD]';
  const twice = keys.filter((k) => !k.pad && k.text === keys[j].text).length > 1;
  return twice ? `${keys[j].text} (${j})` : keys[j].text;
}

async function answerAndCheck(page, label) {
  const choice = panel(page).locator(`[data-tour-choice="${label}"]`);
  await choice.waitFor({ timeout: 30000 });
  await choice.click();
  await page.waitForFunction(() => document.querySelector('aside.tour')?.dataset.tourAnswered === 'true', null, { timeout: 5000 })
    .catch(async () => {
      throw new Error(`chapter ${await chapterOf(page)}: "${label}" was not accepted: ${await panel(page).locator('.tour-outcome').innerText()}`);
    });
  const said = await panel(page).locator('.tour-outcome').innerText();
  assert(said.startsWith('✓'), `no ✓: ${said}`);
  return said;
}

// What each chapter's answer is, read from the page as a learner would read it.
const solve = {
  async 1(page) { return topKey(page, await summary(page), '[MASK]'); },
  async 2(page) { return String((await tokens(page)).filter((t) => !t.pad).length); },
  async 3(page) { return String((await stage(page, 'queries'))[0].length); },
  async 4(page) { return topKey(page, await stage(page, 'raw-scores'), '[MASK]'); },
  async 5(page) {
    const text = await page.locator('.stage-panel').innerText();
    const m = text.match(/d_k = (\d+)/);
    assert(m, `no d_k in the stage's text: ${text.slice(0, 200)}`);
    const root = Math.sqrt(Number(m[1]));
    return String(Number(root.toFixed(3)));
  },
  async 6(page) {
    const keys = await tokens(page);
    const row = (await summary(page))[keys.findIndex((k) => k.text === '[MASK]')];
    const pads = keys.map((k, j) => (k.pad ? row[j] : null)).filter((v) => v !== null);
    assert(pads.length > 0, 'chapter 6 set no padding');
    return Math.max(...pads) === 0 ? 'Exactly 0' : 'A small share';
  },
  async 7(page) { return topKey(page, await summary(page), '[CLS]'); },
  async 8(page) {
    // "Which head of layer L looks most at R?": each head of layer L's share of relation R,
    // the mean over the real tokens' rows of the weight on the keys in that relation to the
    // row's token (the Heads claim's relations, engine::experiments::heads::role).
    const prompt = await panel(page).locator('.tour-question p').first().innerText();
    const m = prompt.match(/Which head of layer (\d+) looks most at (.+)\?$/);
    assert(m, `not a role question: ${prompt}`);
    const layer = Number(m[1]);
    const relation = relations[m[2]];
    assert(relation, `no relation "${m[2]}"`);
    const keys = await tokens(page);
    const heads = [];
    for (let h = 1; ; h++) {
      const thumb = page.getByRole('button', { name: `Layer ${layer} · Head ${h}`, exact: true }).first();
      if (await thumb.count() === 0) break;
      await thumb.click();
      await page.waitForFunction((name) => document.querySelector('.summary figcaption')?.textContent.includes(name), `Layer ${layer} · Head ${h}`);
      heads.push(share(keys, await summary(page), relation));
    }
    assert(heads.length > 1, `read ${heads.length} heads`);
    const best = argmax(heads);
    const runnerUp = Math.max(...heads.filter((_, h) => h !== best));
    console.log(`     8. layer ${layer}, ${relation}: ${heads.map((s, h) => `L${layer} H${h + 1} ${(100 * s).toFixed(1)}%`).join(', ')}`);
    // Asked only when decided: a role (half the attention or more), 1.5× the runner-up's.
    assert(heads[best] >= 0.5 - 1e-4 && heads[best] >= DECIDED_LEAD * runnerUp * (1 - 1e-4),
      `chapter 8 asked while ${heads[best].toFixed(3)} against ${runnerUp.toFixed(3)} decides no role`);
    chapter8Share = heads[best];
    return `L${layer} H${best + 1}`;
  },
  async 9(page) {
    const keys = await tokens(page);
    const row = (await stage(page, 'attention-add-norm'))[keys.findIndex((k) => k.text === '[MASK]')];
    const mean = row.reduce((a, b) => a + b, 0) / row.length;
    return Math.abs(mean) < 0.25 ? 'About 0' : Math.abs(mean - 1) < 0.25 ? 'About 1' : 'Far from both';
  },
  async 10(page) { return (await page.locator('.predictions ol.top5 li .cand').first().innerText()).trim(); },
  async 11(page) {
    // Trained for a while: the smoothed loss against the first loss the readout showed.
    await page.waitForFunction(() => Number(document.querySelector('[data-step]')?.dataset.step) >= 60, null, { timeout: 120000 });
    // The first point of the run, as the loss chart holds it ("step,loss"), against the
    // smoothed loss the readout shows now.
    const [, first] = (await page.locator('figure.curve-chart[data-chart="loss"]').getAttribute('data-first')).split(',').map(Number);
    const now = Number(await page.locator('.readout').first().getAttribute('data-smoothed-loss'));
    return now < first ? 'Lower' : 'Not lower';
  },
  async 12(page) { return visible(await summary(page), 3); },
  async 13(page) {
    // Each head's induction score on the Repeat sentence, from its weights as the model view
    // shows them: over the second copy's queries L + i, the weight on i + 1, the token after
    // the earlier occurrence of the current one.
    const keys = await tokens(page);
    const len = (keys.length - 2) / 2;
    assert(len === 12 && keys.slice(1, len + 1).map((k) => k.text).join() === keys.slice(len + 1, 2 * len + 1).map((k) => k.text).join(),
      `not a Repeat sentence: ${keys.map((k) => k.text).join(' ')}`);
    // Every head the model view offers (Repeat's model has 8 a layer).
    const heads = new Set(await page.getByRole('button', { name: /^Layer 1 · Head \d+$/ })
      .evaluateAll((bs) => bs.map((b) => b.getAttribute('aria-label') ?? b.textContent.trim()))).size;
    assert(heads >= 4, `${heads} heads in the model view`);
    const scores = [];
    for (let l = 1; l <= 2; l++) {
      for (let h = 1; h <= heads; h++) {
        await page.getByRole('button', { name: `Layer ${l} · Head ${h}`, exact: true }).first().click();
        await page.waitForFunction((name) => document.querySelector('.summary figcaption')?.textContent.includes(name), `Layer ${l} · Head ${h}`);
        const m = await summary(page);
        let sum = 0;
        for (let i = 1; i <= len; i++) sum += m[len + i][i + 1];
        scores.push([`L${l} H${h}`, sum / len]);
      }
    }
    scores.sort((a, b) => b[1] - a[1]);
    console.log(`     13. induction scores: ${scores.map(([k, v]) => `${k} ${v.toFixed(2)}`).join(', ')}`);
    return scores[0][0];
  },
  async 14(page) {
    // Cross-attention: rows the target, columns the source's tokens.
    const source = ['[CLS]', 'the', 'cat', 'sleeps', 'under', 'the', 'tree', '[SEP]'].map((text) => ({ text, pad: false }));
    const row = (await summary(page))[1];
    assert(row.length === source.length, `the cross weights have ${row.length} columns`);
    return keyLabel(source, argmax(row));
  },
  async 15(page) { return visible(await summary(page), 3); },
};

// The relations the role question names, as engine::experiments::heads::ROLES names them.
const relations = {
  'the token itself': 'self', 'the previous token': 'previous', 'the next token': 'next', '[CLS]': '[CLS]', '[SEP]': '[SEP]',
};

// Key j's relation to query i: one each, the first that holds of self, [CLS], [SEP], previous,
// next, else rest.
function roleOf(keys, i, j) {
  if (i === j) return 'self';
  if (keys[j].text === '[CLS]') return '[CLS]';
  if (keys[j].text === '[SEP]') return '[SEP]';
  if (j + 1 === i) return 'previous';
  if (j === i + 1) return 'next';
  return 'rest';
}

// A head's share of `relation`: over the real tokens' rows of its weights `m`, the mean of the
// weight on keys in that relation.
function share(keys, m, relation) {
  const rows = keys.map((k, i) => i).filter((i) => !keys[i].pad);
  let sum = 0;
  for (const i of rows) {
    m[i].forEach((w, j) => { if (w !== null && roleOf(keys, i, j) === relation) sum += w; });
  }
  return sum / rows.length;
}
// The top share chapter 8's answer was worked out from, for its ✓ to state.
let chapter8Share = null;

async function topKey(page, m, query) {
  const keys = await tokens(page);
  const i = keys.findIndex((k) => k.text === query);
  assert(i >= 0, `no ${query} among the tokens`);
  return keyLabel(keys, argmax(m[i]));
}

const visible = (m, row) => String(m[row].filter((v) => v !== null && v > 0).length);

// What each chapter sets on the page: the stepper's stage, the mask, Pad to, Window, the part
// and whether training plays. `build`: the chapter needs another model than the chapter before
// leaves (src/tour/chapters.rs, ModelNeed), so it asks to build it. `exact`: its question is
// decided by construction (a count, a size, a weight the mask makes 0: src/tour/question.rs,
// Margin::Exact), so it opens with its choices.
const scenes = {
  1: { stage: 'softmax', mask: 'Padding', playing: true },
  2: { stage: 'embeddings', exact: true },
  3: { stage: 'projections', exact: true },
  4: { stage: 'scores' },
  5: { stage: 'scaled', exact: true },
  6: { stage: 'masked', pad: '20', exact: true },
  7: { stage: 'context' },
  8: { stage: 'concat' },
  9: { stage: 'attention-add-norm' },
  10: { stage: 'output-add-norm' },
  11: { playing: true },
  12: { mask: 'Causal', playing: false, exact: true },
  13: { mask: 'Causal', build: true },
  14: { playing: true, query: 'part=cross', build: true },
  15: { window: '3', mask: 'Padding', playing: false, build: true, exact: true },
};

async function checkScene(page, n) {
  const want = scenes[n];
  await page.waitForSelector('[data-tour-focus]', { timeout: 30000 });
  if (want.stage) {
    const current = await currentStage(page);
    assert(current === want.stage, `chapter ${n}: the stepper is at "${current}", not "${want.stage}"`);
  }
  if (want.mask) {
    const checked = await page.locator('.probe-card input[type="radio"]:checked').first().getAttribute('value');
    assert(checked === want.mask, `chapter ${n}: the mask is ${checked}`);
  }
  if (want.pad) assert(await page.getByLabel('Pad to').inputValue() === want.pad, `chapter ${n}: Pad to`);
  if (want.window) assert(await page.getByLabel('Window').inputValue() === want.window, `chapter ${n}: Window`);
  if (want.query) {
    await page.waitForFunction((q) => location.search.includes(q), want.query, { timeout: 5000 })
      .catch(() => { throw new Error(`chapter ${n}: the address ${page.url()} lacks ${want.query}`); });
  }
  if (want.playing !== undefined) {
    await page.waitForFunction((p) => !!document.querySelector('button.play')?.disabled === p, want.playing, { timeout: 30000 })
      .catch(() => { throw new Error(`chapter ${n}: training is not ${want.playing ? 'playing' : 'paused'}`); });
  }
}

// The question's margin ("exact", or the right choice's lead as a number) and whether it is
// decided, how many choices it offers and what it says while undecided, with the step the page
// shows and whether it plays (Play disabled): read at one moment of the page.
async function questionState(page) {
  return page.evaluate(() => {
    const q = document.querySelector('aside.tour .tour-question');
    return {
      decided: q?.dataset.decided ?? null,
      margin: q?.dataset.margin ?? null,
      choices: document.querySelectorAll('aside.tour [data-tour-choice]').length,
      status: document.querySelector('aside.tour .tour-undecided')?.textContent ?? null,
      step: Number(document.querySelector('[data-step]')?.dataset.step),
      playing: document.querySelector('button.play')?.disabled === true,
    };
  });
}

// Waits until chapter `n`'s question is decided; undecided, it offers no choices (checked at
// every reading). Returns the state when it was first seen decided.
async function untilDecided(page, n) {
  const first = await questionState(page);
  if (first.decided !== 'true') console.log(`     ${n}. undecided at step ${first.step}: ${first.status}`);
  return poll(() => questionState(page), (q) => {
    assert(q.decided === 'true' || q.choices === 0, `chapter ${n}: ${q.choices} choices offered while undecided`);
    return q.decided === 'true';
  }, (q) => `chapter ${n}: not decided within ${DECIDE_WITHIN_MS / 1000} s: margin ${q.margin} at step ${q.step}`, DECIDE_WITHIN_MS);
}

// Training holds still and the question is decided: a paused chapter pauses itself once
// decided; a playing one is paused here through the tour, as a learner would to read the
// answer. If the last snapshot took the answer back below the line, the tour plays again,
// and this waits for the next decision.
async function decidedAndStill(page, n) {
  return poll(async () => {
    const q = await questionState(page);
    if (q.decided === 'true' && q.playing) {
      // The chapter may pause itself between the read above and a click: the tour's button
      // is found and pressed in one turn of the page, only while it still says Pause.
      await page.evaluate(() => [...document.querySelectorAll('aside.tour .tour-play')]
        .find((b) => b.textContent.trim() === 'Pause')?.click());
      await page.waitForFunction(() => !document.querySelector('button.play')?.disabled, null, { timeout: 10000 });
      return { ...q, playing: true };
    }
    return q;
  }, (q) => q.decided === 'true' && !q.playing, (q) => `chapter ${n}: not decided and paused: margin ${q.margin}, step ${q.step}`, DECIDE_WITHIN_MS);
}

// The chapter asks for another model: "Build it", and wait until the new model is here.
async function build(page) {
  const button = panel(page).locator('[data-tour-build]');
  await button.click({ timeout: 30000 });
  await button.waitFor({ state: 'detached', timeout: 60000 });
  await ready(page, { timeout: 60000 });
}

export const tests = [
  {
    name: 'tour: all 15 chapters in Chromium, each question answered through the page and checked ✓, each chapter\'s scene checked; a wrong answer gets the hint',
    async run({ browser, baseUrl, artifacts }) {
      const { page, problems } = await openPage(browser, baseUrl);
      await ready(page, { timeout: 60000 });
      await page.getByRole('button', { name: 'Tour', exact: true }).click();
      await panel(page).waitFor();
      assert(await panel(page).getAttribute('data-tour-chapters') === '15', 'not 15 chapters');
      // Focus moved into the panel.
      assert(await page.evaluate(() => document.activeElement?.closest('aside.tour') !== null), 'focus is not in the tour');
      for (let n = 1; n <= 15; n++) {
        assert(await chapterOf(page) === n, `at chapter ${await chapterOf(page)}, not ${n}`);
        if (scenes[n].build) await build(page);
        await checkScene(page, n);
        const opened = await questionState(page);
        const started = Date.now();
        if (n === INDUCTION_CHAPTER) {
          // Induction heads form in 17 of 20 unseen seeds natively, and the page's floats follow their
          // own path: the chapter may stay undecided, and then must say so and offer nothing.
          const q = await poll(() => questionState(page), (s) => s.decided === 'true' || s.step - opened.step >= INDUCTION_STEPS,
            (s) => `chapter ${n}: neither decided nor ${INDUCTION_STEPS} steps on: margin ${s.margin} at step ${s.step}`, 900000);
          if (q.decided !== 'true') {
            assert(q.status?.startsWith('The model has not decided yet'), `chapter ${n}: ${q.status}`);
            assert(q.choices === 0, `chapter ${n}: choices offered while undecided`);
            console.log(`tour margin: chapter ${n}: not decided in this run: ${Number(q.margin).toFixed(2)}× at step ${q.step}, ${q.step - opened.step} steps after the chapter opened (needs ${DECIDED_LEAD}×)`);
            await panel(page).getByRole('button', { name: 'Next', exact: true }).click();
            await page.waitForFunction((n) => document.querySelector('aside.tour')?.dataset.tourChapter === String(n + 1), n);
            continue;
          }
        }
        const decided = await untilDecided(page, n);
        const seconds = ((Date.now() - started) / 1000).toFixed(1);
        // The loss question reads the curve and keeps training: nothing to hold still.
        const still = n === 11 ? decided : await decidedAndStill(page, n);
        const title = await panel(page).locator('.tour-title').innerText();
        const lead = still.margin === 'exact' ? 'exact (decided by construction)' : `${Number(still.margin).toFixed(2)}×`;
        console.log(`tour margin: chapter ${n} "${title}": ${lead} (needs ${DECIDED_LEAD}×); decided at step ${decided.step}, ${decided.step - opened.step} steps and ${seconds} s after the chapter opened`);
        assert(still.margin === 'exact' || Number(still.margin) >= DECIDED_LEAD, `chapter ${n}: margin ${still.margin} below ${DECIDED_LEAD}`);
        const focus = await page.locator('[data-tour-focus]').count();
        assert(focus === 1, `chapter ${n}: ${focus} outlined elements`);
        if (n === 1) {
          // A wrong answer: the hint, and not answered.
          const right = await solve[1](page);
          const wrong = await panel(page).locator('[data-tour-choice]').evaluateAll((bs, right) =>
            bs.map((b) => b.dataset.tourChoice).find((c) => c !== right), right);
          await panel(page).locator(`[data-tour-choice="${wrong}"]`).click();
          await panel(page).locator('[data-tour-hint]').waitFor({ timeout: 5000 });
          assert(await panel(page).getAttribute('data-tour-answered') === 'false', 'a wrong answer counted');
        }
        const label = await solve[n](page);
        const said = await answerAndCheck(page, label);
        console.log(`     ${n}. ${label}: ${said.slice(0, 110)}`);
        if (n === 8) {
          // The ✓ states the share read here (to the percent, rounding aside).
          const stated = Number(said.match(/ (\d+)% of its attention/)?.[1]);
          assert(Math.abs(stated - 100 * chapter8Share) <= 1, `chapter 8 says ${stated}%, the page's weights give ${(100 * chapter8Share).toFixed(1)}%: ${said}`);
        }
        await page.screenshot({ path: path.join(artifacts, `tour-1280-${String(n).padStart(2, '0')}.png`) });
        if (n < 15) {
          await panel(page).getByRole('button', { name: 'Next', exact: true }).click();
          await page.waitForFunction((n) => document.querySelector('aside.tour')?.dataset.tourChapter === String(n + 1), n);
          assert(await panel(page).getAttribute('data-tour-answered') === 'false', `chapter ${n + 1} starts answered`);
        }
      }
      assert(problems.length === 0, problems.join('\n'));
      await page.context().close();
    },
  },
  {
    // A hand-written link opens a chapter with the Sentence the link gives (none: the default);
    // Build it sets the chapter's scene up again, so the question reads its own sentence.
    name: 'tour: a link to the Induction heads chapter, then Build it: the model is Repeat and the Sentence a Repeat one',
    async run({ browser, baseUrl }) {
      const { page, context, problems } = await openPage(browser, `${baseUrl}?tour=${INDUCTION_CHAPTER}`);
      await ready(page, { timeout: 60000 });
      assert(await chapterOf(page) === INDUCTION_CHAPTER, `at chapter ${await chapterOf(page)}`);
      await build(page);
      await page.waitForFunction(() => document.querySelector('header')?.textContent.includes('Repeat'), null, { timeout: 30000 });
      // Ready comes a message before the new model's first snapshot: the chips settle on it.
      const isRepeat = (tokens) => {
        const half = (tokens.length - 2) / 2;
        return tokens.length === 26 && !tokens.join(' ').includes('[UNK]') && tokens.slice(1, half + 1).join() === tokens.slice(half + 1, -1).join();
      };
      await poll(() => page.locator('ol.tokens li').allInnerTexts(), isRepeat,
        (tokens) => `not a Repeat sentence: ${tokens.join(' ')}`, 30000);
      await page.waitForFunction(() => document.querySelector('aside.tour [data-decided]'), null, { timeout: 30000 });
      const text = await panel(page).innerText();
      assert(!text.includes('Type a Repeat sentence'), text);
      assert(problems.length === 0, problems.join('\n'));
      await context.close();
    },
  },
  {
    name: 'tour: arrow keys turn the page, Esc leaves it with the page as it was, a reload resumes at the chapter',
    async run({ browser, baseUrl }) {
      const { page, context, problems } = await openPage(browser, baseUrl);
      await ready(page, { timeout: 60000 });
      await page.getByRole('button', { name: 'Tour', exact: true }).click();
      await panel(page).waitFor();
      await page.keyboard.press('ArrowRight');
      await page.keyboard.press('ArrowRight');
      assert(await chapterOf(page) === 3, `ArrowRight twice: chapter ${await chapterOf(page)}`);
      // The explorer's own arrows did not move the stage: the tour took the keys.
      const stage = await currentStage(page);
      assert(stage === 'projections', `the stepper moved to ${stage}`);
      await page.keyboard.press('ArrowLeft');
      assert(await chapterOf(page) === 2, 'ArrowLeft');
      await page.keyboard.press('ArrowRight');
      await page.keyboard.press('ArrowRight');
      await page.keyboard.press('ArrowRight');
      assert(await chapterOf(page) === 5, 'back at 5');
      // Reloaded once the address bar holds the chapter (it is written at most every 300 ms).
      await page.waitForFunction(() => location.search.includes('tour=5'), null, { timeout: 5000 });
      await page.reload();
      await ready(page, { timeout: 60000 });
      await panel(page).waitFor({ timeout: 30000 });
      assert(await chapterOf(page) === 5, `after a reload: chapter ${await chapterOf(page)}`);
      await page.keyboard.press('Escape');
      await panel(page).waitFor({ state: 'detached', timeout: 5000 });
      const after = await currentStage(page);
      assert(after === 'scaled', `Esc changed the page: the stepper is at ${after}`);
      assert(await page.locator('[data-tour-focus]').count() === 0, 'the outline stayed after Esc');
      // "Tour" opens where it was left.
      await page.getByRole('button', { name: 'Tour', exact: true }).click();
      await panel(page).waitFor();
      assert(await chapterOf(page) === 5, 'Tour did not resume at 5');
      assert(problems.length === 0, problems.join('\n'));
      await context.close();
    },
  },
  {
    // No mouse: Space plays and pauses, Tab reaches "Tour", Enter opens it with the focus on the chapter's heading,
    // the question and its answers are announced (the polite live region) as they appear, Tab
    // and Enter (or Space) answer and turn the page, and Esc gives the focus back to "Tour".
    name: 'tour: by keyboard alone, from "Tour" to two questions answered and back, each question announced',
    async run({ browser, baseUrl }) {
      const { page, context, problems } = await openPage(browser, baseUrl);
      await ready(page, { timeout: 60000 });
      const focused = () => page.evaluate(() => {
        const e = document.activeElement;
        return { tag: e?.tagName ?? null, id: e?.id ?? '', text: e?.textContent.trim() ?? '', choice: e?.dataset.tourChoice ?? null };
      });
      // Tab until `wanted` holds for the focused element, at most `limit` presses.
      const tabTo = async (what, wanted, limit) => {
        for (let presses = 1; presses <= limit; presses++) {
          await page.keyboard.press('Tab');
          if (wanted(await focused())) return presses;
        }
        throw new Error(`${what}: not reached in ${limit} presses of Tab (at ${JSON.stringify(await focused())})`);
      };
      await page.evaluate(() => { document.activeElement?.blur(); window.scrollTo(0, 0); });
      // Space outside a control plays and pauses; on a control it presses that control (below).
      await page.keyboard.press(' ');
      await page.waitForFunction(() => document.querySelector('button.play')?.disabled === true, null, { timeout: 10000 });
      await page.keyboard.press(' ');
      await page.waitForFunction(() => document.querySelector('button.play')?.disabled === false, null, { timeout: 10000 });
      const toTour = await tabTo('"Tour"', (f) => f.tag === 'BUTTON' && f.text === 'Tour', 40);
      await page.keyboard.press('Enter');
      await panel(page).waitFor();
      await page.waitForFunction(() => document.activeElement?.id === 'tour-title', null, { timeout: 5000 });
      // Chapter 1 trains until it decides; the arrows turn to chapter 2, decided by construction.
      await page.keyboard.press('ArrowRight');
      const said = [];
      for (const [n, key] of [[2, 'Enter'], [3, ' ']]) {
        await page.waitForFunction((n) => document.querySelector('aside.tour')?.dataset.tourChapter === String(n)
          && document.activeElement?.id === 'tour-title', n, { timeout: 10000 })
          .catch(() => { throw new Error(`chapter ${n}: the focus is not on its heading`); });
        const announced = await page.waitForFunction(() => {
          const text = document.querySelector('aside.tour [data-tour-announce]')?.textContent ?? '';
          return text.startsWith('Question: ') && text;
        }, null, { timeout: 30000 }).then((h) => h.jsonValue());
        const choices = await panel(page).locator('[data-tour-choice]').allInnerTexts();
        assert(choices.length > 1 && choices.every((c) => announced.includes(c.trim())), `chapter ${n}: announced "${announced}", choices ${choices.join(' | ')}`);
        const right = await solve[n](page);
        const presses = await tabTo(`chapter ${n}'s answer "${right}"`, (f) => f.choice === right, 20);
        await page.keyboard.press(key);
        await page.waitForFunction(() => document.querySelector('aside.tour')?.dataset.tourAnswered === 'true', null, { timeout: 5000 })
          .catch(async () => {
            throw new Error(`chapter ${n}: ${key === ' ' ? 'Space' : key} on "${right}" did not answer: ${await panel(page).locator('.tour-outcome').innerText()} (focus on ${JSON.stringify(await focused())})`);
          });
        const outcome = await panel(page).locator('.tour-outcome[aria-live]').innerText();
        assert(outcome.startsWith('✓'), `chapter ${n}: ${outcome}`);
        said.push(`${n}: "${right}" ${presses} Tab from the heading, ${key === ' ' ? 'Space' : key}`);
        const next = await tabTo(`chapter ${n}'s Next`, (f) => f.tag === 'BUTTON' && f.text === 'Next', 20);
        said.push(`Next ${next} Tab on`);
        await page.keyboard.press('Enter');
      }
      await page.waitForFunction(() => document.querySelector('aside.tour')?.dataset.tourChapter === '4', null, { timeout: 10000 });
      await page.keyboard.press('Escape');
      await panel(page).waitFor({ state: 'detached', timeout: 5000 });
      const back = await focused();
      assert(back.tag === 'BUTTON' && back.text === 'Tour', `after Esc the focus is on ${JSON.stringify(back)}`);
      console.log(`     "Tour" ${toTour} Tab from the top; ${said.join('; ')}; Esc: the focus on "Tour"`);
      assert(problems.length === 0, problems.join('\n'));
      await context.close();
    },
  },
  {
    name: 'tour: every chapter on a phone (390 × 844): the panel over the page, Back and Next in reach',
    async run({ browser, baseUrl, artifacts }) {
      const { page, context, problems } = await openPage(browser, baseUrl, { width: 390, height: 844 });
      await ready(page, { timeout: 60000 });
      await page.getByRole('button', { name: 'Tour', exact: true }).click();
      await panel(page).waitFor();
      const choicesSeen = [];
      for (let n = 1; n <= 15; n++) {
        if (scenes[n].build) await build(page);
        await page.waitForSelector('[data-tour-focus]', { timeout: 30000 });
        const box = await panel(page).boundingBox();
        assert(box.width <= 390 && box.y + box.height <= 844 + 1 && box.height <= 844 * 0.5 + 2, `chapter ${n}: the panel is ${JSON.stringify(box)}`);
        const next = panel(page).getByRole('button', { name: n < 15 ? 'Next' : 'Back', exact: true });
        const nb = await next.boundingBox();
        assert(nb && nb.y + nb.height <= 844, `chapter ${n}: Next/Back is off screen`);
        // A question that opens decided has its choices in the sheet's view, above its sticky
        // Back/Next, without the learner scrolling the sheet.
        if (scenes[n].exact) {
          await panel(page).locator('.tour-question[data-decided="true"] .tour-choice').first().waitFor({ timeout: 30000 });
          await framesRendered(page);
          await framesRendered(page);
          const seen = await panel(page).evaluate((p) => {
            const room = p.getBoundingClientRect();
            const nav = p.querySelector('.tour-nav').getBoundingClientRect();
            const choices = p.querySelector('.tour-choices').getBoundingClientRect();
            return { top: choices.top, bottom: choices.bottom, from: room.top, to: nav.top };
          });
          assert(seen.top >= seen.from - 1 && seen.bottom <= seen.to + 1, `chapter ${n}: the choices are out of the sheet's view: ${JSON.stringify(seen)}`);
          choicesSeen.push(n);
        }
        await page.screenshot({ path: path.join(artifacts, `tour-390-${String(n).padStart(2, '0')}.png`) });
        if (n < 15) await panel(page).getByRole('button', { name: 'Next', exact: true }).click();
      }
      console.log(`     choices in the sheet's view as the question opened: chapters ${choicesSeen.join(', ')}`);
      assert(problems.length === 0, problems.join('\n'));
      await context.close();
    },
  },
];

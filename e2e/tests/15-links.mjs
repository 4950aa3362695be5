// Links that reopen a view (src/link, protocol/src/link.rs): the address bar and "Copy link"
// hold the view on screen; opened in a fresh browser it comes back field by field; a link read
// in part says so in one line and keeps what it could read; a link for another model offers a
// Reset and keeps the model trained here until the user accepts it. Every test name holds
// "links": `node e2e/run.mjs links` runs them all.
import { openPage, ready, assert, waitKept } from '../harness.mjs';
import { stage } from '../names.mjs';

// Slow steps (building the small preset, restoring a kept model) on a busy 2-core machine.
const MODEL_MS = 90000;

const stepCount = async (page) => Number(await page.locator('[data-step]').first().getAttribute('data-step'));
const dataLink = (page) => page.locator('button.copy-link').getAttribute('data-link');
const facts = (page) => page.locator('header .model-facts').first().textContent();
// The header's facts (format::facts): "2 layers × 4 heads[ · GQA 2 KV heads · rotary …] · hidden 64 · …".
const TINY = '· hidden 64 ·';
const SMALL = '· hidden 256 ·';

/// A query's `key=value` parts, as written (still percent-encoded), in order.
const parts = (link) => new URL(link).search.replace(/^\?/, '').split('&').filter(Boolean);
/// The same parts in any order.
const sameQuery = (a, b) => JSON.stringify(parts(a).sort()) === JSON.stringify(parts(b).sort());
/// A query as the app writes one: every byte but letters, digits and -._~ percent-encoded.
const encode = (v) => encodeURIComponent(v).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
const query = (fields) => `?${Object.entries(fields).map(([k, v]) => `${k}=${encode(String(v))}`).join('&')}`;

/// Everything a link restores, as the page shows it: the probe's fields, the stepper, the
/// layer × head selected (figure captions and the model view), the tour, Compare's model switch,
/// and the model (header) with the settings that shape it (training panel).
async function shownView(page) {
  return page.evaluate(() => {
    const q = (s, root = document) => root.querySelector(s);
    const probe = (label) => [...document.querySelectorAll('.probe-form label')]
      .find((l) => l.querySelector('.field-label')?.textContent === label)?.querySelector('input, select')?.value ?? null;
    // The training panel's `<label>"Preset" <select>…`: the label's own first text.
    const setting = (label, root = document) => [...root.querySelectorAll('label')]
      .find((l) => l.firstChild?.nodeType === 3 && l.firstChild.textContent.trim() === label)?.querySelector('select, input')?.value ?? null;
    const arch = (m) => {
      const f = q(`fieldset.architecture[data-model="${m}"]`);
      return f ? ['KV heads', 'Positions', 'Attention'].map((l) => setting(l, f)).join(' / ') : null;
    };
    const check = (label) => [...document.querySelectorAll('label.check')]
      .find((l) => l.textContent.trim() === label)?.querySelector('input')?.checked ?? null;
    return {
      sentence: probe('Sentence'),
      pair: probe('Second sentence'),
      target: probe('Target'),
      pad: probe('Pad to'),
      mask: q('.probe-form .mask-choice input:checked')?.value ?? null,
      window: probe('Window'),
      kernel: probe('Attention'),
      stage: [...document.querySelectorAll('.stepper .step.current')].map((b) => b.dataset.stage),
      summary: q('.explorer .summary figcaption')?.textContent ?? null,
      captions: [...document.querySelectorAll('.explorer .model-column')]
        .map((c) => c.querySelector('.figures figure figcaption')?.textContent ?? null),
      selected: [...document.querySelectorAll('.model-view button.thumb[aria-pressed="true"]')].map((b) => b.getAttribute('aria-label')),
      layerPicker: q('.pickers select[aria-label="Layer"]')?.value ?? null,
      headPicker: q('.pickers select[aria-label="Head"]')?.value ?? null,
      tour: q('aside.tour')?.dataset.tourChapter ?? null,
      showing: q('.model-switch button[aria-pressed="true"]')?.dataset.model ?? null,
      facts: q('header .model-facts')?.textContent ?? null,
      preset: setting('Preset'),
      objective: setting('Objective'),
      task: setting('Task'),
      architecture: arch('A'),
      compare: check('Compare'),
      modelB: arch('B'),
    };
  });
}

/// `got` has every field of `want` with its value (arrays and strings compared as JSON).
function expectView(got, want, where) {
  for (const [k, v] of Object.entries(want)) {
    assert(JSON.stringify(got[k]) === JSON.stringify(v), `${where}: ${k} is ${JSON.stringify(got[k])}, expected ${JSON.stringify(v)}`);
  }
}

function expectSameView(a, b, where) {
  const diff = Object.keys(a).filter((k) => JSON.stringify(a[k]) !== JSON.stringify(b[k]))
    .map((k) => `${k}: ${JSON.stringify(a[k])} ≠ ${JSON.stringify(b[k])}`);
  assert(diff.length === 0, `${where}:\n       ${diff.join('\n       ')}`);
}

/// The address bar catches up with the page's link (link::follow writes it at most every 300 ms).
async function addressIs(page, link, where) {
  await page.waitForFunction((l) => location.href === l, link, { timeout: 5000 })
    .catch(async () => { throw new Error(`${where}: the address bar holds ${(await page.evaluate(() => location.href)).slice(0, 200)}, the page's link ${link.slice(0, 200)}`); });
}

const noticeLines = (page) => page.locator('[data-link-notice]').allInnerTexts();
const offer = (page) => page.locator('[data-link-offer]');

/// Trains from a fresh model until at least `steps` steps, pauses, and waits until that model is
/// kept in the browser. Returns the step it stopped at.
async function trainAndKeep(page, steps) {
  await page.getByRole('button', { name: 'Play', exact: true }).click();
  await page.waitForFunction((n) => Number(document.querySelector('[data-step]')?.dataset.step) >= n, steps, { timeout: 120000 });
  await page.getByRole('button', { name: 'Pause', exact: true }).click();
  await page.waitForFunction(() => !document.querySelector('button.play')?.disabled, null, { timeout: 10000 });
  const step = await stepCount(page);
  await waitKept(page, step);
  return step;
}

async function cleanUp(page, context) {
  await page.evaluate(() => { localStorage.clear(); indexedDB.deleteDatabase('attention-lab'); });
  await context.close();
}

const architecture = (page, model, label) => page.locator(`fieldset.architecture[data-model="${model}"] label`, { hasText: label }).locator('select');
// The training panel's `<label>"Preset" <select>…</label>`: the label's text starts with its name.
const panelSelect = (page, label) => page.locator('.layout label').filter({ hasText: new RegExp(`^\\s*${label}`) }).locator('select').first();
const probeField = (page, label) => page.locator('.probe-form label', { has: page.locator('.field-label', { hasText: new RegExp(`^${label}$`) }) }).locator('input, select');
const resetButton = (page) => page.getByRole('button', { name: 'Reset', exact: true }).first();

/// Accepts the link's model and waits until it is built and read.
async function acceptOffer(page, factsText) {
  await offer(page).getByRole('button', { name: "Reset to the link's model" }).click();
  await offer(page).waitFor({ state: 'detached', timeout: 5000 });
  await page.waitForFunction((t) => document.querySelector('header .model-facts')?.textContent.includes(t), factsText, { timeout: MODEL_MS });
  await ready(page, { timeout: MODEL_MS });
}

/// A fresh browser keeps no model, so a link's model is built at once: no offer, nothing lost.
async function builtByLink(page, factsText) {
  await page.waitForFunction((t) => document.querySelector('header .model-facts')?.textContent.includes(t), factsText, { timeout: MODEL_MS });
  await ready(page, { timeout: MODEL_MS });
  assert(await offer(page).count() === 0, 'a fresh browser, with nothing kept, is offered a Reset');
}

// Every probe field, with characters a query must encode (& % # ? = + and non-ASCII).
const SENTENCE = 'the cat sat on the mat & 50% more ü 🐱 [MASK] ?x=1#y';
const PAIR = 'a + b = c';

const main = [
  {
    name: 'links: a BERT view with Compare, set through the page, comes back field by field in a fresh browser from Copy link',
    async run({ browser, baseUrl }) {
      const { page, context, problems } = await openPage(browser, baseUrl);
      await ready(page, { timeout: MODEL_MS });
      assert(new URL(await dataLink(page)).search === '', `a plain visit's link: ${await dataLink(page)}`);

      // The model: small, grouped-query rotary A, and a multi-query rotary linear B to compare.
      await panelSelect(page, 'Preset').selectOption('small');
      await architecture(page, 'A', 'KV heads').selectOption('2');
      await architecture(page, 'A', 'Positions').selectOption('rotary');
      await page.getByLabel('Compare', { exact: true }).check();
      await architecture(page, 'B', 'KV heads').selectOption('1');
      await architecture(page, 'B', 'Positions').selectOption('rotary');
      await architecture(page, 'B', 'Attention').selectOption('linear');
      await resetButton(page).click();
      await page.waitForSelector('.model-switch', { timeout: MODEL_MS });
      await page.waitForFunction((t) => document.querySelector('header .model-facts')?.textContent.includes(t), SMALL, { timeout: MODEL_MS });
      await ready(page, { timeout: MODEL_MS });

      // The tour at chapter 4 (each chapter sets the page up: the view is set after it).
      await page.locator('button.tour-button').click();
      for (let n = 2; n <= 4; n++) {
        await page.locator('aside.tour').getByRole('button', { name: 'Next', exact: true }).click();
        await page.waitForSelector(`aside.tour[data-tour-chapter="${n}"]`, { timeout: 5000 });
      }
      // The probe.
      await probeField(page, 'Sentence').fill(SENTENCE);
      await probeField(page, 'Second sentence').fill(PAIR);
      await probeField(page, 'Pad to').fill('40');
      await page.locator('.probe-form .mask-choice label', { hasText: 'None' }).locator('input').check();
      await probeField(page, 'Window').fill('3');
      await probeField(page, 'Attention').selectOption('Tiled');
      // Both models inspected again, tiled: a slow step on a busy machine.
      await page.locator(stage('tiles')).first().waitFor({ timeout: MODEL_MS });
      // The stepper's softmax, layer 2, head 3, and both models side by side.
      await page.locator(stage('softmax')).first().click();
      // The pickers' values count from 0 (their labels from 1).
      await page.getByLabel('Layer', { exact: true }).selectOption({ value: '1' });
      await page.getByLabel('Head', { exact: true }).selectOption({ value: '2' });
      await page.locator('.model-switch button[data-model="Both"]').click();
      await page.waitForSelector('.side-by-side .model-column[data-model="B"] figure.heatmap', { timeout: 15000 });

      const want = {
        sentence: SENTENCE, pair: PAIR, pad: '40', mask: 'None', window: '3', kernel: 'Tiled',
        summary: 'Layer 2 · Head 3 · softmax weights', selected: ['Layer 2 · Head 3'], tour: '4', showing: 'Both',
        preset: 'small', objective: 'mlm-nsp', architecture: '2 / rotary / softmax', compare: true, modelB: '1 / rotary / linear',
      };
      const here = await shownView(page);
      expectView(here, want, 'the page set by hand');
      assert(here.stage[0] === 'softmax', `stepper: ${here.stage}`);
      assert(here.captions.every((c) => c?.startsWith('Layer 2 · Head 3 · ')), `captions: ${here.captions}`);
      assert(here.facts.includes(SMALL), here.facts);

      // The link: exactly the fields set, each encoded; the address bar holds the same.
      const link = await dataLink(page);
      const expected = query({
        sentence: SENTENCE, pair: PAIR, pad: 40, mask: 'none', window: 3, kernel: 'tiled', stage: 'softmax',
        layer: 2, head: 3, model: 'both', tour: 4, preset: 'small', kv: 2, positions: 'rotary',
        compare: 'on', 'b-kv': 1, 'b-positions': 'rotary', 'b-attention': 'linear',
      });
      assert(sameQuery(link, `${baseUrl}${expected}`), `Copy link holds\n       ${new URL(link).search}\n     expected\n       ${expected}`);
      assert(link.startsWith(baseUrl), `link ${link} is not on ${baseUrl}`);
      await addressIs(page, link, 'the page set by hand');
      // "Copy link" copies that address.
      await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: new URL(baseUrl).origin });
      await page.locator('button.copy-link').click();
      await page.waitForFunction(() => document.querySelector('.copy-said')?.textContent === 'Copied', null, { timeout: 5000 });
      const copied = await page.evaluate(() => navigator.clipboard.readText());
      assert(copied === link, `copied ${copied}`);
      assert(problems.length === 0, problems.join('\n'));

      // A fresh browser (nothing kept): the link's model is built at once, nothing to replace.
      const fresh = await openPage(browser, link);
      await builtByLink(fresh.page, SMALL);
      await fresh.page.waitForSelector('.side-by-side .model-column[data-model="B"] figure.heatmap', { timeout: 15000 });
      expectSameView(await shownView(fresh.page), here, 'the fresh page differs from the page the link was copied from');
      const again = await dataLink(fresh.page);
      assert(sameQuery(again, link), `the fresh page's link\n       ${new URL(again).search}\n     differs from the one opened\n       ${new URL(link).search}`);
      assert(parts(again).join('&') === parts(link).join('&'), 'the fresh page writes its query in another order');
      assert((await noticeLines(fresh.page)).length === 0, `notice: ${await noticeLines(fresh.page)}`);
      assert(fresh.problems.length === 0, fresh.problems.join('\n'));
      await cleanUp(fresh.page, fresh.context);
      await cleanUp(page, context);
    },
  },
  {
    name: 'links: an encoder–decoder view (target, cross-attention) and a decoder view come back in a fresh browser',
    async run({ browser, baseUrl }) {
      const { page, context, problems } = await openPage(browser, baseUrl);
      await ready(page, { timeout: MODEL_MS });
      await panelSelect(page, 'Objective').selectOption('seq2seq');
      await panelSelect(page, 'Task').selectOption('copy');
      await resetButton(page).click();
      await probeField(page, 'Target').waitFor({ timeout: MODEL_MS });
      await ready(page, { timeout: MODEL_MS });
      await probeField(page, 'Sentence').fill('the dog runs');
      await probeField(page, 'Target').fill('the dog runs');
      // Cross-attention's layer 2, head 3, from the model view; its "· V" stage.
      await page.getByRole('button', { name: 'Cross · Layer 2 · Head 3', exact: true }).click();
      await page.locator(stage('context')).first().click();
      await page.waitForFunction(() => document.querySelector('.explorer .summary figcaption')?.textContent.startsWith('Layer 2 · Head 3 · cross'), null, { timeout: 10000 });
      const here = await shownView(page);
      expectView(here, {
        sentence: 'the dog runs', target: 'the dog runs', pair: null, objective: 'seq2seq', task: 'copy',
        selected: ['Cross · Layer 2 · Head 3'], summary: 'Layer 2 · Head 3 · cross-attention weights', tour: null, showing: null,
      }, 'the encoder–decoder set by hand');
      assert(here.stage[0] === 'context', `stepper: ${here.stage}`);
      const link = await dataLink(page);
      const expected = query({
        sentence: 'the dog runs', target: 'the dog runs', stage: 'context', layer: 2, head: 3, part: 'cross',
        objective: 'seq2seq', task: 'copy',
      });
      assert(sameQuery(link, `${baseUrl}${expected}`), `Copy link holds\n       ${new URL(link).search}\n     expected\n       ${expected}`);
      assert(problems.length === 0, problems.join('\n'));

      const fresh = await openPage(browser, link);
      await builtByLink(fresh.page, 'encoder–decoder');
      await probeField(fresh.page, 'Target').waitFor({ timeout: 10000 });
      await fresh.page.waitForFunction(() => document.querySelector('.explorer .summary figcaption')?.textContent.includes('cross'), null, { timeout: 15000 });
      expectSameView(await shownView(fresh.page), here, 'the fresh encoder–decoder page differs');
      assert(sameQuery(await dataLink(fresh.page), link), `the fresh page's link: ${await dataLink(fresh.page)}`);
      assert(fresh.problems.length === 0, fresh.problems.join('\n'));
      await cleanUp(fresh.page, fresh.context);

      // A decoder (next token), by link alone: its mask is causal whatever the link says.
      const decoder = `${baseUrl}${query({ sentence: 'the dog', stage: 'scores', head: 4, objective: 'next-token' })}`;
      const next = await openPage(browser, decoder);
      await builtByLink(next.page, 'decoder (causal');
      await next.page.waitForSelector('.decoder-note', { timeout: MODEL_MS });
      expectView(await shownView(next.page), {
        sentence: 'the dog', stage: ['scores'], summary: 'Layer 1 · Head 4 · softmax weights', objective: 'next-token',
      }, 'the decoder link');
      assert(sameQuery(await dataLink(next.page), decoder), `the decoder page's link: ${await dataLink(next.page)}`);
      assert(next.problems.length === 0, next.problems.join('\n'));
      await cleanUp(next.page, next.context);
      await cleanUp(page, context);
    },
  },
  {
    name: 'links: a bad link table — each bad field says so in one notice, keeps its default and the good fields, and loses nothing kept',
    async run({ browser, baseUrl }) {
      const { page, context, problems } = await openPage(browser, baseUrl);
      await ready(page, { timeout: MODEL_MS });
      // What this browser keeps: a setting and a model trained some steps.
      const rate = page.getByLabel('Learning rate', { exact: true });
      await rate.fill('0.005');
      await rate.press('Tab');
      const trained = await trainAndKeep(page, 10);
      const base = await shownView(page);

      // The text of a 100 KB link is more than the harness's server reads in a request line
      // (Node refuses headers over 16 KB with 431): the browser is given the page for it.
      const indexHtml = await (await fetch(baseUrl)).text();
      await context.route((url) => url.search.length > 10000,
        (route) => route.fulfill({ status: 200, contentType: 'text/html', body: indexHtml }));

      const sentence = { sentence: base.sentence, pair: base.pair };
      const rows = [
        { query: 'foo=1&head=2', says: 'The link\'s "foo" is not something a link sets: ignored.' },
        { query: '%zz=1&head=2', says: 'A key of the link was unreadable (a % not followed by two hex digits): ignored.' },
        { query: 'head=2&head=3', says: 'The link gives "head" twice: the first is used.' },
        { query: 'mask=sideways&head=2', says: 'Mask: the mask must be None, Padding or Causal, so the default applies.', want: { mask: 'Padding' } },
        { query: 'layer=zero&head=2', says: 'Layer: "zero" is not a whole number, so the default applies.' },
        { query: 'layer=0&head=2', says: 'Layer: 0 is not between 1 and 64, so the default applies.' },
        { query: 'stage=nope&head=2', says: 'Stage: "nope" is not a stage, so the default applies.', want: { stage: ['input'] } },
        { query: 'tour=99&head=2', says: 'Tour chapter: 99 is not between 1 and 15, so the default applies.', want: { tour: null } },
        { query: 'head=9&layer=2', says: 'Head: this model has 4 heads, so head 9 is shown as head 1.', summary: 'Layer 2 · Head 1', link: '?layer=2' },
        { query: 'layer=3&head=2', says: 'Layer: this model has 2 layers, so layer 3 is shown as layer 1.' },
        { query: `sentence=${'a'.repeat(100000)}&head=2`, says: 'Sentence: 100000 characters are more than the 2000 a link may carry, so the default applies.', want: sentence },
        { query: 'sentence=%zz&head=2', says: 'Sentence: a % not followed by two hex digits, so the default applies.', want: sentence },
        { query: 'sentence=%E2%82&head=2', says: 'Sentence: its bytes are not UTF-8 text, so the default applies.', want: sentence },
        { query: 'sentence=abc%E2%82%ACdef%&head=2', says: 'Sentence: a % not followed by two hex digits, so the default applies.', want: sentence },
      ];
      const report = [];
      for (const row of rows) {
        const where = `?${row.query.slice(0, 60)}`;
        const started = Date.now();
        await page.goto(`${baseUrl}?${row.query}`);
        await ready(page, { timeout: MODEL_MS });
        // The kept model came back, not a fresh one.
        await page.waitForFunction((n) => Number(document.querySelector('[data-step]')?.dataset.step) === n, trained, { timeout: MODEL_MS });
        await page.waitForFunction((text) => document.querySelector('[data-link-notice]')?.textContent.includes(text), row.says, { timeout: 10000 })
          .catch(async () => { throw new Error(`${where}: notice ${JSON.stringify(await noticeLines(page))}, expected one saying ${row.says}`); });
        const lines = await noticeLines(page);
        assert(lines.length === 1, `${where}: ${lines.length} notices: ${lines.join(' | ')}`);
        const line = lines[0].replace(/\s*Dismiss\s*$/, '');
        assert(line === `Part of this link could not be read: ${row.says}`, `${where}: the notice says "${line}"`);
        assert(await page.locator('.crashed').count() === 0, `${where}: the crash banner shows`);
        assert(await offer(page).count() === 0, `${where}: a Reset is offered`);
        const shown = await shownView(page);
        // The good field beside the bad one is kept; the bad one has its default.
        expectView(shown, { summary: `${row.summary ?? 'Layer 1 · Head 2'} · softmax weights`, ...row.want }, where);
        expectView(shown, {
          sentence: base.sentence, pair: base.pair, pad: '', mask: 'Padding', window: '', kernel: 'Full', stage: ['input'],
          tour: null, facts: base.facts, preset: 'tiny', objective: 'mlm-nsp', architecture: base.architecture, compare: false,
        }, `${where} (defaults)`);
        // Nothing kept is lost: the trained model, its step and the settings.
        assert(await stepCount(page) === trained, `${where}: step ${await stepCount(page)}, the kept model was at ${trained}`);
        assert(await rate.inputValue() === '0.005', `${where}: the learning rate is ${await rate.inputValue()}`);
        // The address now holds what was read, and only that.
        const link = await dataLink(page);
        assert(link === `${baseUrl}${row.link ?? '?head=2'}`, `${where}: the page's link is ${link.slice(0, 200)}`);
        await addressIs(page, link, where);
        assert(problems.length === 0, `${where}: ${problems.join('\n')}`);
        // Dismiss closes the notice.
        await page.locator('[data-link-notice]').getByRole('button', { name: 'Dismiss' }).click();
        await page.locator('[data-link-notice]').waitFor({ state: 'detached', timeout: 5000 });
        report.push(`${where.slice(0, 24)} ${Date.now() - started} ms`);
      }
      console.log(`     ${rows.length} bad links, the model kept at step ${trained} each time: ${report.join(', ')}`);
      await cleanUp(page, context);
    },
  },
  {
    name: 'links: a link to another preset keeps the trained model until "Reset to the link\'s model"; "Keep this model" keeps it',
    async run({ browser, baseUrl }) {
      const { page, context, problems } = await openPage(browser, baseUrl);
      await ready(page, { timeout: MODEL_MS });
      const trained = await trainAndKeep(page, 20);
      // Layer 4: small has 4 layers, tiny 2.
      const toSmall = `${baseUrl}?preset=small&layer=4&head=2`;

      // Opened where a tiny model has trained: the offer, and the kept model meanwhile.
      const offered = async (step) => {
        await page.goto(toSmall);
        await ready(page, { timeout: MODEL_MS });
        await offer(page).waitFor({ timeout: 10000 });
        const text = await offer(page).innerText();
        assert(text.startsWith('This link is for another model: preset small (here tiny).'), text);
        await page.waitForFunction((n) => Number(document.querySelector('[data-step]')?.dataset.step) === n, step, { timeout: MODEL_MS })
          .catch(async () => { throw new Error(`step ${await stepCount(page)} with the offer open: the model trained to ${step} was not restored`); });
        const shown = await shownView(page);
        expectView(shown, { preset: 'tiny' }, 'with the offer open');
        assert(shown.facts.includes(TINY), `the model here: ${shown.facts}`);
        // Nothing is said about the layer before a model that matches the link answers.
        assert((await noticeLines(page)).length === 0, `notice: ${await noticeLines(page)}`);
      };
      await offered(trained);

      // "Keep this model": the banner goes, the trained model stays and trains on; it has no
      // layer 4, and says so.
      await offer(page).getByRole('button', { name: 'Keep this model' }).click();
      await offer(page).waitFor({ state: 'detached', timeout: 5000 });
      await page.waitForFunction(() => document.querySelector('[data-link-notice]'), null, { timeout: 10000 });
      const kept = await noticeLines(page);
      assert(kept.length === 1 && kept[0].startsWith('Part of this link could not be read: Layer: this model has 2 layers, so layer 4 is shown as layer 1.'),
        `after Keep this model: ${kept.join(' | ')}`);
      await page.getByRole('button', { name: 'Step', exact: true }).click();
      await page.waitForFunction((n) => Number(document.querySelector('[data-step]')?.dataset.step) === n + 1, trained, { timeout: 10000 });
      expectView(await shownView(page), { preset: 'tiny', summary: 'Layer 1 · Head 2 · softmax weights' }, 'after Keep this model');
      assert((await facts(page)).includes(TINY), `after Keep: ${await facts(page)}`);
      assert(await dataLink(page) === `${baseUrl}?head=2`, `after Keep, the link is ${await dataLink(page)}`);
      await waitKept(page, trained + 1);

      // The same link again, and the Reset accepted: a fresh small model at step 0, at layer 4.
      await offered(trained + 1);
      await acceptOffer(page, SMALL);
      await page.waitForFunction(() => Number(document.querySelector('[data-step]')?.dataset.step) === 0, null, { timeout: 10000 });
      await page.waitForFunction(() => document.querySelector('.explorer .summary figcaption')?.textContent.startsWith('Layer 4 · Head 2'), null, { timeout: 10000 })
        .catch(async () => { throw new Error(`after the Reset: ${await page.locator('.explorer .summary figcaption').textContent()}; notice: ${await noticeLines(page)}`); });
      expectView(await shownView(page), { preset: 'small', summary: 'Layer 4 · Head 2 · softmax weights', selected: ['Layer 4 · Head 2'] }, 'after the Reset');
      assert((await noticeLines(page)).length === 0, `notice after the Reset: ${await noticeLines(page)}`);
      const link = await dataLink(page);
      assert(sameQuery(link, toSmall), `after the Reset, the page's link is ${link}`);
      await addressIs(page, link, 'after the Reset');
      // Its own link reopens it as it is: no offer, the small model.
      await waitKept(page, 0);
      await page.goto(link);
      await ready(page, { timeout: MODEL_MS });
      await page.waitForFunction((t) => document.querySelector('header .model-facts')?.textContent.includes(t), SMALL, { timeout: MODEL_MS });
      assert(await offer(page).count() === 0, 'the link of the model here offers a Reset');
      expectView(await shownView(page), { preset: 'small', summary: 'Layer 4 · Head 2 · softmax weights' }, 'reopened');
      assert((await noticeLines(page)).length === 0, `notice when reopened: ${await noticeLines(page)}`);
      assert(problems.length === 0, problems.join('\n'));
      await cleanUp(page, context);
    },
  },
];

// Links that once went wrong: a window wider than the text, a sentence longer than a link
// carries, an encoder–decoder with Compare.
main.push(
  {
    name: 'links: a window longer than the text is a notice and the default, not an explorer with nothing to show',
    async run({ browser, baseUrl }) {
      const { page, context, problems } = await openPage(browser, `${baseUrl}?window=500&head=2`);
      await page.waitForSelector('.error-box, figure.heatmap canvas', { timeout: MODEL_MS });
      const error = await page.locator('.explorer .error-box').allInnerTexts();
      assert(error.length === 0, `the explorer shows: ${error.join(' | ')}`);
      await ready(page, { timeout: MODEL_MS });
      expectView(await shownView(page), { window: '', summary: 'Layer 1 · Head 2 · softmax weights' }, '?window=500');
      assert((await noticeLines(page)).some((l) => l.includes('Window')), `notice: ${await noticeLines(page)}`);
      assert(problems.length === 0, problems.join('\n'));
      await cleanUp(page, context);
    },
  },
  {
    name: 'links: the page\'s own link for a sentence longer than a link carries reopens with its first 2,000 characters, quietly',
    async run({ browser, baseUrl }) {
      const { page, context } = await openPage(browser, baseUrl);
      await ready(page, { timeout: MODEL_MS });
      const long = 'the dog . '.repeat(401).trim();
      await probeField(page, 'Sentence').fill(long);
      const link = await dataLink(page);
      const fresh = await openPage(browser, link);
      await ready(fresh.page, { timeout: MODEL_MS });
      const lines = await noticeLines(fresh.page);
      assert(lines.length === 0, `the page's own link (${long.length} characters) reopens with: ${lines.join(' | ')}`);
      expectView(await shownView(fresh.page), { sentence: long.slice(0, 2000) }, 'reopened');
      await cleanUp(fresh.page, fresh.context);
      await cleanUp(page, context);
    },
  },
  {
    name: 'links: an encoder–decoder link with Compare drops Compare when read, with a notice, and builds the encoder–decoder',
    async run({ browser, baseUrl }) {
      const { page, context } = await openPage(browser, `${baseUrl}?objective=seq2seq&task=copy&compare=on&b-attention=linear`);
      await ready(page, { timeout: MODEL_MS });
      const lines = await noticeLines(page);
      assert(lines.some((l) => l.includes('an encoder–decoder is built with BERT\'s attention and trains alone')), `notice: ${lines.join(' | ')}`);
      await builtByLink(page, 'encoder–decoder');
      const errors = await page.locator('.error, [role=alert]').allInnerTexts();
      assert(!errors.some((e) => e.includes('Compare trains two')), `after the Reset: ${errors.join(' | ')}`);
      // Whatever model is shown, the page's link describes it.
      const link = await dataLink(page);
      const shownFacts = await facts(page);
      assert(!link.includes('compare=on') || shownFacts.includes('Compare'), `the link ${new URL(link).search} for the model: ${shownFacts}`);
      await cleanUp(page, context);
    },
  },
);

export const tests = main;

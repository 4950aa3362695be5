// Live training, as a user does it: play, pause, step, history, reload, a real checkpoint, NaN.
import fs from 'node:fs';
import path from 'node:path';
import { openPage, ready, assert, pause, poll, keptSteps, waitKept, stepOf } from '../harness.mjs';
import { figure } from '../names.mjs';


// The selected head's softmax weights beside the model view.
const softmaxFigure = (page) => page.locator(figure('summary-weights'));
const stepCount = stepOf;
const latestLoss = async (page) => Number(await page.locator('.readout').first().getAttribute('data-loss'));

// Press Play and wait until the step counter reaches `steps`.
async function playUntil(page, steps, timeout = 30000) {
  await page.getByRole('button', { name: 'Play', exact: true }).click();
  await page.waitForFunction((n) => Number(document.querySelector('[data-step]')?.dataset.step) >= n, steps, { timeout });
}

async function setField(page, label, value) {
  const input = page.getByLabel(label, { exact: true });
  await input.fill(String(value));
  await input.press('Enter');
  await input.dispatchEvent('change');
}

const batchOf = async (page) => JSON.parse(await page.locator('[data-batch]').getAttribute('data-batch'));
const countsOf = async (page) => JSON.parse(await page.locator('[data-counts]').getAttribute('data-counts'));

// What the Batch view's contract promises of every example: each chosen position has a
// replacement and a prediction; [MASK] sits exactly where the replacement is "mask"; a random
// token differs from nothing in particular, a kept one is the original; positions not chosen
// are the originals. Returns the problems found.
function batchProblems(examples) {
  const problems = [];
  examples.forEach((e, row) => {
    const at = `row ${row}`;
    if (e.chosen.length === 0) problems.push(`${at}: nothing chosen`);
    if (e.replaced_by.length !== e.chosen.length) problems.push(`${at}: ${e.chosen.length} chosen, ${e.replaced_by.length} replaced_by`);
    if (e.predicted.length !== e.chosen.length) problems.push(`${at}: ${e.chosen.length} chosen, ${e.predicted.length} predicted`);
    if (e.tokens.length !== e.original.length) problems.push(`${at}: tokens and original differ in length`);
    if (!['IsNext', 'NotNext'].includes(e.nsp_label) || !['IsNext', 'NotNext'].includes(e.nsp_predicted)) {
      problems.push(`${at}: NSP ${e.nsp_label} / ${e.nsp_predicted}`);
    }
    e.tokens.forEach((token, p) => {
      const i = e.chosen.indexOf(p);
      const how = i < 0 ? null : e.replaced_by[i];
      if (how !== null && !['mask', 'random', 'kept'].includes(how)) problems.push(`${at} position ${p}: replaced_by ${how}`);
      if ((token === '[MASK]') !== (how === 'mask')) problems.push(`${at} position ${p}: token ${token}, replaced_by ${how}`);
      if ((how === null || how === 'kept') && token !== e.original[p]) problems.push(`${at} position ${p}: ${token} but the original is ${e.original[p]}`);
    });
  });
  return problems;
}

export const tests = [
  {
    name: 'training: Play makes the loss fall and the heatmaps change, with no gross main-thread stall and no layout shift',
    async run({ browser, baseUrl, artifacts }) {
      const { page, context, problems } = await openPage(browser, baseUrl);
      await ready(page);
      const before = await softmaxFigure(page).getAttribute('data-matrix');
      const historyTop = () => page.evaluate(() => document.querySelector('label.history').getBoundingClientRect().top);
      const topBefore = await historyTop();
      await page.evaluate(() => {
        window.__longTasks = [];
        new PerformanceObserver((list) => window.__longTasks.push(...list.getEntries().map((e) => e.duration)))
          .observe({ type: 'longtask', buffered: false });
      });
      await playUntil(page, 5, 20000);
      const firstLoss = await latestLoss(page);
      const started = Date.now();
      // Bounded by steps, however long they take (the time is reported).
      await page.waitForFunction(() => Number(document.querySelector('[data-step]')?.dataset.step) >= 1300, null, { timeout: 300000 });
      const seconds = (Date.now() - started) / 1000;
      const longTasks = await page.evaluate(() => window.__longTasks);
      const steps = await stepCount(page);
      const lastLoss = await latestLoss(page);
      const topAfter = await historyTop();
      await page.getByRole('button', { name: 'Pause', exact: true }).click();
      await page.screenshot({ path: path.join(artifacts, 'e2e-training.png'), fullPage: true });
      const after = await softmaxFigure(page).getAttribute('data-matrix');
      console.log(`     ${steps} steps, ${seconds.toFixed(1)} s after step 5; loss ${firstLoss.toFixed(3)} → ${lastLoss.toFixed(3)}; long tasks: ${JSON.stringify(longTasks)}`);
      assert(lastLoss < firstLoss, `loss did not fall: ${firstLoss} → ${lastLoss}`);
      assert(before !== after, 'the softmax heatmap did not change while training');
      assert(topBefore === topAfter, `the panel moved when training started: History at y ${topBefore}, then ${topAfter}`);
      // The 50 ms budget is a benchmark (e2e/bench/longtasks.mjs), not a test: the long tasks are
      // reported above, and no clock decides a test.
      assert(problems.length === 0, problems.join('\n'));
      await context.close();
    },
  },
  {
    name: 'training: a figure out of view waits while training, and is brought up to date when scrolled to',
    async run({ browser, baseUrl }) {
      const { page, context, problems } = await openPage(browser, baseUrl);
      await ready(page);
      // The Heads panel's last figure, far below the first screen.
      const far = page.locator('figure.heatmap canvas').last();
      const pixels = () => far.evaluate((c) => c.toDataURL());
      const top = await far.evaluate((c) => c.getBoundingClientRect().top);
      assert(top > 800 * 1.5 + 100, `the figure is not far enough below the screen to test this (top ${top})`);
      const drawn = await pixels();
      const near = await page.locator('figure.heatmap canvas').first().evaluate((c) => c.toDataURL());
      await playUntil(page, 30);
      await pause(page);
      // Proof that drawing went on meanwhile: the figure in view was redrawn.
      await page.waitForFunction((before) => document.querySelector('figure.heatmap canvas').toDataURL() !== before,
        near, { timeout: 5000, polling: 100 });
      assert((await pixels()) === drawn, 'a figure out of view was redrawn while training');
      await far.scrollIntoViewIfNeeded();
      await page.waitForFunction((before) => [...document.querySelectorAll('figure.heatmap canvas')].at(-1).toDataURL() !== before,
        drawn, { timeout: 5000 });
      assert(problems.length === 0, problems.join('\n'));
      await context.close();
    },
  },
  {
    name: 'training: Pause then Step adds exactly one step; History scrubs back',
    async run({ browser, baseUrl }) {
      const { page, context, problems } = await openPage(browser, baseUrl);
      await ready(page);
      await playUntil(page, 30);
      const paused = await pause(page);
      const before = await softmaxFigure(page).getAttribute('data-matrix');
      await page.getByRole('button', { name: 'Step', exact: true }).click();
      // The worker answers Step with its step, then the heatmaps of the weights after it: once
      // those are drawn, any step taken after Pause (or a second one by Step) has arrived too.
      await page.waitForFunction((m) => document.querySelector('figure.heatmap')?.dataset.matrix !== m, before, { timeout: 5000 });
      const stepped = await stepCount(page);
      assert(stepped >= paused + 1, 'Step added no step');
      assert(stepped === paused + 1, stepped > paused + 1 ? 'steps went on after Pause' : 'Step did not add exactly one step');

      const live = await softmaxFigure(page).getAttribute('data-matrix');
      const slider = page.getByLabel('History');
      await slider.evaluate((el) => { el.value = '0'; el.dispatchEvent(new Event('input', { bubbles: true })); });
      await page.waitForFunction(() => document.querySelector('.history-at')?.textContent.startsWith('step 0'), null, { timeout: 5000 });
      await page.waitForFunction((m) => document.querySelector('figure.heatmap')?.dataset.matrix !== m, live, { timeout: 5000 });
      assert(problems.length === 0, problems.join('\n'));
      await context.close();
    },
  },
  {
    name: 'training: Download checkpoint saves config.json, model.safetensors, vocab.txt, tokenizer_config.json',
    async run({ browser, baseUrl, artifacts }) {
      const { page, context, problems } = await openPage(browser, baseUrl);
      await ready(page);
      await page.getByRole('button', { name: 'Step', exact: true }).click();
      await page.waitForFunction(() => Number(document.querySelector('[data-step]')?.dataset.step) >= 1, null, { timeout: 10000 });
      const dir = path.join(artifacts, 'browser-checkpoint');
      fs.rmSync(dir, { recursive: true, force: true });
      fs.mkdirSync(dir, { recursive: true });
      const names = [];
      const saved = [];
      page.on('download', (d) => { names.push(d.suggestedFilename()); saved.push(d.saveAs(path.join(dir, d.suggestedFilename()))); });
      await page.getByRole('button', { name: 'Download checkpoint' }).click();
      // The page starts all four downloads in one task (download.rs).
      await poll(() => names.length, (n) => n >= 4, (n) => `${n} downloads: ${names}`, 10000);
      await Promise.all(saved);
      assert(names.sort().join() === 'config.json,model.safetensors,tokenizer_config.json,vocab.txt', `downloads: ${names}`);
      const config = JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8'));
      assert(config.hidden_size === 64 && config.num_hidden_layers === 2, `config: ${JSON.stringify(config).slice(0, 200)}`);
      const weights = fs.statSync(path.join(dir, 'model.safetensors')).size;
      assert(weights > 4 * 100000, `model.safetensors is only ${weights} bytes`);
      assert(problems.length === 0, problems.join('\n'));
      await context.close();
    },
  },
  {
    name: 'training: the causal training mask says why NSP stays at chance; the curves save as SVG',
    async run({ browser, baseUrl, artifacts }) {
      const { page, context, problems } = await openPage(browser, baseUrl);
      await ready(page);
      const mask = page.getByLabel('Training mask');
      assert((await mask.locator('option').allInnerTexts()).join() === 'None,Padding,Causal', 'the training masks');
      assert(await page.locator('.mask-note').count() === 0, 'no note under the padding mask');
      await mask.selectOption('causal');
      const note = page.locator('.mask-note');
      await note.waitFor({ timeout: 5000 });
      const text = await note.innerText();
      assert(text.includes('[CLS]') && text.includes('NSP stays at chance'), text);
      await page.getByRole('button', { name: 'Step', exact: true }).click();
      await page.waitForFunction(() => Number(document.querySelector('[data-step]')?.dataset.step) >= 1, null, { timeout: 10000 });
      await page.locator('fieldset.settings').screenshot({ path: path.join(artifacts, 'training-causal-note.png') });
      const chart = page.locator('figure.curve-chart[data-chart=loss]');
      const [download] = await Promise.all([
        page.waitForEvent('download', { timeout: 5000 }),
        chart.getByRole('button', { name: 'Save SVG' }).click(),
      ]);
      assert(download.suggestedFilename() === 'loss.svg', download.suggestedFilename());
      const file = path.join(artifacts, 'loss.svg');
      await download.saveAs(file);
      const svg = fs.readFileSync(file, 'utf8');
      assert(svg.startsWith('<svg') && svg.includes('<polyline') && svg.includes('step'), 'the loss chart as vectors');
      await mask.selectOption('padding');
      await page.waitForFunction(() => !document.querySelector('.mask-note'), null, { timeout: 5000 });
      assert(problems.length === 0, problems.join('\n'));
      await page.evaluate(() => { localStorage.clear(); indexedDB.deleteDatabase('attention-lab'); });
      await context.close();
    },
  },
  {
    name: 'training: corpus, settings and probe survive a reload',
    async run({ browser, baseUrl }) {
      const { page, context, problems } = await openPage(browser, baseUrl);
      await ready(page);
      await page.getByLabel('Corpus').fill('the first line .\nthe second line .\nthe third line .');
      await setField(page, 'Learning rate', '0.002');
      await page.getByLabel('Sentence', { exact: true }).fill('the second [MASK] .');
      // Until all three are in localStorage (app.rs `remember`), as the page will read them.
      const stored = () => page.evaluate(() => ['corpus', 'settings', 'probe'].map((k) => localStorage.getItem(`attention-lab/${k}`) ?? ''));
      await poll(stored, ([corpus, settings, probe]) => corpus.includes('the first line .') && settings.includes('0.002') && probe.includes('the second [MASK] .'),
        (kept) => `not kept in localStorage: ${kept.map((k) => k.slice(0, 80)).join(' | ')}`, 10000);
      await page.reload();
      await ready(page);
      const corpus = await page.getByLabel('Corpus').inputValue();
      const lr = await page.getByLabel('Learning rate', { exact: true }).inputValue();
      const sentence = await page.getByLabel('Sentence', { exact: true }).inputValue();
      assert(corpus.startsWith('the first line .'), `corpus not kept: ${corpus.slice(0, 40)}`);
      assert(Number(lr) === 0.002, `learning rate not kept: ${lr}`);
      assert(sentence === 'the second [MASK] .', `sentence not kept: ${sentence}`);
      assert(problems.length === 0, problems.join('\n'));
      await page.evaluate(() => { localStorage.clear(); indexedDB.deleteDatabase('attention-lab'); });
      await context.close();
    },
  },
  {
    name: 'training: a reload mid-training keeps the model of a few seconds before, with its curves',
    async run({ browser, baseUrl }) {
      const { page, context, problems } = await openPage(browser, baseUrl);
      await ready(page);
      const facts = await page.locator('header .model-facts').innerText();
      await page.getByRole('button', { name: 'Play', exact: true }).click();
      // Never paused: kept at the first progress report, then only by the periodic keep (every
      // 5 s while playing); reloaded once that one, with its curves, is in the store.
      const first = (await poll(() => keptSteps(page), (k) => k.model > 0, () => 'no model kept while playing')).model;
      await poll(() => keptSteps(page), (k) => k.model > first && k.curves === k.model,
        (k) => `no periodic keep after step ${first} (kept: model ${k.model}, curves ${k.curves})`);
      const before = await stepCount(page);
      await page.reload();
      await ready(page);
      const after = await stepCount(page);
      // The kept model keeps its word-level tokenizer (checkpoint files alone read as WordPiece).
      const restoredFacts = await page.locator('header .model-facts').innerText();
      assert(facts.includes('word-level') && restoredFacts === facts, `header before: ${facts}; after the reload: ${restoredFacts}`);
      const playing = await page.getByRole('button', { name: 'Pause', exact: true }).isEnabled();
      // The curves come back with the model (live.rs `ready`), and are drawn in a task of their own.
      await page.waitForFunction(() => Number(document.querySelector('[data-chart="loss"]')?.dataset.points) > 0, null, { timeout: 5000 })
        .catch(() => { throw new Error('the loss curves did not come back with the model'); });
      const lossChart = page.locator('figure.curve-chart').first();
      const curvePoints = Number(await lossChart.getAttribute('data-points'));
      const curveText = await lossChart.locator('.curve-readout').innerText();
      console.log(`     step ${before} before the reload, ${after} after; loss curve: ${curvePoints} points, "${curveText.replace(/\s+/g, ' ')}"`);
      // Kept at the first progress report and then every 5 s: about 5/8 of the steps survive
      // (with a 30 s period only the first handful would).
      assert(after >= before / 4 && after <= before, `reload restored step ${after}, was at ${before}`);
      assert(!playing, 'training should wait for Play after a reload');
      assert(curvePoints > 0 && curveText.includes(`latest, step ${after}`), 'the loss curves did not come back with the model');
      assert(!(await page.locator('.readout').first().innerText()).includes('—'), 'the loss readout came back empty');
      // The History's kept weights came back too: the slider scrubs back to step 0, whose
      // heatmaps differ from the restored model's.
      const slider = page.getByLabel('History');
      await page.waitForFunction(() => Number(document.querySelector('label.history input[type=range]')?.max) >= 2, null, { timeout: 10000 });
      const kept = Number(await slider.getAttribute('max')) + 1;
      const live = await softmaxFigure(page).getAttribute('data-matrix');
      await slider.evaluate((el) => { el.value = '0'; el.dispatchEvent(new Event('input', { bubbles: true })); });
      await page.waitForFunction(() => document.querySelector('.history-at')?.textContent.startsWith('step 0'), null, { timeout: 5000 });
      await page.waitForFunction((m) => document.querySelector('figure.heatmap')?.dataset.matrix !== m, live, { timeout: 5000 });
      console.log(`     History after the reload: ${kept} kept points, back to step 0`);
      assert(problems.length === 0, problems.join('\n'));
      await page.evaluate(() => { localStorage.clear(); indexedDB.deleteDatabase('attention-lab'); });
      await context.close();
    },
  },
  {
    name: 'training: after Reset, a reload brings back the fresh model, not the trained one',
    async run({ browser, baseUrl }) {
      const { page, context, problems } = await openPage(browser, baseUrl);
      await ready(page);
      await playUntil(page, 30);
      // Pause keeps the trained model; Reset follows at once, while that write may be under way.
      await page.getByRole('button', { name: 'Pause', exact: true }).click();
      await page.getByRole('button', { name: 'Reset', exact: true }).click();
      await page.waitForFunction(() => document.querySelector('[data-step]')?.dataset.step === '0', null, { timeout: 10000 });
      await ready(page);
      await waitKept(page, 0);
      await page.reload();
      await ready(page);
      const step = await stepCount(page);
      const points = Number(await page.locator('figure.curve-chart').first().getAttribute('data-points'));
      assert(step === 0 && points === 0, `after Reset and a reload: step ${step}, ${points} curve points`);
      assert(problems.length === 0, problems.join('\n'));
      await page.evaluate(() => { localStorage.clear(); indexedDB.deleteDatabase('attention-lab'); });
      await context.close();
    },
  },
  {
    name: 'training: a learning rate of 1000 stops by itself and offers a rewind',
    async run({ browser, baseUrl }) {
      const { page, context, problems } = await openPage(browser, baseUrl);
      await ready(page);
      // A healthy stretch first, so there is a recent range to leave.
      await playUntil(page, 60);
      await pause(page);
      const healthy = await latestLoss(page);
      await setField(page, 'Learning rate', '1000');
      await page.getByRole('button', { name: 'Play', exact: true }).click();
      await page.waitForSelector('.stopped', { timeout: 30000 });
      const text = await page.locator('.stopped').innerText();
      assert(/NaN|inf|∞|diverged/i.test(text), `no divergence message: ${text}`);
      const rewind = page.getByRole('button', { name: /Rewind to step/ });
      assert(await rewind.isVisible(), 'no rewind offered');
      // It offers the last kept point before the loss left its range, and says which.
      const why = await page.locator('.rewind-why').innerText();
      const stopped = await stepCount(page);
      const left = /left its recent range at step (\d+)/.exec(why)?.[1];
      const offered = Number(await rewind.getAttribute('data-rewind-step'));
      console.log(`     healthy loss ${healthy.toFixed(3)}; "${why}"; stopped at step ${stopped}`);
      assert(new RegExp(`[Ss]tep ${offered} is the last kept point before`).test(why), `offered step ${offered}: ${why}`);
      // Weights of step s give the loss of step s + 1: a climb from step d condemns d − 1 on.
      assert(left ? offered + 2 <= Number(left) : offered < stopped, `offered step ${offered}, stopped at ${stopped}: ${why}`);
      await rewind.click();
      await page.waitForFunction((n) => Number(document.querySelector('[data-step]')?.dataset.step) === n, offered, { timeout: 15000 });
      await setField(page, 'Learning rate', '0.001');
      await page.getByRole('button', { name: 'Step', exact: true }).click();
      await page.waitForFunction((n) => Number(document.querySelector('[data-step]')?.dataset.step) === n + 1, offered, { timeout: 5000 });
      // The step and its loss come in the one Progress message.
      const after = await latestLoss(page);
      assert(Number.isFinite(after) && after < 2 * healthy, `after the rewind the loss is ${after} (healthy: ${healthy}): wrecked weights`);
      assert(problems.length === 0, problems.join('\n'));
      await page.evaluate(() => { localStorage.clear(); indexedDB.deleteDatabase('attention-lab'); });
      await context.close();
    },
  },
  {
    name: 'training: loading the real MiniLM from files shows a 6 × 12 model view',
    async run({ browser, baseUrl, artifacts }) {
      const dir = process.env.MINILM_DIR;
      assert(dir && fs.existsSync(path.join(dir, 'model.safetensors')), `MiniLM not found in MINILM_DIR=${dir}`);
      const { page, context, problems } = await openPage(browser, baseUrl);
      await ready(page);
      const files = ['config.json', 'model.safetensors', 'vocab.txt', 'tokenizer_config.json'].map((f) => path.join(dir, f));
      await page.locator('input[type=file]').first().setInputFiles(files);
      await page.waitForFunction(() => document.querySelectorAll('.model-view .thumb').length === 72, null, { timeout: 60000 });
      await page.waitForSelector('figure.heatmap canvas');
      const name = await page.locator('header .model-name').innerText();
      await page.screenshot({ path: path.join(artifacts, 'e2e-minilm.png'), fullPage: true });
      const notice = await page.locator('.notice').allInnerTexts();
      const facts = await page.locator('header .model-facts').innerText();
      assert(notice.some((n) => /pre-training heads/.test(n)), `no reason why MiniLM cannot train: ${notice}`);
      assert(name.length > 0, 'no model name');
      assert(facts.startsWith('6 layers × 12 heads · hidden 384 · 30,522-token WordPiece vocabulary'), `header facts: ${facts}`);
      // Kept in the browser although it never trains: a reload brings it back.
      await poll(() => keptSteps(page), (k) => k.name === name, (k) => `kept: ${k.name}, not ${name}`, 60000);
      await page.reload();
      await page.waitForFunction(() => document.querySelectorAll('.model-view .thumb').length === 72, null, { timeout: 60000 });
      const restored = await page.locator('header .model-facts').innerText();
      assert(restored === facts, `after a reload: ${restored}`);
      assert(problems.length === 0, problems.join('\n'));
      await page.evaluate(() => { localStorage.clear(); indexedDB.deleteDatabase('attention-lab'); });
      await context.close();
    },
  },
  {
    name: 'training: the Batch view shows the latest batch, consistent with its marks, and counts that check make_batch',
    async run({ browser, baseUrl }) {
      const { page, context, problems } = await openPage(browser, baseUrl);
      await ready(page);
      assert((await batchOf(page)).length === 0, 'a batch before the first step');
      // Enough steps for the counts to settle near their targets: bounded by steps, not time.
      await playUntil(page, 5, 20000);
      await page.waitForFunction(() => Number(document.querySelector('[data-step]')?.dataset.step) >= 1300, null, { timeout: 300000 });
      // While paused, the batch of the step just taken: Step brings the next one.
      const paused = await pause(page);
      await page.waitForFunction((n) => document.querySelector('[data-batch]')?.dataset.batchStep === String(n), paused, { timeout: 5000 });
      await page.getByRole('button', { name: 'Step', exact: true }).click();
      await page.waitForFunction((n) => document.querySelector('[data-batch]')?.dataset.batchStep === String(n + 1), paused, { timeout: 5000 });
      const examples = await batchOf(page);
      const counts = await countsOf(page);
      const found = batchProblems(examples);
      assert(examples.length === 8, `${examples.length} examples; the batch size is 8`);
      assert(found.length === 0, found.slice(0, 10).join('\n'));
      // The rows drawn show the same marks: [MASK] chips exactly where replaced_by is "mask".
      const rows = page.locator('.batch-example');
      const shown = await rows.count();
      assert(shown === 4 && (await page.locator('button.batch-more').innerText()).includes('+4 more'), `${shown} rows drawn`);
      for (let r = 0; r < shown; r++) {
        const marks = await rows.nth(r).locator('.batch-chip.chosen').evaluateAll((chips) =>
          chips.map((c) => ({ pos: Number(c.dataset.pos), how: c.dataset.replacedBy, mark: c.querySelector('.mark').textContent })));
        const e = examples[r];
        const expected = e.chosen.map((p, i) => `${p}:${e.replaced_by[i]}`).join();
        assert(marks.map((m) => `${m.pos}:${m.how}`).join() === expected, `row ${r}: chips ${JSON.stringify(marks)}, data ${expected}`);
        for (const m of marks) {
          const ok = m.how === 'mask' ? m.mark === '[MASK]' : m.how === 'kept' ? m.mark === 'kept' : m.mark === `random → ${e.tokens[m.pos]}`;
          assert(ok, `row ${r} position ${m.pos}: ${m.how} marked "${m.mark}"`);
        }
        const nsp = await rows.nth(r).locator('.nsp').innerText();
        assert(nsp.includes(e.nsp_label) && nsp.includes(`predicted ${e.nsp_predicted}`), `row ${r} NSP: ${nsp}`);
      }
      // The counts: every pair counted once, labels near 50/50, 15% chosen, 80/10/10.
      const steps = await stepCount(page);
      const pairs = counts.is_next + counts.not_next;
      const text = await page.locator('[data-counts]').innerText();
      console.log(`     ${steps} steps; ${text}`);
      assert(pairs === 8 * steps, `${pairs} pairs counted after ${steps} steps of 8`);
      assert(Math.abs(counts.is_next_percent - 50) < 10, `IsNext ${counts.is_next_percent}% of ${pairs} pairs`);
      assert(Math.abs(counts.chosen_percent - 15) < 3, `chosen ${counts.chosen_percent}%`);
      assert(Math.abs(counts.masked_percent - 80) < 8 && counts.random_percent > 3 && counts.kept_percent > 3, text);
      assert(/chosen \d+\.\d% \(target 15%\)/.test(text) && text.includes('IsNext'), text);
      assert(problems.length === 0, problems.join('\n'));
      await context.close();
    },
  },
  {
    name: 'training: Fixed batch trains on one batch until the model predicts every chosen token of it',
    async run({ browser, baseUrl }) {
      const { page, context, problems } = await openPage(browser, baseUrl);
      await ready(page);
      await page.getByLabel('Fixed batch', { exact: true }).check();
      await page.getByRole('button', { name: 'Play', exact: true }).click();
      const same = (e) => JSON.stringify(e.map((x) => [x.tokens, x.chosen]));
      await page.waitForFunction(() => Number(document.querySelector('[data-batch]')?.dataset.batchStep) >= 2, null, { timeout: 20000 });
      const first = same(await batchOf(page));
      // Memorised: the MLM prediction at every chosen position is the original token.
      const learnt = await page.waitForFunction(() => {
        const examples = JSON.parse(document.querySelector('[data-batch]').dataset.batch);
        const right = examples.every((e) => e.chosen.every((p, i) => e.predicted[i] === e.original[p]));
        return right && Number(document.querySelector('[data-batch]').dataset.batchStep);
      }, null, { timeout: 180000, polling: 200 }).then((h) => h.jsonValue());
      await page.getByRole('button', { name: 'Pause', exact: true }).click();
      const examples = await batchOf(page);
      const summary = await page.locator('.batch-summary').innerText();
      console.log(`     MLM accuracy 1.0 on the fixed batch at step ${learnt}; "${summary}"`);
      assert(same(examples) === first, 'the fixed batch changed while training');
      assert(summary.includes('fixed batch'), summary);
      assert(problems.length === 0, problems.join('\n'));
      await page.evaluate(() => { localStorage.clear(); indexedDB.deleteDatabase('attention-lab'); });
      await context.close();
    },
  },
];

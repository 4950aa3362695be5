// A model from a web address (`checkpoint=`): a checkpoint the CLI saved, served from a second
// local server with CORS, opens as "Load checkpoint" opens the same files; `hf:ORG/NAME` opens
// from a local server laid out as the Hub; each way it can fail says why in one sentence and
// the page trains a fresh model; a second visit fetches no file again; an embed shows the
// model at step 0; "Prepare for a course" gives an archive whose folder opens beside the page.
// Every test name holds "checkpoint address": `node e2e/run.mjs "checkpoint address"`.
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { assert, serveDir, framesRendered } from '../harness.mjs';
import { modelServers, fileRequests, unzipStored, FILES } from '../checkpoints.mjs';

const dist = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'dist');
const FOLDER = '/courses/attention-lab/';
// A model downloaded, built and drawn on a busy 2-core machine.
const MODEL_MS = 90000;

const stop = (server) => new Promise((resolve) => { server.close(resolve); server.closeAllConnections(); });
const stepOf = (scope) => scope.evaluate(() => Number(document.querySelector('[data-step]')?.dataset.step));

/// A page of the app in `context`, recording page errors and console errors except the
/// browser's own lines about the failed requests a test makes on purpose.
async function open(context, url, problems) {
  const page = await context.newPage();
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => {
    const text = m.text();
    const expected = /Failed to load resource|CORS policy|net::ERR_|ERR_CONNECTION_REFUSED|blocked by CORS/.test(text);
    if (m.type() === 'error' && !expected) problems.push(`console error: ${text}`);
  });
  await page.goto(url);
  return page;
}

/// The first heatmap drawn (of the stepper's stage, `within` '.stage-panel '), nothing busy:
/// its `data-matrix`.
async function firstMatrix(scope, within = '') {
  const selector = `${within}figure.heatmap[data-matrix]`;
  await scope.waitForFunction((s) => document.querySelector(`${s} canvas`) && !document.querySelector('.busy'), selector, { timeout: MODEL_MS });
  return scope.evaluate((s) => document.querySelector(s).dataset.matrix, selector);
}

/// The stepper's stage's first heatmap: what an embed of the stage shows too.
const stageMatrix = (scope) => firstMatrix(scope, '.stage-panel ');

/// Play until the step counter moves `steps` on, then Pause; the step reached.
async function trains(page, steps) {
  const from = await stepOf(page);
  await page.getByRole('button', { name: 'Play', exact: true }).click();
  await page.waitForFunction((n) => Number(document.querySelector('[data-step]')?.dataset.step) >= n, from + steps, { timeout: MODEL_MS });
  await page.getByRole('button', { name: 'Pause', exact: true }).click();
  await page.waitForFunction(() => document.querySelector('button.play')?.disabled === false, null, { timeout: 10000 });
  return stepOf(page);
}

const withCheckpoint = (app, value) => `${app}?checkpoint=${encodeURIComponent(value)}`;

/// The app served in FOLDER, the model servers (`modelServers(options)`), a 1280 × 800 context
/// and a list of problems, for `body({ url, models, context, problems })`; after it, no
/// problem may have been recorded, and everything closes however the body ended.
async function withModelServers(browser, options, body) {
  const app = await serveDir(dist, 0, FOLDER);
  const models = await modelServers(options);
  const url = `http://127.0.0.1:${app.address().port}${FOLDER}`;
  const problems = [];
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  try {
    await body({ url, models, context, problems });
    assert(problems.length === 0, problems.join('\n'));
  } finally {
    await context.close();
    await models.stop();
    await stop(app);
  }
}

export const tests = [
  {
    name: 'checkpoint address: a CLI checkpoint served with CORS opens through checkpoint=, its first heatmap as Load checkpoint gives it; the address and Copy link keep it; a second visit fetches no file again',
    async run({ browser, artifacts }) {
      await withModelServers(browser, {}, async ({ url, models, context, problems }) => {
        const address = `${models.site.url}/cli/`;
        const page = await open(context, withCheckpoint(url, address), problems);
        const opened = await firstMatrix(page);
        const first = fileRequests(models.site);
        assert(first.GET === FILES.length, `the first visit asked for ${first.GET} files: ${JSON.stringify(first.seen)}`);
        const shown = await page.evaluate(() => ({
          name: document.querySelector('header .model-name')?.textContent,
          link: document.querySelector('button.copy-link')?.dataset.link,
          embed: document.querySelector('button.copy-embed')?.dataset.embedCode,
          step: Number(document.querySelector('[data-step]')?.dataset.step),
          address: location.href,
        }));
        assert(shown.name === address, `the header names ${shown.name}`);
        assert(shown.step === 0, `step ${shown.step}`);
        const value = `checkpoint=${address}`;
        assert(decodeURIComponent(shown.address).includes(value), `the address bar: ${shown.address}`);
        assert(decodeURIComponent(shown.link).includes(value), `Copy link: ${shown.link}`);
        assert(shown.embed.includes(value), `Copy embed code: ${shown.embed}`);
        await page.close();

        // The next visit: the files come from this browser's copy, each checked with a HEAD.
        const from = models.site.log.length;
        const again = await open(context, withCheckpoint(url, address), problems);
        const reopened = await firstMatrix(again);
        const second = fileRequests(models.site, from);
        assert(second.GET === 0, `the second visit downloaded ${second.GET} files again: ${JSON.stringify(second.seen)}`);
        assert(reopened === opened, 'the second visit shows another first heatmap');
        // It trains on, as a loaded checkpoint does.
        const step = await trains(again, 10);
        assert(step >= 10, `step ${step}`);
        await again.close();

        // The same files through Load checkpoint, in a browser that kept nothing.
        const fresh = await browser.newContext({ viewport: { width: 1280, height: 800 } });
        try {
          const loader = await open(fresh, url, problems);
          await firstMatrix(loader);
          // The fresh model's name, read before the files go in: they may load before a read after.
          const freshName = await loader.locator('header .model-name').textContent();
          await loader.locator('.load-checkpoint input[type=file]').setInputFiles(FILES.map((f) => path.join(models.dir, f)));
          await loader.waitForFunction((n) => document.querySelector('header .model-name')?.textContent !== n && !document.querySelector('.busy'),
            freshName, { timeout: MODEL_MS });
          await framesRendered(loader);
          const loaded = await firstMatrix(loader);
          assert(loaded === opened, `Load checkpoint's first heatmap differs:\n${loaded.slice(0, 200)}\n${opened.slice(0, 200)}`);
        } finally {
          await fresh.close();
        }
        fs.writeFileSync(path.join(artifacts, 'checkpoint-address-requests.json'), JSON.stringify({ first: first.seen, second: second.seen }, null, 1));
      });
    },
  },
  {
    name: 'checkpoint address: hf:ORG/NAME opens from a local server laid out as the Hub (the Hub\'s address set by ?test-hooks)',
    async run({ browser }) {
      const minilm = process.env.MINILM_DIR && fs.existsSync(path.join(process.env.MINILM_DIR, 'model.safetensors')) ? process.env.MINILM_DIR : null;
      await withModelServers(browser, { minilm }, async ({ url, models, context, problems }) => {
        await context.addInitScript((hub) => localStorage.setItem('attention-lab/test-hub', hub), models.hub.url);
        const page = await open(context, `${url}?test-hooks&checkpoint=hf:attention-lab/tiny`, problems);
        await firstMatrix(page);
        const name = await page.locator('header .model-name').textContent();
        assert(name === 'hf:attention-lab/tiny', `the header names ${name}`);
        const asked = fileRequests(models.hub).seen.map((r) => r.path);
        assert(asked.includes('/attention-lab/tiny/resolve/main/model.safetensors'), `the Hub was asked for ${asked.join(', ')}`);
        if (minilm) {
          // A public BERT without pre-training heads: opened for inspection, 6 layers × 12 heads.
          await page.goto(`${url}?test-hooks&checkpoint=hf:sentence-transformers/all-MiniLM-L6-v2`);
          await page.waitForFunction(() => document.querySelectorAll('.model-view .thumb').length === 72, null, { timeout: MODEL_MS });
          const facts = await page.locator('header .model-facts').innerText();
          assert(facts.startsWith('6 layers × 12 heads'), facts);
        }
      });
    },
  },
  {
    name: 'checkpoint address: every failure says why in one sentence (404, CORS, not a BERT, truncated, corrupt, no network, a bad address, a large model declined or cancelled), and the page trains a fresh model',
    async run({ browser, artifacts }) {
      await withModelServers(browser, {}, async ({ url, models, context, problems }) => {
        await context.addInitScript((hub) => localStorage.setItem('attention-lab/test-hub', hub), models.hub.url);
        const cases = [
          ['404', `${models.site.url}/missing/`, /^There is no config\.json at .*\/missing\/ \(the server answered 404\)/],
          ['hub-401', 'hf:nobody/nothing', /^The Hub has no public model nobody\/nothing \(it answered 401/],
          ['cors', `${models.closed.url}/cli/`, /does not allow this page to read its files \(CORS\): download .* Load checkpoint instead\.$/],
          ['not-bert', 'hf:openai-community/gpt2', /^hf:openai-community\/gpt2 is a gpt2 model \(model_type "gpt2"\), not a BERT/],
          ['truncated', `${models.site.url}/truncated/`, /model\.safetensors of .* is truncated: it holds \d+ bytes of the \d+ its header describes\.$/],
          ['corrupt', `${models.site.url}/corrupt/`, /model\.safetensors of .* is not a safetensors file/],
          ['no-network', `${models.offline}/cli/`, /^Could not reach http:\/\/127\.0\.0\.1:\d+: there is no network, or the server is not answering\.$/],
          ['policy', 'http://example.org/models/', /only over https, and http:\/\/example\.org is plain http/],
        ];
        for (const [what, value, says] of cases) {
          const page = await open(context, `${url}?test-hooks&checkpoint=${encodeURIComponent(value)}`, problems);
          const failure = page.locator('[data-checkpoint-failure]');
          await failure.waitFor({ timeout: MODEL_MS });
          const sentence = await failure.textContent();
          assert(says.test(sentence), `${what}: "${sentence}"`);
          await firstMatrix(page);
          const address = await page.evaluate(() => location.search);
          assert(!address.includes('checkpoint='), `${what}: the address still asks for the model: ${address}`);
          if (what === 'cors') {
            await page.screenshot({ path: path.join(artifacts, 'checkpoint-failure-1280.png') });
            await page.setViewportSize({ width: 390, height: 844 });
            await framesRendered(page);
            await page.screenshot({ path: path.join(artifacts, 'checkpoint-failure-390.png') });
            await page.setViewportSize({ width: 1280, height: 800 });
          }
          const step = await trains(page, 5);
          assert(step >= 5, `${what}: the fresh model stopped at step ${step}`);
          await page.close();
        }

        // Values a link should never hold: a notice, and the page goes on as without them.
        for (const bad of ['', `${'x'.repeat(3000)}`, 'hf:%ZZ', 'hf:%F0%9F%90%B1/x', 'javascript:alert(1)', 'models%2F..%5C..%5C']) {
          const page = await open(context, `${url}?checkpoint=${bad}`, problems);
          await firstMatrix(page);
          const notice = await page.locator('[data-link-notice]').textContent();
          assert(/Checkpoint: .*, so the default applies\./.test(notice), `checkpoint=${bad.slice(0, 20)}: ${notice}`);
          assert(await page.locator('[data-checkpoint-failure]').count() === 0, `checkpoint=${bad.slice(0, 20)} was fetched`);
          await page.close();
        }
        // An emoji is a folder's name like any other: asked for beside the page, and not there.
        const emoji = await open(context, `${url}?checkpoint=%F0%9F%90%B1/`, problems);
        const missing = await emoji.locator('[data-checkpoint-failure]').textContent();
        assert(missing.startsWith('There is no config.json at 🐱/ (the server answered 404)'), missing);
        await firstMatrix(emoji);
        await emoji.close();

        // A model over 100 MB asks first, giving its size; "Not now" keeps a fresh model.
        const big = withCheckpoint(url, `${models.site.url}/big/`);
        let page = await open(context, big, problems);
        const asking = page.locator('[data-checkpoint="asking"]');
        await asking.waitFor({ timeout: MODEL_MS });
        const question = await asking.textContent();
        assert(question.includes('weights of 150 MB. Download them?'), question);
        await page.getByRole('button', { name: 'Not now' }).click();
        const declined = await page.locator('[data-checkpoint-failure]').textContent();
        assert(declined.includes('is 150 MB, and you chose not to'), declined);
        await firstMatrix(page);
        await page.close();

        // Yes: a progress bar with bytes, then Cancel.
        for (const width of [1280, 390]) {
          page = await open(context, big, problems);
          await page.setViewportSize({ width, height: width > 500 ? 800 : 844 });
          await page.getByRole('button', { name: 'Download 150 MB' }).click({ timeout: MODEL_MS });
          await page.waitForFunction(() => Number(document.querySelector('[data-checkpoint="downloading"] .bytes')?.dataset.done) > 5e6, null, { timeout: MODEL_MS });
          const bar = await page.evaluate(() => {
            const p = document.querySelector('[data-checkpoint="downloading"] progress');
            return { max: p.max, value: p.value, text: document.querySelector('[data-checkpoint="downloading"]').textContent };
          });
          assert(bar.max === 150e6 && bar.value > 5e6, JSON.stringify(bar));
          assert(/model\.safetensors \(file 4 of 4\), \d+ MB of 150 MB/.test(bar.text), bar.text);
          await page.screenshot({ path: path.join(artifacts, `checkpoint-progress-${width}.png`) });
          await page.getByRole('button', { name: 'Cancel', exact: true }).click();
          const cancelled = await page.locator('[data-checkpoint-failure]').textContent();
          assert(cancelled === 'The download was cancelled.', cancelled);
          await firstMatrix(page);
          assert(await trains(page, 3) >= 3, 'no training after Cancel');
          await page.close();
        }
      });
    },
  },
  {
    name: 'checkpoint address: an embed with checkpoint= shows the trained model\'s figure at once, with no step taken, in a course page on another origin',
    async run({ browser, artifacts }) {
      await withModelServers(browser, {}, async ({ url, models, context, problems }) => {
        const page = await open(context, `${withCheckpoint(url, `${models.site.url}/cli/`)}&stage=softmax&layer=2`, problems);
        const whole = await stageMatrix(page);
        const code = await page.locator('button.copy-embed').getAttribute('data-embed-code');
        assert(code.includes(`checkpoint=${models.site.url}/cli/`), code);
        // A course page on an origin of its own.
        const host = http.createServer((req, res) => {
          res.writeHead(200, { 'content-type': 'text/html' });
          res.end(`<!doctype html><meta charset="utf-8"><title>Week 4</title><h1>Week 4: a trained model</h1>${code}`);
        });
        await new Promise((r) => host.listen(0, '127.0.0.1', r));
        const viewer = await browser.newContext({ viewport: { width: 900, height: 900 } });
        try {
          const coursePage = await viewer.newPage();
          coursePage.on('pageerror', (e) => problems.push(`course page error: ${e.message}`));
          await coursePage.goto(`http://127.0.0.1:${host.address().port}/`);
          const frame = await (await coursePage.waitForSelector('iframe')).contentFrame();
          const shown = await stageMatrix(frame);
          const step = await stepOf(frame);
          assert(step === 0, `the embed is at step ${step}`);
          const caption = await frame.locator('figure.heatmap figcaption').first().textContent();
          assert(caption.startsWith('Layer 2'), caption);
          assert(shown === whole, 'the embed shows another figure than the whole page');
          await coursePage.screenshot({ path: path.join(artifacts, 'checkpoint-embed.png'), fullPage: true });
        } finally {
          await viewer.close();
          await stop(host);
        }
      });
    },
  },
  {
    name: 'checkpoint address: "Prepare for a course" gives a zip of the model\'s folder and a README whose iframe opens it beside the page, at its step, untrained',
    async run({ browser, artifacts }) {
      // The course site: Attention Lab in attention-lab/, the course page beside it.
      const site = fs.mkdtempSync(path.join(os.tmpdir(), 'course-site-'));
      fs.symlinkSync(dist, path.join(site, 'attention-lab'));
      const server = await serveDir(site);
      const app = `http://127.0.0.1:${server.address().port}/attention-lab/`;
      const problems = [];
      const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, acceptDownloads: true });
      try {
        const page = await open(context, `${app}?stage=softmax`, problems);
        await firstMatrix(page);
        const step = await trains(page, 40);
        await page.getByRole('combobox', { name: 'Embed' }).selectOption('');
        const [download] = await Promise.all([
          page.waitForEvent('download', { timeout: MODEL_MS }),
          page.getByRole('button', { name: 'Prepare for a course', exact: true }).click(),
        ]);
        const zip = path.join(site, download.suggestedFilename());
        await download.saveAs(zip);
        // The figure at the step packed: the worker sent it before the files.
        const trained = await stageMatrix(page);
        const said = await page.locator('[data-course-said]').getAttribute('data-course-said');
        const entries = unzipStored(fs.readFileSync(zip));
        const folder = entries[0].name;
        assert(folder.endsWith(`-step${step}/`), `the archive's folder: ${folder}`);
        const names = entries.map((e) => e.name);
        for (const f of ['config.json', 'model.safetensors', 'vocab.txt', 'tokenizer_config.json']) {
          assert(names.includes(`${folder}${f}`), `${f} is not in ${names.join(', ')}`);
        }
        assert(said.includes(download.suggestedFilename()), said);
        // The button and what it said, beside "Copy embed code", on a wide screen and a phone.
        for (const width of [1280, 390]) {
          await page.setViewportSize({ width, height: width > 500 ? 800 : 844 });
          await framesRendered(page);
          await page.screenshot({ path: path.join(artifacts, `course-prepared-${width}.png`) });
        }
        await page.setViewportSize({ width: 1280, height: 800 });
        for (const e of entries) {
          const to = path.join(site, e.name);
          if (e.name.endsWith('/')) fs.mkdirSync(to, { recursive: true });
          else fs.writeFileSync(to, e.bytes);
        }
        const readme = fs.readFileSync(path.join(site, 'README.txt'), 'utf8');
        const iframe = readme.match(/<iframe[^\n]*<\/iframe>\n<script>[^\n]*<\/script>/)?.[0];
        assert(iframe && iframe.includes(`checkpoint=../${folder}`), readme);
        fs.writeFileSync(path.join(site, 'week-4.html'), `<!doctype html><meta charset="utf-8"><title>Week 4</title><h1>Week 4</h1>${iframe}`);
        fs.copyFileSync(zip, path.join(artifacts, 'course-archive.zip'));
        fs.writeFileSync(path.join(artifacts, 'course-README.txt'), readme);

        // A student: another browser, nothing kept, the course page on the site.
        const student = await browser.newContext({ viewport: { width: 1000, height: 900 } });
        try {
          const course = await student.newPage();
          course.on('pageerror', (e) => problems.push(`course page error: ${e.message}`));
          await course.goto(`http://127.0.0.1:${server.address().port}/week-4.html`);
          const frame = await (await course.waitForSelector('iframe')).contentFrame();
          const shown = await stageMatrix(frame);
          assert(await stepOf(frame) === 0, 'the student\'s embed has trained');
          assert(shown === trained, 'the student sees another figure than the teacher trained');
          await course.screenshot({ path: path.join(artifacts, 'course-embed.png'), fullPage: true });
        } finally {
          await student.close();
        }
        assert(problems.length === 0, problems.join('\n'));
      } finally {
        await context.close();
        await stop(server);
      }
    },
  },
];

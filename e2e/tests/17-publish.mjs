// Publishing (README: Publish): the release dist/ copied unchanged into a sub-folder of a plain
// static server works there, online and then offline, and asks for nothing outside its folder;
// an embed link (`&embed`, from the page's own "Copy embed code") shows one view in an iframe
// of a course page on another origin, at 320 and 800 px, and opens the whole page in the same
// state. Every test name holds "publish": `node e2e/run.mjs publish` runs them all.
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { serveDir, assert, inkFraction } from '../harness.mjs';

const dist = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'dist');
const FOLDER = '/courses/attention-lab/';
// Building and training a model on a busy 2-core machine.
const MODEL_MS = 90000;

const stop = (server) => new Promise((resolve) => { server.close(resolve); server.closeAllConnections(); });
const stepOf = (scope) => scope.evaluate(() => Number(document.querySelector('[data-step]')?.dataset.step));

/// The first heatmap on screen has ink, and nothing is busy or broken.
async function drawn(scope) {
  await scope.waitForFunction(() => document.querySelector('figure.heatmap canvas') && !document.querySelector('.busy'), null, { timeout: MODEL_MS });
  const canvas = scope.locator('figure.heatmap canvas').first();
  // The figures are drawn in tasks of their own after they appear (src/paint.rs): poll.
  let ink = 0;
  for (let i = 0; i < 100 && ink === 0; i++) {
    ink = await inkFraction(canvas);
    if (ink === 0) await scope.waitForFunction(() => new Promise((r) => requestAnimationFrame(() => r(true))));
  }
  assert(ink > 0.05, `the first heatmap has ink on ${(ink * 100).toFixed(1)}% of its pixels`);
  const failed = await scope.locator('.crashed, .boot-failed').allInnerTexts();
  assert(failed.length === 0, failed.join('\n'));
}

/// Play until the step counter has moved `steps` on, then Pause.
async function trains(scope, steps) {
  const from = await stepOf(scope);
  await scope.getByRole('button', { name: 'Play', exact: true }).click();
  await scope.waitForFunction((n) => Number(document.querySelector('[data-step]')?.dataset.step) >= n, from + steps, { timeout: MODEL_MS });
  await scope.getByRole('button', { name: 'Pause', exact: true }).click();
}

/// Serves `html` at "/" on loopback: a course page on an origin of its own.
function serveHost(html) {
  const server = http.createServer((req, res) => {
    res.writeHead(req.url === '/' ? 200 : 404, { 'content-type': 'text/html' });
    res.end(req.url === '/' ? html : 'not found');
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

/// The query's parts, in any order.
const queryParts = (href) => new URL(href).search.replace(/^\?/, '').split('&').filter(Boolean).sort();

export const tests = [
  {
    name: 'publish: the release dist works from a sub-folder of a plain static server, online, after a reload and offline, asking for nothing outside its folder',
    async run({ browser, artifacts }) {
      let server = await serveDir(dist, 0, FOLDER);
      const { port } = server.address();
      const url = `http://127.0.0.1:${port}${FOLDER}`;
      const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      const page = await context.newPage();
      const problems = [];
      const requests = [];
      page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
      page.on('console', (m) => { if (m.type() === 'error') problems.push(`console error: ${m.text()}`); });
      // The workers' and the service worker's requests too.
      context.on('request', (r) => requests.push(r.url()));
      context.on('response', (r) => { if (r.status() >= 400) problems.push(`${r.status()} for ${r.url()}`); });
      try {
        await page.goto(url);
        await drawn(page);
        await trains(page, 30);
        const scope = await page.evaluate(() => navigator.serviceWorker.ready.then((r) => r.scope));
        assert(scope === url, `the service worker's scope is ${scope}, not the folder ${url}`);

        await page.reload();
        await drawn(page);
        await page.screenshot({ path: path.join(artifacts, 'publish-subfolder.png') });

        assert(problems.length === 0, problems.join('\n'));

        // Offline: the server is stopped, its connections closed.
        await stop(server);
        const offline = await page.evaluate(() => fetch('./no-such-file').then(() => 'answered', () => 'no network'));
        assert(offline === 'no network', `the network is still on: ${offline}`);
        // That failed fetch is the only console error it leaves.
        problems.length = 0;
        await page.reload();
        await drawn(page);
        await trains(page, 10);

        const outside = requests.filter((r) => {
          const u = new URL(r);
          return u.protocol.startsWith('http') && (u.origin !== new URL(url).origin || !u.pathname.startsWith(FOLDER));
        });
        assert(outside.length === 0, `requests outside ${FOLDER}: ${[...new Set(outside)].join(', ')}`);
        const notFound = server.log.filter((r) => r.status >= 400);
        assert(notFound.length === 0, `the server answered ${notFound.map((r) => `${r.status} for ${r.path}`).join(', ')}`);
        assert(server.log.length > 5, `the server saw ${server.log.length} requests`);
        assert(problems.length === 0, problems.join('\n'));
      } finally {
        await context.close();
        if (server.listening) await stop(server);
      }
    },
  },
  {
    name: 'publish: "Copy embed code" puts one view in an iframe of a course page, at 320 and 800 px: it draws, Play trains, nothing scrolls sideways, and "Open in Attention Lab" opens the whole page in the same state',
    async run({ browser, artifacts }) {
      const server = await serveDir(dist, 0, FOLDER);
      const app = `http://127.0.0.1:${server.address().port}${FOLDER}`;
      const hosts = [];
      // One context: the whole page and the embeds share this browser's kept model.
      const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      const problems = [];
      try {
        // The whole page, on the view to embed: softmax weights of layer 2, head 3.
        const page = await context.newPage();
        page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
        await page.goto(`${app}?stage=softmax&layer=2&head=3&sentence=${encodeURIComponent('the cat sat on the mat')}`);
        await drawn(page);
        const codeFor = async (choice) => {
          await page.getByRole('combobox', { name: 'Embed' }).selectOption(choice);
          return page.locator('button.copy-embed').getAttribute('data-embed-code');
        };
        const code = await codeFor('');
        assert(/^<iframe data-attention-lab src="[^"]+" title="Attention Lab: this stage's figures"/.test(code), code);
        const src = code.match(/src="([^"]+)"/)[1].replaceAll('&amp;', '&');
        assert(queryParts(src).includes('embed') && queryParts(src).includes('stage=softmax'), src);
        await page.getByRole('button', { name: 'Copy embed code' }).click();

        for (const width of [320, 800]) {
          const host = await serveHost(`<!doctype html><html><head><meta charset="utf-8"><title>Course</title></head>
            <body style="margin:0"><h1>Week 3: attention</h1><div style="width:${width}px">${code.replace('width="100%"', `width="${width}"`)}</div></body></html>`);
          hosts.push(host);
          const course = await context.newPage();
          course.on('pageerror', (e) => problems.push(`course page error: ${e.message}`));
          await course.setViewportSize({ width: Math.max(width, 360), height: 900 });
          await course.goto(`http://127.0.0.1:${host.address().port}/`);
          const frame = await (await course.waitForSelector('iframe')).contentFrame();
          await drawn(frame);
          // Only the stage's figures: no training panel, no model view, no tour, no claims.
          const shown = await frame.evaluate(() => ({
            embed: document.querySelector('.embed')?.dataset.embed,
            stepper: !!document.querySelector('.stepper'),
            current: document.querySelector('.stepper .step.current')?.dataset.stage,
            captions: [...document.querySelectorAll('figure.heatmap figcaption')].map((c) => c.textContent),
            others: ['aside.training', '.model-view', 'aside.tour', 'section.claims', 'header'].filter((s) => document.querySelector(s)),
            width: document.documentElement.clientWidth,
          }));
          assert(shown.embed === '' && shown.stepper, JSON.stringify(shown));
          assert(shown.others.length === 0, `the embed shows ${shown.others.join(', ')}`);
          assert(shown.captions.some((c) => c.startsWith('Layer 2 · Head 3 · ')), JSON.stringify(shown.captions));
          assert(shown.width === width, `the frame is ${shown.width} px wide`);
          await trains(frame, 20);
          // The stepper works in the frame.
          await frame.getByRole('button', { name: 'Next', exact: true }).click();
          await frame.waitForFunction((was) => document.querySelector('.stepper .step.current')?.dataset.stage !== was, shown.current);
          await frame.getByRole('button', { name: 'Previous', exact: true }).click();
          await frame.waitForFunction((was) => document.querySelector('.stepper .step.current')?.dataset.stage === was, shown.current);
          const sideways = await frame.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
          assert(sideways <= 0, `at ${width} px the embed scrolls ${sideways} px sideways`);
          // The embed code's script sizes the frame to the height the embed posts: the course
          // page scrolls, the frame does not.
          const body = await frame.evaluate(() => document.body.offsetHeight);
          await course.waitForFunction((h) => Number(document.querySelector('iframe').height) === h, body, { timeout: 10000 });
          const inner = await frame.evaluate(() => document.documentElement.scrollHeight - document.documentElement.clientHeight);
          assert(inner <= 0, `at ${width} px the frame scrolls ${inner} px of its own`);
          await course.screenshot({ path: path.join(artifacts, `publish-embed-${width}.png`), fullPage: true });

          // The whole page, in a new tab, on the same view.
          const link = frame.getByRole('link', { name: 'Open in Attention Lab' });
          const href = await link.getAttribute('href');
          const [full] = await Promise.all([context.waitForEvent('page'), link.click()]);
          await full.waitForLoadState();
          await drawn(full);
          assert(!queryParts(full.url()).some((p) => p.startsWith('embed')), full.url());
          const fullView = await full.evaluate(() => ({
            current: document.querySelector('.stepper .step.current')?.dataset.stage,
            caption: document.querySelector('.explorer .model-column .figures figure figcaption')?.textContent,
            sentence: [...document.querySelectorAll('.probe-form label')].find((l) => l.querySelector('.field-label')?.textContent === 'Sentence')?.querySelector('input, textarea, select')?.value,
            link: document.querySelector('button.copy-link')?.dataset.link,
          }));
          assert(fullView.current === shown.current, `the whole page is at ${fullView.current}, the embed at ${shown.current}`);
          assert(fullView.caption?.startsWith('Layer 2 · Head 3 · '), fullView.caption);
          assert(fullView.sentence === 'the cat sat on the mat', fullView.sentence);
          assert(JSON.stringify(queryParts(fullView.link)) === JSON.stringify(queryParts(href)), `${fullView.link} against ${href}`);
          await full.close();
          await course.close();
        }

        // The model view and one claim, each alone.
        for (const [choice, selector] of [['model', '.model-view'], ['kv-cache', 'article.claim']]) {
          const embedCode = await codeFor(choice);
          const embedSrc = embedCode.match(/src="([^"]+)"/)[1].replaceAll('&amp;', '&');
          const view = await context.newPage();
          await view.setViewportSize({ width: 320, height: 800 });
          await view.goto(embedSrc);
          await view.waitForSelector(selector, { timeout: MODEL_MS });
          const count = await view.locator(`${selector}`).count();
          assert(count === 1, `${choice}: ${count} × ${selector}`);
          assert(await view.locator('aside.training, .stepper, header').count() === 0, `${choice} shows more than its view`);
          if (choice === 'kv-cache') {
            await view.getByRole('button', { name: 'Run', exact: true }).click();
            await view.waitForSelector('article.claim[data-state="done"] figure.claim-chart[data-series]', { timeout: MODEL_MS });
          } else {
            await drawn(view);
          }
          const sideways = await view.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
          assert(sideways <= 0, `${choice} at 320 px scrolls ${sideways} px sideways`);
          await view.screenshot({ path: path.join(artifacts, `publish-embed-${choice}-320.png`), fullPage: true });
          await view.close();
        }
        assert(problems.length === 0, problems.join('\n'));
      } finally {
        await context.close();
        await stop(server);
        for (const h of hosts) await stop(h);
      }
    },
  },
];

// A small end-to-end harness: serves dist/ on loopback, drives Debian's Chromium through
// playwright-core, and counts passes and failures. No browser download, no network.
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.wasm': 'application/wasm', '.css': 'text/css',
  '.png': 'image/png', '.svg': 'image/svg+xml', '.json': 'application/json', '.txt': 'text/plain' };

/// Serves `dir` on loopback, on `port` (default: any free one), as a plain static host does:
/// at `base`, "/" or a folder such as "/courses/attention-lab/" (anything outside it answers
/// 404, as on a host where the app is one folder among many), a folder's address without its
/// slash redirected to it, and no header but the content type. `server.log` lists every
/// request as { path, search, status }. `extras` serves more files inside `base`, by their
/// path there (a test's own script, which the page's policy lets load only from its origin).
export function serveDir(dir, port = 0, base = '/', extras = {}) {
  const log = [];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    const answer = (status, headers = {}, body = '') => {
      log.push({ path: url.pathname, search: url.search, status });
      res.writeHead(status, headers);
      res.end(body);
    };
    if (`${url.pathname}/` === base) { answer(301, { location: base + url.search }); return; }
    if (!url.pathname.startsWith(base)) { answer(404, {}, 'not found'); return; }
    const relative = decodeURIComponent(url.pathname.slice(base.length));
    let file = extras[relative] ?? path.join(dir, relative);
    if (!extras[relative] && !file.startsWith(dir)) { answer(403); return; }
    if (fs.existsSync(file) && fs.statSync(file).isDirectory()) {
      if (!url.pathname.endsWith('/')) { answer(301, { location: `${url.pathname}/${url.search}` }); return; }
      file = path.join(file, 'index.html');
    }
    fs.readFile(file, (err, body) => {
      if (err) { answer(404, {}, 'not found'); return; }
      answer(200, { 'content-type': TYPES[path.extname(file)] || 'application/octet-stream' }, body);
    });
  });
  server.log = log;
  return new Promise((resolve) => server.listen(port, '127.0.0.1', () => resolve(server)));
}

export async function launch() {
  return chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
  });
}

/// A fresh page that records console errors, page errors, Content-Security-Policy violations
/// (as problems) and every request it makes. `url` may add a query to the app's address.
export async function openPage(browser, url, viewport = { width: 1280, height: 800 }) {
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  const problems = [];
  const requests = [];
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`console error: ${m.text()}`); });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('request', (r) => requests.push(r.url()));
  await page.exposeFunction('__reportCspViolation', (v) => problems.push(`CSP violation: ${v}`));
  await page.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (e) =>
      window.__reportCspViolation(`${e.violatedDirective} blocked ${e.blockedURI || 'inline'} (${e.sourceFile}:${e.lineNumber})`));
  });
  await page.goto(url);
  return { page, context, problems, requests };
}

/// Requests that left the page's own origin (the app must make none).
export function foreignRequests(requests, url) {
  const origin = new URL(url).origin;
  return requests.filter((u) => new URL(u).origin !== origin);
}

export function assert(cond, message) {
  if (!cond) throw new Error(message);
}

/// Fraction of a canvas's pixels that are not the background (white or transparent).
export async function inkFraction(locator) {
  return locator.evaluate((canvas) => {
    const { width, height } = canvas;
    if (!width || !height) return 0;
    const data = canvas.getContext('2d').getImageData(0, 0, width, height).data;
    let ink = 0;
    for (let i = 0; i < data.length; i += 4) {
      const white = data[i] > 250 && data[i + 1] > 250 && data[i + 2] > 250;
      if (data[i + 3] > 0 && !white) ink++;
    }
    return ink / (width * height);
  });
}

// The app's `?bench` page served by `server`, in a fresh context: engine::workload's median
// training step in ms per preset, timed in the worker.
export async function benchStepMs(browser, server) {
  const page = await (await browser.newContext()).newPage();
  await page.goto(`http://127.0.0.1:${server.address().port}/?bench`);
  await page.waitForSelector('#bench[data-done="true"]', { timeout: 600000 });
  const result = JSON.parse(await page.locator('#bench').innerText());
  await page.context().close();
  return result;
}

// Waiting for events, never for time: each wait below ends on something the page did, and its
// timeout is only a watchdog.

/// Waits until the page is ready to use: a heatmap drawn (`figure`: the canvas of any heatmap,
/// unless a test needs a particular one) and the worker busy with nothing, both at once.
export async function ready(page, { figure = 'figure.heatmap canvas', timeout = 30000 } = {}) {
  await page.waitForFunction((f) => document.querySelector(f) && !document.querySelector('.busy'), figure, { timeout })
    .catch(async () => {
      const busy = await page.locator('.busy').allInnerTexts();
      throw new Error(`the page is not ready: ${await page.locator(figure).count()} of ${figure}; busy: ${busy.join(' | ') || 'no'}`);
    });
}

/// A fresh page at `url` (`openPage`), once it is `ready`.
export async function openReady(browser, url, viewport) {
  const opened = await openPage(browser, url, viewport);
  await ready(opened.page);
  return opened;
}

/// The training step the page shows.
export async function stepOf(page) {
  return Number(await page.locator('[data-step]').first().getAttribute('data-step'));
}

/// Waits until the page shows step `n` or later.
export async function untilStep(page, n, timeout = 30000) {
  await page.waitForFunction((at) => Number(document.querySelector('[data-step]')?.dataset.step) >= at, n, { timeout });
}

/// Presses Pause and waits until the trainer says it stopped (Play usable again). The worker
/// sends every step it took before that answer, so the step shown is then the last. Returns it.
export async function pause(page) {
  await page.getByRole('button', { name: 'Pause', exact: true }).click();
  await page.waitForFunction(() => document.querySelector('button.play')?.disabled === false, null, { timeout: 10000 });
  return stepOf(page);
}

/// Calls `read` until `done(value)` holds, and returns that value; throws `what` (given the last
/// value) after `timeout` ms. For state no DOM event announces, or read by a function of the
/// harness that runs in the page (`keptInPage`). The pause between reads only spaces them out:
/// the result is decided by `done`.
export async function poll(read, done, what, timeout = 30000) {
  const deadline = Date.now() + timeout;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(what(value));
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/// What the page says is kept in this browser: the step and name of the model and the step of
/// its curves' last point, -1 (and no name) when nothing was kept since the page loaded. The
/// page says it on its root element (`data-kept`, live.rs `say_kept`) once the worker has kept
/// the model and the page its curves, so a reload brings both back. `keptInPage` runs in the
/// page (also serialised by e2e/engines/suite.mjs); `keptSteps` calls it.
export function keptInPage() {
  const kept = JSON.parse(document.documentElement.dataset.kept ?? 'null');
  return { model: kept?.step ?? -1, name: kept?.name ?? null, curves: kept?.curves ?? -1 };
}

export function keptSteps(page) {
  return page.evaluate(keptInPage);
}

/// Waits until the model at `step` is kept in the browser with its curves up to that step (the
/// worker keeps the model, then the page its curves), so that a reload brings both back. Step 0
/// has no curve point.
export async function waitKept(page, step, timeout = 30000) {
  const curves = step > 0 ? step : -1;
  await poll(() => keptSteps(page), (k) => k.model === step && k.curves === curves,
    (k) => `the model at step ${step} was not kept with its curves (kept: model ${k.model}, curves ${k.curves})`, timeout);
}

/// Waits until the page has rendered two more frames: whatever a resize or a new element set
/// off (ResizeObserver callbacks, the redraws they schedule) has then been laid out and painted.
export async function framesRendered(page) {
  await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(() => resolve()))));
}

/// axe-core's script, served to a page beside the app (`serveDir`'s extras) under this path.
export const AXE = { path: '__test/axe.min.js', file: fileURLToPath(new URL('../node_modules/axe-core/axe.min.js', import.meta.url)) };

/// The WCAG rule sets axe-core checks: 2.0, 2.1 and 2.2, levels A and AA.
export const WCAG = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa'];

/// Opens the PyTorch view of the stage on screen and waits for its code.
export async function openCode(page) {
  // Opened in one step in the page (its toggle event fetches the code), not read and then clicked.
  await page.locator('details.pytorch').first().evaluate((d) => { d.open = true; });
  await page.waitForSelector('pre[data-code="pytorch"]', { timeout: 30000 });
}

// A small end-to-end harness: serves dist/ on loopback, drives Debian's Chromium through
// playwright-core, and counts passes and failures. No browser download, no network.
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { chromium } from 'playwright-core';

const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.wasm': 'application/wasm', '.css': 'text/css',
  '.png': 'image/png', '.svg': 'image/svg+xml', '.json': 'application/json', '.txt': 'text/plain' };

/// Serves `dir` on loopback, on `port` (default: any free one), as a plain static host does:
/// at `base`, "/" or a folder such as "/courses/attention-lab/" (anything outside it answers
/// 404, as on a host where the app is one folder among many), a folder's address without its
/// slash redirected to it, and no header but the content type. `server.log` lists every
/// request as { path, status }.
export function serveDir(dir, port = 0, base = '/') {
  const log = [];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    const answer = (status, headers = {}, body = '') => {
      log.push({ path: url.pathname, status });
      res.writeHead(status, headers);
      res.end(body);
    };
    if (`${url.pathname}/` === base) { answer(301, { location: base + url.search }); return; }
    if (!url.pathname.startsWith(base)) { answer(404, {}, 'not found'); return; }
    let file = path.join(dir, decodeURIComponent(url.pathname.slice(base.length - 1)));
    if (!file.startsWith(dir)) { answer(403); return; }
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

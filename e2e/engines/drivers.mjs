// Browsers other than Chromium, each from Debian and driven without any browser download:
// - Firefox ESR over WebDriver BiDi, through puppeteer-core;
// - WebKitGTK's MiniBrowser (the engine of Safari) over W3C WebDriver: plain HTTP calls to
//   WebKitWebDriver, run under xvfb-run because the MiniBrowser needs a display.
// Each gives the same small session: goto, run (a function evaluated in the page, which may
// return a promise), screenshot, resize, close. The suite (suite.mjs) is written against it.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';

const MINIBROWSER = '/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser';

/// Wraps `fn` (source of `(arg) => …`, sync or async) so that it runs in the page and its result
/// or its exception comes back as JSON.
const wrapped = (fn) => `(${fn})`;

export async function firefox() {
  const { default: puppeteer } = await import('puppeteer-core');
  const profile = fs.mkdtempSync('/tmp/attention-lab-firefox-');
  const browser = await puppeteer.launch({
    browser: 'firefox',
    executablePath: '/usr/bin/firefox-esr',
    headless: true,
    userDataDir: profile,
    // No update checks, telemetry or other traffic: the page's own origin is the only network.
    extraPrefsFirefox: {
      'app.update.enabled': false,
      'datareporting.policy.dataSubmissionEnabled': false,
      'browser.shell.checkDefaultBrowser': false,
      'network.captive-portal-service.enabled': false,
      // Several files downloaded at once: no dialog, no prompt.
      'browser.download.always_ask_before_handling_new_types': false,
      'browser.download.folderList': 2,
      'browser.download.dir': profile,
    },
  });
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 800 });
  return {
    name: 'Firefox',
    version: await browser.version(),
    async goto(url) { await page.goto(url, { waitUntil: 'load' }); },
    async reload() { await page.reload({ waitUntil: 'load' }); },
    async run(fn, arg) { return page.evaluate(`${wrapped(fn)}(${JSON.stringify(arg ?? null)})`); },
    async screenshot(file) { await page.screenshot({ path: file, fullPage: false }); },
    async resize(width, height) { await page.setViewport({ width, height }); },
    async close() { await browser.close(); fs.rmSync(profile, { recursive: true, force: true }); },
  };
}

const freePort = () => new Promise((resolve) => {
  const server = net.createServer().listen(0, '127.0.0.1', () => {
    const { port } = server.address();
    server.close(() => resolve(port));
  });
});

export async function webkit() {
  const port = await freePort();
  // -a: a free display number; the driver starts the MiniBrowser on it.
  const driver = spawn('xvfb-run', ['-a', '-s', '-screen 0 1400x1000x24', 'WebKitWebDriver', `--port=${port}`, '--host=127.0.0.1'],
    { stdio: ['ignore', 'ignore', 'pipe'], detached: true });
  let driverLog = '';
  driver.stderr.on('data', (d) => { driverLog += d; });
  const base = `http://127.0.0.1:${port}`;
  const call = async (method, path, body) => {
    const response = await fetch(`${base}${path}`, {
      method,
      headers: { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = await response.json();
    if (json.value && json.value.error) throw new Error(`WebKitWebDriver ${path}: ${json.value.error}: ${json.value.message}`);
    return json.value;
  };
  // The driver takes a moment to listen (bounded by count, not by the clock's verdict).
  let session;
  for (let attempt = 0; attempt < 100 && !session; attempt++) {
    try {
      session = await call('POST', '/session', {
        capabilities: {
          alwaysMatch: {
            browserName: 'MiniBrowser',
            'webkitgtk:browserOptions': { binary: MINIBROWSER, args: ['--automation'] },
          },
        },
      });
    } catch (e) {
      if (!/ECONNREFUSED|fetch failed/.test(String(e.cause || e))) throw e;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  if (!session) throw new Error(`WebKitWebDriver did not start: ${driverLog}`);
  const id = session.sessionId;
  const at = (path) => `/session/${id}${path}`;
  await call('POST', at('/timeouts'), { script: 300000, pageLoad: 60000 });
  await call('POST', at('/window/rect'), { width: 1280, height: 800 });
  return {
    name: 'WebKit',
    version: session.capabilities.browserVersion,
    /// What WebKitWebDriver and the MiniBrowser printed (a crashed web process says so here).
    log: () => driverLog,
    async goto(url) { await call('POST', at('/url'), { url }); },
    async reload() { await call('POST', at('/refresh'), {}); },
    async run(fn, arg) {
      // Execute async: the last argument is the callback that ends the script.
      const script = `const done = arguments[arguments.length - 1];
        Promise.resolve().then(() => ${wrapped(fn)}(arguments[0]))
          .then((value) => done({ value }), (e) => done({ error: String(e && e.stack || e) }));`;
      const out = await call('POST', at('/execute/async'), { script, args: [arg ?? null] });
      if (out && out.error) throw new Error(out.error);
      return out ? out.value : undefined;
    },
    async screenshot(file) { fs.writeFileSync(file, Buffer.from(await call('GET', at('/screenshot')), 'base64')); },
    async resize(width, height) { await call('POST', at('/window/rect'), { width, height }); },
    async close() {
      try { await call('DELETE', at('')); } catch { /* the browser may be gone already */ }
      try { process.kill(-driver.pid, 'SIGTERM'); } catch { /* already ended */ }
    },
  };
}

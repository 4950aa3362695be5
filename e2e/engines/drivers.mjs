// Browsers other than Chromium, each from Debian and driven without any browser download:
// - Firefox ESR over WebDriver BiDi, through puppeteer-core;
// - WebKitGTK's MiniBrowser (the engine of Safari) over W3C WebDriver: plain HTTP calls to
//   WebKitWebDriver, run under xvfb-run because the MiniBrowser needs a display.
// Each gives the same small session: goto, run (a function evaluated in the page, which may
// return a promise), screenshot, resize, crashPage, close. The suite (suite.mjs) is written
// against it.
//
// When the browser's page dies under a call (its process crashed or was killed), the call
// throws a `SessionDied`, at once: the suite then opens a new session instead of reading the
// error as the check's.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';

const MINIBROWSER = '/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser';

/// The browser's page died under a call: not the check's failure, but the session's.
export class SessionDied extends Error {
  constructor(engine, why) {
    super(`${engine}'s session died: ${why}`);
    this.name = 'SessionDied';
  }
}

/// The text of an exception thrown in the page: WebKit's `stack` lists only the frames, not
/// the message, so both are kept.
const thrownText = `(e) => (e instanceof Error ? \`\${e.name}: \${e.message}\n\${e.stack || ''}\` : String(e))`;

/// WebKitGTK's rendering for the tests. By default it paints with Skia on the GPU and composites
/// with OpenGL; under Xvfb the GPU is Mesa's software rasterizer (llvmpipe, loaded from
/// swrast_dri.so), and WebKit's GPU painting thread (SkiaGPUWorker) has crashed the web process
/// there (a general protection fault in swrast_dri.so). Skia's CPU renderer and no accelerated
/// compositing keep the web process off OpenGL altogether: no SkiaGPUWorker, no compositor
/// thread, no llvmpipe thread (`renderingThreads` shows it; the suite checks it). The page's
/// own code runs as it does for a user: this changes how WebKit paints, not what the page does.
/// `ATTENTION_LAB_WEBKIT_RENDERING` picks another of these, to measure what each costs.
const WEBKIT_RENDERINGS = {
  'cpu-no-compositing': { WEBKIT_SKIA_ENABLE_CPU_RENDERING: '1', WEBKIT_DISABLE_COMPOSITING_MODE: '1' },
  cpu: { WEBKIT_SKIA_ENABLE_CPU_RENDERING: '1' },
  gpu: {},
};
export const WEBKIT_RENDERING = process.env.ATTENTION_LAB_WEBKIT_RENDERING || 'cpu-no-compositing';
export const WEBKIT_TEST_RENDERING = WEBKIT_RENDERINGS[WEBKIT_RENDERING];
if (!WEBKIT_TEST_RENDERING) throw new Error(`ATTENTION_LAB_WEBKIT_RENDERING: ${WEBKIT_RENDERING} is none of ${Object.keys(WEBKIT_RENDERINGS).join(', ')}`);

/// Every process below `root` (its children, theirs, …), as { pid, comm }.
function descendants(root) {
  const parents = new Map();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // /proc/PID/stat: "pid (comm) state ppid …"; comm may hold spaces and parentheses.
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const close = stat.lastIndexOf(')');
      const comm = stat.slice(stat.indexOf('(') + 1, close);
      const ppid = Number(stat.slice(close + 2).split(' ')[1]);
      parents.set(Number(entry), { ppid, comm });
    } catch { /* ended meanwhile */ }
  }
  const found = [];
  const walk = (pid) => {
    for (const [child, { ppid, comm }] of parents) {
      if (ppid === pid) { found.push({ pid: child, comm }); walk(child); }
    }
  };
  walk(root);
  return found;
}

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
  let gone = null;
  browser.on('disconnected', () => { gone ??= 'the browser closed its connection (its process ended)'; });
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 800 });
  // A call under which the browser went away fails as the session's death, not the check's.
  const guarded = async (call) => {
    if (gone) throw new SessionDied('Firefox', gone);
    try {
      return await call();
    } catch (e) {
      if (gone || /Target closed|Connection closed|disconnected|parent process browsing contexts/i.test(String(e))) {
        throw new SessionDied('Firefox', gone || String(e).split('\n')[0]);
      }
      throw e;
    }
  };
  return {
    name: 'Firefox',
    version: await browser.version(),
    log: () => '',
    goto: (url) => guarded(() => page.goto(url, { waitUntil: 'load' })),
    reload: () => guarded(() => page.reload({ waitUntil: 'load' })),
    run: (fn, arg) => guarded(() => page.evaluate(`(${fn})(${JSON.stringify(arg ?? null)})`)),
    screenshot: (file) => guarded(() => page.screenshot({ path: file, fullPage: false })),
    resize: (width, height) => guarded(() => page.setViewport({ width, height })),
    /// Ends the browser's process, as a crash would: a content process killed alone leaves
    /// Firefox's tab on its "crashed" page with the call pending, so the whole browser goes.
    crashPage() { browser.process().kill('SIGKILL'); },
    renderingThreads: () => [],
    async close() {
      try { await browser.close(); } catch { /* already gone */ }
      fs.rmSync(profile, { recursive: true, force: true });
    },
  };
}

const freePort = () => new Promise((resolve) => {
  const server = net.createServer().listen(0, '127.0.0.1', () => {
    const { port } = server.address();
    server.close(() => resolve(port));
  });
});

/// A command the driver left unanswered: the browser cannot be reached.
class Unanswered extends Error {}

/// What WebKitWebDriver answers when the session's page is gone, and what the MiniBrowser
/// prints when its web process ends.
const WEBKIT_DEAD = /invalid session id|session deleted|no such window/i;
const WEBKIT_CRASHED = /WebProcess CRASHED|web process.*(crash|terminat)/i;

export async function webkit() {
  const port = await freePort();
  // -a: a free display number; the driver starts the MiniBrowser on it, and WebKit's processes
  // inherit the rendering settings.
  const driver = spawn('xvfb-run', ['-a', '-s', '-screen 0 1400x1000x24', 'WebKitWebDriver', `--port=${port}`, '--host=127.0.0.1'],
    { stdio: ['ignore', 'ignore', 'pipe'], detached: true, env: { ...process.env, ...WEBKIT_TEST_RENDERING } });
  let driverLog = '';
  driver.stderr.on('data', (d) => { driverLog += d; });
  let ended = null;
  driver.on('exit', (code, signal) => { ended = `WebKitWebDriver ended (${signal || `exit code ${code}`})`; });
  const base = `http://127.0.0.1:${port}`;
  // Every call is bounded. A script's own waits end within the session's script timeout
  // (SCRIPT_MS, above suite.mjs' HANG_MS), which the driver answers itself; every other command
  // is quick, and one the driver leaves unanswered for QUICK_MS means the browser cannot be
  // reached (a screenshot once went unanswered for five minutes under load).
  const SCRIPT_MS = 280000;
  const QUICK_MS = 60000;
  const PAGE_LOAD_MS = 60000;
  const call = async (method, path, body, ms = QUICK_MS) => {
    let response;
    try {
      response = await fetch(`${base}${path}`, {
        method,
        headers: { 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(ms),
      });
    } catch (e) {
      if (e.name === 'TimeoutError') throw new Unanswered(`WebKitWebDriver did not answer ${method} ${path.replace(/\/session\/[^/]+/, '')} within ${ms / 1000} s`);
      throw new Error(`WebKitWebDriver ${path}: ${e.message}${e.cause ? ` (${e.cause.code || e.cause.message || e.cause})` : ''}`);
    }
    const json = await response.json();
    // A WebDriver error is an HTTP error status with { error, message } (W3C WebDriver §6.6).
    if (!response.ok) throw new Error(`WebKitWebDriver ${path}: ${json.value?.error}: ${json.value?.message}`);
    return json.value;
  };
  // The driver takes a moment to listen (bounded by count, not by the clock's verdict).
  let session;
  for (let attempt = 0; attempt < 100 && !session && !ended; attempt++) {
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
      if (!/ECONNREFUSED|fetch failed/.test(String(e))) throw e;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  if (!session) {
    try { process.kill(-driver.pid, 'SIGTERM'); } catch { /* already ended */ }
    throw new Error(`WebKitWebDriver did not start${ended ? ` (${ended})` : ''}: ${driverLog}`);
  }
  const id = session.sessionId;
  const at = (path) => `/session/${id}${path}`;
  // A call under which the web process ended, or the driver, fails as the session's death. The
  // MiniBrowser says so on stderr as it happens; WebKitWebDriver answers the pending call with
  // "Could not parse script result" and every later one with "invalid session id".
  const guarded = async (path, method, body, ms) => {
    const logFrom = driverLog.length;
    const died = (e) => {
      const said = driverLog.slice(logFrom).match(WEBKIT_CRASHED);
      if (said) return `the web process ended ("${said[0]}")`;
      if (ended) return ended;
      if (e instanceof Unanswered) return e.message;
      if (e && WEBKIT_DEAD.test(String(e))) return String(e).split('\n')[0];
      return null;
    };
    if (ended) throw new SessionDied('WebKit', ended);
    try {
      return await call(method, at(path), body, ms);
    } catch (e) {
      const why = died(e);
      if (why) throw new SessionDied('WebKit', why);
      throw e;
    }
  };
  await guarded('/timeouts', 'POST', { script: SCRIPT_MS, pageLoad: PAGE_LOAD_MS });
  await guarded('/window/rect', 'POST', { width: 1280, height: 800 });
  return {
    name: 'WebKit',
    version: session.capabilities.browserVersion,
    /// What WebKitWebDriver and the MiniBrowser printed (a crashed web process says so here).
    log: () => driverLog,
    async goto(url) { await guarded('/url', 'POST', { url }, PAGE_LOAD_MS + QUICK_MS); },
    async reload() { await guarded('/refresh', 'POST', {}, PAGE_LOAD_MS + QUICK_MS); },
    async run(fn, arg) {
      // Execute async: the last argument is the callback that ends the script. What comes back
      // is { ok } or { thrown }, never read as the driver's own error.
      const script = `const done = arguments[arguments.length - 1];
        Promise.resolve().then(() => (${fn})(arguments[0]))
          .then((ok) => done({ ok }), (e) => done({ thrown: (${thrownText})(e) }));`;
      const out = await guarded('/execute/async', 'POST', { script, args: [arg ?? null] }, SCRIPT_MS + QUICK_MS);
      if (out && 'thrown' in out) throw new Error(out.thrown);
      return out ? out.ok : undefined;
    },
    async screenshot(file) { fs.writeFileSync(file, Buffer.from(await guarded('/screenshot', 'GET'), 'base64')); },
    async resize(width, height) { await guarded('/window/rect', 'POST', { width, height }); },
    /// Kills the web process, as a crash in it would end it.
    crashPage() {
      for (const p of descendants(driver.pid)) if (p.comm.startsWith('WebKitWebProces')) process.kill(p.pid, 'SIGKILL');
    },
    /// The names of the web processes' threads, counted: with the test rendering there is no
    /// SkiaGPUWorker, compositor or llvmpipe thread.
    renderingThreads() {
      const names = [];
      for (const p of descendants(driver.pid)) {
        if (!p.comm.startsWith('WebKitWebProces')) continue;
        for (const task of fs.readdirSync(`/proc/${p.pid}/task`)) {
          try { names.push(fs.readFileSync(`/proc/${p.pid}/task/${task}/comm`, 'utf8').trim()); } catch { /* ended */ }
        }
      }
      return names;
    },
    async close() {
      try { await call('DELETE', at(''), undefined, 5000); } catch { /* the browser may be gone, or wedged */ }
      try { process.kill(-driver.pid, 'SIGTERM'); } catch { /* already ended */ }
    },
  };
}

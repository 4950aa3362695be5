// After one visit the app opens and trains with the network off (assets/sw.js), and a new
// version replaces the kept one on the next visit with the network on. The network is really
// off here: this test's own server is stopped, its open connections closed.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ready, serveDir, assert } from '../harness.mjs';

const dist = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'dist');

const stop = (server) => new Promise((resolve) => { server.close(resolve); server.closeAllConnections(); });

/// Ready, with no banner saying the trainer stopped or never started.
async function readyAndRunning(page) {
  await ready(page);
  const failed = await page.locator('.crashed, .boot-failed').allInnerTexts();
  assert(failed.length === 0, failed.join('\n'));
}

export const tests = [
  {
    name: 'offline: after one visit the app opens and trains with the network off; the next online visit brings a new version',
    async run({ browser, artifacts }) {
      let server = await serveDir(dist);
      const { port } = server.address();
      const url = `http://127.0.0.1:${port}/`;
      const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      const page = await context.newPage();
      const errors = [];
      page.on('pageerror', (e) => errors.push(e.message));
      try {
        await page.goto(url);
        await readyAndRunning(page);
        // The service worker is active once it has kept every file of this version.
        await page.evaluate(() => navigator.serviceWorker.ready.then(() => true));
        await stop(server);
        const offline = await page.evaluate(() => fetch('/no-such-file').then(() => 'answered', () => 'no network'));
        assert(offline === 'no network', `the network is still on: ${offline}`);

        await page.reload();
        await readyAndRunning(page);
        await page.getByRole('button', { name: 'Play', exact: true }).click();
        await page.waitForFunction(() => Number(document.querySelector('[data-step]')?.dataset.step) >= 30, null, { timeout: 30000 });
        await page.getByRole('button', { name: 'Pause', exact: true }).click();
        await page.screenshot({ path: path.join(artifacts, 'offline-training.png') });

        // A new version (its index.html differs) on the same address, network on.
        const next = fs.mkdtempSync(path.join(os.tmpdir(), 'attention-lab-next-'));
        fs.cpSync(dist, next, { recursive: true });
        const index = path.join(next, 'index.html');
        fs.writeFileSync(index, fs.readFileSync(index, 'utf8').replace('<title>Attention Lab</title>', '<title>Attention Lab, next</title>'));
        server = await serveDir(next, port);
        await page.reload();
        await readyAndRunning(page);
        assert(await page.title() === 'Attention Lab, next', `online, the old version opened: ${await page.title()}`);
        // …and it is the one kept for the next time offline.
        await stop(server);
        await page.reload();
        await readyAndRunning(page);
        assert(await page.title() === 'Attention Lab, next', `offline after the update: ${await page.title()}`);
        fs.rmSync(next, { recursive: true, force: true });
        assert(errors.length === 0, errors.join('\n'));
      } finally {
        await context.close();
        if (server.listening) await stop(server);
      }
    },
  },
];

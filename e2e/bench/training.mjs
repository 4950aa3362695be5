// Training speed in Chromium (WASM, in the training worker) against native, in the same run:
// both time engine::workload::median_step_ms on the same presets and batch.
//   trunk build --release && node e2e/bench/training.mjs
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { serveDir, launch } from '../harness.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const native = JSON.parse(execFileSync('cargo', ['run', '--release', '-q', '-p', 'attention-lab-engine',
  '--example', 'workload_step', '--', '20', '3'], { cwd: root, encoding: 'utf8' }).trim().split('\n').pop());

const server = await serveDir(path.join(root, 'dist'));
const browser = await launch();
const page = await (await browser.newContext()).newPage();
await page.goto(`http://127.0.0.1:${server.address().port}/?bench`);
await page.waitForSelector('#bench[data-done="true"]', { timeout: 600000 });
const wasm = JSON.parse(await page.locator('#bench').innerText());
await browser.close();
server.close();

console.log('preset  native ms/step  wasm ms/step  wasm speed (native = 1)  target ≥ 0.5');
for (const name of Object.keys(native)) {
  const ratio = native[name] / wasm[name];
  console.log(`${name.padEnd(7)} ${native[name].toFixed(2).padStart(14)} ${wasm[name].toFixed(2).padStart(13)} ${ratio.toFixed(2).padStart(24)}  ${ratio >= 0.5 ? 'met' : 'MISSED'}`);
}

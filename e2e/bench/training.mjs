// Training speed in Chromium (WASM, in the training worker) against native, in the same run:
// both time engine::workload::median_step_ms on the same presets and batch.
//   trunk build --release && node e2e/bench/training.mjs [ROUNDS]
//
// This machine's speed drifts by ±25% over tens of seconds (shared host), so one native
// figure against one WASM figure taken a minute later says little. Each round times native,
// then WASM (a fresh page and worker), back to back; the ratio of each round is kept and the
// median over rounds is reported.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { serveDir, launch, benchStepMs } from '../harness.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const rounds = Number(process.argv[2] || 5);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

execFileSync('cargo', ['build', '--release', '-q', '-p', 'attention-lab-engine', '--example', 'workload_step'], { cwd: root });
const nativeStepMs = () => JSON.parse(execFileSync('cargo', ['run', '--release', '-q', '-p', 'attention-lab-engine',
  '--example', 'workload_step', '--', '20', '10'], { cwd: root, encoding: 'utf8' }).trim().split('\n').pop());

const server = await serveDir(path.join(root, 'dist'));
const browser = await launch();
const wasmStepMs = () => benchStepMs(browser, server);

const results = [];
for (let round = 1; round <= rounds; round++) {
  const native = nativeStepMs();
  const wasm = await wasmStepMs();
  results.push({ native, wasm });
  const line = Object.keys(native).map((name) =>
    `${name} ${native[name].toFixed(2)} / ${wasm[name].toFixed(2)} ms = ${(native[name] / wasm[name]).toFixed(2)}`);
  console.log(`round ${round}: ${line.join(', ')}`);
}
await browser.close();
server.close();

// Issue 10's targets; native runs on one thread, as the worker does.
const TARGETS = { tiny: 0.8, small: 0.7 };
console.log('\npreset  native ms/step  wasm ms/step  wasm speed (native = 1, one thread)  target');
console.log('        (medians over rounds; speed = median of the per-round ratios)');
for (const name of Object.keys(results[0].native)) {
  const ratio = median(results.map((r) => r.native[name] / r.wasm[name]));
  const nativeMs = median(results.map((r) => r.native[name]));
  const wasmMs = median(results.map((r) => r.wasm[name]));
  const range = results.map((r) => r.native[name] / r.wasm[name]);
  console.log(`${name.padEnd(7)} ${nativeMs.toFixed(2).padStart(14)} ${wasmMs.toFixed(2).padStart(13)} ${ratio.toFixed(2).padStart(36)}  ≥ ${TARGETS[name] ?? '?'} ${ratio >= (TARGETS[name] ?? Infinity) ? 'met' : 'MISSED'}  (rounds ${Math.min(...range).toFixed(2)}–${Math.max(...range).toFixed(2)})`);
}

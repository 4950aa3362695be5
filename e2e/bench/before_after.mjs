// Training speed in Chromium (WASM, in the training worker) of two builds of the app, in the
// same run: each round opens a fresh page of each on `?bench`, in turn (engine::workload::median_step_ms
// on the same presets and batch), and each round's ratio is kept.
//   node e2e/bench/before_after.mjs BEFORE_DIST AFTER_DIST [ROUNDS]
// (For a change's before/after figure: build the earlier commit's dist in a worktree.)
import { serveDir, launch, benchStepMs } from '../harness.mjs';

const [beforeDir, afterDir] = process.argv.slice(2, 4);
const rounds = Number(process.argv[4] || 5);
if (!beforeDir || !afterDir) {
  console.error('usage: node e2e/bench/before_after.mjs BEFORE_DIST AFTER_DIST [ROUNDS]');
  process.exit(2);
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const servers = [await serveDir(beforeDir), await serveDir(afterDir)];
const browser = await launch();
const stepMs = (server) => benchStepMs(browser, server);
const results = [];
for (let round = 1; round <= rounds; round++) {
  // Which build goes first alternates, so that neither gains from its place in the round.
  const first = round % 2 ? 0 : 1;
  const timed = [];
  timed[first] = await stepMs(servers[first]);
  timed[1 - first] = await stepMs(servers[1 - first]);
  const [before, after] = timed;
  results.push({ before, after });
  const line = Object.keys(before).map((name) =>
    `${name} ${before[name].toFixed(2)} → ${after[name].toFixed(2)} ms`);
  console.log(`round ${round}: ${line.join(', ')}`);
}
await browser.close();
for (const s of servers) s.close();
console.log('\npreset  before ms/step  after ms/step  after ÷ before (median of rounds, [range])');
for (const name of Object.keys(results[0].before)) {
  const ratios = results.map((r) => r.after[name] / r.before[name]);
  console.log(`${name.padEnd(7)} ${median(results.map((r) => r.before[name])).toFixed(2).padStart(14)} ${median(results.map((r) => r.after[name])).toFixed(2).padStart(14)}  ${median(ratios).toFixed(3)} [${Math.min(...ratios).toFixed(3)}–${Math.max(...ratios).toFixed(3)}]`);
}

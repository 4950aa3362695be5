// The training step of this tree's engine against an earlier commit's, in WebAssembly in
// Chromium, decided within a bound:
//   node e2e/bench/engine_ab.mjs COMMIT [--pairs N] [--bound 0.03] [--simd128]
//   node e2e/bench/engine_ab.mjs HEAD --check   (./dev test: the benchmark's crate still builds
//                                                against the engine, clippy- and fmt-clean)
//
// This machine's speed drifts by ±25% over tens of seconds and jumps between levels within a
// second (a shared host). A page's benchmark (`?bench`, e2e/bench/before_after.mjs) runs each
// build in a page of its own, seconds apart: there an identical build reads anywhere from 0.8×
// to 1.4× itself. Here both engines are compiled into one module (e2e/bench/engine-ab), with the
// worker's profile and flags (relaxed SIMD, as Chromium's worker has it; --simd128 for the
// build Safari runs), and one page steps them in turn on the workload `?bench` times
// (engine::workload: a preset model, its fixed batch, forward, backward and Adam). A pair is one
// step of each, in an order that alternates, a few milliseconds apart; every few pairs both
// runs start again from the workload's model, after untimed warm-up steps. A pair gives
// after ÷ before. The verdict is read from the median of the pairs' ratios and its 95%
// confidence interval (order statistics: no assumption on the spread's shape):
//   unchanged within the bound  the interval lies inside [1 / (1 + bound), 1 + bound];
//   slower / faster             it lies wholly past one end;
//   not decided                 otherwise.
// COMMIT's engine is its committed engine/ folder; "after" is the engine in this working tree.
// `node e2e/bench/engine_ab.mjs HEAD` on a clean tree is the control: the same code twice.
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { serveDir, launch } from '../harness.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const args = process.argv.slice(2);
const option = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const commit = args[0];
if (!commit || commit.startsWith('--')) {
  console.error('usage: node e2e/bench/engine_ab.mjs COMMIT [--pairs N] [--bound 0.03] [--simd128] [--check]');
  process.exit(2);
}
const pairsAsked = option('--pairs', null);
const bound = Number(option('--bound', 0.03));
const relaxed = !args.includes('--simd128');
if ((pairsAsked !== null && !(Number.isInteger(Number(pairsAsked)) && Number(pairsAsked) > 0)) || !(bound > 0)) {
  console.error('--pairs takes a whole number above 0, --bound a fraction above 0 (0.03 is 3%)');
  process.exit(2);
}
// Pairs per preset, pairs between fresh starts, and untimed steps after each start: a tiny step
// takes about 10 ms here, a small one 350 ms.
const SHAPES = { tiny: { pairs: 1000, fresh: 50, warmup: 3 }, small: { pairs: 200, fresh: 25, warmup: 2 } };

const crate = path.join(root, 'e2e/bench/engine-ab');
const work = path.join(root, 'target/engine-ab');
const run = (cmd, argv, opts = {}) => execFileSync(cmd, argv, { cwd: root, stdio: ['ignore', 'pipe', 'inherit'], ...opts });

// The earlier engine, renamed so that Cargo can hold both in one lockfile.
let sha;
try {
  sha = run('git', ['rev-parse', '--short', '--verify', '--quiet', `${commit}^{commit}`], { encoding: 'utf8' }).trim();
} catch {
  console.error(`${commit} is not a commit of this repository`);
  process.exit(2);
}
const before = path.join(work, 'before');
fs.rmSync(before, { recursive: true, force: true });
fs.mkdirSync(before, { recursive: true });
fs.writeFileSync(path.join(work, 'engine.tar'), run('git', ['archive', sha, 'engine'], { maxBuffer: 1 << 28 }));
run('tar', ['-xf', path.join(work, 'engine.tar'), '-C', before]);
const manifest = path.join(before, 'engine/Cargo.toml');
const named = fs.readFileSync(manifest, 'utf8');
const renamed = named.replace(/^name = "attention-lab-engine"$/m, 'name = "attention-lab-engine-before"');
if (renamed === named) throw new Error(`${sha}'s engine/Cargo.toml does not name the package attention-lab-engine`);
fs.writeFileSync(manifest, renamed);
// The project's lockfile: both engines build against the dependency versions the app ships.
fs.copyFileSync(path.join(root, 'Cargo.lock'), path.join(crate, 'Cargo.lock'));

const features = relaxed ? ['--features', 'relaxed-simd'] : [];
const target = path.join(work, 'target');
const inCrate = { cwd: crate, env: { ...process.env, CARGO_TARGET_DIR: target } };
if (args.includes('--check')) {
  // Not run by the benchmark itself, so kept from rotting here: an engine change that breaks
  // the crate fails ./dev test.
  try {
    run('cargo', ['fmt', '--check'], { ...inCrate, stdio: 'inherit' });
    run('cargo', ['clippy', '-q', '--target', 'wasm32-unknown-unknown', ...features, '--', '-D', 'warnings'], { ...inCrate, stdio: 'inherit' });
  } catch {
    console.error('e2e/bench/engine-ab: fmt or clippy failed (above)');
    process.exit(1);
  }
  console.log('e2e/bench/engine-ab builds against the engine: fmt and clippy clean');
  process.exit(0);
}

console.log(`building both engines (${sha} and this tree) into one module, ${relaxed ? 'relaxed SIMD' : 'SIMD128'}…`);
run('cargo', ['build', '-q', '--release', '--target', 'wasm32-unknown-unknown', ...features], inCrate);
const pkg = path.join(work, 'pkg');
run('wasm-bindgen', ['--target', 'web', '--no-typescript', '--out-dir', pkg,
  path.join(target, 'wasm32-unknown-unknown/release/engine_ab.wasm')]);
fs.writeFileSync(path.join(pkg, 'index.html'), `<!DOCTYPE html><title>engine A/B</title>
<script type="module">
import init, * as ab from './engine_ab.js';
await init();
window.ab = ab;
document.title = 'ready';
</script>`);

const server = await serveDir(pkg);
const browser = await launch();
const page = await browser.newPage();
page.on('pageerror', (e) => console.error(`page error: ${e.message}`));
await page.goto(`http://127.0.0.1:${server.address().port}/`);
await page.waitForFunction(() => document.title === 'ready', null, { timeout: 60000 });
const presets = await page.evaluate(() => window.ab.presets());
// `count` pairs from a fresh start, stepped inside the page: [before ms, after ms] each.
const timedPairs = (preset, warmup, first, count) => page.evaluate(([preset, warmup, first, count]) => {
  window.ab.start(preset, warmup);
  const pairs = [];
  for (let i = first; i < first + count; i++) {
    // The order alternates, so that neither build gains from going first.
    const afterFirst = i % 2 === 1;
    const a = window.ab.step_ms(afterFirst);
    const b = window.ab.step_ms(!afterFirst);
    pairs.push(afterFirst ? [b, a] : [a, b]);
  }
  return pairs;
}, [preset, warmup, first, count]);

const sorted = (xs) => [...xs].sort((a, b) => a - b);
const median = (xs) => sorted(xs)[Math.floor(xs.length / 2)];
// The k-th smallest and k-th largest of n values bracket the median with at least 95%
// confidence when P(Binomial(n, ½) < k) ≤ 2.5%: the largest such k.
function medianInterval(xs) {
  const s = sorted(xs);
  const n = s.length;
  let below = 0; // P(X < k)
  let k = 0;
  let pmf = 0.5 ** n; // P(X = 0)
  while (below + pmf <= 0.025) {
    below += pmf;
    pmf *= (n - k) / (k + 1);
    k += 1;
  }
  return k === 0 ? [s[0], s[n - 1], false] : [s[k - 1], s[n - k], true];
}
function verdict([lo, hi, enough]) {
  if (!enough) return 'not decided (too few pairs for a 95% interval)';
  const pct = `${(bound * 100).toFixed(0)}%`;
  if (lo >= 1 / (1 + bound) && hi <= 1 + bound) return `unchanged within ${pct}`;
  if (lo > 1 + bound) return `slower by more than ${pct}`;
  if (hi < 1 / (1 + bound)) return `faster by more than ${pct}`;
  return `not decided: the interval reaches past ±${pct}`;
}

console.log(`before = ${sha}'s engine, after = this tree's\n`);
const lines = [];
for (const [index, name] of presets.entries()) {
  const shape = SHAPES[name] ?? SHAPES.small;
  const pairs = Number(pairsAsked ?? shape.pairs);
  const times = [];
  while (times.length < pairs) {
    times.push(...await timedPairs(index, shape.warmup, times.length, Math.min(shape.fresh, pairs - times.length)));
    const ratios = times.map(([b, a]) => a / b);
    if (times.length % (4 * shape.fresh) === 0) console.log(`${name}: ${times.length} pairs, median ratio so far ${median(ratios).toFixed(3)}`);
  }
  const ratios = times.map(([b, a]) => a / b);
  const interval = medianInterval(ratios);
  lines.push(`${name.padEnd(6)} ${String(pairs).padStart(5)} ${median(times.map((t) => t[0])).toFixed(2).padStart(9)}`
    + ` ${median(times.map((t) => t[1])).toFixed(2).padStart(9)}`
    + `  ${median(ratios).toFixed(3)} [${interval[0].toFixed(3)}–${interval[1].toFixed(3)}]`
    + `  ${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}  ${verdict(interval)}`);
}
await browser.close();
server.close();
console.log(`\npreset pairs ms/step before  after  after ÷ before: median [95% interval]  pairs' range  verdict`);
for (const line of lines) console.log(line);

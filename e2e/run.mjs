// Runs every e2e/tests/*.mjs against the release build in dist/. Each test file exports
// `tests`: an array of { name, run({ browser, baseUrl, artifacts }) }.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { serveDir, launch } from './harness.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..');
const dist = path.join(root, 'dist');
const artifacts = path.join(root, 'artifacts');
fs.mkdirSync(artifacts, { recursive: true });
if (!fs.existsSync(path.join(dist, 'index.html'))) {
  console.error('e2e: dist/index.html missing: run trunk build --release first');
  console.log('e2e: 0 passed, 1 failed');
  process.exit(1);
}

const only = process.argv[2];
const server = await serveDir(dist);
const baseUrl = `http://127.0.0.1:${server.address().port}/`;
const browser = await launch();
let passed = 0;
let failed = 0;
const files = fs.readdirSync(path.join(here, 'tests')).filter((f) => f.endsWith('.mjs')).sort();
for (const file of files) {
  const { tests } = await import(path.join(here, 'tests', file));
  for (const t of tests) {
    if (only && !t.name.includes(only)) continue;
    const started = Date.now();
    try {
      await t.run({ browser, baseUrl, artifacts });
      passed++;
      console.log(`ok   ${file} › ${t.name} (${Date.now() - started} ms)`);
    } catch (e) {
      failed++;
      console.log(`FAIL ${file} › ${t.name}\n     ${e.stack || e}`);
    }
  }
}
await browser.close();
server.close();
console.log(`e2e: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 && passed > 0 ? 0 : 1);

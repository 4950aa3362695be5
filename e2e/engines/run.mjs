// Runs the cross-engine suite (suite.mjs) against the release build in dist/, in Firefox ESR and
// in WebKitGTK, one after the other (each trains, and this machine has two cores). dist/ is
// served from a sub-folder of a plain static server, as a course site would host it (README:
// Publish), so every check runs there.
// `node e2e/engines/run.mjs [firefox|webkit]` runs one of them.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { serveDir, AXE } from '../harness.mjs';
import { firefox, webkit } from './drivers.mjs';
import { runChecks, deathsSaid, checks } from './suite.mjs';
import { modelServers, fileRequests, unzipStored } from '../checkpoints.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..', '..');
const dist = path.join(root, 'dist');
const artifacts = path.join(root, 'artifacts');
fs.mkdirSync(artifacts, { recursive: true });

// Which worker build each engine must start: WebKit has no relaxed SIMD.
const ENGINES = [
  { name: 'firefox', open: firefox, expectBuild: 'relaxed-simd' },
  { name: 'webkit', open: webkit, expectBuild: 'simd128' },
];

const only = process.argv[2];
// The checks whose name holds one of these texts (split at |), or every check:
// `node e2e/engines/run.mjs webkit 'web address|embed'`.
const picked = process.argv[3] ? checks.filter((c) => process.argv[3].split('|').some((t) => c.name.includes(t))) : checks;
const FOLDER = '/courses/attention-lab/';
// axe-core beside the app: WebKit applies the page's script policy to a driver's eval too.
const EXTRAS = { [AXE.path]: AXE.file };
let server = await serveDir(dist, 0, FOLDER, EXTRAS);
const port = server.address().port;
const baseUrl = `http://127.0.0.1:${port}${FOLDER}`;
/// The server as a check sees it: the requests since this engine began, and a stop and a
/// start on the same address (the page's offline visit).
const host = {
  from: 0,
  log: () => server.log.slice(host.from),
  stop: () => new Promise((resolve) => { server.close(resolve); server.closeAllConnections(); }),
  start: async () => { server = await serveDir(dist, port, FOLDER, EXTRAS); host.from = 0; },
};
// Models from web addresses: a CLI checkpoint on a second server with CORS, without, and in the
// Hub's layout (e2e/checkpoints.mjs).
const models = { ...(await modelServers()), requests: fileRequests, unzip: unzipStored };
let passed = 0;
let failed = 0;
const notRun = [];
const deaths = [];
for (const engine of ENGINES.filter((e) => !only || e.name === only)) {
  let session;
  try {
    host.from = server.log.length;
    session = await engine.open();
    console.log(`${session.name} ${session.version}`);
    const reopen = async (dead) => {
      await dead.close().catch(() => {});
      session = await engine.open();
      return session;
    };
    const r = await runChecks(session, { baseUrl, host, models, artifacts, expectBuild: engine.expectBuild, log: console.log, reopen }, picked);
    session = r.session;
    passed += r.passed;
    failed += r.failed;
    notRun.push(...r.skipped.map((name) => `${session.name} › ${name}`));
    deaths.push(deathsSaid(session.name, r.deaths));
    if (r.failed && session.log) console.log(`${session.name}'s log:\n${session.log().slice(-4000)}`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${engine.name}: could not run the suite\n     ${e.stack || e}`);
  } finally {
    if (session) await session.close();
  }
}
server.close();
await models.stop();
console.log(`engines: ${passed} passed, ${failed} failed${notRun.length ? `, ${notRun.length} not run (${notRun.join('; ')})` : ''}`);
// Which engine's session died, and how often: ./dev test's summary repeats this line.
console.log(`engines: sessions that died: ${deaths.join(', ') || 'none'}`);
process.exit(failed === 0 && passed > 0 ? 0 : 1);

// The suite's recovery (suite.mjs `runChecks`), without a browser: fake sessions whose page
// dies when a check says so. A check whose session dies runs again in a new session that starts
// from a fresh page; a second death fails it; after more than MOST_DEATHS deaths the remaining
// checks fail at once, without touching a browser. `node e2e/engines/recovery.test.mjs`.
import assert from 'node:assert/strict';
import { runChecks, MOST_DEATHS } from './suite.mjs';
import { SessionDied } from './drivers.mjs';

/// A session that records what it was asked; `dead` makes every later call fail as a death.
function fakeSession(id, events) {
  const session = {
    name: 'Fake',
    id,
    dead: false,
    page: null,
    log: () => '',
    async goto(url) { if (session.dead) throw new SessionDied('Fake', 'gone'); session.page = url; events.push(`goto ${id}`); },
    async run() { if (session.dead) throw new SessionDied('Fake', 'gone'); },
    async close() { events.push(`close ${id}`); },
    renderingThreads: () => [],
  };
  return session;
}

async function scenario(list) {
  const events = [];
  const lines = [];
  let opened = 0;
  const first = fakeSession(++opened, events);
  const r = await runChecks(first, {
    baseUrl: 'http://fake/',
    host: null,
    artifacts: '/tmp',
    expectBuild: 'simd128',
    log: (line) => lines.push(line),
    reopen: async (dead) => { await dead.close(); return fakeSession(++opened, events); },
  }, list);
  return { ...r, events, lines, opened };
}

/// A check that kills its session on the attempts listed in `dies`, and otherwise passes if its
/// session has a fresh page.
const check = (name, dies = [], kills = false) => ({
  name,
  kills,
  async run({ session, attempt }) {
    if (session.page !== 'http://fake/') throw new Error(`${name}: no fresh page in session ${session.id}`);
    if (dies.includes(attempt)) { session.dead = true; throw new SessionDied('Fake', `killed under ${name}`); }
    return `session ${session.id}`;
  },
});

// A death mid-check: the check runs again in a new session, from a fresh page, and passes; so
// does every later check, in that session.
{
  const r = await scenario([check('a'), check('b', [1], true), check('c')]);
  assert.equal(r.passed, 3, r.lines.join('\n'));
  assert.equal(r.failed, 0);
  assert.deepEqual(r.events, ['goto 1', 'close 1', 'goto 2']);
  assert.equal(r.deaths.length, 1);
  assert.equal(r.deaths[0].onPurpose, true);
  assert.match(r.lines[2], /^ok .*› b .*again in a new session/);
  assert.match(r.lines[3], /^ok .*› c .*session 2/);
}

// A check whose session dies twice fails; the next check runs in a third session and passes.
{
  const r = await scenario([check('a', [1, 2]), check('b')]);
  assert.equal(r.passed, 1);
  assert.equal(r.failed, 1);
  assert.match(r.lines.find((l) => l.startsWith('FAIL')), /› a\n.*died twice/);
  assert.equal(r.opened, 3);
}

// More than MOST_DEATHS deaths: the remaining checks fail at once, no new session opened. Each
// check here dies twice, so the budget is spent after MOST_DEATHS / 2 + 1 of them.
{
  const dying = Array.from({ length: MOST_DEATHS + 1 }, (_, i) => check(`dies ${i}`, [1, 2]));
  const list = [...dying, check('after 1'), check('after 2')];
  const ran = Math.floor(MOST_DEATHS / 2) + 1;
  const t0 = Date.now();
  const r = await scenario(list);
  const notRun = r.lines.filter((l) => l.includes('not run:'));
  assert.equal(notRun.length, list.length - ran, r.lines.join('\n'));
  assert.match(notRun[0], new RegExp(`died ${2 * ran} times`));
  assert.equal(r.passed, 0);
  assert.equal(r.opened, 2 * ran);
  assert.ok(Date.now() - t0 < 5000, 'the remaining checks fail at once');
}

// A reopen that fails: every remaining check fails at once, saying why.
{
  const events = [];
  const lines = [];
  const r = await runChecks(fakeSession(1, events), {
    baseUrl: 'http://fake/', host: null, artifacts: '/tmp', expectBuild: 'simd128',
    log: (line) => lines.push(line),
    reopen: async () => { throw new Error('WebKitWebDriver did not start'); },
  }, [check('a', [1]), check('b'), check('c')]);
  assert.equal(r.failed, 3);
  assert.equal(lines.filter((l) => l.includes('could not be opened again: Error: WebKitWebDriver did not start')).length, 3);
}

console.log('recovery: 4 scenarios passed');

// "Open in PyTorch", end to end, with torch: for each case a model is built and trained in the
// page, its notebook downloaded from the page and run top to bottom in a fresh Jupyter kernel
// (tools/run_notebook.py, nbclient), and then:
//   - the attention weights the notebook prints equal the page's figure (`data-matrix`) for the
//     same layer and head within 1e-4;
//   - the checkpoint the notebook saves, given to the page's "Load checkpoint", shows the
//     weights the notebook printed for it, within 1e-4.
// The results go into pytorch/record.json ("notebooks"), with the hashes of what they depend
// on, which `./dev test` checks (protocol/tests/pytorch_record.rs) without torch.
//
//   node e2e/notebook/run.mjs [--python tools/.venv/bin/python] [CASE …]
//
// `./dev pytorch` runs it after `trunk build --release`.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { serveDir, launch, openPage, assert, pause, untilStep, openCode } from '../harness.mjs';
import { fnv1a64, RECORD, HASHED } from './record.mjs';
import { figure } from '../names.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..', '..');
const args = process.argv.slice(2);
const pythonAt = args.indexOf('--python');
const python = pythonAt >= 0 ? args.splice(pythonAt, 2)[1] : path.join(root, 'tools/.venv/bin/python');
const only = args;
const TOLERANCE = 1e-4;
const STEPS = 20;

// Each case: the link that builds its model and shows its view, and the figure compared.
const CASES = [
  { name: 'bert-pair', what: 'a BERT (MLM + NSP), padding mask, a sentence pair',
    query: 'stage=softmax&layer=2&head=3&mask=padding', figure: 'weights' },
  { name: 'decoder', what: 'a decoder (next token), causal mask',
    query: 'objective=next-token&stage=softmax&layer=2&head=2', figure: 'weights' },
  { name: 'rotary', what: 'a BERT with rotary positions',
    query: 'positions=rotary&stage=softmax&layer=1&head=4', figure: 'weights' },
  { name: 'gqa', what: 'a BERT with 2 K/V heads for 4 query heads (GQA)',
    query: 'kv=2&stage=softmax&layer=2&head=4', figure: 'weights' },
  { name: 'seq2seq', what: 'an encoder–decoder (Reverse), cross-attention',
    query: 'objective=seq2seq&task=reverse&target=ball+a+chases&part=cross&stage=softmax&layer=1&head=2', figure: 'cross-weights' },
  { name: 'alibi', what: 'a BERT with ALiBi positions and a window of 3',
    query: 'positions=alibi&window=3&stage=softmax&layer=1&head=1', figure: 'weights' },
  { name: 'linear', what: 'a BERT with linear attention (its implied weights)',
    query: 'attention=linear&stage=mask&layer=2&head=1', figure: 'weights' },
];

/// The weights a notebook printed after the line starting `attention weights, layer` (the
/// `which`-th such block, counting from 0; -1 the last): one row per query.
function printedWeights(text, which) {
  const lines = text.split('\n');
  const starts = lines.flatMap((l, i) => (l.startsWith('attention weights, layer') ? [i] : []));
  const at = starts.at(which);
  assert(at !== undefined, `no printed weights (block ${which}) in:\n${text.slice(0, 2000)}`);
  const rows = [];
  for (const line of lines.slice(at + 2)) {
    const fields = line.trim().split(/\s+/);
    if (fields.length < 2 || !fields.slice(1).every((f) => /^-?\d+\.\d+(e-?\d+)?$/.test(f))) break;
    rows.push(fields.slice(1).map(Number));
  }
  return rows;
}

function largestDifference(a, b, what) {
  assert(a.length === b.length && a.every((r, i) => r.length === b[i].length),
    `${what}: ${a.length}×${a[0]?.length} against ${b.length}×${b[0]?.length}`);
  let most = 0;
  a.forEach((row, i) => row.forEach((v, j) => {
    // The page writes a masked weight as 0; -Infinity never reaches the weights.
    most = Math.max(most, Math.abs(v - b[i][j]));
  }));
  return most;
}

const figureMatrix = async (page, name) =>
  JSON.parse(await page.locator(`.stage-panel ${figure(name)}`).first().getAttribute('data-matrix'));

async function ready(page) {
  await page.waitForSelector('figure.heatmap canvas', { timeout: 60000 });
  await page.waitForFunction(() => !document.querySelector('.busy'), null, { timeout: 60000 });
}

async function runCase(browser, baseUrl, c, work) {
  const { page, context, problems } = await openPage(browser, `${baseUrl}?${c.query}`);
  await ready(page);
  await page.getByRole('button', { name: 'Play', exact: true }).click();
  await untilStep(page, STEPS, 120000);
  const step = await pause(page);
  await openCode(page);
  // The figures drawn from the weights of the step training stopped on.
  await page.waitForFunction((n) => document.querySelector('pre[data-code="pytorch"]')?.dataset.inspectedStep === String(n),
    step, { timeout: 30000 });
  const shown = await figureMatrix(page, c.figure);
  const download = page.waitForEvent('download', { timeout: 60000 });
  await page.getByRole('button', { name: 'Open in PyTorch', exact: true }).click();
  const file = await download;
  const name = file.suggestedFilename();
  assert(new RegExp(`^attention-lab-[a-z0-9-]+-step${step}\\.ipynb$`).test(name), `notebook named ${name}`);
  const folder = path.join(work, c.name);
  fs.rmSync(folder, { recursive: true, force: true });
  fs.mkdirSync(folder, { recursive: true });
  const notebook = path.join(folder, name);
  await file.saveAs(notebook);
  const ran = spawnSync(python, [path.join(root, 'tools/run_notebook.py'), notebook, folder,
    '--out', path.join(folder, `executed-${name}`)], { encoding: 'utf8', maxBuffer: 64 << 20 });
  assert(ran.status === 0, `the notebook failed:\n${ran.stderr}\n${ran.stdout.slice(-4000)}`);
  const out = JSON.parse(ran.stdout);
  const printed = out.cells.map((cell) => cell.text).join('\n');
  const notebookWeights = printedWeights(printed, 0);
  const againWeights = printedWeights(printed, -1);
  assert(out.cells.some((cell) => cell.images > 0), 'the heatmap cell drew nothing');
  const largest = largestDifference(notebookWeights, shown, `${c.name}: the notebook's weights against the page's`);
  assert(largest <= TOLERANCE, `${c.name}: the notebook's weights differ from the page's by ${largest}`);

  // The checkpoint the notebook saved, loaded back into the page, with the same view.
  const saved = path.join(folder, 'attention-lab-checkpoint');
  const files = ['config.json', 'model.safetensors', 'vocab.txt', 'tokenizer_config.json']
    .map((f) => path.join(saved, f)).filter((f) => fs.existsSync(f));
  await page.locator('input[type=file]').first().setInputFiles(files);
  await page.waitForFunction(() => /checkpoint|loaded|model/i.test(document.querySelector('header .model-name')?.textContent ?? '')
    && Number(document.querySelector('[data-step]')?.dataset.step) === 0, null, { timeout: 60000 });
  await ready(page);
  await openCode(page);
  await page.waitForFunction(() => document.querySelector('pre[data-code="pytorch"]')?.dataset.inspectedStep === '0', null, { timeout: 30000 });
  const reloaded = await figureMatrix(page, c.figure);
  const reloadDifference = largestDifference(againWeights, reloaded, `${c.name}: the saved checkpoint in the page against the notebook's`);
  assert(reloadDifference <= TOLERANCE, `${c.name}: the saved checkpoint shows weights ${reloadDifference} from the notebook's`);
  assert(problems.length === 0, problems.join('\n'));
  await context.close();
  return {
    name: c.name, what: c.what, step, notebook: name, seconds: Number(out.seconds.toFixed(1)),
    rows: shown.length, max_abs_diff: largest, reload_max_abs_diff: reloadDifference,
    ok: largest <= TOLERANCE && reloadDifference <= TOLERANCE,
  };
}

const dist = path.join(root, 'dist');
assert(fs.existsSync(path.join(dist, 'index.html')), 'dist/index.html missing: run trunk build --release first');
const server = await serveDir(dist);
const baseUrl = `http://127.0.0.1:${server.address().port}/`;
const browser = await launch();
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'attention-lab-notebooks-'));
const results = [];
let failed = 0;
for (const c of CASES) {
  if (only.length && !only.includes(c.name)) continue;
  const started = Date.now();
  try {
    const r = await runCase(browser, baseUrl, c, work);
    results.push(r);
    console.log(`ok   notebook › ${c.name}: weights within ${r.max_abs_diff.toExponential(2)}, reloaded within ${r.reload_max_abs_diff.toExponential(2)}; notebook ${r.seconds} s (${Date.now() - started} ms in all)`);
  } catch (e) {
    failed++;
    results.push({ name: c.name, what: c.what, ok: false, error: String(e.message || e).slice(0, 2000) });
    console.log(`FAIL notebook › ${c.name}\n     ${e.stack || e}`);
  }
}
await browser.close();
server.close();

const versions = spawnSync(python, ['-c', 'import sys, torch, matplotlib, nbclient; print(sys.version.split()[0], torch.__version__, matplotlib.__version__, nbclient.__version__)'], { encoding: 'utf8' })
  .stdout.trim().split(' ');
const record = fs.existsSync(RECORD) ? JSON.parse(fs.readFileSync(RECORD, 'utf8')) : {};
record.notebooks = {
  hashes: Object.fromEntries(HASHED.map((f) => [f, fnv1a64(fs.readFileSync(path.join(root, f)))])),
  python: versions[0], torch: versions[1], matplotlib: versions[2], nbclient: versions[3],
  tolerance: TOLERANCE, steps: STEPS, cases: results, passed: failed === 0 && results.length > 0,
};
if (!only.length) fs.writeFileSync(RECORD, `${JSON.stringify(record, null, 2)}\n`);
console.log(`notebooks: ${results.length - failed} passed, ${failed} failed${only.length ? ' (a subset: the record is not written)' : `; written to ${path.relative(root, RECORD)}`}`);
process.exit(failed === 0 && results.length > 0 ? 0 : 1);

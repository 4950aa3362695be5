// What a learner does first, checked in each engine (drivers.mjs): the explorer's heatmaps,
// Play with a falling loss, the stepper's every stage, a claim run to its plot, a checkpoint
// downloaded and loaded back, a reload that keeps the model, Generate on a next-token model, a
// model opened from a web address (and each way that fails), an embed and a course's archive
// of one, and no page error on the way. Everything runs inside the page through the session's `run`, so one
// text serves every driver; waits are bounded by steps and states, with a watchdog for a hang.
import path from 'node:path';
import { keptInPage, WCAG, AXE } from '../harness.mjs';
import { stageName } from '../names.mjs';
import { WEBKIT_RENDERING } from './drivers.mjs';

/// Helpers defined in the page for every check (serialised with the check's own source).
/// `test` may return a promise (as `kept` does).
function pageHelpers() {
  const HANG_MS = 240000;
  const waitFor = (what, test) => new Promise((resolve, reject) => {
    const t0 = performance.now();
    const poll = async () => {
      let value;
      try { value = await test(); } catch (e) { reject(e); return; }
      if (value) resolve(value);
      else if (performance.now() - t0 > HANG_MS) reject(new Error(`hung: still waiting for ${what}`));
      else setTimeout(poll, 50);
    };
    poll();
  });
  const button = (name) => [...document.querySelectorAll('button')].find((b) => b.textContent.trim() === name);
  const click = async (name) => {
    const b = await waitFor(`an enabled "${name}" button`, () => { const x = button(name); return x && !x.disabled && x; });
    b.click();
  };
  const step = () => Number(document.querySelector('[data-step]')?.dataset.step);
  /// The app at `url` in a 390 × 844 frame over the page, once its first heatmap is drawn and
  /// nothing is busy: a layout viewport of a phone's size (a desktop window may not shrink to it).
  const phoneFrame = async (url) => {
    const frame = Object.assign(document.createElement('iframe'), { className: 'phone-test-frame', width: '390', height: '844', src: url, title: 'the page at 390 px' });
    Object.assign(frame.style, { position: 'fixed', left: '0', top: '0', zIndex: '1000', border: '0', background: '#fff' });
    document.body.append(frame);
    const inner = () => frame.contentDocument;
    await waitFor('the app in the frame', () => inner()?.querySelector('figure.heatmap canvas') && !inner().querySelector('.busy'));
    return frame;
  };
  /// The stepper's stage on screen, by its data-stage (protocol::stage::Stage::name).
  const stage = () => document.querySelector('.stepper .step[aria-current="step"]')?.dataset.stage;
  const ready = () => waitFor('the first heatmap, nothing busy', () =>
    document.querySelector('figure.heatmap canvas') && !document.querySelector('.busy') && document.querySelector('button.play'));
  const problems = () => {
    const found = [...(window.__problems || [])];
    for (const sel of ['.crashed', '.boot-failed']) {
      const el = document.querySelector(sel);
      if (el) found.push(`${sel}: ${el.textContent}`);
    }
    return found;
  };
  const select = (label, value) => {
    const el = [...document.querySelectorAll('label')].find((l) => l.textContent.trim().startsWith(label))?.querySelector('select');
    if (!el) throw new Error(`no select labelled ${label}`);
    el.value = value;
    el.dispatchEvent(new Event('change', { bubbles: true }));
  };
  /// Goes back to the stepper's first stage, each Previous awaited until its stage is on screen.
  const firstStage = async () => {
    while (!button('Previous').disabled) {
      const before = stage();
      button('Previous').click();
      await waitFor('the stage before', () => stage() !== before);
    }
  };
  return { waitFor, button, click, step, stage, ready, problems, select, firstStage, phoneFrame };
}

/// Records errors from here on (console.error, uncaught errors, rejections): the harness cannot
/// listen before the page loads in every driver, and the page shows its own load failures.
const listen = () => {
  if (window.__problems) return;
  window.__problems = [];
  const error = console.error.bind(console);
  console.error = (...args) => { window.__problems.push(`console error: ${args.join(' ')}`); error(...args); };
  addEventListener('error', (e) => window.__problems.push(`page error: ${e.message}`));
  addEventListener('unhandledrejection', (e) => window.__problems.push(`unhandled rejection: ${e.reason}`));
  document.addEventListener('securitypolicyviolation', (e) => window.__problems.push(`CSP violation: ${e.violatedDirective} ${e.blockedURI}`));
};

const inPage = (session) => (fn, arg) =>
  session.run(`async (arg) => { const h = { ...(${pageHelpers})(), kept: ${keptInPage} }; return (${fn})(h, arg); }`, arg);

export const checks = [
  {
    name: 'the explorer shows its heatmaps, from the worker build this browser compiles',
    async run({ session, run, artifacts, expectBuild }) {
      const r = await run(async (h) => {
        await h.ready();
        const canvases = [...document.querySelectorAll('figure.heatmap canvas')];
        const hasInk = (c) => {
          const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
          for (let i = 0; i < d.length; i += 4) if (d[i + 3] > 0 && (d[i] < 250 || d[i + 1] < 250 || d[i + 2] < 250)) return true;
          return false;
        };
        // The figures are drawn in tasks of their own after they appear (src/paint.rs).
        await h.waitFor('a drawn heatmap', () => canvases.some(hasInk));
        const inked = canvases.filter(hasInk).length;
        return { heatmaps: canvases.length, inked, build: document.documentElement.dataset.workerSimd, problems: h.problems() };
      });
      await session.screenshot(path.join(artifacts, `engine-${session.name.toLowerCase()}-1280.png`));
      if (r.heatmaps === 0 || r.inked === 0) throw new Error(`heatmaps: ${r.heatmaps}, with ink: ${r.inked}`);
      if (r.build !== expectBuild) throw new Error(`worker build ${r.build}, expected ${expectBuild}`);
      if (r.problems.length) throw new Error(r.problems.join('\n'));
      // WebKit's test rendering (drivers.mjs) keeps its web process off OpenGL: no thread of it
      // paints or composites on the GPU.
      const onGpu = session.renderingThreads().filter((t) => /SkiaGPU|llvmpipe|Compositor/.test(t));
      if (WEBKIT_RENDERING === 'cpu-no-compositing' && onGpu.length) throw new Error(`GPU threads in the web process: ${onGpu.join(', ')}`);
      return `${r.heatmaps} heatmaps, worker build ${r.build}${session.name === 'WebKit' ? `; ${onGpu.length ? `GPU threads: ${onGpu.join(', ')}` : 'no GPU painting or compositing thread'}` : ''}`;
    },
  },
  {
    // The suite's recovery, proved on every run: the page is killed mid-check (WebKit's web
    // process, or Firefox's browser), and the check must then run again in a new session and
    // pass, and every later check with it. The page tells the runner it is mid-check by asking
    // the server for `?mid-check`.
    name: 'a check whose page dies under it runs again in a new session, from a fresh page',
    kills: true,
    async run({ session, run, host, attempt }) {
      if (attempt === 1) {
        const from = host.log().length;
        const training = run(async (h) => {
          await h.click('Play');
          await h.waitFor('step 20', () => h.step() >= 20);
          await fetch('./index.html?mid-check', { cache: 'no-store' });
          await h.waitFor('this page to be killed', () => false);
        });
        const signalled = (async () => {
          for (let i = 0; i < 6000; i++) {
            if (host.log().slice(from).some((r) => r.search === '?mid-check')) return 'mid-check';
            await new Promise((resolve) => setTimeout(resolve, 50));
          }
          return 'no signal';
        })();
        const first = await Promise.race([training.then(() => 'ended'), signalled]);
        if (first !== 'mid-check') throw new Error(`the page ${first === 'ended' ? 'ended its script' : 'never said it was training'} before it was killed`);
        session.crashPage();
        await training;
        throw new Error('the page outlived its kill');
      }
      const r = await run(async (h) => {
        const opened = { step: h.step(), figures: document.querySelectorAll('figure.heatmap canvas').length };
        await h.click('Play');
        await h.waitFor('20 steps', () => h.step() >= opened.step + 20);
        await h.click('Pause');
        await h.waitFor('Play enabled again', () => !h.button('Play').disabled);
        return { opened, step: h.step(), problems: h.problems() };
      });
      if (r.problems.length) throw new Error(r.problems.join('\n'));
      return `killed while training; the new session opened at step ${r.opened.step} with ${r.opened.figures} heatmaps and trained to step ${r.step}`;
    },
  },
  {
    name: 'Play trains, with a falling loss; Pause keeps the step',
    async run({ run }) {
      const r = await run(async (h) => {
        const loss = () => Number(document.querySelector('p.readout')?.dataset.smoothedLoss);
        await h.click('Play');
        await h.waitFor('step 10', () => h.step() >= 10 && Number.isFinite(loss()));
        const first = { step: h.step(), loss: loss() };
        await h.waitFor('step 300', () => h.step() >= 300);
        const last = { step: h.step(), loss: loss() };
        await h.click('Pause');
        await h.waitFor('Play enabled again', () => !h.button('Play').disabled);
        return { first, last, problems: h.problems() };
      });
      if (!(r.last.loss < r.first.loss)) throw new Error(`the loss did not fall: ${JSON.stringify(r)}`);
      if (r.problems.length) throw new Error(r.problems.join('\n'));
      return `loss ${r.first.loss.toFixed(3)} at step ${r.first.step} → ${r.last.loss.toFixed(3)} at step ${r.last.step}`;
    },
  },
  {
    name: 'two workers train (the training worker starts a gradient worker), with a falling loss',
    async run({ run }) {
      const r = await run(async (h) => {
        const loss = () => Number(document.querySelector('p.readout')?.dataset.smoothedLoss);
        h.select('Workers', '2');
        await h.waitFor('the header saying 2 workers', () => document.querySelector('.workers-facts')?.dataset.workers === '2');
        const start = h.step();
        await h.click('Play');
        await h.waitFor('10 more steps', () => h.step() >= start + 10 && Number.isFinite(loss()));
        const first = { step: h.step(), loss: loss() };
        await h.waitFor('200 more steps', () => h.step() >= start + 200);
        const last = { step: h.step(), loss: loss() };
        await h.click('Pause');
        await h.waitFor('Play enabled again', () => !h.button('Play').disabled);
        const header = document.querySelector('.workers-facts').textContent;
        return { first, last, header, problems: h.problems() };
      });
      if (!(r.last.loss < r.first.loss)) throw new Error(`the loss did not fall: ${JSON.stringify(r)}`);
      if (r.problems.length) throw new Error(r.problems.join('\n'));
      return `"${r.header}": loss ${r.first.loss.toFixed(3)} at step ${r.first.step} → ${r.last.loss.toFixed(3)} at step ${r.last.step}`;
    },
  },
  {
    name: 'Workers auto measures, then settles on a count and says why',
    async run({ run }) {
      const r = await run(async (h) => {
        const facts = () => document.querySelector('.workers-facts');
        const cores = navigator.hardwareConcurrency;
        const most = Math.min(Math.max(cores - 1, 1), 4);
        h.select('Workers', 'auto');
        // With more than one worker possible, Auto measures: it alternates one worker and the
        // most it may use for a few rounds of steps, then settles.
        await h.waitFor('Auto taken up', () => facts()?.textContent.includes(most > 1 ? 'measuring' : 'core'));
        const start = h.step();
        await h.click('Play');
        await h.waitFor('a settled count', () => !facts().textContent.includes('measuring') && h.step() > start + 40);
        await h.click('Pause');
        await h.waitFor('Play enabled again', () => !h.button('Play').disabled);
        return { cores, header: facts().textContent, workers: Number(facts().dataset.workers), problems: h.problems() };
      });
      if (r.problems.length) throw new Error(r.problems.join('\n'));
      const most = Math.min(Math.max(r.cores - 1, 1), 4);
      if (r.workers !== 1 && r.workers !== most) throw new Error(`auto chose ${r.workers} workers of at most ${most}: ${r.header}`);
      if (r.workers < most && !r.header.includes(':')) throw new Error(`fewer than ${most} workers, and no reason: ${r.header}`);
      return `hardwareConcurrency ${r.cores}: "${r.header}"`;
    },
  },
  {
    name: 'the stepper walks every stage',
    async run({ run }) {
      const r = await run(async (h) => {
        const title = () => document.querySelector('.stage-title').textContent;
        await h.firstStage();
        const seen = [];
        for (;;) {
          await h.waitFor('the stage\'s heatmaps', () => document.querySelector('.stage-panel figure.heatmap[data-figure]'));
          seen.push({ stage: h.stage(), title: title() });
          if (h.button('Next').disabled) break;
          const before = h.stage();
          h.button('Next').click();
          await h.waitFor('the next stage', () => h.stage() !== before);
        }
        return { seen, problems: h.problems() };
      });
      const last = r.seen[r.seen.length - 1];
      if (r.seen.length !== 13 || last.stage !== stageName('output-add-norm') || !/^Step 12 of 12/.test(last.title)) {
        throw new Error(`stages: ${r.seen.map((s) => `${s.stage}: ${s.title}`).join(' | ')}`);
      }
      if (r.problems.length) throw new Error(r.problems.join('\n'));
      return `${r.seen.length} stages`;
    },
  },
  {
    name: 'the stepper\'s PyTorch view quotes each stage\'s lines with its tensors\' shapes, and Open in PyTorch gives a notebook',
    async run({ run }) {
      const r = await run(async (h) => {
        const details = document.querySelector('details.pytorch');
        if (!details.open) details.querySelector('summary').click();
        await h.waitFor('the module\'s code', () => document.querySelector('pre[data-code="pytorch"]'));
        await h.firstStage();
        const seen = [];
        for (;;) {
          const view = await h.waitFor('the stage\'s code and figure', () => {
            const pre = document.querySelector('pre[data-code="pytorch"]');
            const figure = pre && document.querySelector(`.stage-panel figure.heatmap[data-figure="${pre.dataset.figure}"]`);
            return figure && { pre, figure };
          });
          const shape = JSON.parse(view.pre.dataset.shapes)[view.pre.dataset.tensor];
          const m = JSON.parse(view.figure.dataset.matrix);
          const lit = view.pre.querySelectorAll('.line.lit').length;
          seen.push({ figure: view.pre.dataset.figure, shape, size: [m.length, m[0].length], lit });
          if (h.button('Next').disabled) break;
          const before = h.stage();
          h.button('Next').click();
          await h.waitFor('the next stage', () => h.stage() !== before);
        }
        // The notebook: caught as it is handed over, read as JSON.
        const blobs = new Map();
        const click = HTMLAnchorElement.prototype.click;
        const createObjectURL = URL.createObjectURL;
        let notebook = null;
        URL.createObjectURL = (blob) => { const url = createObjectURL(blob); blobs.set(url, blob); return url; };
        HTMLAnchorElement.prototype.click = function () {
          if (this.download) notebook = { name: this.download, blob: blobs.get(this.href) };
          else click.call(this);
        };
        await h.click('Open in PyTorch');
        await h.waitFor('the notebook', () => notebook);
        HTMLAnchorElement.prototype.click = click;
        URL.createObjectURL = createObjectURL;
        const nb = JSON.parse(await notebook.blob.text());
        const sources = nb.cells.map((c) => c.source.join(''));
        return { seen, name: notebook.name, nbformat: nb.nbformat, cells: nb.cells.length,
          classes: sources.some((t) => t.includes('class ScaledDotProductAttention')),
          problems: h.problems(), width: document.documentElement.scrollWidth };
      });
      const wrong = r.seen.filter((s) => !s.lit || !s.shape || s.shape.slice(-2).join() !== s.size.join());
      if (r.seen.length !== 13 || wrong.length) throw new Error(`code views: ${JSON.stringify(wrong.length ? wrong : r.seen)}`);
      if (!/^attention-lab-[a-z0-9-]+-step\d+\.ipynb$/.test(r.name) || r.nbformat !== 4 || !r.classes) {
        throw new Error(`notebook ${r.name}: nbformat ${r.nbformat}, ${r.cells} cells, module in it: ${r.classes}`);
      }
      if (r.problems.length) throw new Error(r.problems.join('\n'));
      return `13 stages, each figure's tensor of its size; ${r.name} (${r.cells} cells)`;
    },
  },
  {
    name: 'claims run to their plots',
    async run({ run }) {
      const r = await run(async (h) => {
        const card = () => document.querySelector('article.claim[data-claim="Leakage"]');
        [...card().querySelectorAll('button')].find((b) => b.textContent.trim() === 'Run').click();
        await h.waitFor('the claim to end', () => ['done', 'failed'].includes(card().dataset.state));
        const series = JSON.parse(card().querySelector('figure.claim-chart')?.dataset.series || '[]');
        return { state: card().dataset.state, error: card().querySelector('.error')?.textContent, series, problems: h.problems() };
      });
      if (r.state !== 'done') throw new Error(`Leakage: ${r.state} ${r.error}`);
      const causal = r.series.find((s) => s.name === 'Causal');
      if (!causal || !causal.y.length || causal.y[0] !== 0) throw new Error(`series: ${JSON.stringify(r.series).slice(0, 300)}`);
      if (r.problems.length) throw new Error(r.problems.join('\n'));
      // Scaling (√d_k): several plots in one card, the largest weight's without ÷√d_k near 1.
      const sc = await run(async (h) => {
        const card = () => document.querySelector('article.claim[data-claim="Scaling"]');
        [...card().querySelectorAll('button')].find((b) => b.textContent.trim() === 'Run').click();
        await h.waitFor('the Scaling claim to end', () => ['done', 'failed'].includes(card().dataset.state));
        const plots = [...card().querySelectorAll('figure.claim-chart')].map((f) => JSON.parse(f.dataset.series || '[]'));
        return { state: card().dataset.state, error: card().querySelector('.error')?.textContent, plots, problems: h.problems() };
      });
      if (sc.state !== 'done') throw new Error(`Scaling: ${sc.state} ${sc.error}`);
      const none = sc.plots[1]?.find((s) => s.name === 'None');
      if (sc.plots.length !== 4 || !(none?.y.at(-1) > 0.9)) throw new Error(`Scaling: ${JSON.stringify(sc.plots).slice(0, 300)}`);
      if (sc.problems.length) throw new Error(sc.problems.join('\n'));
      return `Leakage: ${r.series.length} series of ${causal.y.length} points; Scaling: ${sc.plots.length} plots, largest weight at d_k = 1024 without ÷√d_k ${none.y.at(-1).toFixed(3)}`;
    },
  },
  {
    name: 'a checkpoint downloads, and loads back',
    async run({ run }) {
      const r = await run(async (h) => {
        // Catch the download links: their blobs become the files picked for "Load checkpoint".
        // (The page's CSP allows no fetch of a blob: URL, so the blobs are caught as they get one.)
        const links = [];
        const blobs = new Map();
        const click = HTMLAnchorElement.prototype.click;
        const createObjectURL = URL.createObjectURL;
        URL.createObjectURL = (blob) => { const url = createObjectURL(blob); blobs.set(url, blob); return url; };
        HTMLAnchorElement.prototype.click = function () {
          if (this.download) links.push({ name: this.download, blob: blobs.get(this.href) });
          else click.call(this);
        };
        const step = h.step();
        await h.click('Download checkpoint');
        await h.waitFor('four files', () => links.length >= 4);
        HTMLAnchorElement.prototype.click = click;
        URL.createObjectURL = createObjectURL;
        const files = links.map((l) => new File([l.blob], l.name));
        const picked = new DataTransfer();
        files.forEach((f) => picked.items.add(f));
        const input = document.querySelector('.load-checkpoint input[type=file]');
        input.files = picked.files;
        input.dispatchEvent(new Event('change', { bubbles: true }));
        await h.waitFor('the files read', () => document.querySelector('.load-checkpoint .loaded, .load-checkpoint .error'));
        const read = document.querySelector('.load-checkpoint .loaded, .load-checkpoint .error');
        if (read.classList.contains('error')) throw new Error(`load: ${read.textContent}`);
        await h.waitFor('the loaded model', () => !document.querySelector('.busy'));
        await h.ready();
        return { names: links.map((l) => l.name).sort(), sizes: files.map((f) => f.size), step, after: h.step(),
          read: read.textContent, problems: h.problems() };
      });
      if (r.names.join() !== 'config.json,model.safetensors,tokenizer_config.json,vocab.txt') throw new Error(`files: ${r.names}`);
      if (r.problems.length) throw new Error(r.problems.join('\n'));
      return `${r.names.length} files (${r.sizes.reduce((a, b) => a + b, 0)} bytes) at step ${r.step}; "${r.read}"`;
    },
  },
  {
    name: 'a reload keeps the model',
    async run({ session, run }) {
      const before = await run(async (h) => {
        const start = h.step();
        await h.click('Step');
        await h.waitFor('one more step', () => h.step() > start);
        const step = h.step();
        // Step leaves it paused, which keeps the model (then the page its curves).
        await h.waitFor(`the model at step ${step} kept`, async () => {
          const kept = await h.kept();
          return kept.model === step && kept.curves === step;
        });
        return step;
      });
      await session.reload();
      await run(`${listen}`);
      const after = await run(async (h) => { await h.ready(); await h.waitFor('a step count', () => Number.isFinite(h.step())); return { step: h.step(), problems: h.problems() }; });
      if (after.step !== before) throw new Error(`step ${before} before the reload, ${after.step} after`);
      if (after.problems.length) throw new Error(after.problems.join('\n'));
      return `step ${before} kept`;
    },
  },
  {
    name: 'Generate writes tokens for a next-token model',
    async run({ session, run, artifacts }) {
      const r = await run(async (h) => {
        h.select('Objective', 'next-token');
        await h.waitFor('a decoder', () => document.querySelector('header')?.textContent.includes('decoder'));
        await h.ready();
        await h.click('Play');
        const start = h.step();
        await h.waitFor('400 steps', () => h.step() >= start + 400);
        await h.click('Pause');
        await h.waitFor('Play enabled again', () => !h.button('Play').disabled);
        await h.click('Generate');
        const out = () => document.querySelector('[data-generated]');
        await h.waitFor('generated tokens', () => out()?.dataset.running === 'false' && JSON.parse(out().dataset.generated).length > 0);
        return { tokens: JSON.parse(out().dataset.generated), problems: h.problems() };
      });
      await session.screenshot(path.join(artifacts, `engine-${session.name.toLowerCase()}-generate.png`));
      if (r.problems.length) throw new Error(r.problems.join('\n'));
      return `${r.tokens.length} tokens: ${r.tokens.map((t) => t.token ?? t).join(' ').slice(0, 80)}`;
    },
  },
  {
    name: 'the tour: chapter 1 answered from the weights on screen, Next, Esc; the address and Copy link hold the view',
    async run({ session, run, artifacts }) {
      const r = await run(async (h) => {
        const tour = () => document.querySelector('aside.tour');
        await h.click('Tour');
        await h.waitFor('the tour', () => tour()?.dataset.tourChapter === '1');
        // Chapter 1 plays; its question is answered paused, so the weights hold still.
        const pause = [...tour().querySelectorAll('button')].find((b) => b.textContent.trim() === 'Pause');
        if (pause) pause.click();
        await h.waitFor('paused', () => !h.button('Play').disabled);
        await h.waitFor('the outlined figure', () => document.querySelector('[data-tour-focus]'));
        await h.waitFor('choices', () => tour().querySelector('[data-tour-choice]'));
        const chips = [...document.querySelectorAll('ol.tokens > li')].map((li) => li.firstChild.textContent.trim());
        const m = chips.indexOf('[MASK]');
        const row = JSON.parse(document.querySelector('.summary figure.heatmap').dataset.matrix)[m];
        const best = row.reduce((b, v, i) => (v !== null && (b < 0 || v > row[b]) ? i : b), -1);
        const label = chips.filter((t) => t === chips[best]).length > 1 ? `${chips[best]} (${best})` : chips[best];
        tour().querySelector(`[data-tour-choice="${CSS.escape(label)}"]`).click();
        await h.waitFor('✓', () => tour().dataset.tourAnswered === 'true');
        const said = tour().querySelector('.tour-outcome').textContent;
        [...tour().querySelectorAll('button')].find((b) => b.textContent.trim() === 'Next').click();
        await h.waitFor('chapter 2', () => tour().dataset.tourChapter === '2' && location.search.includes('tour=2'));
        const address = location.search;
        const link = document.querySelector('button.copy-link').dataset.link;
        document.dispatchEvent(new KeyboardEvent('keydown', { key: 'Escape', bubbles: true }));
        await h.waitFor('the tour closed', () => !tour());
        // What was queued for the chapter before Esc (tasks.rs `next_task`: a message on a
        // MessageChannel) must not outline again: a message posted now is handled after it.
        await new Promise((r) => { const c = new MessageChannel(); c.port2.onmessage = r; c.port1.postMessage(null); });
        const outlined = document.querySelectorAll('[data-tour-focus]').length;
        return { outlined, label, said, address, link, href: location.href, problems: h.problems() };
      });
      await session.screenshot(path.join(artifacts, `engine-${session.name.toLowerCase()}-tour.png`));
      if (!r.said.startsWith('✓')) throw new Error(`answer ${r.label}: ${r.said}`);
      if (r.outlined !== 0) throw new Error(`${r.outlined} elements stay outlined after Esc`);
      if (!r.address.includes('stage=embeddings')) throw new Error(`the address ${r.address} lacks chapter 2's stage`);
      if (!r.link.endsWith(r.address)) throw new Error(`Copy link holds ${r.link}, the address is ${r.address}`);
      if (r.problems.length) throw new Error(r.problems.join('\n'));
      return `${r.label}: ${r.said.slice(0, 60)}…; ${r.address.slice(0, 60)}`;
    },
  },
  {
    name: 'axe-core finds no WCAG A/AA violation (as it opens, PyTorch view, a claim run, tour, dark colour scheme, 390 px); a heatmap is read by keyboard, its cell announced with its data-matrix value',
    async run({ run, baseUrl }) {
      const r = await run(async (h, { axePath, tags, url }) => {
        await h.ready();
        // A script of the page's own origin, as its policy allows (run.mjs serves it).
        const load = (doc) => new Promise((resolve, reject) => {
          const script = Object.assign(doc.createElement('script'), { src: axePath });
          script.onload = resolve;
          script.onerror = () => reject(new Error(`axe-core did not load from ${axePath}`));
          doc.head.append(script);
        });
        const violations = [];
        const scan = async (state, win = window) => {
          const result = await win.axe.run(win.document, { runOnly: { type: 'tag', values: tags } });
          for (const v of result.violations) violations.push(`${state}: ${v.id} ×${v.nodes.length}: ${v.help} (${v.nodes[0].target.join(' ')})`);
        };
        await load(document);
        await scan('as it opens');
        const code = document.querySelector('details.pytorch');
        code.open = true;
        await h.waitFor('the PyTorch view', () => document.querySelector('pre[data-code="pytorch"]'));
        await scan('the PyTorch view open');
        const card = document.querySelector('article.claim[data-claim="KvCache"]');
        [...card.querySelectorAll('button')].find((b) => b.textContent.trim() === 'Run').click();
        await h.waitFor('the KV cache claim run', () => card.dataset.state === 'done');
        await scan('a claim run');
        await h.click('Tour');
        await h.waitFor('the tour', () => document.querySelector('aside.tour h2'));
        await scan('the tour open');
        document.querySelector('aside.tour .tour-close').click();
        await h.waitFor('the tour closed', () => !document.querySelector('aside.tour'));
        // Chapter 1 trains; the keyboard's readout below is read against a still matrix. Pause
        // is found and pressed in one turn of the page, only while it can be.
        const pause = h.button('Pause');
        if (pause && !pause.disabled) pause.click();
        await h.waitFor('Play enabled again', () => !h.button('Play').disabled);
        // The dark colour scheme: a driver cannot ask the browser for it, so the page's own
        // rules for it are applied as the browser would apply them. With none, and no
        // `color-scheme` that lets the browser darken its controls, the page a dark-scheme
        // user sees is the one scanned as it opened.
        const dark = [...document.styleSheets].flatMap((sheet) => [...sheet.cssRules])
          .filter((rule) => rule instanceof CSSMediaRule && rule.conditionText.includes('prefers-color-scheme: dark'))
          .flatMap((rule) => [...rule.cssRules].map((inner) => inner.cssText));
        const scheme = getComputedStyle(document.documentElement).colorScheme;
        let darkScheme = 'the same page (no dark rules, color-scheme "' + scheme + '")';
        if (dark.length || scheme.includes('dark')) {
          const style = Object.assign(document.createElement('style'), { textContent: dark.join('\n') });
          document.head.append(style);
          await scan('dark colour scheme');
          style.remove();
          darkScheme = `${dark.length} dark rules applied`;
        }
        const frame = await h.phoneFrame(url);
        await load(frame.contentDocument);
        await scan('390 px wide', frame.contentWindow);
        frame.remove();
        const fig = document.querySelector('figure.heatmap[data-figure="summary-weights"]');
        fig.focus();
        const matrix = JSON.parse(fig.dataset.matrix);
        const read = [];
        for (const key of ['ArrowDown', 'ArrowRight', 'End']) {
          fig.dispatchEvent(new KeyboardEvent('keydown', { key, bubbles: true, cancelable: true }));
          const out = await h.waitFor(`the readout after ${key}`, () => {
            const o = fig.querySelector('[aria-live]');
            return o && o.textContent && o;
          });
          read.push({ key, row: Number(out.dataset.row), col: Number(out.dataset.col), text: out.textContent });
        }
        return { violations, read, darkScheme, focusable: fig.tabIndex === 0, focused: document.activeElement === fig, matrix, problems: h.problems() };
      }, { axePath: AXE.path, tags: WCAG, url: baseUrl });
      if (r.violations.length) throw new Error(`${r.violations.length} violations:\n  ${r.violations.join('\n  ')}`);
      if (!r.focusable || !r.focused) throw new Error(`the heatmap: tabindex 0 ${r.focusable}, focused ${r.focused}`);
      const cols = r.matrix[0].length;
      const want = [[1, 0], [1, 1], [1, cols - 1]];
      r.read.forEach((got, i) => {
        const [row, col] = want[i];
        const v = r.matrix[row][col];
        const value = v === null ? '−∞ (masked)' : v === 0 ? '0 (exactly)' : v.toFixed(6);
        if (got.row !== row || got.col !== col || !got.text.endsWith(`= ${value}`)) {
          throw new Error(`${got.key}: the readout is at ${got.row},${got.col} "${got.text}", not ${row},${col} = ${value}`);
        }
      });
      if (r.problems.length) throw new Error(r.problems.join('\n'));
      return `no violation in 6 states (dark colour scheme: ${r.darkScheme}); ${r.read.map((x) => x.text).join(' | ')}`;
    },
  },
  {
    // A desktop browser's window may not shrink to a phone's width (the MiniBrowser stops at
    // about 450 px), so the page opens again in a 390 × 844 frame: a layout viewport of exactly
    // that size, as on a phone.
    name: 'no page errors, and nothing scrolls sideways at 390 × 844',
    async run({ session, run, baseUrl, artifacts }) {
      const r = await run(async (h, url) => {
        const frame = await h.phoneFrame(url);
        const root = frame.contentDocument.documentElement;
        // clientWidth leaves out a classic scrollbar (Firefox's is 12 px): the viewport is innerWidth.
        return { width: root.scrollWidth, client: root.clientWidth, viewport: frame.contentWindow.innerWidth, problems: h.problems() };
      }, baseUrl);
      await session.screenshot(path.join(artifacts, `engine-${session.name.toLowerCase()}-390.png`));
      await run(() => document.querySelector('.phone-test-frame').remove());
      if (r.problems.length) throw new Error(r.problems.join('\n'));
      if (r.viewport !== 390 || r.width > r.client) throw new Error(`the page is ${r.width} px wide in ${r.client} of a ${r.viewport} px viewport`);
      return `${r.width} px wide in ${r.client} of ${r.viewport} px`;
    },
  },
  {
    // A model from a web address (checkpoint=): run.mjs serves a checkpoint the CLI saved from
    // a second local server with CORS (models.site) and in the Hub's layout (models.hub).
    name: 'a model from a web address: a CLI checkpoint with CORS opens through checkpoint= as Load checkpoint opens its files; hf:ORG/NAME from a Hub-layout server; a second visit downloads no file again',
    async run({ session, run, baseUrl, models }) {
      const address = `${models.site.url}/cli/`;
      const visit = async (url) => {
        await session.goto(url);
        await run(`${listen}`);
        return run(async (h) => {
          await h.ready();
          const figure = await h.waitFor('a drawn first heatmap', () => document.querySelector('figure.heatmap[data-matrix]'));
          return {
            matrix: figure.dataset.matrix,
            name: document.querySelector('header .model-name')?.textContent,
            step: h.step(),
            link: decodeURIComponent(document.querySelector('button.copy-link')?.dataset.link || ''),
            failure: document.querySelector('[data-checkpoint-failure]')?.textContent,
            problems: h.problems(),
          };
        });
      };
      const from = models.site.log.length;
      const url = `${baseUrl}?checkpoint=${encodeURIComponent(address)}`;
      const first = await visit(url);
      const firstFiles = models.requests(models.site, from);
      const again = await visit(url);
      const secondFiles = models.requests(models.site, from + firstFiles.seen.length);
      for (const [when, r] of [['first', first], ['second', again]]) {
        if (r.failure || r.name !== address || r.step !== 0) throw new Error(`${when} visit: ${JSON.stringify({ ...r, matrix: undefined })}`);
        if (!r.link.includes(`checkpoint=${address}`)) throw new Error(`Copy link holds ${r.link}`);
        if (r.problems.length) throw new Error(r.problems.join('\n'));
      }
      if (firstFiles.GET !== 4) throw new Error(`the first visit downloaded ${firstFiles.GET} files`);
      if (secondFiles.GET !== 0) throw new Error(`the second visit downloaded ${secondFiles.GET} files again: ${JSON.stringify(secondFiles.seen)}`);
      // The same files, picked for Load checkpoint.
      const loaded = await run(async (h, folder) => {
        const before = document.querySelector('header .model-name').textContent;
        const names = ['config.json', 'model.safetensors', 'vocab.txt', 'tokenizer_config.json'];
        const files = await Promise.all(names.map(async (f) => new File([await (await fetch(folder + f)).blob()], f)));
        const picked = new DataTransfer();
        files.forEach((f) => picked.items.add(f));
        const input = document.querySelector('.load-checkpoint input[type=file]');
        input.files = picked.files;
        input.dispatchEvent(new Event('change', { bubbles: true }));
        await h.waitFor('the loaded model', () => document.querySelector('header .model-name').textContent !== before && !document.querySelector('.busy'));
        await h.ready();
        const figure = await h.waitFor('a drawn first heatmap', () => document.querySelector('figure.heatmap[data-matrix]'));
        return { matrix: figure.dataset.matrix, problems: h.problems() };
      }, address);
      if (loaded.matrix !== first.matrix) throw new Error(`Load checkpoint's first heatmap differs: ${loaded.matrix.slice(0, 120)} against ${first.matrix.slice(0, 120)}`);
      if (loaded.problems.length) throw new Error(loaded.problems.join('\n'));
      // The Hub: its address is the test's server, through ?test-hooks.
      await run((h, hub) => localStorage.setItem('attention-lab/test-hub', hub), models.hub.url);
      const hubbed = await visit(`${baseUrl}?test-hooks&checkpoint=hf:attention-lab/tiny`);
      if (hubbed.failure || hubbed.name !== 'hf:attention-lab/tiny' || hubbed.matrix !== first.matrix) {
        throw new Error(`hf:attention-lab/tiny: ${JSON.stringify({ ...hubbed, matrix: hubbed.matrix.slice(0, 80) })}`);
      }
      await freshPage(session, baseUrl);
      return `${firstFiles.GET} files downloaded, then ${secondFiles.GET} (${secondFiles.HEAD} HEADs); Load checkpoint's heatmap the same; hf:attention-lab/tiny opened`;
    },
  },
  {
    name: 'a model from a web address that cannot open says why in one sentence (404, CORS, not a BERT, truncated, no network), and the page trains a fresh model',
    async run({ session, run, baseUrl, models }) {
      await run((h, hub) => localStorage.setItem('attention-lab/test-hub', hub), models.hub.url);
      const cases = [
        ['404', `${models.site.url}/missing/`, 'the server answered 404'],
        ['CORS', `${models.closed.url}/cli/`, '(CORS): download config.json, model.safetensors and vocab.txt from it and open them with Load checkpoint instead.'],
        ['not a BERT', 'hf:openai-community/gpt2', 'is a gpt2 model (model_type "gpt2"), not a BERT'],
        ['truncated', `${models.site.url}/truncated/`, 'is truncated: it holds'],
        ['no network', `${models.offline}/cli/`, 'there is no network, or the server is not answering.'],
      ];
      const said = [];
      for (const [what, value, says] of cases) {
        await session.goto(`${baseUrl}?test-hooks&checkpoint=${encodeURIComponent(value)}`);
        await run(`${listen}`);
        const r = await run(async (h) => {
          // Bounded well inside the watchdog, saying what the page shows instead.
          const t0 = performance.now();
          let failure = null;
          while (!(failure = document.querySelector('[data-checkpoint-failure]'))) {
            if (performance.now() - t0 > 60000) {
              const shown = document.querySelector('.model-download')?.textContent ?? 'no download box';
              throw new Error(`no failure's sentence after 60 s; the page shows: ${shown.slice(0, 200)}; step ${h.step()}; ${h.problems().join(' | ')}`);
            }
            await new Promise((r) => setTimeout(r, 100));
          }
          await h.ready();
          const start = h.step();
          await h.click('Play');
          await h.waitFor('5 steps of a fresh model', () => h.step() >= start + 5).catch((e) => {
            const shown = [...document.querySelectorAll('.busy, [role="alert"], .notice, .error')].map((n) => n.textContent.trim()).filter(Boolean);
            throw new Error(`${e.message}: at step ${h.step()} (from ${start}), Play ${h.button('Play').disabled ? 'pressed' : 'not pressed'}; the page shows: ${shown.join(' | ').slice(0, 400) || 'no busy line, alert or notice'}; ${h.problems().join(' | ')}`);
          });
          await h.click('Pause');
          await h.waitFor('Play enabled again', () => !h.button('Play').disabled);
          return { sentence: failure.textContent, address: location.search, step: h.step(), problems: h.problems() };
        }).catch((e) => { if (e.name === 'SessionDied') throw e; throw new Error(`${what}: ${e.message}`); });
        if (!r.sentence.includes(says)) throw new Error(`${what}: "${r.sentence}"`);
        if (r.address.includes('checkpoint=')) throw new Error(`${what}: the address still asks for the model: ${r.address}`);
        if (r.problems.length) throw new Error(`${what}: ${r.problems.join('\n')}`);
        said.push(`${what}: step ${r.step}`);
      }
      await freshPage(session, baseUrl);
      return said.join('; ');
    },
  },
  {
    name: 'an embed with checkpoint= shows the model at step 0; "Prepare for a course" gives a zip whose folder opens through checkpoint=',
    async run({ session, run, baseUrl, models }) {
      const address = `${models.site.url}/cli/`;
      await session.goto(`${baseUrl}?stage=softmax&checkpoint=${encodeURIComponent(address)}`);
      await run(`${listen}`);
      const whole = await run(async (h) => {
        await h.ready();
        const figure = await h.waitFor('the stage\'s first heatmap', () => document.querySelector('.stage-panel figure.heatmap[data-matrix]'));
        const code = document.querySelector('button.copy-embed').dataset.embedCode;
        return { matrix: figure.dataset.matrix, src: code.match(/src="([^"]+)"/)[1].replaceAll('&amp;', '&') };
      });
      if (!decodeURIComponent(whole.src).includes(`checkpoint=${address}`)) throw new Error(`the embed code's address: ${whole.src}`);
      const embedded = async (src) => {
        await session.goto(src);
        await run(`${listen}`);
        return run(async (h) => {
          const figure = await h.waitFor('the embed\'s first heatmap', () => !document.querySelector('.busy') && document.querySelector('.stage-panel figure.heatmap[data-matrix] canvas') && document.querySelector('.stage-panel figure.heatmap[data-matrix]'));
          return { matrix: figure.dataset.matrix, step: h.step(), embed: document.querySelector('.embed')?.dataset.embed, problems: h.problems() };
        });
      };
      const shown = await embedded(whole.src);
      if (shown.embed !== '' || shown.step !== 0 || shown.matrix !== whole.matrix || shown.problems.length) {
        throw new Error(`the embed: ${JSON.stringify({ ...shown, matrix: shown.matrix === whole.matrix })}`);
      }
      // A model trained here, prepared for a course: the archive caught as it is handed over.
      await freshPage(session, baseUrl);
      const packed = await run(async (h) => {
        const start = h.step();
        await h.click('Play');
        await h.waitFor('20 steps', () => h.step() >= start + 20);
        await h.click('Pause');
        await h.waitFor('Play enabled again', () => !h.button('Play').disabled);
        const blobs = new Map();
        const click = HTMLAnchorElement.prototype.click;
        const createObjectURL = URL.createObjectURL;
        let archive = null;
        URL.createObjectURL = (blob) => { const url = createObjectURL(blob); blobs.set(url, blob); return url; };
        HTMLAnchorElement.prototype.click = function () {
          if (this.download) archive = { name: this.download, blob: blobs.get(this.href) };
          else click.call(this);
        };
        await h.click('Prepare for a course');
        await h.waitFor('the archive', () => archive);
        HTMLAnchorElement.prototype.click = click;
        URL.createObjectURL = createObjectURL;
        // The figure at the step packed: the worker sent it before the files.
        const matrix = document.querySelector('.stage-panel figure.heatmap[data-matrix]').dataset.matrix;
        const bytes = new Uint8Array(await archive.blob.arrayBuffer());
        let binary = '';
        for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
        return { name: archive.name, base64: btoa(binary), matrix, step: h.step(), problems: h.problems() };
      });
      if (packed.problems.length) throw new Error(packed.problems.join('\n'));
      const entries = models.unzip(Buffer.from(packed.base64, 'base64'));
      const folder = entries[0].name;
      if (!folder.endsWith(`-step${packed.step}/`) || !entries.some((e) => e.name === 'README.txt')) {
        throw new Error(`${packed.name}: ${entries.map((e) => e.name).join(', ')}`);
      }
      for (const e of entries) if (e.name.startsWith(folder) && e.name !== folder) models.site.put(`/${e.name}`, e.bytes);
      const course = await embedded(`${baseUrl}?embed&checkpoint=${encodeURIComponent(`${models.site.url}/${folder}`)}`);
      if (course.step !== 0 || course.matrix !== packed.matrix || course.problems.length) {
        throw new Error(`the course's folder: ${JSON.stringify({ ...course, matrix: course.matrix === packed.matrix })}`);
      }
      await freshPage(session, baseUrl);
      return `the embed at step 0 shows the whole page's figure; ${packed.name} (${entries.length} entries, ${Buffer.from(packed.base64, 'base64').length} bytes) opens at step 0 with the step-${packed.step} figure`;
    },
  },
  {
    // run.mjs serves dist/ from a sub-folder, so every check above ran there (README: Publish).
    name: 'from a sub-folder of a plain static server: no 404, nothing asked outside it, the service worker scoped to it, and the page opens from its cache with the server stopped',
    async run({ session, run, baseUrl, host }) {
      const folder = new URL(baseUrl).pathname;
      const log = host.log();
      const bad = log.filter((r) => r.status >= 400 || !r.path.startsWith(folder));
      if (bad.length) throw new Error(`the server answered ${bad.map((r) => `${r.status} for ${r.path}`).join(', ')}`);
      // Polled, as waitFor does, until the worker has kept this version's files (it is active).
      const scope = await run(async () => {
        for (let i = 0; navigator.serviceWorker && i < 4800; i++) {
          const r = await navigator.serviceWorker.getRegistration();
          if (r?.active) return r.scope;
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        return null;
      });
      if (scope !== baseUrl) throw new Error(`the service worker's scope is ${scope}, not ${baseUrl}`);
      await host.stop();
      try {
        await session.reload();
        await run(`${listen}`);
        const r = await run(async (h) => {
          await h.ready();
          const offline = await fetch('./no-such-file').then(() => 'answered', () => 'no network');
          return { heatmaps: document.querySelectorAll('figure.heatmap canvas').length, offline, problems: h.problems() };
        });
        if (r.offline !== 'no network') throw new Error(`the server still answers: ${r.offline}`);
        if (r.problems.length) throw new Error(r.problems.join('\n'));
        return `${log.length} requests, all in ${folder}; scope ${scope}; offline, ${r.heatmaps} heatmaps`;
      } finally {
        await host.start();
      }
    },
  },
];

/// A session's page as every check starts from: the app at `baseUrl`, loaded, with the problem
/// listener installed, its first heatmap drawn and nothing busy.
async function freshPage(session, baseUrl) {
  await session.goto(baseUrl);
  await inPage(session)(`${listen}`);
  await inPage(session)(async (h) => { await h.ready(); });
}

/// More deaths than this in one engine's run (not counting a check's own kill) and the rest of its checks fail at once, each
/// saying why, rather than spend CI's time on a browser that cannot stay up.
export const MOST_DEATHS = 3;

/// Runs every check, each in the page the one before left, starting from a fresh page; a failed
/// check does not stop the others. When the browser's session dies under a check (a
/// `SessionDied` from the driver: WebKitGTK's web process has crashed in CI), `reopen` gives a
/// new session, which starts from a fresh page, and the check runs once more, said in its line;
/// a second death fails it. Returns the counts, the session now open, and each death (the
/// check it came under, why, and whether the check killed the page on purpose).
export async function runChecks(session, { baseUrl, host, models, artifacts, expectBuild, log, reopen }, list = checks) {
  let passed = 0;
  let failed = 0;
  const deaths = [];
  const skipped = [];
  let unreachable = null;
  const died = (e) => e?.name === 'SessionDied';
  /// After a death: a new session with a fresh page, or why there is none.
  const renew = async () => {
    while (!unreachable) {
      const crashes = deaths.filter((d) => !d.onPurpose).length;
      if (crashes > MOST_DEATHS) { unreachable = `${session.name}'s session died ${crashes} times`; break; }
      try {
        session = await reopen(session);
        await freshPage(session, baseUrl);
        return true;
      } catch (e) {
        if (!died(e)) { unreachable = `${session.name} could not be opened again: ${String(e).split('\n')[0]}`; break; }
        deaths.push({ check: 'opening a fresh page', why: e.message, onPurpose: false });
      }
    }
    return false;
  };
  try {
    await freshPage(session, baseUrl);
  } catch (e) {
    if (!died(e)) throw e;
    deaths.push({ check: 'opening a fresh page', why: e.message, onPurpose: false });
    await renew();
  }
  for (const check of list) {
    const notHere = check.notIn?.[session.name];
    if (notHere) {
      skipped.push(check.name);
      log(`skip ${session.name} › ${check.name}\n     not run in ${session.name}: ${notHere}`);
      continue;
    }
    if (unreachable) {
      failed++;
      log(`FAIL ${session.name} › ${check.name}\n     not run: ${unreachable}`);
      continue;
    }
    const started = Date.now();
    let again = '';
    for (let attempt = 1; ; attempt++) {
      try {
        const run = inPage(session);
        const detail = await check.run({ session, run, baseUrl, host, models, artifacts, expectBuild, attempt });
        passed++;
        log(`ok   ${session.name} › ${check.name} (${Date.now() - started} ms)${again}${detail ? `: ${detail}` : ''}`);
      } catch (e) {
        if (!died(e)) {
          failed++;
          log(`FAIL ${session.name} › ${check.name}\n     ${e.stack || e}`);
          break;
        }
        const onPurpose = Boolean(check.kills) && attempt === 1;
        deaths.push({ check: check.name, why: e.message, onPurpose });
        log(`     ${e.message}, under "${check.name}"${onPurpose ? ' (killed by the check, on purpose)' : ''}${session.log() ? `; its log:\n${session.log().slice(-2000)}` : ''}`);
        const renewed = await renew();
        if (renewed && attempt === 1) {
          again = ` (again in a new session: ${onPurpose ? 'the check killed the first' : 'the first one died'})`;
          continue;
        }
        failed++;
        log(`FAIL ${session.name} › ${check.name}\n     ${attempt > 1 ? 'its session died twice' : unreachable}`);
      }
      break;
    }
  }
  return { passed, failed, skipped, session, deaths };
}

/// "WebKit 1 (1 on purpose)": an engine's deaths for the summary.
export function deathsSaid(name, deaths) {
  const purpose = deaths.filter((d) => d.onPurpose).length;
  const crashes = deaths.filter((d) => !d.onPurpose).map((d) => `under "${d.check}": ${d.why}`);
  return `${name} ${deaths.length} (${purpose} on purpose${crashes.length ? `; ${crashes.join('; ')}` : ''})`;
}

// Models from web addresses for the end-to-end tests (`checkpoint=`): a tiny checkpoint saved by
// the command line, and local servers that host it as a teacher's site does (with CORS, or
// without), as the Hugging Face Hub lays out its files, and in each way a download can fail.
// Every server logs its requests as { method, path, status }, so a test counts what was fetched.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/// The files of a checkpoint folder, in the order the page reads them.
export const FILES = ['config.json', 'vocab.txt', 'tokenizer_config.json', 'model.safetensors'];

/// A tiny BERT the CLI trains for 30 steps on the page's default corpus and saves (README: the
/// command line): `cargo run -p attention-lab-cli -- train --init … --save DIR`, built in the
/// workspace's target folder (CARGO_TARGET_DIR). Made once per process; returns DIR.
let made = null;
export function cliCheckpoint() {
  if (made) return made;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'attention-lab-cli-checkpoint-'));
  const config = path.join(dir, 'init.json');
  fs.writeFileSync(config, JSON.stringify({
    model_type: 'bert', vocab_size: 1, hidden_size: 32, num_hidden_layers: 2, num_attention_heads: 4,
    intermediate_size: 64, max_position_embeddings: 64, type_vocab_size: 2,
  }));
  const out = path.join(dir, 'model');
  execFileSync('cargo', ['run', '--quiet', '-p', 'attention-lab-cli', '--', 'train', '--init', config,
    '--corpus', path.join(root, 'engine', 'assets', 'default_corpus.txt'), '--steps', '30', '--seed', '3', '--save', out],
  { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
  for (const f of FILES) if (!fs.existsSync(path.join(out, f))) throw new Error(`the CLI saved no ${f} in ${out}`);
  made = out;
  return out;
}

/// When the files' copies were made, as the servers say (Last-Modified).
const MODIFIED = 'Sat, 05 Dec 2026 10:00:00 GMT';

/// `routes(path)` → undefined (404), a Buffer, or { status }, or { stream: { size, chunk, everyMs } }
/// (a body of `size` zero bytes sent `chunk` bytes at a time: a large, slow download).
function serve(routes, { cors = true } = {}) {
  const log = [];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    const route = routes(decodeURIComponent(url.pathname));
    const headers = cors ? { 'access-control-allow-origin': '*' } : {};
    const answer = (status, extra = {}, body) => {
      log.push({ method: req.method, path: url.pathname, status });
      res.writeHead(status, { ...headers, ...extra });
      res.end(req.method === 'HEAD' ? undefined : body);
    };
    if (route === undefined) { answer(404, { 'content-type': 'text/plain' }, 'not found'); return; }
    if (route.status) { answer(route.status, { 'content-type': 'text/plain' }, 'no'); return; }
    const plain = { 'last-modified': MODIFIED, 'content-type': 'application/octet-stream' };
    if (Buffer.isBuffer(route)) { answer(200, { ...plain, 'content-length': route.length }, route); return; }
    const { size, chunk, everyMs } = route.stream;
    log.push({ method: req.method, path: url.pathname, status: 200 });
    res.writeHead(200, { ...headers, ...plain, 'content-length': size });
    if (req.method === 'HEAD') { res.end(); return; }
    let sent = 0;
    const zeros = Buffer.alloc(chunk);
    const timer = setInterval(() => {
      const n = Math.min(chunk, size - sent);
      if (n <= 0 || res.destroyed) { clearInterval(timer); res.end(); return; }
      res.write(zeros.subarray(0, n));
      sent += n;
    }, everyMs);
    res.on('close', () => clearInterval(timer));
  });
  server.log = log;
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => {
    server.url = `http://127.0.0.1:${server.address().port}`;
    resolve(server);
  }));
}

const read = (dir, file) => {
  const p = path.join(dir, file);
  return fs.existsSync(p) ? fs.readFileSync(p) : undefined;
};

/// The folders a teacher's site holds, by name, each a function of a file's name:
/// - `cli/`: the CLI's checkpoint;
/// - `gpt2/`: a GPT-2's config.json (model_type "gpt2");
/// - `truncated/`: the CLI's checkpoint with its weights cut in half;
/// - `corrupt/`: weights that are not a safetensors file;
/// - `big/`: the CLI's config and vocabulary, and 150 MB of "weights" sent slowly (6 MB/s);
/// - `course/…`: what a test put there (`site.put`);
/// anything else is 404.
function folders(dir) {
  const cli = (f) => read(dir, f);
  const weights = read(dir, 'model.safetensors');
  const put = new Map();
  const table = {
    cli,
    gpt2: (f) => (f === 'config.json' ? Buffer.from(JSON.stringify({ model_type: 'gpt2', n_embd: 768, n_layer: 12 })) : cli(f)),
    truncated: (f) => (f === 'model.safetensors' ? weights.subarray(0, weights.length >> 1) : cli(f)),
    corrupt: (f) => (f === 'model.safetensors' ? Buffer.from('<!doctype html><p>Moved to another folder</p>'.repeat(20)) : cli(f)),
    big: (f) => (f === 'model.safetensors' ? { stream: { size: 150_000_000, chunk: 65536, everyMs: 10 } } : cli(f)),
  };
  const routes = (p) => {
    if (put.has(p)) return put.get(p);
    const [, folder, file] = p.match(/^\/([^/]+)\/([^/]+)$/) || [];
    return table[folder]?.(file);
  };
  return { routes, put };
}

/// The Hub's layout: `/ORG/NAME/resolve/REVISION/FILE`. `attention-lab/tiny` is the CLI's
/// checkpoint at revision main; `openai-community/gpt2` a GPT-2's config; the MiniLM in
/// `minilm` (a folder, when given) is `sentence-transformers/all-MiniLM-L6-v2`. A repository it
/// does not have answers 401, as the Hub does.
function hubRoutes(dir, minilm) {
  const repos = {
    'attention-lab/tiny': (f) => read(dir, f),
    'openai-community/gpt2': (f) => (f === 'config.json' ? Buffer.from(JSON.stringify({ model_type: 'gpt2', n_embd: 768 })) : undefined),
    ...(minilm ? { 'sentence-transformers/all-MiniLM-L6-v2': (f) => read(minilm, f) } : {}),
  };
  return (p) => {
    const [, repo, revision, file] = p.match(/^\/([^/]+\/[^/]+)\/resolve\/([^/]+)\/([^/]+)$/) || [];
    if (!repo) return undefined;
    if (!repos[repo]) return { status: 401 };
    return revision === 'main' ? repos[repo](file) : undefined;
  };
}

/// Starts the servers: `site` (a teacher's, with CORS), `closed` (the same without CORS), `hub`
/// (the Hub's layout, with CORS), and `offline`, an address where nothing listens. `stop()` ends
/// them. `minilm`: a MiniLM checkpoint folder to put on the Hub too.
export async function modelServers({ minilm } = {}) {
  const dir = cliCheckpoint();
  const site = folders(dir);
  const servers = {
    site: await serve(site.routes),
    closed: await serve(folders(dir).routes, { cors: false }),
    hub: await serve(hubRoutes(dir, minilm)),
  };
  servers.site.put = (p, bytes) => site.put.set(p, bytes);
  const offline = await new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(`http://127.0.0.1:${port}`));
    });
  });
  return {
    ...servers,
    dir,
    offline,
    stop: () => Promise.all(Object.values(servers).map((s) => new Promise((r) => { s.close(r); s.closeAllConnections(); }))),
  };
}

/// The requests `server` saw from `from` on, by method, for the files of a checkpoint.
export function fileRequests(server, from = 0) {
  const seen = server.log.slice(from).filter((r) => FILES.some((f) => r.path.endsWith(`/${f}`)));
  return { GET: seen.filter((r) => r.method === 'GET').length, HEAD: seen.filter((r) => r.method === 'HEAD').length, seen };
}

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
const crc32 = (bytes) => {
  let c = 0xffffffff;
  for (const b of bytes) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
};

/// The entries of a zip whose files are stored (as the page writes them), read from its
/// central directory, each CRC-32 checked: [{ name, bytes }].
export function unzipStored(buffer) {
  const b = Buffer.from(buffer);
  const end = b.length - 22;
  if (b.readUInt32LE(end) !== 0x06054b50) throw new Error('no end of central directory record');
  const count = b.readUInt16LE(end + 10);
  let at = b.readUInt32LE(end + 16);
  const out = [];
  for (let i = 0; i < count; i++) {
    if (b.readUInt32LE(at) !== 0x02014b50) throw new Error(`entry ${i}: no central directory header`);
    const method = b.readUInt16LE(at + 10);
    const crc = b.readUInt32LE(at + 16);
    const size = b.readUInt32LE(at + 24);
    const nameLength = b.readUInt16LE(at + 28);
    const local = b.readUInt32LE(at + 42);
    const name = b.subarray(at + 46, at + 46 + nameLength).toString('utf8');
    if (method !== 0) throw new Error(`${name}: compression method ${method}, not stored`);
    const data = local + 30 + b.readUInt16LE(local + 26) + b.readUInt16LE(local + 28);
    const bytes = b.subarray(data, data + size);
    if (crc32(bytes) !== crc) throw new Error(`${name}: CRC-32 does not match`);
    out.push({ name, bytes });
    at += 46 + nameLength + b.readUInt16LE(at + 30) + b.readUInt16LE(at + 32);
  }
  return out;
}

// What `./dev dist` prints: every file of the built folder with its size raw, gzipped and
// brotli-compressed (as a host that compresses would send it), and the totals.
// Usage: node tools/dist_sizes.mjs [DIR]   (default: dist)
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';

const dir = path.resolve(process.argv[2] || 'dist');
if (!fs.existsSync(path.join(dir, 'index.html'))) {
  console.error(`dist_sizes: ${dir} has no index.html: build it first (./dev dist)`);
  process.exit(1);
}

function files(folder) {
  return fs.readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(folder, entry.name);
    return entry.isDirectory() ? files(full) : [full];
  });
}

const kb = (bytes) => `${(bytes / 1024).toFixed(1)} KB`;
const rows = files(dir).sort().map((file) => {
  const body = fs.readFileSync(file);
  return {
    name: path.relative(dir, file),
    raw: body.length,
    gzip: zlib.gzipSync(body, { level: 9 }).length,
    brotli: zlib.brotliCompressSync(body, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 11 } }).length,
  };
});
const width = Math.max(...rows.map((r) => r.name.length), 'total'.length);
const line = (name, r) => `${name.padEnd(width)}  ${kb(r.raw).padStart(10)}  ${kb(r.gzip).padStart(10)}  ${kb(r.brotli).padStart(10)}`;
console.log(`${'file'.padEnd(width)}  ${'raw'.padStart(10)}  ${'gzip'.padStart(10)}  ${'brotli'.padStart(10)}`);
for (const r of rows) console.log(line(r.name, r));
const total = rows.reduce((t, r) => ({ raw: t.raw + r.raw, gzip: t.gzip + r.gzip, brotli: t.brotli + r.brotli }), { raw: 0, gzip: 0, brotli: 0 });
console.log(line('total', total));
console.log(`${rows.length} files in ${dir}`);

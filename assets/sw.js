// The service worker: after one visit the app opens and trains without a network (a classroom's
// network is often poor). assets/boot.js registers it.
//
// Network first, the cache only when the network fails: with the network on, every visit gets the
// newest version (and the HTTP cache still saves the transfer), so a new release replaces the old
// one on the next visit; with it off, the files of the last visit answer. Only this origin's GETs
// are handled: the page's own files come from nowhere else (a model from a web address is the
// page's to keep: see the fetch handler).

importScripts('./worker-build.js');

const CACHE = 'attention-lab';

/// The files index.html does not name: the training worker's loader and the one build of it
/// this browser compiles (as assets/worker.js chooses), and the PyTorch module and notebook
/// template the code view fetches.
function unlistedFiles() {
  const build = self.attentionLabWorkerBuild();
  return ['worker.js', 'worker-build.js', ...(build ? [`${build.name}.js`, `${build.name}_bg.wasm`] : []),
    'pytorch/attention_lab.py', 'pytorch/notebook.py'];
}

const scope = () => new URL(self.registration.scope);

/// The key a file is kept under: its path, without the query (boot.js is loaded with the page's
/// file names in its query, and `?test-hooks` and the like choose nothing on the server). A
/// folder's index.html is its page, kept under the folder's address (a host may link either).
const key = (url) => {
  const u = new URL(url);
  const path = u.pathname.endsWith('/index.html') ? u.pathname.slice(0, -'index.html'.length) : u.pathname;
  return new URL(path, u.origin).href;
};

/// Every file of the current version: index.html and what it names (the hashed page module,
/// styles, icon, boot.js and the files in boot.js's query), and the worker's that this browser
/// runs.
async function currentFiles() {
  const index = new URL('./', scope()).href;
  const html = await (await fetch(index, { cache: 'no-cache' })).text();
  const files = new Set([index, ...unlistedFiles().map((f) => new URL(f, scope()).href)]);
  for (const [, ref] of html.matchAll(/(?:href|src)="([^"]+)"/g)) {
    const url = new URL(ref.replaceAll('&amp;', '&'), index);
    if (url.origin !== scope().origin) continue;
    files.add(key(url.href));
    for (const value of url.searchParams.values()) {
      if (value.startsWith('/') || value.startsWith('./')) files.add(key(new URL(value, index).href));
    }
  }
  return [...files];
}

self.addEventListener('install', (event) => {
  event.waitUntil((async () => {
    const files = await currentFiles();
    const cache = await caches.open(CACHE);
    await cache.addAll(files.map((f) => new Request(f, { cache: 'no-cache' })));
    // Files of older versions (other hashed names) are dropped.
    const keep = new Set(files);
    for (const request of await cache.keys()) {
      if (!keep.has(request.url)) await cache.delete(request);
    }
    await self.skipWaiting();
  })());
});

self.addEventListener('activate', (event) => event.waitUntil(self.clients.claim()));

self.addEventListener('fetch', (event) => {
  const { request } = event;
  if (request.method !== 'GET' || new URL(request.url).origin !== scope().origin) return;
  // A checkpoint beside the page (checkpoint=) is fetched `no-store`: the page keeps its own
  // copy of each file (its cache "attention-lab-checkpoints"), which no new version drops.
  if (request.cache === 'no-store') return;
  event.respondWith((async () => {
    const cache = await caches.open(CACHE);
    try {
      const response = await fetch(request);
      if (response.ok && response.type === 'basic') event.waitUntil(cache.put(key(request.url), response.clone()));
      return response;
    } catch (error) {
      const kept = await cache.match(key(request.url));
      if (!kept) throw error;
      // A copy without the kept response's URL, which lacks the query: a module script's URL
      // (boot.js reads the page's file names from its own query) is then the one requested.
      return new Response(kept.body, { status: kept.status, statusText: kept.statusText, headers: kept.headers });
    }
  })());
});

// Starts the app. Trunk's own loader is an inline script, which the page's
// Content-Security-Policy (script-src 'self') refuses; Trunk.toml's `pattern_script` loads this
// file instead, with the hashed names of the bindings and the wasm in its query.
//
// If the page's own module cannot be fetched, compiled or started, nothing of the app exists to
// say so: this writes the message into the page itself.
const query = new URL(import.meta.url).searchParams;
// Keeps the app's files for the next visit without a network (assets/sw.js). Without it (a
// browser that refuses service workers here) the app works as before, online only.
navigator.serviceWorker?.register(new URL('sw.js', import.meta.url))
  .catch((e) => console.warn(`Attention Lab will not open offline: ${e.message}`));
try {
  const { default: init } = await import(query.get('js'));
  await init({ module_or_path: query.get('wasm') });
} catch (error) {
  const detail = String((error && error.message) || error);
  const compile = error instanceof WebAssembly.CompileError;
  const box = document.createElement('div');
  box.className = 'boot-failed';
  box.setAttribute('role', 'alert');
  const title = document.createElement('p');
  title.textContent = compile
    ? 'Attention Lab cannot run in this browser: it could not compile the page\'s WebAssembly.'
    : 'Attention Lab could not start: the page\'s files did not load.';
  const advice = document.createElement('p');
  advice.textContent = compile
    ? 'Attention Lab needs WebAssembly SIMD: Safari 16.4 or later, Firefox 89 or later, or Chrome or Edge 91 or later.'
    : 'Check the network connection, then reload the page.';
  const why = document.createElement('p');
  why.className = 'detail';
  why.textContent = detail;
  box.append(title, advice, why);
  document.body.prepend(box);
  throw error;
}

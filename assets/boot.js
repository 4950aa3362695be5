// Starts the app. Trunk's own loader is an inline script, which the page's
// Content-Security-Policy (script-src 'self') refuses; Trunk.toml's `pattern_script` loads this
// file instead, with the hashed names of the bindings and the wasm in its query.
const query = new URL(import.meta.url).searchParams;
const { default: init } = await import(query.get('js'));
await init({ module_or_path: query.get('wasm') });

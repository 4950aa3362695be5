// Starts the training worker (src/worker_client.rs spawns this file as a classic worker), in the
// build this browser can compile (assets/worker-build.js).
//
// Whatever fails before the worker's own code runs (no SIMD at all, a download, compiling or
// instantiating the module) is posted to the page as {bootFailed: {stage, detail}}, which the page
// turns into a message: a rejected promise inside a worker reaches the page in no other way.

const fail = (stage, error) =>
  postMessage({ bootFailed: { stage, detail: String((error && error.message) || error || '') } });

(async () => {
  let build;
  try {
    importScripts('./worker-build.js');
    build = self.attentionLabWorkerBuild();
  } catch (e) {
    fail('download', e);
    return;
  }
  if (!build) {
    fail('simd', '');
    return;
  }
  postMessage({ bootBuild: build.simd });
  try {
    importScripts(`./${build.name}.js`);
  } catch (e) {
    fail('download', e);
    return;
  }
  try {
    // eslint-disable-next-line no-undef -- the global the wasm-bindgen glue above defines
    await wasm_bindgen({ module_or_path: `./${build.name}_bg.wasm` });
  } catch (e) {
    const stage = e instanceof WebAssembly.CompileError ? 'compile'
      : e instanceof WebAssembly.LinkError ? 'instantiate'
        : e instanceof WebAssembly.RuntimeError ? 'run'
          : 'download';
    fail(stage, e);
  }
})();

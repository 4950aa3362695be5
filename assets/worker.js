// Starts the training worker (src/worker_client.rs spawns this file as a classic worker).
//
// The worker is built twice (Cargo.toml): with relaxed SIMD, whose fused multiply-add speeds up
// every matrix product, and with SIMD128 alone. A module holding a single relaxed-SIMD
// instruction does not compile where relaxed SIMD is missing (Safari, every iPhone and iPad), so
// this asks the browser which one it can compile before fetching either.
//
// Whatever fails before the worker's own code runs (no SIMD at all, a download, compiling or
// instantiating the module) is posted to the page as {bootFailed: {stage, detail}}, which the page
// turns into a message: a rejected promise inside a worker reaches the page in no other way.

// (func (param v128 v128 v128) (result v128) f32x4.relaxed_madd): valid only with relaxed SIMD.
const RELAXED_SIMD = new Uint8Array([
  0, 97, 115, 109, 1, 0, 0, 0, 1, 8, 1, 96, 3, 123, 123, 123, 1, 123, 3, 2, 1, 0, 10, 13, 1, 11, 0,
  32, 0, 32, 1, 32, 2, 253, 133, 2, 11,
]);
// (func (param v128 v128) (result v128) f32x4.add): valid with SIMD128.
const SIMD128 = new Uint8Array([
  0, 97, 115, 109, 1, 0, 0, 0, 1, 7, 1, 96, 2, 123, 123, 1, 123, 3, 2, 1, 0, 10, 11, 1, 9, 0, 32,
  0, 32, 1, 253, 228, 1, 11,
]);

const fail = (stage, error) =>
  postMessage({ bootFailed: { stage, detail: String((error && error.message) || error || '') } });

(async () => {
  if (typeof WebAssembly !== 'object' || !WebAssembly.validate(SIMD128)) {
    fail('simd', '');
    return;
  }
  const relaxed = WebAssembly.validate(RELAXED_SIMD);
  const build = relaxed ? 'attention-lab-worker-relaxed' : 'attention-lab-worker';
  postMessage({ bootBuild: relaxed ? 'relaxed-simd' : 'simd128' });
  try {
    importScripts(`./${build}.js`);
  } catch (e) {
    fail('download', e);
    return;
  }
  try {
    // eslint-disable-next-line no-undef -- the global the wasm-bindgen glue above defines
    await wasm_bindgen({ module_or_path: `./${build}_bg.wasm` });
  } catch (e) {
    const stage = e instanceof WebAssembly.CompileError ? 'compile'
      : e instanceof WebAssembly.LinkError ? 'instantiate'
        : e instanceof WebAssembly.RuntimeError ? 'run'
          : 'download';
    fail(stage, e);
  }
})();

// Which build of the training worker this browser can compile; read by assets/worker.js (which
// starts it) and assets/sw.js (which keeps it for offline visits).
//
// The worker is built twice (Cargo.toml): with relaxed SIMD, whose fused multiply-add every matrix
// product uses, and with SIMD128 alone. A module holding a single relaxed-SIMD instruction does not
// compile where relaxed SIMD is missing (Safari, every iPhone and iPad), so the browser is asked
// about two tiny modules before either build is fetched.
(() => {
  // (func (param v128 v128 v128) (result v128) f32x4.relaxed_madd): valid only with relaxed SIMD.
  const RELAXED_SIMD = new Uint8Array([
    0, 97, 115, 109, 1, 0, 0, 0, 1, 8, 1, 96, 3, 123, 123, 123, 1, 123, 3, 2, 1, 0, 10, 13, 1, 11,
    0, 32, 0, 32, 1, 32, 2, 253, 133, 2, 11,
  ]);
  // (func (param v128 v128) (result v128) f32x4.add): valid with SIMD128.
  const SIMD128 = new Uint8Array([
    0, 97, 115, 109, 1, 0, 0, 0, 1, 7, 1, 96, 2, 123, 123, 1, 123, 3, 2, 1, 0, 10, 11, 1, 9, 0, 32,
    0, 32, 1, 253, 228, 1, 11,
  ]);
  /// { name: the build's file name (NAME.js, NAME_bg.wasm), simd: what it needs }, or null
  /// where the browser has no WebAssembly SIMD at all.
  self.attentionLabWorkerBuild = () => {
    if (typeof WebAssembly !== 'object' || !WebAssembly.validate(SIMD128)) return null;
    return WebAssembly.validate(RELAXED_SIMD)
      ? { name: 'attention-lab-worker-relaxed', simd: 'relaxed-simd' }
      : { name: 'attention-lab-worker', simd: 'simd128' };
  };
})();

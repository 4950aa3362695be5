//! Finite-difference helpers for the ops' gradient tests.
//!
//! Scalar loss: L = Σ r ⊙ y with a fixed random r (a random projection of the output), summed
//! in f64. Each input entry x is nudged to x ± h in f32 and the derivative taken over the step
//! actually stored, (L(x⁺) − L(x⁻)) / (x⁺ − x⁻), so the rounding of x ± h does not bias it.
//!
//! Why the tolerance |analytic − numeric| ≤ ATOL + RTOL·|numeric| is safe and still strict:
//! the ops compute in f32, so each output carries ~6e-8 relative rounding; over a few dozen
//! outputs of size ~1 that puts ≲1e-6 of noise on L, i.e. ≲1e-3·(1/2h)·1e-6 ≈ 2e-4 on the
//! quotient with h = 3e-3. Central differences truncate at h²·f‴/6 ≈ 1.5e-6·f‴. A real bug
//! (a missing term, a wrong index or transpose) shows as an O(|gradient|) error, far above
//! ATOL = 2e-3 and RTOL = 1%.

use crate::rng::Rng;
use ndarray::{Array, Array1, Array2, Dimension};

pub const H: f32 = 3e-3;
pub const ATOL: f64 = 2e-3;
pub const RTOL: f64 = 1e-2;

pub fn random(rng: &mut Rng, shape: (usize, usize)) -> Array2<f32> {
    Array2::from_shape_simple_fn(shape, || rng.normal(0.0, 1.0))
}

pub fn random_vec(rng: &mut Rng, n: usize) -> Array1<f32> {
    Array1::from_shape_simple_fn(n, || rng.normal(0.0, 1.0))
}

/// Σ y ⊙ r in f64.
pub fn project<D: Dimension>(y: &Array<f32, D>, r: &Array<f32, D>) -> f64 {
    assert_eq!(y.shape(), r.shape());
    y.iter()
        .zip(r.iter())
        .map(|(&a, &b)| a as f64 * b as f64)
        .sum()
}

/// dL/dx for every entry of x by central differences.
pub fn numeric_grad<D: Dimension>(
    x: &Array<f32, D>,
    loss: impl Fn(&Array<f32, D>) -> f64,
) -> Array<f64, D> {
    let mut probe = x.clone();
    let mut grad = Array::zeros(x.raw_dim());
    for (i, g) in grad.iter_mut().enumerate() {
        let x0 = x.as_slice_memory_order().unwrap()[i];
        let (plus, minus) = (x0 + H, x0 - H);
        probe.as_slice_memory_order_mut().unwrap()[i] = plus;
        let lp = loss(&probe);
        probe.as_slice_memory_order_mut().unwrap()[i] = minus;
        let lm = loss(&probe);
        probe.as_slice_memory_order_mut().unwrap()[i] = x0;
        *g = (lp - lm) / (plus as f64 - minus as f64);
    }
    grad
}

/// Every entry within tolerance, and the check not vacuous (some gradient clearly non-zero).
pub fn assert_grads_match<D: Dimension>(
    name: &str,
    analytic: &Array<f32, D>,
    numeric: &Array<f64, D>,
) {
    assert_eq!(analytic.shape(), numeric.shape(), "{name}: shapes");
    for (i, (&a, &n)) in analytic.iter().zip(numeric.iter()).enumerate() {
        let err = (a as f64 - n).abs();
        assert!(
            err <= ATOL + RTOL * n.abs(),
            "{name}[{i}]: analytic {a} vs numeric {n} (error {err:.2e})"
        );
    }
    let largest = numeric.iter().fold(0.0f64, |m, &n| m.max(n.abs()));
    assert!(
        largest > 50.0 * ATOL,
        "{name}: every numeric gradient is ~0 ({largest:.2e}), the check would be vacuous"
    );
}

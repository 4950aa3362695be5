//! LayerNorm over the feature axis, as torch.nn.LayerNorm:
//! y = (x − μ) / √(σ² + ε) · γ + β, with the biased variance σ² = mean((x − μ)²).

use crate::threads;
use ndarray::{
    Array1, Array2, ArrayView1, ArrayView2, ArrayViewMut1, ArrayViewMut2, Axis, Ix1, Zip,
};

/// Per-row statistics backward needs besides the input.
#[derive(Clone, Debug, Default)]
pub struct LayerNormCache {
    pub mean: Array1<f32>, // (N)
    pub rstd: Array1<f32>, // (N) 1/√(σ² + ε)
}

/// Rows (or, for dγ and dβ, columns) per block of work for the threads (`crate::threads`).
/// Every row is normalised alone, and every column of dγ and dβ sums its rows in order, so
/// the cut changes no bit.
const BLOCK: usize = 64;

/// out (N, C) from inp (N, C). Two passes per row (mean, then squared deviations) keep σ²
/// accurate in f32 when |μ| ≫ σ.
pub fn forward(
    inp: ArrayView2<f32>,
    gamma: ArrayView1<f32>,
    beta: ArrayView1<f32>,
    eps: f64,
) -> (Array2<f32>, LayerNormCache) {
    let mut out = Array2::zeros(inp.raw_dim());
    let mut cache = LayerNormCache::default();
    forward_into(inp, gamma, beta, eps, &mut out.view_mut(), &mut cache);
    (out, cache)
}

/// `forward` into `out` (N, C) and `cache`, whose buffers are reused (`ops::reuse`); every
/// entry written.
pub fn forward_into(
    inp: ArrayView2<f32>,
    gamma: ArrayView1<f32>,
    beta: ArrayView1<f32>,
    eps: f64,
    out: &mut ArrayViewMut2<f32>,
    cache: &mut LayerNormCache,
) {
    let (n, c) = inp.dim();
    let mut mean = super::reuse(std::mem::take(&mut cache.mean), Ix1(n));
    let mut rstd = super::reuse(std::mem::take(&mut cache.rstd), Ix1(n));
    let blocks: Vec<_> = out
        .axis_chunks_iter_mut(Axis(0), BLOCK)
        .zip(inp.axis_chunks_iter(Axis(0), BLOCK))
        .zip(mean.axis_chunks_iter_mut(Axis(0), BLOCK))
        .zip(rstd.axis_chunks_iter_mut(Axis(0), BLOCK))
        .collect();
    threads::for_each(blocks, |(((mut out, inp), mut mean), mut rstd)| {
        Zip::from(out.rows_mut())
            .and(inp.rows())
            .and(&mut mean)
            .and(&mut rstd)
            .for_each(|mut y, x, m, r| {
                let mu = x.sum() / c as f32;
                let var = x.fold(0.0f32, |acc, &v| acc + (v - mu) * (v - mu)) / c as f32;
                let rs = 1.0 / (var + eps as f32).sqrt();
                Zip::from(&mut y)
                    .and(&x)
                    .and(&gamma)
                    .and(&beta)
                    .for_each(|y, &x, &g, &b| *y = (x - mu) * rs * g + b);
                *m = mu;
                *r = rs;
            })
    });
    *cache = LayerNormCache { mean, rstd };
}

/// With x̂ = (x − μ)·rstd and g = dout ⊙ γ:
/// dγ += Σ_rows dout ⊙ x̂,  dβ += Σ_rows dout,  dx = rstd · (g − mean(g) − x̂ · mean(g ⊙ x̂)).
/// In place: `d` holds dout and becomes dx. Its callers need dout for nothing else, so backward
/// zeroes no second buffer for dx. dγ and dβ read dout first, then each row turns into dx.
pub fn backward(
    d: &mut ArrayViewMut2<f32>,
    d_gamma: &mut ArrayViewMut1<f32>,
    d_beta: &mut ArrayViewMut1<f32>,
    inp: ArrayView2<f32>,
    gamma: ArrayView1<f32>,
    cache: &LayerNormCache,
) {
    let c = inp.ncols() as f32;
    let d_out = d.view();
    let columns: Vec<_> = d_gamma
        .axis_chunks_iter_mut(Axis(0), BLOCK)
        .zip(d_beta.axis_chunks_iter_mut(Axis(0), BLOCK))
        .zip(d_out.axis_chunks_iter(Axis(1), BLOCK))
        .zip(inp.axis_chunks_iter(Axis(1), BLOCK))
        .collect();
    threads::for_each(columns, |(((mut d_gamma, mut d_beta), d_out), inp)| {
        for ((dy, x), (&mu, &rs)) in d_out
            .rows()
            .into_iter()
            .zip(inp.rows())
            .zip(cache.mean.iter().zip(&cache.rstd))
        {
            Zip::from(&mut d_gamma)
                .and(&mut d_beta)
                .and(&dy)
                .and(&x)
                .for_each(|dg, db, &dy, &x| {
                    *dg += dy * ((x - mu) * rs);
                    *db += dy;
                });
        }
    });
    let rows: Vec<_> = d
        .axis_chunks_iter_mut(Axis(0), BLOCK)
        .zip(inp.axis_chunks_iter(Axis(0), BLOCK))
        .zip(cache.mean.axis_chunks_iter(Axis(0), BLOCK))
        .zip(cache.rstd.axis_chunks_iter(Axis(0), BLOCK))
        .collect();
    threads::for_each(rows, |(((mut d, inp), mean), rstd)| {
        Zip::from(d.rows_mut())
            .and(inp.rows())
            .and(&mean)
            .and(&rstd)
            .for_each(|mut d, x, &mu, &rs| {
                let (mut g_mean, mut gx_mean) = (0.0f32, 0.0f32);
                Zip::from(&d).and(&x).and(&gamma).for_each(|&dy, &x, &gm| {
                    let g = dy * gm;
                    g_mean += g;
                    gx_mean += g * (x - mu) * rs;
                });
                g_mean /= c;
                gx_mean /= c;
                Zip::from(&mut d)
                    .and(&x)
                    .and(&gamma)
                    .for_each(|d, &x, &gm| {
                        *d = rs * (*d * gm - g_mean - (x - mu) * rs * gx_mean);
                    });
            })
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::gradcheck::{assert_grads_match, numeric_grad, project, random, random_vec};
    use crate::rng::Rng;

    #[test]
    fn output_rows_have_zero_mean_and_unit_biased_variance() {
        let mut rng = Rng::new(2);
        let x = random(&mut rng, (3, 6)).mapv(|v| 5.0 + 3.0 * v);
        let (y, cache) = forward(
            x.view(),
            Array1::ones(6).view(),
            Array1::zeros(6).view(),
            1e-12,
        );
        for row in y.rows() {
            let mean = row.sum() / 6.0;
            let var = row.mapv(|v| (v - mean).powi(2)).sum() / 6.0; // biased, as torch
            assert!(
                mean.abs() < 1e-5 && (var - 1.0).abs() < 1e-4,
                "mean {mean} var {var}"
            );
        }
        assert!((cache.mean[0] - x.row(0).sum() / 6.0).abs() < 1e-5);
    }

    #[test]
    fn gradients_match_finite_differences() {
        let mut rng = Rng::new(3);
        let (x, g, b) = (
            random(&mut rng, (4, 5)),
            random_vec(&mut rng, 5),
            random_vec(&mut rng, 5),
        );
        let r = random(&mut rng, (4, 5));
        let loss = |x: &Array2<f32>, g: &Array1<f32>, b: &Array1<f32>| {
            project(&forward(x.view(), g.view(), b.view(), 1e-5).0, &r)
        };
        let (_, cache) = forward(x.view(), g.view(), b.view(), 1e-5);
        let (mut dx, mut dg, mut db) = (r.clone(), Array1::zeros(5), Array1::zeros(5));
        backward(
            &mut dx.view_mut(),
            &mut dg.view_mut(),
            &mut db.view_mut(),
            x.view(),
            g.view(),
            &cache,
        );
        assert_grads_match("d_inp", &dx, &numeric_grad(&x, |x| loss(x, &g, &b)));
        assert_grads_match("d_gamma", &dg, &numeric_grad(&g, |g| loss(&x, g, &b)));
        assert_grads_match("d_beta", &db, &numeric_grad(&b, |b| loss(&x, &g, b)));
    }
}

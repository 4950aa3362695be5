//! y = x·Wᵀ + b, with W stored (out, in) as torch.nn.Linear does.

use super::matmul::gemm;
use ndarray::{Array2, ArrayView1, ArrayView2, ArrayViewMut1, ArrayViewMut2, Axis};

/// out (N, out) = inp (N, in) · weightᵀ (in, out) + bias.
pub fn forward(
    inp: ArrayView2<f32>,
    weight: ArrayView2<f32>,
    bias: ArrayView1<f32>,
) -> Array2<f32> {
    let mut out = Array2::zeros((inp.nrows(), weight.nrows()));
    forward_into(inp, weight, bias, &mut out.view_mut());
    out
}

/// `forward` into `out` (N, out), every entry written.
pub fn forward_into(
    inp: ArrayView2<f32>,
    weight: ArrayView2<f32>,
    bias: ArrayView1<f32>,
    out: &mut ArrayViewMut2<f32>,
) {
    out.assign(&bias); // the bias in every row, then += inp·Wᵀ
    gemm(1.0, &inp, &weight.t(), 1.0, out);
}

/// How backward writes an input gradient: added to its buffer, which gathers other parts too
/// (a residual branch, the projections of one input), or written over it, when it is the
/// buffer's only part (then the buffer needs no zeroing: its stale entries are never read).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Write {
    Add,
    Over,
}

/// Given dL/dout (N, out): d_inp += dout·W (or = with `Write::Over`), d_weight += doutᵀ·inp,
/// d_bias += Σ_rows dout. `d_inp` is optional: the first layer's input (e.g. gathered token
/// ids) may need none.
pub fn backward(
    d_inp: Option<(&mut ArrayViewMut2<f32>, Write)>,
    d_weight: &mut ArrayViewMut2<f32>,
    d_bias: &mut ArrayViewMut1<f32>,
    d_out: ArrayView2<f32>,
    inp: ArrayView2<f32>,
    weight: ArrayView2<f32>,
) {
    if let Some((d_inp, write)) = d_inp {
        let beta = match write {
            Write::Add => 1.0,
            Write::Over => 0.0, // gemm with β = 0 never reads C
        };
        gemm(1.0, &d_out, &weight, beta, d_inp);
    }
    gemm(1.0, &d_out.t(), &inp, 1.0, d_weight);
    *d_bias += &d_out.sum_axis(Axis(0));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::gradcheck::{assert_grads_match, numeric_grad, project, random};
    use crate::rng::Rng;

    #[test]
    fn forward_matches_a_hand_computed_product() {
        let x = ndarray::array![[1.0f32, 2.0], [3.0, -1.0]];
        let w = ndarray::array![[1.0f32, 0.0], [0.5, 2.0], [-1.0, 1.0]]; // (out 3, in 2)
        let b = ndarray::array![0.0f32, 1.0, -2.0];
        let y = forward(x.view(), w.view(), b.view());
        assert_eq!(y, ndarray::array![[1.0, 5.5, -1.0], [3.0, 0.5, -6.0]]);
    }

    #[test]
    fn gradients_match_finite_differences() {
        let mut rng = Rng::new(1);
        let (x, w, b) = (
            random(&mut rng, (5, 4)),
            random(&mut rng, (3, 4)),
            random(&mut rng, (1, 3)).row(0).to_owned(),
        );
        let r = random(&mut rng, (5, 3)); // L = Σ r ⊙ y, a random projection of the output
        let loss = |x: &Array2<f32>, w: &Array2<f32>, b: &ndarray::Array1<f32>| {
            project(&forward(x.view(), w.view(), b.view()), &r)
        };
        let (mut dx, mut dw, mut db) = (
            Array2::zeros((5, 4)),
            Array2::zeros((3, 4)),
            ndarray::Array1::zeros(3),
        );
        backward(
            Some((&mut dx.view_mut(), Write::Add)),
            &mut dw.view_mut(),
            &mut db.view_mut(),
            r.view(),
            x.view(),
            w.view(),
        );
        assert_grads_match("d_inp", &dx, &numeric_grad(&x, |x| loss(x, &w, &b)));
        // Written over stale entries (NaN here), the input gradient is the same.
        let mut dx_over = Array2::from_elem((5, 4), f32::NAN);
        let (mut dw2, mut db2) = (Array2::zeros((3, 4)), ndarray::Array1::zeros(3));
        let (dw2_view, db2_view) = (&mut dw2.view_mut(), &mut db2.view_mut());
        let over = Some((&mut dx_over.view_mut(), Write::Over));
        backward(over, dw2_view, db2_view, r.view(), x.view(), w.view());
        assert_eq!(dx_over, dx);
        assert_grads_match("d_weight", &dw, &numeric_grad(&w, |w| loss(&x, w, &b)));
        assert_grads_match("d_bias", &db, &numeric_grad(&b, |b| loss(&x, &w, b)));
    }
}

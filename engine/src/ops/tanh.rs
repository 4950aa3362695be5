//! tanh, the pooler's activation: y = tanh(x), dy/dx = 1 − y².

use ndarray::{Array2, ArrayView2, ArrayViewMut2, Zip};

pub fn forward(inp: ArrayView2<f32>) -> Array2<f32> {
    inp.mapv(f32::tanh)
}

/// d_inp += d_out ⊙ (1 − out²); reads the output, so forward's input need not be kept.
pub fn backward(d_inp: &mut ArrayViewMut2<f32>, d_out: ArrayView2<f32>, out: ArrayView2<f32>) {
    Zip::from(d_inp)
        .and(d_out)
        .and(out)
        .for_each(|dx, &dy, &y| *dx += dy * (1.0 - y * y));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::gradcheck::{assert_grads_match, numeric_grad, project, random};
    use crate::rng::Rng;

    #[test]
    fn gradients_match_finite_differences() {
        let mut rng = Rng::new(5);
        let x = random(&mut rng, (3, 5));
        let r = random(&mut rng, (3, 5));
        let y = forward(x.view());
        let mut dx = Array2::zeros((3, 5));
        backward(&mut dx.view_mut(), r.view(), y.view());
        assert_grads_match(
            "d_inp",
            &dx,
            &numeric_grad(&x, |x| project(&forward(x.view()), &r)),
        );
    }
}

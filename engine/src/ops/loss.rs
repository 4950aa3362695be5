//! Softmax cross-entropy with an ignore index, as torch.nn.CrossEntropyLoss(ignore_index=-100,
//! reduction="mean"): L = mean over counted rows of (logsumexp(z) − z[target]).
//!
//! The mean divides by a given count, the counted rows of the whole batch: a data-parallel
//! share computes its rows' sum over that count, and the shares' losses and gradients add up
//! to the whole batch's (`step::Share`). Over the whole batch, the count is its own.

use crate::batch::IGNORE_INDEX;
use crate::ops::math::{self, exp};
use ndarray::{Array1, ArrayView1, ArrayView2, ArrayViewMut2, Zip};

#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CrossEntropy {
    /// Sum over counted rows / `of`; 0 when `of` is 0 (torch would give NaN: 0/0). A batch
    /// with nothing to predict then contributes no loss and no gradient instead of
    /// poisoning the parameters with NaN.
    pub loss: f32,
    /// Rows whose target is not IGNORE_INDEX.
    pub count: usize,
    /// Counted rows whose argmax equals the target.
    pub correct: usize,
    /// The counted rows of the whole batch, by which the loss and accuracy divide.
    pub of: usize,
}

impl CrossEntropy {
    /// correct / `of`: a share's part of the whole batch's accuracy.
    pub fn accuracy(&self) -> f32 {
        if self.of == 0 {
            0.0
        } else {
            self.correct as f32 / self.of as f32
        }
    }
}

/// How many of `targets` count (are not IGNORE_INDEX): a batch's own denominator.
pub fn counted_rows(targets: impl IntoIterator<Item = i64>) -> usize {
    targets.into_iter().filter(|&t| t != IGNORE_INDEX).count()
}

fn counted(target: i64) -> Option<usize> {
    (target != IGNORE_INDEX).then_some(target as usize)
}

/// A logits row as a slice (rows of the arrays the engine builds are contiguous).
fn row_slice<'a>(z: &'a ArrayView1<'a, f32>, scratch: &'a mut Vec<f32>) -> &'a [f32] {
    match z.as_slice() {
        Some(s) => s,
        None => {
            scratch.clear();
            scratch.extend(z.iter().copied());
            scratch
        }
    }
}

/// logits (M, K), targets (M) in 0..K or IGNORE_INDEX (checked by the caller); the loss is
/// the counted rows' sum over `of`. Also returns each row's logsumexp (M), 0 on ignored rows,
/// which is all backward needs besides the logits.
pub fn forward(logits: ArrayView2<f32>, targets: &[i64], of: usize) -> (CrossEntropy, Array1<f32>) {
    let (mut total, mut count, mut correct) = (0.0f64, 0, 0);
    let mut log_sum_exp = Array1::zeros(logits.nrows());
    let mut scratch = Vec::new();
    for ((z, &t), lse) in logits.rows().into_iter().zip(targets).zip(&mut log_sum_exp) {
        let Some(t) = counted(t) else { continue };
        let z = row_slice(&z, &mut scratch);
        let max = math::max(z);
        *lse = max + math::sum_exp(z, max).ln(); // stable: every exponent ≤ 0
        total += (*lse - z[t]) as f64;
        count += 1;
        // argmax, first index on ties: the first entry equal to the max (which skips NaN),
        // found without a serial compare-and-select chain; a NaN first entry counts as 0.
        let best = if z.first().is_some_and(|v| v.is_nan()) {
            0
        } else {
            z.iter().position(|&v| v == max).unwrap_or(0)
        };
        correct += usize::from(best == t);
    }
    let loss = if of == 0 {
        0.0
    } else {
        (total / of as f64) as f32
    };
    (
        CrossEntropy {
            loss,
            count,
            correct,
            of,
        },
        log_sum_exp,
    )
}

/// d_logits += d_loss/of · (softmax(z) − onehot(target)) on counted rows, with
/// softmax(z) = exp(z − logsumexp(z)) from forward's logsumexp (no (M, K) cache); `of` as
/// forward's.
pub fn backward(
    d_logits: &mut ArrayViewMut2<f32>,
    logits: ArrayView2<f32>,
    targets: &[i64],
    log_sum_exp: ArrayView1<f32>,
    d_loss: f32,
    of: usize,
) {
    if of == 0 {
        return;
    }
    let scale = d_loss / of as f32;
    let rows = d_logits
        .rows_mut()
        .into_iter()
        .zip(logits.rows())
        .zip(targets)
        .zip(log_sum_exp);
    for (((mut dz, z), &t), &lse) in rows {
        let Some(t) = counted(t) else { continue };
        match (dz.as_slice_mut(), z.as_slice()) {
            (Some(dz), Some(z)) => dz
                .iter_mut()
                .zip(z)
                .for_each(|(dz, &z)| *dz += scale * exp(z - lse)),
            _ => Zip::from(&mut dz)
                .and(&z)
                .for_each(|dz, &z| *dz += scale * exp(z - lse)),
        }
        dz[t] -= scale;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::gradcheck::{assert_grads_match, numeric_grad, random};
    use crate::rng::Rng;
    use ndarray::Array2;

    const TARGETS: [i64; 4] = [2, IGNORE_INDEX, 0, 4];

    #[test]
    fn matches_torch_on_a_small_case() {
        // torch.nn.functional.cross_entropy(torch.tensor([[1., 2., 3.], [1., 0., 0.]]), torch.tensor([2, -100])) = 0.40760596
        let logits = ndarray::array![[1.0f32, 2.0, 3.0], [1.0, 0.0, 0.0]];
        let (ce, lse) = forward(logits.view(), &[2, IGNORE_INDEX], 1);
        assert_eq!(lse[1], 0.0);
        assert!((ce.loss - 0.407_605_96).abs() < 1e-6, "{}", ce.loss);
        assert_eq!((ce.count, ce.correct), (1, 1));
    }

    /// Accuracy's argmax is the first maximum, as a left-to-right `v > best` scan finds it:
    /// ties go to the earlier token, a NaN is never the maximum, and a NaN first entry is.
    #[test]
    fn accuracy_takes_the_first_maximum_and_passes_over_nan() {
        let nan = f32::NAN;
        let rows = [
            ([1.0f32, 3.0, 3.0], 1, 1),
            ([1.0, 3.0, 3.0], 2, 0),
            ([2.0, nan, 1.0], 0, 1),
            ([0.0, nan, 4.0], 2, 1),
            ([nan, 5.0, 1.0], 0, 1),
            ([nan, 5.0, 1.0], 1, 0),
        ];
        for (z, target, correct) in rows {
            let logits = ndarray::Array2::from_shape_vec((1, 3), z.to_vec()).unwrap();
            let (ce, _) = forward(logits.view(), &[target], 1);
            assert_eq!(ce.correct, correct, "{z:?}, target {target}");
        }
    }

    #[test]
    fn nothing_to_predict_gives_zero_loss_and_no_gradient() {
        let logits = ndarray::array![[1.0f32, 2.0]];
        let (ce, lse) = forward(logits.view(), &[IGNORE_INDEX], 0);
        assert_eq!((ce.loss, ce.count, ce.accuracy()), (0.0, 0, 0.0));
        let mut d = Array2::zeros((1, 2));
        backward(
            &mut d.view_mut(),
            logits.view(),
            &[IGNORE_INDEX],
            lse.view(),
            1.0,
            0,
        );
        assert!(d.iter().all(|&x| x == 0.0));
    }

    #[test]
    fn gradients_match_finite_differences_and_ignored_rows_get_none() {
        let mut rng = Rng::new(12);
        let z = random(&mut rng, (4, 5)).mapv(|v| 2.0 * v);
        let mut d = Array2::zeros((4, 5));
        let of = counted_rows(TARGETS);
        let (_, lse) = forward(z.view(), &TARGETS, of);
        backward(&mut d.view_mut(), z.view(), &TARGETS, lse.view(), 1.0, of);
        let numeric = numeric_grad(&z, |z| forward(z.view(), &TARGETS, of).0.loss as f64);
        assert_grads_match("d_logits", &d, &numeric);
        assert!(d.row(1).iter().all(|&x| x == 0.0));
        // A logits view that is not contiguous (a transpose) gives the same result.
        let zt = z.t().to_owned();
        assert_eq!(
            forward(zt.t(), &TARGETS, of).0,
            forward(z.view(), &TARGETS, of).0
        );
    }

    /// Rows split in two, each part divided by the whole's count: the parts' losses, accuracies
    /// and gradients add up to the whole's.
    #[test]
    fn parts_divided_by_the_whole_count_add_up_to_the_whole() {
        let z = random(&mut Rng::new(4), (4, 5)).mapv(|v| 3.0 * v);
        let of = counted_rows(TARGETS);
        let (whole, lse) = forward(z.view(), &TARGETS, of);
        let mut d_whole = Array2::zeros((4, 5));
        backward(
            &mut d_whole.view_mut(),
            z.view(),
            &TARGETS,
            lse.view(),
            1.0,
            of,
        );
        let (mut loss, mut accuracy, mut d_parts) = (0.0, 0.0, Array2::zeros((4, 5)));
        for rows in [0..1, 1..4] {
            let (part, targets) = (
                z.slice(ndarray::s![rows.clone(), ..]),
                &TARGETS[rows.clone()],
            );
            let (ce, lse) = forward(part, targets, of);
            let mut d = d_parts.slice_mut(ndarray::s![rows, ..]);
            backward(&mut d, part, targets, lse.view(), 1.0, of);
            (loss, accuracy) = (loss + ce.loss, accuracy + ce.accuracy());
        }
        assert!((loss - whole.loss).abs() < 1e-6, "{loss} vs {}", whole.loss);
        assert!((accuracy - whole.accuracy()).abs() < 1e-6);
        for (a, b) in d_parts.iter().zip(&d_whole) {
            assert!((a - b).abs() < 1e-7, "{a} vs {b}");
        }
    }
}

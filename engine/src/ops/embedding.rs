//! Table lookup, as torch.nn.Embedding: row n of the output is `table[ids[n]]`.
//! Ids are checked by the caller (forward/validate.rs checks the batch); here they index directly.

use ndarray::{ArrayView2, ArrayViewMut2, Zip};

/// out[n] += table[ids[n]]: adding lets BERT sum word, position and token-type embeddings
/// into one buffer.
pub fn forward_add(
    out: &mut ArrayViewMut2<f32>,
    ids: impl IntoIterator<Item = usize>,
    table: ArrayView2<f32>,
) {
    for (mut row, id) in out.rows_mut().into_iter().zip(ids) {
        row += &table.row(id);
    }
}

/// d_table[ids[n]] += d_out[n]. Rows whose id is `padding_idx` get nothing, as
/// nn.Embedding(padding_idx=…) does for BERT's word embeddings.
pub fn backward(
    d_table: &mut ArrayViewMut2<f32>,
    d_out: ArrayView2<f32>,
    ids: impl IntoIterator<Item = usize>,
    padding_idx: Option<usize>,
) {
    for (d_row, id) in d_out.rows().into_iter().zip(ids) {
        if Some(id) != padding_idx {
            Zip::from(d_table.row_mut(id))
                .and(d_row)
                .for_each(|dt, &d| *dt += d);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::gradcheck::{assert_grads_match, numeric_grad, project, random};
    use crate::rng::Rng;
    use ndarray::Array2;

    const IDS: [usize; 5] = [2, 0, 2, 3, 1];

    fn lookup(table: &Array2<f32>) -> Array2<f32> {
        let mut out = Array2::zeros((IDS.len(), table.ncols()));
        forward_add(&mut out.view_mut(), IDS, table.view());
        out
    }

    #[test]
    fn gathers_rows() {
        let table = ndarray::array![[0.0f32, 1.0], [2.0, 3.0], [4.0, 5.0], [6.0, 7.0]];
        assert_eq!(
            lookup(&table),
            ndarray::array![[4.0, 5.0], [0.0, 1.0], [4.0, 5.0], [6.0, 7.0], [2.0, 3.0]]
        );
    }

    #[test]
    fn gradients_match_finite_differences_and_repeated_ids_add_up() {
        let mut rng = Rng::new(8);
        let table = random(&mut rng, (5, 3)); // row 4 unused: its gradient must stay 0
        let r = random(&mut rng, (IDS.len(), 3));
        let mut d = Array2::zeros((5, 3));
        backward(&mut d.view_mut(), r.view(), IDS, None);
        assert_grads_match(
            "d_table",
            &d,
            &numeric_grad(&table, |t| project(&lookup(t), &r)),
        );
        assert_eq!(d.row(2), &r.row(0) + &r.row(2));
    }

    #[test]
    fn padding_row_gets_no_gradient() {
        let r = Array2::ones((IDS.len(), 3));
        let mut d = Array2::zeros((5, 3));
        backward(&mut d.view_mut(), r.view(), IDS, Some(0));
        assert!(d.row(0).iter().all(|&x| x == 0.0));
        assert!(d.row(3).iter().all(|&x| x == 1.0));
    }
}

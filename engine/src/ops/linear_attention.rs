//! Linear attention (Katharopoulos et al. 2020, "Transformers are RNNs"):
//!
//!   φ(x) = elu(x) + 1,   context_i = Σ_j φ(q_i)·φ(k_j) v_j ÷ Σ_j φ(q_i)·φ(k_j)
//!
//! over the keys j the mask allows (padding: the real keys; causal: also j ≤ i), with no
//! 1/√d_k. Written as running sums S = Σ_j φ(k_j) v_jᵀ (Dk × Dv) and z = Σ_j φ(k_j) (Dk):
//! numerator n_i = φ(q_i)ᵀ·S, denominator d_i = φ(q_i)·z, so a head costs O(T·Dk·Dv) and no
//! (Tq, Tk) matrix is ever formed (the trace's implied weights aside, for display only).
//!
//! Key j "enters" the sums at query e_j: e_j = j with the causal mask, 0 otherwise, so one
//! loop serves both. Backward, with dn_i = dC_i / d_i and dd_i = −(dC_i·C_i) / d_i:
//!   dφ(q_i) = S_i·dn_i + z_i·dd_i,
//!   dφ(k_j) = (Σ_{i ≥ e_j} φ(q_i) dn_iᵀ)·v_j + Σ_{i ≥ e_j} φ(q_i) dd_i,
//!   dv_j = (Σ_{i ≥ e_j} φ(q_i) dn_iᵀ)ᵀ·φ(k_j),
//! the suffix sums running from the last query back. φ'(x) = 1 for x > 0, eˣ = φ(x) otherwise.
//!
//! There is no weight matrix to drop, so attention dropout does not apply here.

use crate::batch::MaskMode;
use crate::ops::attention_options::{mask_matrix, AttentionOptions, Dims, Qkv, QkvGrads};
use crate::trace::{HeadTrace, Matrix};
use ndarray::{s, Array2, Array3, ArrayView2, ArrayView3};

#[derive(Clone, Debug)]
pub struct LinearCache {
    /// d_i = φ(q_i)·z_i per query row (B, H, Tq); 0 for a query with no allowed key.
    pub denominator: Array3<f32>,
}

pub fn phi(x: f32) -> f32 {
    if x > 0.0 {
        x + 1.0
    } else {
        x.exp()
    }
}

/// φ'(x) from x.
fn phi_grad(x: f32) -> f32 {
    if x > 0.0 {
        1.0
    } else {
        x.exp()
    }
}

/// The query at which key j enters the sums, None if it never does (padding key).
fn entry(mask: MaskMode, key_mask: &[u8], j: usize) -> Option<usize> {
    match mask {
        MaskMode::None => Some(0),
        MaskMode::Padding => (key_mask[j] != 0).then_some(0),
        MaskMode::Causal => (key_mask[j] != 0).then_some(j),
    }
}

/// A head's φ(x) rows, contiguous (T, D).
fn phi_rows(x: ArrayView2<f32>) -> Array2<f32> {
    x.mapv(phi)
}

/// Keys grouped by the query at which they enter: keys_at[e] for e in 0..Tq.
fn keys_by_entry(mask: MaskMode, key_mask: &[u8], tq: usize) -> Vec<Vec<usize>> {
    let mut keys_at = vec![Vec::new(); tq];
    for j in 0..key_mask.len() {
        if let Some(e) = entry(mask, key_mask, j).filter(|&e| e < tq) {
            keys_at[e].push(j);
        }
    }
    keys_at
}

pub(crate) fn forward(
    Qkv { q, k, v, key_mask }: Qkv,
    opts: &AttentionOptions,
    Dims {
        b: b_size,
        tq,
        tk,
        h: h_count,
        dk,
        dv,
    }: Dims,
    mut trace: Option<&mut Vec<HeadTrace>>,
) -> (Array3<f32>, LinearCache) {
    let mut context = Array3::zeros((b_size, tq, h_count * dv));
    let mut denominator = Array3::zeros((b_size, h_count, tq));
    let mut state = vec![0f32; dk * dv]; // S (Dk, Dv)
    let mut z = vec![0f32; dk]; // z (Dk)
    for b in 0..b_size {
        let key_row = key_mask.row(b).to_vec();
        let keys_at = keys_by_entry(opts.mask, &key_row, tq);
        for h in 0..h_count {
            let g = opts.kv_group(h);
            let pq = phi_rows(q.slice(s![b, .., h * dk..(h + 1) * dk]));
            let pk = phi_rows(k.slice(s![b, .., g * dk..(g + 1) * dk]));
            let vh = v.slice(s![b, .., g * dv..(g + 1) * dv]).to_owned();
            state.fill(0.0);
            z.fill(0.0);
            for i in 0..tq {
                for &j in &keys_at[i] {
                    let (pk_j, v_j) = (pk.row(j), vh.row(j));
                    for (a, &pka) in pk_j.iter().enumerate() {
                        z[a] += pka;
                        for (sv, &vc) in state[a * dv..(a + 1) * dv].iter_mut().zip(v_j) {
                            *sv += pka * vc;
                        }
                    }
                }
                let pq_i = pq.row(i);
                let den: f32 = pq_i.iter().zip(&z).map(|(&a, &b)| a * b).sum();
                denominator[[b, h, i]] = den;
                if den > 0.0 {
                    let mut out = context.slice_mut(s![b, i, h * dv..(h + 1) * dv]);
                    for (a, &pqa) in pq_i.iter().enumerate() {
                        for (o, &sv) in out.iter_mut().zip(&state[a * dv..(a + 1) * dv]) {
                            *o += pqa * sv;
                        }
                    }
                    out /= den;
                }
            }
            if let Some(heads) = trace.as_deref_mut().filter(|_| b == 0) {
                // For display only: the implied weights φ(q_i)·φ(k_j) / d_i over allowed keys.
                let allowed: Vec<bool> = (0..tq)
                    .flat_map(|i| {
                        let key_row = &key_row;
                        (0..tk).map(move |j| entry(opts.mask, key_row, j).is_some_and(|e| e <= i))
                    })
                    .collect();
                let mut weights = pq.dot(&pk.t());
                for ((i, j), w) in weights.indexed_iter_mut() {
                    let den = denominator[[b, h, i]];
                    *w = if allowed[i * tk + j] && den > 0.0 {
                        *w / den
                    } else {
                        0.0
                    };
                }
                heads.push(HeadTrace {
                    kv_group: g,
                    q: Matrix::from_view(q.slice(s![b, .., h * dk..(h + 1) * dk])),
                    k: Matrix::from_view(k.slice(s![b, .., g * dk..(g + 1) * dk])),
                    v: Matrix::from_view(vh.view()),
                    phi_q: Some(Matrix::from_view(pq.view())),
                    phi_k: Some(Matrix::from_view(pk.view())),
                    mask: mask_matrix(tq, tk, &allowed),
                    weights: Matrix::from_view(weights.view()),
                    context: Matrix::from_view(context.slice(s![b, .., h * dv..(h + 1) * dv])),
                    ..HeadTrace::default()
                });
            }
        }
    }
    (context, LinearCache { denominator })
}

pub(crate) fn backward(
    QkvGrads {
        mut d_q,
        mut d_k,
        mut d_v,
    }: QkvGrads,
    d_context: ArrayView3<f32>,
    Qkv { q, k, v, key_mask }: Qkv,
    context: ArrayView3<f32>,
    cache: &LinearCache,
    opts: &AttentionOptions,
    Dims {
        b: b_size,
        tq,
        tk: _,
        h: h_count,
        dk,
        dv,
    }: Dims,
) {
    let mut state = vec![0f32; dk * dv]; // S_i, then the suffix sum of φ(q_i) dn_iᵀ
    let mut z = vec![0f32; dk]; // z_i, then the suffix sum of φ(q_i) dd_i
    let mut dn = Array2::<f32>::zeros((tq, dv)); // dn_i
    let mut dd = vec![0f32; tq]; // dd_i
    for b in 0..b_size {
        let key_row = key_mask.row(b).to_vec();
        let keys_at = keys_by_entry(opts.mask, &key_row, tq);
        for h in 0..h_count {
            let g = opts.kv_group(h);
            let qh = q.slice(s![b, .., h * dk..(h + 1) * dk]);
            let kh = k.slice(s![b, .., g * dk..(g + 1) * dk]);
            let (pq, pk) = (phi_rows(qh), phi_rows(kh));
            let vh = v.slice(s![b, .., g * dv..(g + 1) * dv]).to_owned();
            for (i, (dd_i, mut dn_i)) in dd.iter_mut().zip(dn.rows_mut()).enumerate() {
                let den = cache.denominator[[b, h, i]];
                let dc = d_context.slice(s![b, i, h * dv..(h + 1) * dv]);
                if den > 0.0 {
                    let c = context.slice(s![b, i, h * dv..(h + 1) * dv]);
                    *dd_i = -dc.dot(&c) / den;
                    dn_i.assign(&(&dc / den));
                } else {
                    *dd_i = 0.0;
                    dn_i.fill(0.0);
                }
            }
            // Forward order: S_i and z_i again, for dφ(q_i).
            state.fill(0.0);
            z.fill(0.0);
            for i in 0..tq {
                for &j in &keys_at[i] {
                    let (pk_j, v_j) = (pk.row(j), vh.row(j));
                    for (a, &pka) in pk_j.iter().enumerate() {
                        z[a] += pka;
                        for (sv, &vc) in state[a * dv..(a + 1) * dv].iter_mut().zip(v_j) {
                            *sv += pka * vc;
                        }
                    }
                }
                let dn_i = dn.row(i);
                for a in 0..dk {
                    let d_phi: f32 = state[a * dv..(a + 1) * dv]
                        .iter()
                        .zip(dn_i)
                        .map(|(&sv, &n)| sv * n)
                        .sum::<f32>()
                        + z[a] * dd[i];
                    d_q[[b, i, h * dk + a]] += d_phi * phi_grad(qh[[i, a]]);
                }
            }
            // Reverse order: suffix sums over the queries each key reaches.
            state.fill(0.0);
            z.fill(0.0);
            for i in (0..tq).rev() {
                let (pq_i, dn_i) = (pq.row(i), dn.row(i));
                for (a, &pqa) in pq_i.iter().enumerate() {
                    z[a] += pqa * dd[i];
                    for (sv, &n) in state[a * dv..(a + 1) * dv].iter_mut().zip(dn_i) {
                        *sv += pqa * n;
                    }
                }
                for &j in &keys_at[i] {
                    let (pk_j, v_j) = (pk.row(j), vh.row(j));
                    for a in 0..dk {
                        let row = &state[a * dv..(a + 1) * dv];
                        let d_phi: f32 =
                            row.iter().zip(v_j).map(|(&sv, &vc)| sv * vc).sum::<f32>() + z[a];
                        d_k[[b, j, g * dk + a]] += d_phi * phi_grad(kh[[j, a]]);
                        for (c, &sv) in row.iter().enumerate() {
                            d_v[[b, j, g * dv + c]] += sv * pk_j[a];
                        }
                    }
                }
            }
        }
    }
}

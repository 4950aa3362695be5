//! The attention ops against PyTorch, op by op (fixtures by tools/fixtures_attention.py):
//! full and tiled softmax attention with sliding windows, GQA and MQA against
//! `scaled_dot_product_attention` with the same explicit mask; linear attention against a direct
//! torch implementation of its formula; ALiBi (full and tiled) against a direct torch
//! implementation with transformers' BLOOM slopes; rotary embeddings against transformers'
//! RoFormer.
//! Forward and gradients of every input. Each test prints its largest differences.

use engine::batch::MaskMode;
use engine::ops::attention::{
    self, Alibi, Attention, AttentionKernel, AttentionOptions, Heads, Qkv, QkvGrads, Softmax,
};
use engine::ops::dropout::Noise;
use engine::ops::rope;
use ndarray::{Array2, Array3};
use serde::Deserialize;
use std::path::Path;

#[derive(Deserialize)]
struct Case {
    name: String,
    kind: String,
    #[serde(rename = "B")]
    b: usize,
    #[serde(rename = "T")]
    t: usize,
    #[serde(rename = "H")]
    h: usize,
    #[serde(rename = "G")]
    g: usize,
    #[serde(rename = "D")]
    d: usize,
    #[serde(default)]
    mask: Option<String>,
    #[serde(default)]
    window: Option<usize>,
    #[serde(default)]
    key_mask: Vec<Vec<u8>>,
    #[serde(default)]
    scale: f32,
    q: Vec<f32>,
    k: Vec<f32>,
    #[serde(default)]
    v: Vec<f32>,
    #[serde(default)]
    r: Vec<f32>,
    #[serde(default)]
    out: Vec<f32>,
    dq: Vec<f32>,
    dk: Vec<f32>,
    #[serde(default)]
    dv: Vec<f32>,
    #[serde(default)]
    r_q: Vec<f32>,
    #[serde(default)]
    r_k: Vec<f32>,
    #[serde(default)]
    out_q: Vec<f32>,
    #[serde(default)]
    out_k: Vec<f32>,
}

fn load(name: &str) -> Case {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/attention")
        .join(format!("{name}.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path:?}: {e}"))
}

fn arr(data: &[f32], b: usize, t: usize, w: usize) -> Array3<f32> {
    Array3::from_shape_vec((b, t, w), data.to_vec()).expect("fixture shape")
}

/// Largest |got − want|, asserting each within atol + rtol·|want|.
fn compare(what: &str, got: &Array3<f32>, want: &[f32], atol: f32, rtol: f32) -> f32 {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let mut largest = 0f32;
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let err = (g - w).abs();
        assert!(
            err <= atol + rtol * w.abs(),
            "{what}[{i}]: {g} vs torch {w}"
        );
        largest = largest.max(err);
    }
    largest
}

fn options(c: &Case, kernel: AttentionKernel) -> AttentionOptions {
    let mask = match c.mask.as_deref() {
        Some("none") => MaskMode::None,
        Some("causal") => MaskMode::Causal,
        _ => MaskMode::Padding,
    };
    let attention = match c.kind.as_str() {
        "linear" => Attention::Linear,
        _ => Attention::Softmax(Softmax {
            kernel,
            window: c.window,
        }),
    };
    let heads = Heads::new(c.h, c.g).unwrap();
    AttentionOptions {
        attention,
        alibi: (c.kind == "alibi").then(Alibi::default),
        ..AttentionOptions::softmax(heads, mask, c.scale, 0.0)
    }
}

/// Runs one case with one kernel; returns the largest difference over output and gradients.
fn check(c: &Case, kernel: AttentionKernel) -> f32 {
    let (b, t) = (c.b, c.t);
    let (q, k, v) = (
        arr(&c.q, b, t, c.h * c.d),
        arr(&c.k, b, t, c.g * c.d),
        arr(&c.v, b, t, c.g * c.d),
    );
    let key_mask = Array2::from_shape_vec((b, t), c.key_mask.concat()).unwrap();
    let opts = options(c, kernel);
    opts.validate().unwrap();
    let (out, cache) = attention::forward(
        Qkv {
            q: q.view(),
            k: k.view(),
            v: v.view(),
            key_mask: key_mask.view(),
        },
        &opts,
        &mut Noise::new(0, 0, b), // no dropout: never drawn from
        None,
        Default::default(),
    );
    let (mut dq, mut dk, mut dv) = (
        Array3::zeros(q.dim()),
        Array3::zeros(k.dim()),
        Array3::zeros(v.dim()),
    );
    let r = arr(&c.r, b, t, c.h * c.d);
    attention::backward(
        QkvGrads {
            d_q: dq.view_mut(),
            d_k: dk.view_mut(),
            d_v: dv.view_mut(),
        },
        r.view(),
        Qkv {
            q: q.view(),
            k: k.view(),
            v: v.view(),
            key_mask: key_mask.view(),
        },
        out.view(),
        &cache,
        &opts,
    );
    let what = |x: &str| format!("{} {kernel:?} {x}", c.name);
    [
        compare(&what("output"), &out, &c.out, 2e-5, 1e-4),
        compare(&what("d_q"), &dq, &c.dq, 2e-5, 1e-4),
        compare(&what("d_k"), &dk, &c.dk, 2e-5, 1e-4),
        compare(&what("d_v"), &dv, &c.dv, 2e-5, 1e-4),
    ]
    .into_iter()
    .fold(0.0, f32::max)
}

const SOFTMAX: [&str; 10] = [
    "softmax_padding",
    "softmax_causal",
    "softmax_none",
    "softmax_window_padding",
    "softmax_window_causal",
    "softmax_gqa",
    "softmax_mqa_causal",
    "softmax_gqa_window_causal",
    "softmax_unscaled_padding",
    "softmax_unscaled_causal_window",
];

#[test]
fn full_attention_matches_scaled_dot_product_attention() {
    for name in SOFTMAX {
        let c = load(name);
        let largest = check(&c, AttentionKernel::Full);
        println!("{name} full: largest difference {largest:.2e}");
    }
}

#[test]
fn tiled_attention_matches_scaled_dot_product_attention() {
    for name in SOFTMAX {
        let c = load(name);
        for block in [1, 3, 4, c.t + 1] {
            let largest = check(&c, AttentionKernel::Tiled { block });
            println!("{name} tiled block {block}: largest difference {largest:.2e}");
        }
    }
}

const ALIBI: [&str; 6] = [
    "alibi_padding",
    "alibi_causal",
    "alibi_none",
    "alibi_window_padding",
    "alibi_window_causal",
    "alibi_gqa_causal",
];

/// H = 6 and 12 (not powers of two) and H = 4; padding, causal, none, windows, GQA.
#[test]
fn alibi_matches_the_direct_torch_formula_with_blooms_slopes() {
    for name in ALIBI {
        let c = load(name);
        assert_eq!(c.kind, "alibi");
        for kernel in [
            AttentionKernel::Full,
            AttentionKernel::Tiled { block: 1 },
            AttentionKernel::Tiled { block: 3 },
            AttentionKernel::Tiled { block: c.t + 1 },
        ] {
            let largest = check(&c, kernel);
            println!("{name} {kernel:?}: largest difference {largest:.2e}");
        }
    }
}

#[test]
fn linear_attention_matches_the_direct_torch_formula() {
    for name in ["linear_padding", "linear_causal", "linear_gqa_causal"] {
        let c = load(name);
        let largest = check(&c, AttentionKernel::Full);
        println!("{name}: largest difference {largest:.2e}");
    }
}

#[test]
fn rope_matches_roformer() {
    let c = load("rope");
    assert_eq!(c.kind, "rope");
    let (b, t, w) = (c.b, c.t, c.h * c.d);
    let mut largest = 0f32;
    for (x, r, out, grad) in [
        (&c.q, &c.r_q, &c.out_q, &c.dq),
        (&c.k, &c.r_k, &c.out_k, &c.dk),
    ] {
        let x = arr(x, b, t, w);
        let y = rope::forward(x.view(), c.d);
        largest = largest.max(compare("rope output", &y, out, 1e-6, 1e-5));
        let mut dx = Array3::zeros(x.dim());
        rope::backward(&mut dx.view_mut(), arr(r, b, t, w).view(), c.d);
        largest = largest.max(compare("rope gradient", &dx, grad, 1e-6, 1e-5));
    }
    println!("rope: largest difference {largest:.2e}");
}

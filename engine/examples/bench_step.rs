//! Median milliseconds per forward, backward, optimiser update and full Adam step for the
//! tiny and small presets, printed as one JSON object for tools/bench_vs_torch.py:
//!
//!   cargo run --release -p attention-lab-engine --example bench_step [-- ITERS [WARMUP]]
//!
//! Each iteration times its three phases separately (forward, backward, Adam update) and as a
//! whole (the step), exactly as the torch side does, single-threaded.

#[path = "../benches/common/mod.rs"]
mod common;

use engine::backward::backward;
use engine::forward::{forward, MlmScope};
use engine::optim::{Optimizer, OptimizerConfig};
use engine::Rng;
use std::time::Instant;

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    }
}

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1e3
}

fn main() {
    let mut args = std::env::args()
        .skip(1)
        .map(|a| a.parse::<usize>().expect("ITERS and WARMUP are integers"));
    let iters = args.next().unwrap_or(50);
    let warmup = args.next().unwrap_or(5);
    let mut presets = serde_json::Map::new();
    for preset in common::presets() {
        let batch = common::fixed_batch(preset.seq_len, 7);
        let mut rng = Rng::new(1);
        let mut phases = serde_json::Map::new();
        for (label, scope) in [
            ("", MlmScope::LabelledOnly),
            ("_all_positions", MlmScope::AllPositions),
        ] {
            let opts = engine::forward::ForwardOptions {
                mlm_scope: scope,
                ..common::train_options()
            };
            let mut model = common::model(&preset);
            let mut grads = model.zeros_like();
            let mut opt = Optimizer::new(OptimizerConfig::adam(1e-3), &model).unwrap();
            let (mut fwd, mut bwd, mut upd, mut step) = (vec![], vec![], vec![], vec![]);
            for i in 0..warmup + iters {
                let t0 = Instant::now();
                grads.fill_zero();
                let tf = Instant::now();
                let out = forward(&model, &batch, &opts, &mut rng).unwrap();
                let f = ms(tf);
                let t1 = Instant::now();
                backward(&model, &batch, &out, &mut grads).unwrap();
                let b = ms(t1);
                let t2 = Instant::now();
                opt.step(&mut model, &grads).unwrap();
                let u = ms(t2);
                let s = ms(t0);
                assert!(out.losses.unwrap().total.is_finite());
                if i >= warmup {
                    fwd.push(f);
                    bwd.push(b);
                    upd.push(u);
                    step.push(s);
                }
            }
            for (name, xs) in [
                ("forward", fwd),
                ("backward", bwd),
                ("update", upd),
                ("step", step),
            ] {
                phases.insert(format!("{name}{label}"), median(xs).into());
            }
        }
        let mut entry = serde_json::Map::new();
        entry.insert("params".into(), common::model(&preset).num_params().into());
        entry.insert("seq_len".into(), preset.seq_len.into());
        entry.insert("batch".into(), common::BATCH.into());
        entry.insert("median_ms".into(), phases.into());
        presets.insert(preset.name.into(), entry.into());
    }
    let report =
        serde_json::json!({ "iters": iters, "warmup": warmup, "threads": 1, "presets": presets });
    println!("{}", serde_json::to_string_pretty(&report).unwrap());
}

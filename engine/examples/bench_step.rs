//! Median milliseconds per forward, backward, optimiser update and full Adam step for the
//! tiny and small presets, printed as one JSON object for tools/bench_vs_torch.py:
//!
//!   cargo run --release -p attention-lab-engine --example bench_step [-- ITERS [WARMUP] [--threads N]]
//!
//! Each iteration times its three phases separately (forward, backward, Adam update) and as a
//! whole (the step), exactly as the torch side does, on N threads (default: every core). Two
//! clocks: wall time (`median_ms`) and this thread's CPU time (`cpu_median_ms`, Linux), which
//! other processes on a shared machine disturb far less than wall time; with more than one
//! thread only wall time is the step's.

use engine::workload as common;

use engine::backward::{backward_reusing, BackwardScratch};
use engine::forward::{forward_reusing, MlmScope};
use engine::optim::{Optimizer, OptimizerConfig};
use engine::Rng;
use std::time::Instant;

/// CPU time of the calling thread, in ms: clock_gettime(CLOCK_THREAD_CPUTIME_ID), what
/// Python's time.thread_time() reads on the torch side.
#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
fn thread_cpu_ms() -> Option<f64> {
    #[repr(C)]
    struct Timespec {
        tv_sec: i64,
        tv_nsec: i64,
    }
    extern "C" {
        fn clock_gettime(clock: i32, tp: *mut Timespec) -> i32;
    }
    const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
    let mut t = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid clock id and a pointer to a live, correctly laid out timespec (64-bit Linux).
    let rc = unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut t) };
    (rc == 0).then_some(t.tv_sec as f64 * 1e3 + t.tv_nsec as f64 * 1e-6)
}

#[cfg(not(all(target_os = "linux", target_pointer_width = "64")))]
fn thread_cpu_ms() -> Option<f64> {
    None
}

/// A point in time on both clocks.
#[derive(Clone, Copy)]
struct Stamp {
    wall: Instant,
    cpu: Option<f64>,
}

impl Stamp {
    fn now() -> Self {
        Stamp {
            wall: Instant::now(),
            cpu: thread_cpu_ms(),
        }
    }
    /// (wall ms, cpu ms) from `self` to `later`.
    fn to(self, later: Stamp) -> (f64, f64) {
        let wall = (later.wall - self.wall).as_secs_f64() * 1e3;
        let cpu = match (self.cpu, later.cpu) {
            (Some(a), Some(b)) => b - a,
            _ => f64::NAN,
        };
        (wall, cpu)
    }
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    }
}

const PHASES: [&str; 4] = ["forward", "backward", "update", "step"];

fn main() {
    let mut numbers = Vec::new();
    let mut threads = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let number = |s: Option<String>| {
            s.and_then(|s| s.parse::<usize>().ok())
                .expect("ITERS, WARMUP and --threads N are whole numbers")
        };
        if a == "--threads" {
            threads = Some(number(args.next()));
        } else {
            numbers.push(number(Some(a)));
        }
    }
    let iters = numbers.first().copied().unwrap_or(50);
    let warmup = numbers.get(1).copied().unwrap_or(5);
    // As the CLI does: freed buffers stay for the next step.
    engine::threads::keep_freed_memory();
    if let Some(n) = threads {
        engine::threads::set_threads(n).unwrap();
    }
    let threads = rayon::current_num_threads();
    // As the CLI does: the timed thread is one of the pool's, and works on every split.
    let presets = engine::threads::in_pool(|| measure(iters, warmup));
    let report = serde_json::json!({ "iters": iters, "warmup": warmup, "threads": threads, "presets": presets });
    println!("{}", serde_json::to_string_pretty(&report).unwrap());
}

/// Every preset's phases: medians over `iters` steps after `warmup`, on both clocks.
fn measure(iters: usize, warmup: usize) -> serde_json::Map<String, serde_json::Value> {
    let mut presets = serde_json::Map::new();
    for preset in common::presets() {
        let batch = common::fixed_batch(preset.seq_len, 7);
        let mut rng = Rng::new(1);
        let (mut wall_medians, mut cpu_medians) = (serde_json::Map::new(), serde_json::Map::new());
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
            // As `train_step`: each step writes into the buffers of the step before.
            let (mut spare, mut scratch) = (None, BackwardScratch::default());
            // [phase][iteration] on each clock
            let mut wall: [Vec<f64>; 4] = Default::default();
            let mut cpu: [Vec<f64>; 4] = Default::default();
            for i in 0..warmup + iters {
                let t0 = Stamp::now();
                grads.fill_zero();
                let t1 = Stamp::now();
                let out =
                    forward_reusing(&model, &batch, &opts, None, &mut rng, spare.take()).unwrap();
                let t2 = Stamp::now();
                backward_reusing(&model, &batch, &out, &mut grads, &mut scratch).unwrap();
                let t3 = Stamp::now();
                opt.step(&mut model, &grads).unwrap();
                let t4 = Stamp::now();
                assert!(out.losses.unwrap().total.is_finite());
                spare = Some(out);
                if i >= warmup {
                    for (p, (a, b)) in [(t1, t2), (t2, t3), (t3, t4), (t0, t4)]
                        .into_iter()
                        .enumerate()
                    {
                        let (w, c) = a.to(b);
                        wall[p].push(w);
                        cpu[p].push(c);
                    }
                }
            }
            for (p, name) in PHASES.iter().enumerate() {
                wall_medians.insert(format!("{name}{label}"), median(wall[p].clone()).into());
                cpu_medians.insert(format!("{name}{label}"), median(cpu[p].clone()).into());
            }
        }
        let mut entry = serde_json::Map::new();
        entry.insert("params".into(), common::model(&preset).num_params().into());
        entry.insert("seq_len".into(), preset.seq_len.into());
        entry.insert("batch".into(), common::BATCH.into());
        entry.insert("median_ms".into(), wall_medians.into());
        entry.insert("cpu_median_ms".into(), cpu_medians.into());
        presets.insert(preset.name.into(), entry.into());
    }
    presets
}

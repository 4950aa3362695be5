//! The engine's benchmark workload (`engine::workload`: one preset model, one fixed batch; a
//! step is forward, backward and Adam, as `workload::median_step_ms` times it) in two builds of
//! the engine compiled into one module, so that a page can time their steps in turn, each a
//! few milliseconds after the other's.

use std::cell::RefCell;
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_namespace = performance)]
    fn now() -> f64;
}

/// One build's training run on the workload, written once for both builds: the same calls as
/// `workload::median_step_ms` makes, kept between steps.
macro_rules! workload_run {
    ($module:ident, $engine:ident) => {
        mod $module {
            use $engine::optim::{Optimizer, OptimizerConfig};
            use $engine::{workload, BertForPreTraining, Rng};

            pub fn preset_names() -> Vec<String> {
                workload::presets()
                    .iter()
                    .map(|p| p.name.to_string())
                    .collect()
            }

            pub struct Run {
                model: BertForPreTraining,
                grads: BertForPreTraining,
                optimizer: Optimizer,
                batch: $engine::Batch,
                rng: Rng,
                buffers: $engine::train::StepBuffers,
            }

            impl Run {
                pub fn new(preset: usize) -> Result<Self, String> {
                    let presets = workload::presets();
                    let preset = presets
                        .get(preset)
                        .ok_or_else(|| format!("no preset {preset}"))?;
                    let model = workload::model(preset);
                    let optimizer = Optimizer::new(OptimizerConfig::adam(1e-3), &model)
                        .map_err(|e| e.to_string())?;
                    Ok(Self {
                        grads: model.zeros_like(),
                        model,
                        optimizer,
                        batch: workload::fixed_batch(preset.seq_len, 7),
                        rng: Rng::new(1),
                        buffers: Default::default(),
                    })
                }

                pub fn step(&mut self) -> Result<(), String> {
                    $engine::train::train_step(
                        &mut self.model,
                        &mut self.grads,
                        &mut self.optimizer,
                        &self.batch,
                        &workload::train_options(),
                        &mut self.rng,
                        &mut self.buffers,
                    )
                    .map(|_| ())
                    .map_err(|e| e.to_string())
                }
            }
        }
    };
}
workload_run!(earlier, before);
workload_run!(this, after);

thread_local! {
    static RUNS: RefCell<Option<(earlier::Run, this::Run)>> = const { RefCell::new(None) };
}

/// The workload's preset names, in order; an error if the builds' lists differ.
#[wasm_bindgen]
pub fn presets() -> Result<Vec<String>, JsError> {
    let (before, after) = (earlier::preset_names(), this::preset_names());
    if before != after {
        return Err(JsError::new(&format!(
            "the builds' presets differ: {before:?} and {after:?}"
        )));
    }
    Ok(after)
}

/// Fresh runs of `preset` in both builds (the model as the workload initialises it), each
/// stepped `warmup` times untimed.
#[wasm_bindgen]
pub fn start(preset: usize, warmup: usize) -> Result<(), JsError> {
    let mut before = earlier::Run::new(preset).map_err(|e| JsError::new(&e))?;
    let mut after = this::Run::new(preset).map_err(|e| JsError::new(&e))?;
    for _ in 0..warmup {
        before.step().map_err(|e| JsError::new(&e))?;
        after.step().map_err(|e| JsError::new(&e))?;
    }
    RUNS.with(|runs| *runs.borrow_mut() = Some((before, after)));
    Ok(())
}

/// Milliseconds of one training step of the earlier build (`after` false) or this one.
#[wasm_bindgen]
pub fn step_ms(after: bool) -> Result<f64, JsError> {
    RUNS.with(|runs| {
        let mut runs = runs.borrow_mut();
        let (before_run, after_run) = runs.as_mut().ok_or_else(|| JsError::new("start() first"))?;
        let t0 = now();
        let stepped = if after {
            after_run.step()
        } else {
            before_run.step()
        };
        let ms = now() - t0;
        stepped.map(|()| ms).map_err(|e| JsError::new(&e))
    })
}

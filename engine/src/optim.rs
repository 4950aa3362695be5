//! Optimisers with PyTorch's exact update rules, so a run here and a run in torch with the
//! same gradients move the weights the same way.
//!
//! - SGD = `torch.optim.SGD` (dampening 0, no Nesterov): with weight decay wd the gradient
//!   becomes g + wd·p (L2), with momentum μ the buffer is b = g on the first step and
//!   b = μ·b + g afterwards; then p -= lr·b.
//! - Adam = `torch.optim.Adam` (no AMSGrad):
//!   m = m + (1−β1)(g − m), v = β2·v + (1−β2)·g², then
//!   p -= lr/(1−β1^t) · m / (√v/√(1−β2^t) + ε).
//!   `weight_decay` on Adam is AdamW's *decoupled* decay (`torch.optim.AdamW`): p *= 1 − lr·wd
//!   before the Adam update, not L2 added to the gradient.
//! - `clip_grad_norm` = `torch.nn.utils.clip_grad_norm_(params, max)`: the total L2 norm over
//!   all gradients, coef = max/(norm + 1e-6), and gradients scaled by coef only when coef < 1.
//! - `warmup_steps` W = `torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1, (s + 1) / W))`
//!   stepped after each update: step t (from 1) uses lr·min(1, t/W), decay included.
//!
//! Hyper-parameters are f64 like Python floats; torch turns the scalars it derives from them
//! (bias corrections, step size) into f32 only when they meet a tensor, and so do we.

use crate::error::{EngineError, Result};
use crate::model::Params;
use crate::threads;
use ndarray::{ArrayD, Zip};
use serde::{Deserialize, Serialize};

/// Which optimiser. Serialised by variant name ("Sgd", "Adam", as the page's saved settings
/// have it); the lower-case names (`name`) read too.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum OptimizerKind {
    #[serde(alias = "sgd")]
    Sgd,
    #[default]
    #[serde(alias = "adam")]
    Adam,
}

impl OptimizerKind {
    /// Every kind, in declaration order (a binary format's variant index).
    pub const ALL: [OptimizerKind; 2] = [OptimizerKind::Sgd, OptimizerKind::Adam];

    /// The lower-case name: a CLI flag's or a form's value, and what a kept training state
    /// records.
    pub fn name(self) -> &'static str {
        match self {
            OptimizerKind::Sgd => "sgd",
            OptimizerKind::Adam => "adam",
        }
    }

    /// The name to show a person.
    pub fn label(self) -> &'static str {
        match self {
            OptimizerKind::Sgd => "SGD",
            OptimizerKind::Adam => "Adam",
        }
    }

    /// The kind `name` gives, any case ("adam", "Adam", "SGD").
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|k| k.name().eq_ignore_ascii_case(name))
    }

    /// torch's defaults for this kind with learning rate `lr`.
    pub fn config(self, lr: f64) -> OptimizerConfig {
        match self {
            OptimizerKind::Sgd => OptimizerConfig::sgd(lr),
            OptimizerKind::Adam => OptimizerConfig::adam(lr),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OptimizerConfig {
    pub kind: OptimizerKind,
    pub lr: f64,
    /// Adam's (β1, β2).
    pub betas: (f64, f64),
    /// Adam's ε.
    pub eps: f64,
    /// SGD: L2 added to the gradient. Adam: decoupled (AdamW) decay.
    pub weight_decay: f64,
    /// SGD only.
    pub momentum: f64,
    pub clip_grad_norm: Option<f64>,
    /// Linear warm-up: step t (from 1) uses lr·min(1, t/W); 0 = none.
    #[serde(default)]
    pub warmup_steps: u64,
}

impl OptimizerConfig {
    /// torch.optim.SGD's defaults with this learning rate.
    pub fn sgd(lr: f64) -> Self {
        OptimizerConfig {
            kind: OptimizerKind::Sgd,
            ..Self::adam(lr)
        }
    }

    /// torch.optim.Adam's defaults with this learning rate.
    pub fn adam(lr: f64) -> Self {
        OptimizerConfig {
            kind: OptimizerKind::Adam,
            lr,
            betas: (0.9, 0.999),
            eps: 1e-8,
            weight_decay: 0.0,
            momentum: 0.0,
            clip_grad_norm: None,
            warmup_steps: 0,
        }
    }

    /// The learning rate of step `t` (from 1): lr·min(1, t/W) while warming up.
    pub fn lr_at(&self, t: u64) -> f64 {
        if self.warmup_steps == 0 || t >= self.warmup_steps {
            self.lr
        } else {
            self.lr * t as f64 / self.warmup_steps as f64
        }
    }

    pub fn validate(&self) -> Result<()> {
        let err = |m: String| Err(EngineError::Training(m));
        if !(self.lr.is_finite() && self.lr > 0.0) {
            return err(format!(
                "learning rate must be a positive number, got {}",
                self.lr
            ));
        }
        let (b1, b2) = self.betas;
        if !((0.0..1.0).contains(&b1) && (0.0..1.0).contains(&b2)) {
            return err(format!("Adam betas must be in [0, 1), got ({b1}, {b2})"));
        }
        if !(self.eps.is_finite() && self.eps > 0.0) {
            return err(format!(
                "Adam eps must be a positive number, got {}",
                self.eps
            ));
        }
        if !(self.weight_decay.is_finite() && self.weight_decay >= 0.0) {
            return err(format!(
                "weight decay must be ≥ 0, got {}",
                self.weight_decay
            ));
        }
        if !(self.momentum.is_finite() && (0.0..1.0).contains(&self.momentum)) {
            return err(format!("momentum must be in [0, 1), got {}", self.momentum));
        }
        if let Some(max) = self.clip_grad_norm {
            if !(max.is_finite() && max > 0.0) {
                return err(format!(
                    "clip_grad_norm must be a positive number, got {max}"
                ));
            }
        }
        Ok(())
    }
}

/// Per-parameter state, allocated once in `Optimizer::new`, same order as `named_params`.
#[derive(Clone, Debug)]
enum State {
    Sgd {
        momentum_buffer: Option<ArrayD<f32>>,
    }, // None when momentum = 0
    Adam {
        exp_avg: ArrayD<f32>,
        exp_avg_sq: ArrayD<f32>,
    },
}

#[derive(Clone, Debug)]
pub struct Optimizer {
    pub config: OptimizerConfig,
    /// Steps taken: Adam's t.
    pub t: u64,
    state: Vec<(String, State)>,
}

impl Optimizer {
    pub fn new(config: OptimizerConfig, model: &impl Params) -> Result<Self> {
        config.validate()?;
        let state = model
            .params()
            .into_iter()
            .map(|(name, p)| {
                let s = match config.kind {
                    OptimizerKind::Sgd => State::Sgd {
                        momentum_buffer: (config.momentum != 0.0)
                            .then(|| ArrayD::zeros(p.raw_dim())),
                    },
                    OptimizerKind::Adam => State::Adam {
                        exp_avg: ArrayD::zeros(p.raw_dim()),
                        exp_avg_sq: ArrayD::zeros(p.raw_dim()),
                    },
                };
                (name, s)
            })
            .collect();
        Ok(Optimizer {
            config,
            t: 0,
            state,
        })
    }

    /// The per-parameter state as named tensors: `{param}.exp_avg` and `{param}.exp_avg_sq` for
    /// Adam, `{param}.momentum_buffer` for SGD with momentum (none without).
    pub fn moments(&self) -> Vec<(String, &ArrayD<f32>)> {
        let mut out = Vec::new();
        for (name, state) in &self.state {
            match state {
                State::Sgd { momentum_buffer } => {
                    if let Some(b) = momentum_buffer {
                        out.push((format!("{name}.momentum_buffer"), b));
                    }
                }
                State::Adam {
                    exp_avg,
                    exp_avg_sq,
                } => {
                    out.push((format!("{name}.exp_avg"), exp_avg));
                    out.push((format!("{name}.exp_avg_sq"), exp_avg_sq));
                }
            }
        }
        out
    }

    /// Replace the step count and every tensor `moments` lists with `read(name, shape)`. All
    /// or nothing: a missing or misshapen tensor is an error and leaves the optimiser as it was.
    pub fn restore(
        &mut self,
        t: u64,
        mut read: impl FnMut(&str, &[usize]) -> Result<Vec<f32>>,
    ) -> Result<()> {
        let mut restored = Vec::new();
        for (name, tensor) in self.moments() {
            let values = read(&name, tensor.shape())?;
            let array = ArrayD::from_shape_vec(tensor.raw_dim(), values)
                .map_err(|e| EngineError::Training(format!("{name}: {e}")))?;
            restored.push(array);
        }
        let mut restored = restored.into_iter();
        for (_, state) in &mut self.state {
            let slots = match state {
                State::Sgd { momentum_buffer } => momentum_buffer.iter_mut().collect::<Vec<_>>(),
                State::Adam {
                    exp_avg,
                    exp_avg_sq,
                } => vec![exp_avg, exp_avg_sq],
            };
            for slot in slots {
                *slot = restored.next().expect("one array per listed moment");
            }
        }
        self.t = t;
        Ok(())
    }

    /// Change the learning rate for the next steps, keeping moments and the step count.
    pub fn set_learning_rate(&mut self, lr: f64) -> Result<()> {
        let mut config = self.config.clone();
        config.lr = lr;
        config.validate()?;
        self.config = config;
        Ok(())
    }

    /// One update of `model` from `grads` (a gradient struct of the same model).
    /// Refuses, leaving every weight untouched, when a gradient is NaN/∞.
    pub fn step<M: Params>(&mut self, model: &mut M, grads: &M) -> Result<()> {
        let grads = grads.params();
        let params = model.params_mut();
        if params.len() != self.state.len() || grads.len() != self.state.len() {
            return Err(EngineError::Training(format!(
                "optimizer was built for {} parameters, got {} parameters and {} gradients",
                self.state.len(),
                params.len(),
                grads.len()
            )));
        }
        for ((name, g), ((state_name, _), (_, p))) in
            grads.iter().zip(self.state.iter().zip(&params))
        {
            if name != state_name {
                return Err(EngineError::Training(format!(
                    "gradient {name} does not match parameter {state_name}"
                )));
            }
            if p.shape() != g.shape() {
                return Err(EngineError::Training(format!(
                    "gradient shape {:?} ≠ parameter shape {:?}",
                    g.shape(),
                    p.shape()
                )));
            }
        }
        // ‖g‖² per tensor on the threads, then added up in the parameters' order: the same bits
        // on any number of threads.
        let mut sums_sq = vec![0.0f64; grads.len()];
        let tensors = grads.iter().zip(sums_sq.iter_mut()).collect();
        threads::for_each(tensors, |((_, g), sum_sq)| {
            *sum_sq = g.iter().map(|&x| (x as f64) * (x as f64)).sum::<f64>()
        });
        let norm = sums_sq.iter().sum::<f64>().sqrt();
        if !norm.is_finite() {
            return Err(EngineError::Training(
                "a gradient is NaN or infinite: training diverged; lower the learning rate. Weights left unchanged".into(),
            ));
        }
        // clip_grad_norm_: coef = max/(‖g‖ + 1e-6), clamped to ≤ 1.
        let coef = match self.config.clip_grad_norm {
            Some(max) => ((max as f32) / (norm as f32 + 1e-6)).min(1.0),
            None => 1.0,
        };
        self.t += 1;
        let c = &self.config;
        let lr = c.lr_at(self.t);
        let t = self.t as f64;
        let first = self.t == 1;
        // Each tensor's update reads and writes only its own entries: the tensors run on the
        // threads.
        let tensors = params
            .into_iter()
            .zip(grads.iter().zip(self.state.iter_mut()))
            .collect();
        threads::for_each(tensors, |((_, mut p), ((_, g), (_, state)))| {
            match state {
                State::Sgd { momentum_buffer } => {
                    let (lr, wd, mu) = (lr as f32, c.weight_decay as f32, c.momentum as f32);
                    // d = g + wd·p  (L2, as torch.optim.SGD)
                    let d = |p: f32, g: f32| {
                        if wd != 0.0 {
                            g * coef + wd * p
                        } else {
                            g * coef
                        }
                    };
                    if let Some(buf) = momentum_buffer {
                        Zip::from(&mut p).and(g).and(buf).for_each(|p, &g, b| {
                            // b = d on the first step, μ·b + d afterwards
                            *b = if first { d(*p, g) } else { *b * mu + d(*p, g) };
                            *p += -lr * *b;
                        });
                    } else {
                        Zip::from(&mut p)
                            .and(g)
                            .for_each(|p, &g| *p += -lr * d(*p, g));
                    }
                }
                State::Adam {
                    exp_avg,
                    exp_avg_sq,
                } => {
                    let (b1, b2) = c.betas;
                    let step_size = (lr / (1.0 - b1.powf(t))) as f32;
                    let bc2_sqrt = (1.0 - b2.powf(t)).sqrt() as f32;
                    let (w1, w2, eps) = ((1.0 - b1) as f32, (1.0 - b2) as f32, c.eps as f32);
                    let (b2, decay) = (b2 as f32, (1.0 - lr * c.weight_decay) as f32);
                    Zip::from(&mut p)
                        .and(g)
                        .and(exp_avg)
                        .and(exp_avg_sq)
                        .for_each(|p, &g, m, v| {
                            let g = g * coef;
                            if decay != 1.0 {
                                *p *= decay; // AdamW: p *= 1 − lr·wd
                            }
                            *m = lerp(*m, g, w1);
                            *v = *v * b2 + w2 * g * g;
                            *p += -step_size * *m / (v.sqrt() / bc2_sqrt + eps);
                        });
                }
            }
        });
        Ok(())
    }
}

/// torch.lerp(a, b, w) as ATen computes it (two forms for accuracy near w = 0 and w = 1).
fn lerp(a: f32, b: f32, w: f32) -> f32 {
    if w.abs() < 0.5 {
        a + w * (b - a)
    } else {
        b - (b - a) * (1.0 - w)
    }
}

#[cfg(test)]
#[allow(clippy::excessive_precision)] // torch's printed digits, kept verbatim
mod tests {
    use super::*;
    use crate::config::BertConfig;
    use crate::model::BertForPreTraining;
    use crate::rng::Rng;

    #[test]
    fn optimizer_kinds_are_saved_by_variant_name_and_read_by_any_of_their_names() {
        for (kind, json) in [
            (OptimizerKind::Sgd, r#""Sgd""#),
            (OptimizerKind::Adam, r#""Adam""#),
        ] {
            assert_eq!(serde_json::to_string(&kind).unwrap(), json);
            assert_eq!(serde_json::from_str::<OptimizerKind>(json).unwrap(), kind);
            let lower = format!("{:?}", kind.name());
            assert_eq!(serde_json::from_str::<OptimizerKind>(&lower).unwrap(), kind);
            assert_eq!(OptimizerKind::from_name(kind.label()), Some(kind));
            assert_eq!(OptimizerKind::from_name(kind.name()), Some(kind));
            assert_eq!(kind.config(0.5).kind, kind);
        }
        assert_eq!(OptimizerKind::ALL.map(OptimizerKind::name), ["sgd", "adam"]);
        assert_eq!(OptimizerKind::default(), OptimizerKind::Adam);
        assert_eq!(OptimizerKind::from_name("rmsprop"), None);
        assert!(serde_json::from_str::<OptimizerKind>(r#""rmsprop""#).is_err());
    }

    /// A tiny model with p = [0.5, −1, 2, 0, …] and g = [0.1, −0.2, 0.3, −0.4, …] in every
    /// tensor; the tests read the first 4 weights of token_type_embeddings (2×4).
    fn setup() -> (BertForPreTraining, BertForPreTraining) {
        let mut config = BertConfig::new(8, 4, 1, 2, 8);
        config.max_position_embeddings = 4;
        let mut model = BertForPreTraining::init(&config, &mut Rng::new(0)).unwrap();
        let mut grads = model.zeros_like();
        for (_, mut p) in model.named_params_mut() {
            for (i, x) in p.iter_mut().enumerate() {
                *x = [0.5, -1.0, 2.0, 0.0][i % 4];
            }
        }
        for (_, mut g) in grads.named_params_mut() {
            for (i, x) in g.iter_mut().enumerate() {
                *x = [0.1, -0.2, 0.3, -0.4][i % 4];
            }
        }
        (model, grads)
    }

    fn first4(model: &BertForPreTraining) -> Vec<f32> {
        model
            .bert
            .embeddings
            .token_type_embeddings
            .iter()
            .take(4)
            .copied()
            .collect()
    }

    fn assert_close(got: &[f32], want: &[f32]) {
        for (g, w) in got.iter().zip(want) {
            assert!(
                (g - w).abs() <= 1e-6 * w.abs().max(1.0),
                "got {got:?}, want {want:?}"
            );
        }
    }

    // Reference numbers printed by this script (torch 2.15, CPU, float32):
    //   def run(make_opt, steps, clip=None, n=4):
    //       p = torch.tensor([0.5, -1.0, 2.0, 0.0] * (n // 4), requires_grad=True)
    //       opt = make_opt([p])
    //       for _ in range(steps):
    //           opt.zero_grad()
    //           p.grad = torch.tensor([0.1, -0.2, 0.3, -0.4] * (n // 4))
    //           if clip is not None:
    //               torch.nn.utils.clip_grad_norm_([p], clip)
    //           opt.step()
    //       return [float(x) for x in p.detach()[:4]]
    //   run(lambda ps: torch.optim.Adam(ps, lr=0.1), 1)                                  # ADAM_1
    //   run(lambda ps: torch.optim.Adam(ps, lr=0.1), 3)                                  # ADAM_3
    //   run(lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9, weight_decay=0.01), 3)  # SGD_MOMENTUM_3
    //   run(lambda ps: torch.optim.AdamW(ps, lr=0.01, weight_decay=0.1), 2, clip=0.5, n=8)  # ADAMW_CLIP_2
    const TORCH_ADAM_1: [f32; 4] = [
        0.4000000059604645,
        -0.8999999761581421,
        1.899999976158142,
        0.10000000894069672,
    ];
    const TORCH_ADAM_3: [f32; 4] = [
        0.20000001788139343,
        -0.699999988079071,
        1.6999999284744263,
        0.30000001192092896,
    ];
    const TORCH_SGD_MOMENTUM_3: [f32; 4] = [
        0.4411453604698181,
        -0.8822907209396362,
        1.8206336498260498,
        0.2242080420255661,
    ];
    const TORCH_ADAMW_CLIP_2: [f32; 4] = [
        0.47901052236557007,
        -0.9780110716819763,
        1.976012110710144,
        0.019990000873804092,
    ];

    #[test]
    fn adam_matches_torch_for_three_steps() {
        let (mut model, grads) = setup();
        let mut opt = Optimizer::new(OptimizerConfig::adam(0.1), &model).unwrap();
        let mut seen = vec![];
        for _ in 0..3 {
            opt.step(&mut model, &grads).unwrap();
            seen.push(first4(&model));
        }
        assert_close(&seen[0], &TORCH_ADAM_1);
        assert_close(&seen[2], &TORCH_ADAM_3);
    }

    #[test]
    fn sgd_with_momentum_and_weight_decay_matches_torch() {
        let (mut model, grads) = setup();
        let config = OptimizerConfig {
            momentum: 0.9,
            weight_decay: 0.01,
            ..OptimizerConfig::sgd(0.1)
        };
        let mut opt = Optimizer::new(config, &model).unwrap();
        for _ in 0..3 {
            opt.step(&mut model, &grads).unwrap();
        }
        assert_close(&first4(&model), &TORCH_SGD_MOMENTUM_3);
    }

    #[test]
    fn plain_sgd_is_p_minus_lr_g() {
        let (mut model, grads) = setup();
        let mut opt = Optimizer::new(OptimizerConfig::sgd(0.5), &model).unwrap();
        opt.step(&mut model, &grads).unwrap();
        assert_close(&first4(&model), &[0.45, -0.9, 1.85, 0.2]);
    }

    #[test]
    fn adamw_decay_and_clipping_match_torch() {
        let (mut model, mut grads) = setup();
        // Only token_type_embeddings (2×4: the pattern twice) has a gradient, as `n=8` in torch.
        let keep = grads.bert.embeddings.token_type_embeddings.clone();
        grads.fill_zero();
        grads.bert.embeddings.token_type_embeddings = keep;
        let config = OptimizerConfig {
            weight_decay: 0.1,
            clip_grad_norm: Some(0.5),
            ..OptimizerConfig::adam(0.01)
        };
        let mut opt = Optimizer::new(config, &model).unwrap();
        for _ in 0..2 {
            opt.step(&mut model, &grads).unwrap();
        }
        assert_close(&first4(&model), &TORCH_ADAMW_CLIP_2);
    }

    #[test]
    fn clipping_scales_sgd_steps_by_max_over_norm() {
        let (mut model, grads) = setup();
        let norm = grads
            .named_params()
            .iter()
            .flat_map(|(_, g)| g.iter().map(|x| x * x).collect::<Vec<_>>())
            .sum::<f32>()
            .sqrt();
        let config = OptimizerConfig {
            clip_grad_norm: Some(1.0),
            ..OptimizerConfig::sgd(1.0)
        };
        let mut opt = Optimizer::new(config, &model).unwrap();
        opt.step(&mut model, &grads).unwrap();
        let coef = 1.0 / (norm + 1e-6);
        assert!(
            coef < 0.5,
            "the test gradient must be large enough to clip, norm {norm}"
        );
        assert_close(
            &first4(&model),
            &[
                0.5 - 0.1 * coef,
                -1.0 + 0.2 * coef,
                2.0 - 0.3 * coef,
                0.4 * coef,
            ],
        );
    }

    #[test]
    fn non_finite_gradient_leaves_weights_untouched() {
        let (mut model, mut grads) = setup();
        grads.bert.embeddings.layer_norm.bias[1] = f32::NAN;
        assert_step_refused(&mut model, &grads, "NaN");
    }

    /// An Adam step with `grads` fails with an error that names `cause`, and changes neither a
    /// weight nor the step count.
    fn assert_step_refused(
        model: &mut BertForPreTraining,
        grads: &BertForPreTraining,
        cause: &str,
    ) {
        let before = model.clone();
        let mut opt = Optimizer::new(OptimizerConfig::adam(0.1), model).unwrap();
        let e = opt.step(model, grads).unwrap_err().to_string();
        assert!(e.contains(cause), "{e}");
        assert_eq!(*model, before);
        assert_eq!(opt.t, 0);
    }

    #[test]
    fn misshapen_gradients_leave_every_weight_untouched() {
        let (mut model, _) = setup();
        // Same names, other shapes: the gradients of a model whose feed-forward is 16 wide,
        // not 8. The embeddings come first and match, so a check made tensor by tensor while
        // updating would have updated them before it found the feed-forward.
        let mut config = BertConfig::new(8, 4, 1, 2, 16);
        config.max_position_embeddings = 4;
        let wider = BertForPreTraining::init(&config, &mut Rng::new(0)).unwrap();
        assert_step_refused(&mut model, &wider, "shape");
    }

    #[test]
    fn bad_settings_are_refused() {
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(OptimizerConfig::adam(bad).validate().is_err(), "lr {bad}");
        }
        assert!(OptimizerConfig {
            momentum: 1.5,
            ..OptimizerConfig::sgd(0.1)
        }
        .validate()
        .is_err());
        assert!(OptimizerConfig {
            betas: (1.0, 0.999),
            ..OptimizerConfig::adam(0.1)
        }
        .validate()
        .is_err());
        assert!(OptimizerConfig {
            clip_grad_norm: Some(0.0),
            ..OptimizerConfig::adam(0.1)
        }
        .validate()
        .is_err());
        let model = setup().0;
        let mut opt = Optimizer::new(OptimizerConfig::adam(0.1), &model).unwrap();
        assert!(opt.set_learning_rate(-3.0).is_err());
        opt.set_learning_rate(0.5).unwrap();
        assert_eq!(opt.config.lr, 0.5);
    }
}

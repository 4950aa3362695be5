//! BERT's parameters, named as in the paper and in HF `transformers` (`BertSelfAttention`,
//! `BertIntermediate`, …) so a reader can map them one to one.
//!
//! A gradient is the same struct: `BertForPreTraining::zeros_like` gives one, and the named
//! parameter lists of a model and of its gradient line up entry by entry.

use crate::config::{BertConfig, PositionEmbeddingType};
use crate::error::{EngineError, Result};
use crate::rng::Rng;
use ndarray::{Array, Array1, Array2, ArrayViewD, ArrayViewMutD, Dimension};

/// 500 M parameters = 2 GB of f32, counted from `param_specs` (the one description of the
/// parameters) before any tensor exists.
pub const MAX_PARAMETERS: u64 = 500_000_000;

/// y = x·Wᵀ + b, with W stored (out, in) as torch.nn.Linear does.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Linear {
    pub weight: Array2<f32>, // (out, in)
    pub bias: Array1<f32>,   // (out)
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct LayerNorm {
    pub weight: Array1<f32>, // (C) γ
    pub bias: Array1<f32>,   // (C) β
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct BertEmbeddings {
    pub word_embeddings: Array2<f32>, // (V, C), also the tied MLM decoder
    /// (P, C) learned absolute positions; None for rotary positions (no tensor).
    pub position_embeddings: Option<Array2<f32>>,
    pub token_type_embeddings: Array2<f32>, // (2, C)
    pub layer_norm: LayerNorm,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct BertSelfAttention {
    pub query: Linear, // (C, C)
    pub key: Linear,   // (G·D, C): one key per K/V group
    pub value: Linear, // (G·D, C)
}

/// W_O, then residual and LayerNorm.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BertSelfOutput {
    pub dense: Linear, // (C, C)
    pub layer_norm: LayerNorm,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct BertAttention {
    pub self_attention: BertSelfAttention,
    pub output: BertSelfOutput,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct BertIntermediate {
    pub dense: Linear, // (I, C)
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct BertOutput {
    pub dense: Linear, // (C, I)
    pub layer_norm: LayerNorm,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct BertLayer {
    pub attention: BertAttention,
    /// An encoder–decoder's decoder layer (`add_cross_attention`): queries from this layer,
    /// keys and values from the encoder's output. K and V are (C, C): one per head.
    pub crossattention: Option<BertAttention>,
    pub intermediate: BertIntermediate,
    pub output: BertOutput,
}

/// tanh(W·h_[CLS] + b)
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BertPooler {
    pub dense: Linear, // (C, C)
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct BertModel {
    pub embeddings: BertEmbeddings,
    pub layers: Vec<BertLayer>,
    /// Absent in some bare `BertModel` checkpoints.
    pub pooler: Option<BertPooler>,
}

/// dense + GELU + LayerNorm before the tied decoder.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BertPredictionHeadTransform {
    pub dense: Linear, // (C, C)
    pub layer_norm: LayerNorm,
}

/// MLM head; its decoder weight is `bert.embeddings.word_embeddings` (tied).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BertLMPredictionHead {
    pub transform: BertPredictionHeadTransform,
    pub bias: Array1<f32>, // (V)
}

/// `BertPreTrainingHeads`, or `BertOnlyMLMHead` (a `BertLMHeadModel`'s: no NSP).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BertPreTrainingHeads {
    pub predictions: BertLMPredictionHead,
    pub seq_relationship: Option<Linear>, // (2, C): NSP, 0 = IsNext, 1 = NotNext
}

/// `BertForPreTraining`, and with `config.is_decoder` HF's `BertLMHeadModel` (no pooler, no
/// NSP head: `Parts::LM_HEAD`).
#[derive(Clone, Debug, PartialEq)]
pub struct BertForPreTraining {
    pub config: BertConfig,
    pub bert: BertModel,
    /// None for a bare `BertModel` checkpoint: it can be inspected, not pre-trained.
    pub cls: Option<BertPreTrainingHeads>,
}

/// Which optional parts a model has. The encoder is always there; the pooler and the
/// pre-training heads are absent from some checkpoints (a bare `BertModel` or `RoFormerModel`),
/// and a decoder (`BertLMHeadModel`) has the MLM head without NSP.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Parts {
    pub pooler: bool,
    /// `cls.predictions`: the MLM (or next-token) head.
    pub heads: bool,
    /// `cls.seq_relationship`, only with `heads`.
    pub nsp: bool,
}

impl Parts {
    /// `BertForPreTraining`: pooler and heads.
    pub const ALL: Parts = Parts {
        pooler: true,
        heads: true,
        nsp: true,
    };
    /// `BertLMHeadModel`: the LM head only.
    pub const LM_HEAD: Parts = Parts {
        pooler: false,
        heads: true,
        nsp: false,
    };

    /// What a fresh model of `config` has: a decoder's, or `BertForPreTraining`'s.
    pub fn of_new(config: &BertConfig) -> Parts {
        if config.is_decoder {
            Parts::LM_HEAD
        } else {
            Parts::ALL
        }
    }
}

/// How a parameter starts (HF's `_init_weights`, std = `initializer_range`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Init {
    /// N(0, std), with this row zeroed (nn.Embedding's `padding_idx`).
    Normal {
        zero_row: Option<usize>,
    },
    Zeros,
    Ones,
}

/// One parameter as the description states it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamSpec {
    /// Its HF `BertForPreTraining` name.
    pub name: String,
    pub shape: Vec<usize>,
    pub init: Init,
}

impl ParamSpec {
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// THE description of the parameters: for each, in the fixed order, its HF name, its shape
/// from the config, its init, and the struct field that holds it. Everything else derives from
/// this one list: `param_specs` (shapes without a model, for size bounds and validation),
/// `BertForPreTraining::from_fn` (init, zeros for a gradient, loading a checkpoint) and
/// `named_params{,_mut}` (saving, optimiser state, gradient steps).
///
/// `$model` is a `&` or `&mut BertForPreTraining`; destructuring keeps the reference kind, so
/// the same text expands for reading and for writing. Which optional parts exist (pooler,
/// heads, position embeddings) and how many layers is the model's structure, set by
/// `skeleton`; `$param!(name, shape, init, field)` is called for each parameter present.
macro_rules! describe_params {
    ($model:expr, $param:ident) => {{
        let BertForPreTraining { config, bert, cls } = $model;
        #[allow(unused_variables)]
        let (v, c, i, p, tv) = (
            config.vocab_size,
            config.hidden_size,
            config.intermediate_size,
            config.max_position_embeddings,
            config.type_vocab_size,
        );
        #[allow(unused_variables)]
        let (kv, pad) = (
            config.num_kv_heads() * config.head_size(),
            config.pad_token_id,
        ); // G·D
        #[allow(unused_variables)]
        let normal = Init::Normal { zero_row: None };
        macro_rules! linear {
            ($name:expr, $out:expr, $in:expr, $l:expr) => {{
                let Linear { weight, bias } = $l;
                $param!(format!("{}.weight", $name), [$out, $in], normal, weight);
                $param!(format!("{}.bias", $name), [$out], Init::Zeros, bias);
            }};
        }
        macro_rules! layer_norm {
            ($name:expr, $ln:expr) => {{
                let LayerNorm { weight, bias } = $ln;
                $param!(
                    format!("{}.LayerNorm.weight", $name),
                    [c],
                    Init::Ones,
                    weight
                );
                $param!(format!("{}.LayerNorm.bias", $name), [c], Init::Zeros, bias);
            }};
        }
        let BertModel {
            embeddings,
            layers,
            pooler,
        } = bert;
        let BertEmbeddings {
            word_embeddings,
            position_embeddings,
            token_type_embeddings,
            layer_norm,
        } = embeddings;
        $param!(
            "bert.embeddings.word_embeddings.weight".to_string(),
            [v, c],
            Init::Normal {
                zero_row: Some(pad)
            },
            word_embeddings
        );
        if let Some(position_embeddings) = position_embeddings {
            $param!(
                "bert.embeddings.position_embeddings.weight".to_string(),
                [p, c],
                normal,
                position_embeddings
            );
        }
        $param!(
            "bert.embeddings.token_type_embeddings.weight".to_string(),
            [tv, c],
            normal,
            token_type_embeddings
        );
        layer_norm!("bert.embeddings", layer_norm);
        for (l, layer) in layers.into_iter().enumerate() {
            let pre = format!("bert.encoder.layer.{l}");
            let BertLayer {
                attention,
                crossattention,
                intermediate,
                output,
            } = layer;
            let BertAttention {
                self_attention,
                output: self_output,
            } = attention;
            let BertSelfAttention { query, key, value } = self_attention;
            linear!(format!("{pre}.attention.self.query"), c, c, query);
            linear!(format!("{pre}.attention.self.key"), kv, c, key);
            linear!(format!("{pre}.attention.self.value"), kv, c, value);
            let BertSelfOutput { dense, layer_norm } = self_output;
            linear!(format!("{pre}.attention.output.dense"), c, c, dense);
            layer_norm!(format!("{pre}.attention.output"), layer_norm);
            if let Some(BertAttention {
                self_attention,
                output: cross_output,
            }) = crossattention
            {
                let BertSelfAttention { query, key, value } = self_attention;
                linear!(format!("{pre}.crossattention.self.query"), c, c, query);
                linear!(format!("{pre}.crossattention.self.key"), c, c, key);
                linear!(format!("{pre}.crossattention.self.value"), c, c, value);
                let BertSelfOutput { dense, layer_norm } = cross_output;
                linear!(format!("{pre}.crossattention.output.dense"), c, c, dense);
                layer_norm!(format!("{pre}.crossattention.output"), layer_norm);
            }
            let BertIntermediate { dense } = intermediate;
            linear!(format!("{pre}.intermediate.dense"), i, c, dense);
            let BertOutput { dense, layer_norm } = output;
            linear!(format!("{pre}.output.dense"), c, i, dense);
            layer_norm!(format!("{pre}.output"), layer_norm);
        }
        if let Some(BertPooler { dense }) = pooler {
            linear!("bert.pooler.dense", c, c, dense);
        }
        if let Some(BertPreTrainingHeads {
            predictions,
            seq_relationship,
        }) = cls
        {
            let BertLMPredictionHead { transform, bias } = predictions;
            $param!("cls.predictions.bias".to_string(), [v], Init::Zeros, bias);
            let BertPredictionHeadTransform { dense, layer_norm } = transform;
            linear!("cls.predictions.transform.dense", c, c, dense);
            layer_norm!("cls.predictions.transform", layer_norm);
            if let Some(seq_relationship) = seq_relationship {
                linear!("cls.seq_relationship", 2, c, seq_relationship);
            }
        }
    }};
}

/// A shared or mutable parameter reference turned into a dynamic-rank view of the same kind,
/// so one traversal serves `named_params` and `named_params_mut`.
trait DynView<'a> {
    type View;
    fn dyn_view(self) -> Self::View;
}

impl<'a, D: Dimension> DynView<'a> for &'a Array<f32, D> {
    type View = ArrayViewD<'a, f32>;
    fn dyn_view(self) -> Self::View {
        self.view().into_dyn()
    }
}

impl<'a, D: Dimension> DynView<'a> for &'a mut Array<f32, D> {
    type View = ArrayViewMutD<'a, f32>;
    fn dyn_view(self) -> Self::View {
        self.view_mut().into_dyn()
    }
}

/// Every parameter a model of `config` with `parts` has, as the description states it; no
/// tensor is allocated.
pub fn param_specs(config: &BertConfig, parts: Parts) -> Vec<ParamSpec> {
    let mut specs = Vec::new();
    macro_rules! spec {
        ($name:expr, $shape:expr, $init:expr, $field:expr) => {{
            let _ = $field;
            specs.push(ParamSpec {
                name: $name,
                shape: $shape.to_vec(),
                init: $init,
            });
        }};
    }
    describe_params!(&BertForPreTraining::skeleton(config, parts), spec);
    specs
}

/// The parameter count of a full `BertForPreTraining` of `config`, in u64 (a wasm32 usize
/// would overflow for the configs the bounds exist to refuse).
pub fn param_count(config: &BertConfig) -> u64 {
    param_specs(config, Parts::ALL)
        .iter()
        .map(|s| s.shape.iter().map(|&d| d as u64).product::<u64>())
        .sum()
}

/// Everything that makes a model of `config` buildable, checked before any tensor exists:
/// each field on its own (`BertConfig::validate`: every size bounded) and the parameter count
/// they imply together, at most `MAX_PARAMETERS`. `from_fn`, hence every constructor, runs it.
pub fn validate_config(config: &BertConfig) -> Result<()> {
    config.validate()?;
    // Each size is bounded above, so this count cannot overflow a u64.
    let params = param_count(config);
    if params > MAX_PARAMETERS {
        return Err(EngineError::Config(format!(
            "the model would have {params} parameters ({:.1} GB as f32): the limit is {MAX_PARAMETERS} ({} GB)",
            params as f64 * 4.0 / 1e9,
            MAX_PARAMETERS * 4 / 1_000_000_000
        )));
    }
    Ok(())
}

impl BertForPreTraining {
    /// The structure of a model (which optional parts, how many layers) with every tensor
    /// empty: what `describe_params!` walks to list or fill the parameters.
    fn skeleton(config: &BertConfig, parts: Parts) -> Self {
        let absolute = config.position_embedding_type == PositionEmbeddingType::Absolute;
        BertForPreTraining {
            config: config.clone(),
            bert: BertModel {
                embeddings: BertEmbeddings {
                    position_embeddings: absolute.then(<Array2<f32> as Default>::default),
                    ..BertEmbeddings::default()
                },
                layers: vec![
                    BertLayer {
                        crossattention: config.add_cross_attention.then(BertAttention::default),
                        ..BertLayer::default()
                    };
                    config.num_hidden_layers
                ],
                pooler: parts.pooler.then(BertPooler::default),
            },
            cls: parts.heads.then(|| BertPreTrainingHeads {
                seq_relationship: parts.nsp.then(Linear::default),
                ..BertPreTrainingHeads::default()
            }),
        }
    }

    /// A model of `config` with `parts`, each parameter's values (row-major, `spec.len()` of
    /// them) from `make(spec)`, called in the description's order. The config is checked
    /// first (`validate_config`), so a bad or too large one allocates nothing.
    pub fn from_fn(
        config: &BertConfig,
        parts: Parts,
        mut make: impl FnMut(&ParamSpec) -> Result<Vec<f32>>,
    ) -> Result<Self> {
        Self::from_dyn_fn(config, parts, &mut make)
    }

    // Not generic over `make`: `describe_params!` expands `fill` at every parameter, and a generic
    // body was compiled once per caller (the worker's wasm held three copies of 26 KB each).
    fn from_dyn_fn(config: &BertConfig, parts: Parts, make: &mut MakeValues) -> Result<Self> {
        validate_config(config)?;
        let mut model = Self::skeleton(config, parts);
        macro_rules! fill {
            ($name:expr, $shape:expr, $init:expr, $field:expr) => {{
                let spec = ParamSpec {
                    name: $name,
                    shape: $shape.to_vec(),
                    init: $init,
                };
                *$field = filled(spec, make)?;
            }};
        }
        describe_params!(&mut model, fill);
        Ok(model)
    }

    /// HF's `_init_weights`: N(0, initializer_range) for dense and embedding weights, the
    /// padding row of the word embeddings zero, biases zero, LayerNorm γ = 1 and β = 0.
    /// An error when the config is not buildable (`validate_config`).
    pub fn init(config: &BertConfig, rng: &mut Rng) -> Result<Self> {
        Self::init_with_parts(config, Parts::of_new(config), rng)
    }

    /// `init` with these optional parts (a bare `BertModel`: none).
    pub fn init_with_parts(config: &BertConfig, parts: Parts, rng: &mut Rng) -> Result<Self> {
        let std = config.initializer_range;
        Self::from_fn(config, parts, |spec| {
            Ok(match spec.init {
                Init::Zeros => vec![0.0; spec.len()],
                Init::Ones => vec![1.0; spec.len()],
                Init::Normal { zero_row } => {
                    let mut values: Vec<f32> =
                        (0..spec.len()).map(|_| rng.normal(0.0, std)).collect();
                    if let Some(row) = zero_row {
                        let cols: usize = spec.shape[1..].iter().product();
                        values[row * cols..(row + 1) * cols].fill(0.0);
                    }
                    values
                }
            })
        })
    }

    /// The optional parts this model has.
    pub fn parts(&self) -> Parts {
        Parts {
            pooler: self.bert.pooler.is_some(),
            heads: self.cls.is_some(),
            nsp: self
                .cls
                .as_ref()
                .is_some_and(|c| c.seq_relationship.is_some()),
        }
    }

    /// A gradient buffer: same structure, all zeros.
    pub fn zeros_like(&self) -> Self {
        Self::zeroed(&self.config, self.parts())
            .expect("the description gives every parameter its shape")
    }

    /// A model of `config` with `parts`, every parameter zero: the skeleton a gradient worker
    /// fills from a lead's weights (`Params::copy_from_flat`). An error when the config is not
    /// buildable (`validate_config`).
    pub fn zeroed(config: &BertConfig, parts: Parts) -> Result<Self> {
        Self::from_fn(config, parts, |spec| Ok(vec![0.0; spec.len()]))
    }

    /// Zero every parameter in place (a gradient buffer between steps).
    pub fn fill_zero(&mut self) {
        Params::fill_zero(self)
    }

    pub fn num_params(&self) -> usize {
        self.named_params().iter().map(|(_, p)| p.len()).sum()
    }

    /// Every parameter under its HF `BertForPreTraining` name, in the description's order.
    /// The tied decoder weight is listed once, as `bert.embeddings.word_embeddings.weight`.
    pub fn named_params(&self) -> Vec<(String, ArrayViewD<'_, f32>)> {
        let mut out = Vec::new();
        macro_rules! view {
            ($name:expr, $shape:expr, $init:expr, $field:expr) => {
                out.push(($name, $field.dyn_view()))
            };
        }
        describe_params!(self, view);
        out
    }

    /// Same order as `named_params`, so a model and its gradient zip entry by entry.
    pub fn named_params_mut(&mut self) -> Vec<(String, ArrayViewMutD<'_, f32>)> {
        let mut out = Vec::new();
        macro_rules! view {
            ($name:expr, $shape:expr, $init:expr, $field:expr) => {
                out.push(($name, $field.dyn_view()))
            };
        }
        describe_params!(self, view);
        out
    }

    /// The model's tensors must be exactly those the description gives its config (names,
    /// order, shapes): a hand-edited config next to other weights is an error here, not an
    /// ndarray panic deep in a matmul.
    pub fn check_against_config(&self) -> Result<()> {
        let want = param_specs(&self.config, self.parts());
        let have = self.named_params();
        for (spec, (name, p)) in want.iter().zip(&have) {
            if *name != spec.name {
                return Err(EngineError::Config(format!(
                    "the model has {name} where the config implies {}",
                    spec.name
                )));
            }
            if p.shape() != spec.shape.as_slice() {
                return Err(EngineError::Config(format!(
                    "{name} has shape {:?} but the config implies {:?}",
                    p.shape(),
                    spec.shape
                )));
            }
        }
        if want.len() != have.len() {
            let (l, layers) = (self.config.num_hidden_layers, self.bert.layers.len());
            return Err(EngineError::Config(if l != layers {
                format!("num_hidden_layers is {l} but the model has {layers} layers")
            } else {
                format!(
                    "the model has {} tensors where the config implies {}",
                    have.len(),
                    want.len()
                )
            }));
        }
        Ok(())
    }
}

/// What an optimiser updates: every parameter by name in one fixed order, and gradient
/// buffers of the same structure. One BERT and an encoder–decoder both are; the names are
/// those the optimiser keeps its moments under (`engine::resume`).
pub trait Params: Sized {
    fn params(&self) -> Vec<(String, ArrayViewD<'_, f32>)>;
    /// Same order as `params`, so a model and its gradient zip entry by entry.
    fn params_mut(&mut self) -> Vec<(String, ArrayViewMutD<'_, f32>)>;
    /// A gradient buffer: same structure, all zeros.
    fn zeros(&self) -> Self;
    /// Zero every parameter in place (a gradient buffer between steps).
    fn fill_zero(&mut self) {
        crate::threads::for_each(self.params_mut(), |(_, mut p)| p.fill(0.0));
    }

    /// Every parameter's entries, in `params()` order, each row-major: how weights and
    /// gradients travel between a training run's lead and its workers.
    fn to_flat(&self) -> Vec<f32> {
        let params = self.params();
        let mut flat = Vec::with_capacity(params.iter().map(|(_, p)| p.len()).sum());
        for (_, p) in &params {
            flat.extend(p.iter());
        }
        flat
    }

    /// Every parameter from `flat` (`to_flat`'s layout); an error, changing nothing, when its
    /// length is not the parameter count.
    fn copy_from_flat(&mut self, flat: &[f32]) -> Result<()> {
        zip_flat(self, flat, |p, &x| *p = x)
    }

    /// Adds `flat` (`to_flat`'s layout) to every parameter: one share's gradients into the
    /// sum. An error, changing nothing, when its length is not the parameter count.
    fn add_flat(&mut self, flat: &[f32]) -> Result<()> {
        zip_flat(self, flat, |p, &x| *p += x)
    }
}

/// `apply` to every parameter entry and its entry of `flat`, once the lengths are checked.
fn zip_flat<P: Params>(params: &mut P, flat: &[f32], apply: impl Fn(&mut f32, &f32)) -> Result<()> {
    zip_views(params.params_mut(), flat, apply)
}

/// `zip_flat` over parameters' views, in `to_flat`'s order (a gradient worker fills its copy's
/// views from the weights a job brings).
pub fn zip_views(
    mut views: Vec<(String, ArrayViewMutD<'_, f32>)>,
    flat: &[f32],
    apply: impl Fn(&mut f32, &f32),
) -> Result<()> {
    let count: usize = views.iter().map(|(_, p)| p.len()).sum();
    if flat.len() != count {
        return Err(EngineError::Input(format!(
            "{} values given for a model of {count} parameters",
            flat.len()
        )));
    }
    let mut rest = flat;
    for (_, p) in &mut views {
        let (mine, others) = rest.split_at(p.len());
        p.iter_mut().zip(mine).for_each(|(p, x)| apply(p, x));
        rest = others;
    }
    Ok(())
}

impl Params for BertForPreTraining {
    fn params(&self) -> Vec<(String, ArrayViewD<'_, f32>)> {
        self.named_params()
    }
    fn params_mut(&mut self) -> Vec<(String, ArrayViewMutD<'_, f32>)> {
        self.named_params_mut()
    }
    fn zeros(&self) -> Self {
        self.zeros_like()
    }
}

/// A parameter's values, row-major, from its description (`BertForPreTraining::from_fn`).
type MakeValues<'a> = dyn FnMut(&ParamSpec) -> Result<Vec<f32>> + 'a;

/// One parameter of `from_fn`: its values from `make`, in its shape. One body per rank.
#[inline(never)]
fn filled<D: Dimension>(spec: ParamSpec, make: &mut MakeValues) -> Result<Array<f32, D>> {
    let values = make(&spec)?;
    let wrong = || {
        EngineError::Config(format!(
            "{} needs {} values for shape {:?}",
            spec.name,
            spec.len(),
            spec.shape
        ))
    };
    Array::from_shape_vec(spec.shape.clone(), values)
        .map_err(|_| wrong())?
        .into_dimensionality::<D>()
        .map_err(|_| wrong())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_fn_fills_each_parameter_in_its_shape_and_names_one_given_too_few_values() {
        let config = BertConfig::tiny(50);
        let mut seen = 0;
        let model = BertForPreTraining::from_fn(&config, Parts::of_new(&config), |spec| {
            seen += 1;
            Ok((0..spec.len()).map(|k| k as f32).collect())
        })
        .unwrap();
        assert_eq!(seen, model.named_params().len());
        // Row-major: entry [1, 0] of a C-wide matrix is value C.
        let c = config.hidden_size;
        assert_eq!(model.bert.embeddings.word_embeddings[[1, 0]], c as f32);
        let err = BertForPreTraining::from_fn(&config, Parts::of_new(&config), |spec| {
            let short = spec.name.ends_with("layer.1.output.dense.weight");
            Ok(vec![0.0; spec.len() - usize::from(short)])
        })
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("bert.encoder.layer.1.output.dense.weight needs"),
            "{err}"
        );
        assert!(
            err.contains(&format!("[{c}, {}]", config.intermediate_size)),
            "{err}"
        );
    }

    #[test]
    fn names_follow_hf_and_line_up_with_the_gradient() {
        let model = BertForPreTraining::init(&BertConfig::tiny(50), &mut Rng::new(0)).unwrap();
        let names: Vec<String> = model.named_params().into_iter().map(|(n, _)| n).collect();
        assert_eq!(names[0], "bert.embeddings.word_embeddings.weight");
        assert!(names.contains(&"bert.encoder.layer.1.attention.self.value.bias".to_string()));
        assert!(names.contains(&"cls.predictions.transform.LayerNorm.weight".to_string()));
        // 5 embedding tensors, 16 per layer, pooler 2, heads 7
        assert_eq!(names.len(), 5 + 16 * 2 + 2 + 7);
        let mut grad = model.zeros_like();
        let grad_names: Vec<String> = grad
            .named_params_mut()
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        assert_eq!(names, grad_names);
        assert!(grad
            .named_params()
            .iter()
            .all(|(_, g)| g.iter().all(|&x| x == 0.0)));
        assert!(model
            .bert
            .embeddings
            .word_embeddings
            .row(0)
            .iter()
            .all(|&x| x == 0.0));
    }

    #[test]
    fn a_config_whose_sizes_fit_but_whose_total_does_not_is_refused_before_allocating() {
        // Each size within its limit, the whole too large: 128 layers of hidden 8192.
        let mut c = BertConfig::new(30522, 8192, 128, 64, 32768);
        c.max_position_embeddings = 512;
        let e = validate_config(&c).unwrap_err().to_string();
        assert!(e.contains("parameters") && e.contains("500000000"), "{e}");
        // BERT-large fits.
        assert!(validate_config(&BertConfig::new(30522, 1024, 24, 16, 4096)).is_ok());
        let e = BertForPreTraining::init(&c, &mut Rng::new(0)).unwrap_err();
        assert!(e.to_string().contains("500000000"), "{e}");
    }

    #[test]
    fn parameter_count_matches_a_built_model() {
        let mut c = BertConfig::tiny(50);
        c.num_key_value_heads = Some(2);
        let model = BertForPreTraining::init(&c, &mut Rng::new(1)).unwrap();
        assert_eq!(param_count(&c), model.num_params() as u64);
    }
}

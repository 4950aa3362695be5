//! BERT's parameters, named as in the paper and in HF `transformers` (`BertSelfAttention`,
//! `BertIntermediate`, …) so a reader can map them one to one.
//!
//! A gradient is the same struct: `BertForPreTraining::zeros_like` gives one, and the named
//! parameter lists of a model and of its gradient line up entry by entry.

use crate::config::BertConfig;
use crate::rng::Rng;
use ndarray::{Array, Array1, Array2, ArrayViewD, ArrayViewMutD, Dimension};

/// y = x·Wᵀ + b, with W stored (out, in) as torch.nn.Linear does.
#[derive(Clone, Debug, PartialEq)]
pub struct Linear {
    pub weight: Array2<f32>, // (out, in)
    pub bias: Array1<f32>,   // (out)
}

#[derive(Clone, Debug, PartialEq)]
pub struct LayerNorm {
    pub weight: Array1<f32>, // (C) γ
    pub bias: Array1<f32>,   // (C) β
}

#[derive(Clone, Debug, PartialEq)]
pub struct BertEmbeddings {
    pub word_embeddings: Array2<f32>, // (V, C), also the tied MLM decoder
    pub position_embeddings: Array2<f32>, // (P, C)
    pub token_type_embeddings: Array2<f32>, // (2, C)
    pub layer_norm: LayerNorm,
}

#[derive(Clone, Debug, PartialEq)]
pub struct BertSelfAttention {
    pub query: Linear, // (C, C)
    pub key: Linear,   // (C, C)
    pub value: Linear, // (C, C)
}

/// W_O, then residual and LayerNorm.
#[derive(Clone, Debug, PartialEq)]
pub struct BertSelfOutput {
    pub dense: Linear, // (C, C)
    pub layer_norm: LayerNorm,
}

#[derive(Clone, Debug, PartialEq)]
pub struct BertAttention {
    pub self_attention: BertSelfAttention,
    pub output: BertSelfOutput,
}

#[derive(Clone, Debug, PartialEq)]
pub struct BertIntermediate {
    pub dense: Linear, // (I, C)
}

#[derive(Clone, Debug, PartialEq)]
pub struct BertOutput {
    pub dense: Linear, // (C, I)
    pub layer_norm: LayerNorm,
}

#[derive(Clone, Debug, PartialEq)]
pub struct BertLayer {
    pub attention: BertAttention,
    pub intermediate: BertIntermediate,
    pub output: BertOutput,
}

/// tanh(W·h_[CLS] + b)
#[derive(Clone, Debug, PartialEq)]
pub struct BertPooler {
    pub dense: Linear, // (C, C)
}

#[derive(Clone, Debug, PartialEq)]
pub struct BertModel {
    pub embeddings: BertEmbeddings,
    pub layers: Vec<BertLayer>,
    /// Absent in some bare `BertModel` checkpoints.
    pub pooler: Option<BertPooler>,
}

/// dense + GELU + LayerNorm before the tied decoder.
#[derive(Clone, Debug, PartialEq)]
pub struct BertPredictionHeadTransform {
    pub dense: Linear, // (C, C)
    pub layer_norm: LayerNorm,
}

/// MLM head; its decoder weight is `bert.embeddings.word_embeddings` (tied).
#[derive(Clone, Debug, PartialEq)]
pub struct BertLMPredictionHead {
    pub transform: BertPredictionHeadTransform,
    pub bias: Array1<f32>, // (V)
}

#[derive(Clone, Debug, PartialEq)]
pub struct BertPreTrainingHeads {
    pub predictions: BertLMPredictionHead,
    pub seq_relationship: Linear, // (2, C): NSP, 0 = IsNext, 1 = NotNext
}

#[derive(Clone, Debug, PartialEq)]
pub struct BertForPreTraining {
    pub config: BertConfig,
    pub bert: BertModel,
    /// None for a bare `BertModel` checkpoint: it can be inspected, not pre-trained.
    pub cls: Option<BertPreTrainingHeads>,
}

/// A shared or mutable parameter reference turned into a dynamic-rank view of the same kind,
/// so one traversal (below) serves `named_params` and `named_params_mut`.
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

macro_rules! push_linear {
    ($out:ident, $name:expr, $linear:expr) => {{
        let Linear { weight, bias } = $linear;
        $out.push((format!("{}.weight", $name), weight.dyn_view()));
        $out.push((format!("{}.bias", $name), bias.dyn_view()));
    }};
}

macro_rules! push_layer_norm {
    ($out:ident, $name:expr, $ln:expr) => {{
        let LayerNorm { weight, bias } = $ln;
        $out.push((format!("{}.LayerNorm.weight", $name), weight.dyn_view()));
        $out.push((format!("{}.LayerNorm.bias", $name), bias.dyn_view()));
    }};
}

/// The one list of parameter names. Destructuring keeps the reference kind (& or &mut) of
/// `$model`, so the same text expands for shared and for mutable views.
macro_rules! visit_params {
    ($model:expr, $out:ident) => {{
        let BertForPreTraining { bert, cls, .. } = $model;
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
        $out.push((
            "bert.embeddings.word_embeddings.weight".to_string(),
            word_embeddings.dyn_view(),
        ));
        $out.push((
            "bert.embeddings.position_embeddings.weight".to_string(),
            position_embeddings.dyn_view(),
        ));
        $out.push((
            "bert.embeddings.token_type_embeddings.weight".to_string(),
            token_type_embeddings.dyn_view(),
        ));
        push_layer_norm!($out, "bert.embeddings", layer_norm);
        for (i, layer) in layers.into_iter().enumerate() {
            let p = format!("bert.encoder.layer.{i}");
            let BertLayer {
                attention,
                intermediate,
                output,
            } = layer;
            let BertAttention {
                self_attention,
                output: self_output,
            } = attention;
            let BertSelfAttention { query, key, value } = self_attention;
            push_linear!($out, format!("{p}.attention.self.query"), query);
            push_linear!($out, format!("{p}.attention.self.key"), key);
            push_linear!($out, format!("{p}.attention.self.value"), value);
            let BertSelfOutput { dense, layer_norm } = self_output;
            push_linear!($out, format!("{p}.attention.output.dense"), dense);
            push_layer_norm!($out, format!("{p}.attention.output"), layer_norm);
            let BertIntermediate { dense } = intermediate;
            push_linear!($out, format!("{p}.intermediate.dense"), dense);
            let BertOutput { dense, layer_norm } = output;
            push_linear!($out, format!("{p}.output.dense"), dense);
            push_layer_norm!($out, format!("{p}.output"), layer_norm);
        }
        if let Some(BertPooler { dense }) = pooler {
            push_linear!($out, "bert.pooler.dense", dense);
        }
        if let Some(BertPreTrainingHeads {
            predictions,
            seq_relationship,
        }) = cls
        {
            let BertLMPredictionHead { transform, bias } = predictions;
            $out.push(("cls.predictions.bias".to_string(), bias.dyn_view()));
            let BertPredictionHeadTransform { dense, layer_norm } = transform;
            push_linear!($out, "cls.predictions.transform.dense", dense);
            push_layer_norm!($out, "cls.predictions.transform", layer_norm);
            push_linear!($out, "cls.seq_relationship", seq_relationship);
        }
    }};
}

impl Linear {
    fn init(out: usize, inp: usize, std: f32, rng: &mut Rng) -> Self {
        Linear {
            weight: Array2::from_shape_simple_fn((out, inp), || rng.normal(0.0, std)),
            bias: Array1::zeros(out),
        }
    }
}

impl LayerNorm {
    fn init(c: usize) -> Self {
        LayerNorm {
            weight: Array1::ones(c),
            bias: Array1::zeros(c),
        }
    }
}

impl BertForPreTraining {
    /// HF's `_init_weights`: N(0, initializer_range) for dense and embedding weights, the
    /// padding row of the word embeddings zero, biases zero, LayerNorm γ = 1 and β = 0.
    pub fn init(config: &BertConfig, rng: &mut Rng) -> Self {
        let (c, i, std) = (
            config.hidden_size,
            config.intermediate_size,
            config.initializer_range,
        );
        let mut normal = |rows: usize, cols: usize| {
            Array2::from_shape_simple_fn((rows, cols), || rng.normal(0.0, std))
        };
        let mut word_embeddings = normal(config.vocab_size, c);
        word_embeddings.row_mut(config.pad_token_id).fill(0.0);
        let embeddings = BertEmbeddings {
            word_embeddings,
            position_embeddings: normal(config.max_position_embeddings, c),
            token_type_embeddings: normal(config.type_vocab_size, c),
            layer_norm: LayerNorm::init(c),
        };
        let layers = (0..config.num_hidden_layers)
            .map(|_| BertLayer {
                attention: BertAttention {
                    self_attention: BertSelfAttention {
                        query: Linear::init(c, c, std, rng),
                        key: Linear::init(c, c, std, rng),
                        value: Linear::init(c, c, std, rng),
                    },
                    output: BertSelfOutput {
                        dense: Linear::init(c, c, std, rng),
                        layer_norm: LayerNorm::init(c),
                    },
                },
                intermediate: BertIntermediate {
                    dense: Linear::init(i, c, std, rng),
                },
                output: BertOutput {
                    dense: Linear::init(c, i, std, rng),
                    layer_norm: LayerNorm::init(c),
                },
            })
            .collect();
        let pooler = Some(BertPooler {
            dense: Linear::init(c, c, std, rng),
        });
        let cls = Some(BertPreTrainingHeads {
            predictions: BertLMPredictionHead {
                transform: BertPredictionHeadTransform {
                    dense: Linear::init(c, c, std, rng),
                    layer_norm: LayerNorm::init(c),
                },
                bias: Array1::zeros(config.vocab_size),
            },
            seq_relationship: Linear::init(2, c, std, rng),
        });
        BertForPreTraining {
            config: config.clone(),
            bert: BertModel {
                embeddings,
                layers,
                pooler,
            },
            cls,
        }
    }

    /// A gradient buffer: same structure, all zeros.
    pub fn zeros_like(&self) -> Self {
        let mut g = self.clone();
        g.fill_zero();
        g
    }

    /// Zero every parameter in place (a gradient buffer between steps).
    pub fn fill_zero(&mut self) {
        for (_, mut p) in self.named_params_mut() {
            p.fill(0.0);
        }
    }

    pub fn num_params(&self) -> usize {
        self.named_params().iter().map(|(_, p)| p.len()).sum()
    }

    /// Every parameter under its HF `BertForPreTraining` name, in a fixed order. The tied
    /// decoder weight is listed once, as `bert.embeddings.word_embeddings.weight`.
    pub fn named_params(&self) -> Vec<(String, ArrayViewD<'_, f32>)> {
        let mut out = Vec::new();
        visit_params!(self, out);
        out
    }

    /// Same order as `named_params`, so a model and its gradient zip entry by entry.
    pub fn named_params_mut(&mut self) -> Vec<(String, ArrayViewMutD<'_, f32>)> {
        let mut out = Vec::new();
        visit_params!(self, out);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_hf_and_line_up_with_the_gradient() {
        let model = BertForPreTraining::init(&BertConfig::tiny(50), &mut Rng::new(0));
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
}

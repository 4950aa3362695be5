//! The page's PyTorch code: `pytorch/attention_lab.py`, the one module the stepper's "PyTorch"
//! view quotes and the "Open in PyTorch" notebook runs. The module marks the lines that compute
//! each figure, at the end of the line:
//!
//! ```text
//! scores = q_s @ k_s.transpose(-1, -2)  # stage: raw-scores -> scores (B, H, Tq, Tk)
//! attn = torch.softmax(scores, dim=-1)  # stage: weights if softmax -> attn (B, H, Tq, Tk)
//! ```
//!
//! A mark names figures (`figure::FigureName`, by their `data-figure` names), may apply only to
//! some models (`if` and features), and may name the tensor that holds the figure's values with
//! its shape in symbols. A mark naming no figure of the page is refused.
//! This file reads the marks and, for a stage's figures and the live model, gives the blocks to
//! quote with their lines lit, each figure's tensor, its shape in numbers and the slice drawn.
//! Plain text in, plain data out: the page only lays it out.

use crate::error::{LabError, LabResult};
use crate::figure::FigureName;
use crate::model_info::ModelInfo;
use engine::config::AttentionType;
use engine::inspect::Inspection;
use engine::MaskMode;
use serde::{Deserialize, Serialize};

/// The module's path in the repository and, under the page's folder, in the built site.
pub const MODULE_PATH: &str = "pytorch/attention_lab.py";
/// The notebook's template (`notebook`), beside the module.
pub const TEMPLATE_PATH: &str = "pytorch/notebook.py";

/// What a mark's `if` can ask of the live model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Feature {
    Absolute,
    Rotary,
    Alibi,
    Softmax,
    Linear,
    Padding,
    Causal,
    NoMask,
    Window,
    Gqa,
    Decoder,
    Seq2seq,
    /// The walk is cross-attention's: queries from the decoder, keys and values from the
    /// encoder.
    Cross,
}

impl Feature {
    pub const ALL: [Feature; 13] = [
        Feature::Absolute,
        Feature::Rotary,
        Feature::Alibi,
        Feature::Softmax,
        Feature::Linear,
        Feature::Padding,
        Feature::Causal,
        Feature::NoMask,
        Feature::Window,
        Feature::Gqa,
        Feature::Decoder,
        Feature::Seq2seq,
        Feature::Cross,
    ];

    /// The word a mark uses.
    pub fn name(self) -> &'static str {
        match self {
            Feature::Absolute => "absolute",
            Feature::Rotary => "rotary",
            Feature::Alibi => "alibi",
            Feature::Softmax => "softmax",
            Feature::Linear => "linear",
            Feature::Padding => "padding",
            Feature::Causal => "causal",
            Feature::NoMask => "no-mask",
            Feature::Window => "window",
            Feature::Gqa => "gqa",
            Feature::Decoder => "decoder",
            // The kind's name, as the Objective select and a link say it.
            Feature::Seq2seq => crate::fields::SEQ2SEQ.name,
            Feature::Cross => "cross",
        }
    }

    fn from_name(name: &str) -> Option<Feature> {
        Feature::ALL.into_iter().find(|f| f.name() == name)
    }
}

/// One axis of a marked tensor, in the symbols the module's comments use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dim {
    /// B: the notebook and the page run one sequence.
    Batch,
    /// T, Tq, Tk: tokens; of the queries and of the keys (equal but in cross-attention).
    Tokens,
    Queries,
    Keys,
    /// C, H, G, D, I, V.
    Hidden,
    Heads,
    Groups,
    HeadSize,
    Intermediate,
    Vocab,
    Fixed(usize),
}

impl Dim {
    /// The symbols a mark may use, besides integers.
    pub const SYMBOLS: [(&'static str, Dim); 10] = [
        ("B", Dim::Batch),
        ("T", Dim::Tokens),
        ("Tq", Dim::Queries),
        ("Tk", Dim::Keys),
        ("C", Dim::Hidden),
        ("H", Dim::Heads),
        ("G", Dim::Groups),
        ("D", Dim::HeadSize),
        ("I", Dim::Intermediate),
        ("V", Dim::Vocab),
    ];

    fn parse(symbol: &str) -> Option<Dim> {
        match Dim::SYMBOLS.iter().find(|(s, _)| *s == symbol) {
            Some(&(_, dim)) => Some(dim),
            None => Some(Dim::Fixed(symbol.parse().ok()?)),
        }
    }

    /// What the axis counts, as the view says it.
    pub fn meaning(self) -> &'static str {
        match self {
            Dim::Batch => "batch",
            Dim::Tokens => "tokens",
            Dim::Queries => "queries",
            Dim::Keys => "keys",
            Dim::Hidden => "hidden",
            Dim::Heads => "heads",
            Dim::Groups => "K/V groups",
            Dim::HeadSize => "head size",
            Dim::Intermediate => "intermediate",
            Dim::Vocab => "vocabulary",
            Dim::Fixed(_) => "",
        }
    }

    fn size(self, s: &Sizes) -> usize {
        match self {
            Dim::Batch => 1,
            Dim::Tokens | Dim::Queries => s.queries,
            Dim::Keys => s.keys,
            Dim::Hidden => s.hidden,
            Dim::Heads => s.heads,
            Dim::Groups => s.groups,
            Dim::HeadSize => s.head_size,
            Dim::Intermediate => s.intermediate,
            Dim::Vocab => s.vocab,
            Dim::Fixed(n) => n,
        }
    }
}

/// A mark: `# stage: NAME[, NAME…][ if FEATURE[, FEATURE…]][ -> TENSOR (DIM, …)]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Mark {
    /// As self-attention names them: cross-attention's head matrices are computed by the same
    /// lines (`FigureName::computed_as`).
    pub figures: Vec<FigureName>,
    /// Empty: every model; otherwise a model with any of these.
    pub when: Vec<Feature>,
    /// The tensor holding the figure's values, with its shape.
    pub tensor: Option<(String, Vec<Dim>)>,
}

impl Mark {
    const TAG: &'static str = "# stage:";

    /// The mark at the end of `line`, and the line without it; `Ok(None)` for a line with none.
    fn split(line: &str) -> Result<Option<(&str, Mark)>, String> {
        let Some(at) = line.find(Self::TAG) else {
            return Ok(None);
        };
        let code = line[..at].trim_end();
        let mut rest = line[at + Self::TAG.len()..].trim();
        let tensor = match rest.split_once("->") {
            Some((before, after)) => {
                rest = before.trim();
                Some(Self::tensor(after.trim())?)
            }
            None => None,
        };
        let (names, when) = match rest.split_once(" if ") {
            Some((names, features)) => (names, Self::features(features)?),
            None => (rest, Vec::new()),
        };
        let names: Vec<&str> = names
            .split(',')
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .collect();
        if names.is_empty() || names.iter().any(|f| f.contains(char::is_whitespace)) {
            return Err(format!(
                "a mark names its figures, comma-separated: {rest:?}"
            ));
        }
        let figures = names
            .into_iter()
            .map(Self::figure)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Some((
            code,
            Mark {
                figures,
                when,
                tensor,
            },
        )))
    }

    /// A figure of the page, as self-attention's lines compute it.
    fn figure(name: &str) -> Result<FigureName, String> {
        match FigureName::from_name(name) {
            Some(f) if f.computed_as() == f => Ok(f),
            Some(f) => Err(format!(
                "{name:?} is computed by the lines of {:?}: mark those",
                f.computed_as().name()
            )),
            None => Err(format!("no figure {name:?} (figure::FigureName)")),
        }
    }

    fn features(text: &str) -> Result<Vec<Feature>, String> {
        text.split(',')
            .map(|f| Feature::from_name(f.trim()).ok_or_else(|| format!("no feature {f:?}")))
            .collect()
    }

    /// `scores (B, H, Tq, Tk)`.
    fn tensor(text: &str) -> Result<(String, Vec<Dim>), String> {
        let bad = || format!("a tensor is NAME (DIM, …), not {text:?}");
        let (name, dims) = text.split_once('(').ok_or_else(bad)?;
        let dims = dims.trim().strip_suffix(')').ok_or_else(bad)?;
        let dims = dims
            .split(',')
            .map(|d| Dim::parse(d.trim()).ok_or_else(bad))
            .collect::<Result<Vec<_>, _>>()?;
        let name = name.trim();
        if name.is_empty() || dims.len() < 2 {
            return Err(bad());
        }
        Ok((name.to_string(), dims))
    }

    fn applies(&self, features: &[Feature]) -> bool {
        self.when.is_empty() || self.when.iter().any(|f| features.contains(f))
    }

    fn names(&self, figure: FigureName) -> bool {
        self.figures.contains(&figure.computed_as())
    }
}

/// The live model as the marks need it: its features and sizes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ModelShape {
    pub features: Vec<Feature>,
    pub sizes: Sizes,
}

impl ModelShape {
    /// The model `info` describes, as `ins` shows it: self-attention of `ins`'s own tokens, or
    /// with `cross` the cross-attention of its decoder to its `source`; `window` when the
    /// explorer's sliding window is on.
    pub fn of(info: &ModelInfo, ins: &Inspection, cross: bool, window: bool) -> ModelShape {
        let head = ins.trace.layers.first().and_then(|l| {
            if cross {
                l.cross_heads.first()
            } else {
                l.heads.first()
            }
        });
        let positions = match head {
            Some(h) if h.q_rotated.is_some() => Feature::Rotary,
            Some(h) if h.alibi_bias.is_some() => Feature::Alibi,
            _ => Feature::Absolute,
        };
        let attention = match ins.attention {
            AttentionType::Softmax => Feature::Softmax,
            AttentionType::Linear => Feature::Linear,
        };
        let mask = match ins.mask {
            MaskMode::Padding => Feature::Padding,
            MaskMode::Causal => Feature::Causal,
            MaskMode::None => Feature::NoMask,
        };
        let features = if cross {
            // Cross-attention is plain multi-head softmax over the source's real tokens,
            // whatever the decoder's positions, attention, window or K/V groups.
            vec![
                Feature::Softmax,
                Feature::Padding,
                Feature::Seq2seq,
                Feature::Cross,
            ]
        } else {
            let mut features = vec![positions, attention, mask];
            let optional = [
                (window, Feature::Window),
                (info.kv_groups() < info.heads, Feature::Gqa),
                (info.kind.decoder(), Feature::Decoder),
                (info.kind.encoder_decoder(), Feature::Seq2seq),
            ];
            features.extend(optional.into_iter().filter(|(on, _)| *on).map(|(_, f)| f));
            features
        };
        let queries = ins.tokens.len();
        let keys = match (cross, &ins.source) {
            (true, Some(source)) => source.tokens.len(),
            _ => queries,
        };
        ModelShape {
            features,
            sizes: Sizes {
                queries,
                keys,
                hidden: info.hidden,
                heads: info.heads,
                // Cross-attention's K and V are C × C: a group a head.
                groups: if cross { info.heads } else { info.kv_groups() },
                head_size: info.head_size,
                intermediate: info.intermediate,
                vocab: info.vocab_size,
            },
        }
    }
}

/// The numbers behind the symbols (B is 1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sizes {
    pub queries: usize,
    pub keys: usize,
    pub hidden: usize,
    pub heads: usize,
    pub groups: usize,
    pub head_size: usize,
    pub intermediate: usize,
    pub vocab: usize,
}

/// The module, read: each line's code and its mark.
#[derive(Clone, Debug, PartialEq)]
pub struct PytorchModule {
    lines: Vec<(String, Option<Mark>)>,
}

/// A stage's code: the module's blocks that hold its lines, and the figures' tensors.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CodeView {
    pub blocks: Vec<CodeBlock>,
    pub tensors: Vec<FigureTensor>,
}

/// A top-level `class` or `def` of the module, whole.
#[derive(Clone, Debug, PartialEq)]
pub struct CodeBlock {
    /// "class ScaledDotProductAttention", "def get_attn_pad_mask".
    pub title: String,
    pub lines: Vec<CodeLine>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct CodeLine {
    /// From 1, as in the module's file.
    pub number: usize,
    pub text: String,
    /// It computes one of the stage's figures.
    pub lit: bool,
}

/// What one figure draws: which tensor, its shape for this model, and the slice.
#[derive(Clone, Debug, PartialEq)]
pub struct FigureTensor {
    pub figure: FigureName,
    pub tensor: String,
    pub shape: Vec<usize>,
    /// What each axis counts: "batch", "heads", "queries", "keys".
    pub axes: Vec<&'static str>,
    /// `scores[0, 2]`: the figure's rows and columns are the last two axes.
    pub slice: String,
}

impl PytorchModule {
    pub fn parse(text: &str) -> LabResult<PytorchModule> {
        let lines = text
            .lines()
            .enumerate()
            .map(|(i, line)| match Mark::split(line) {
                Ok(Some((code, mark))) => Ok((code.to_string(), Some(mark))),
                Ok(None) => Ok((line.trim_end().to_string(), None)),
                Err(why) => Err(LabError::Malformed(format!(
                    "{MODULE_PATH}, line {}: {why}",
                    i + 1
                ))),
            })
            .collect::<LabResult<Vec<_>>>()?;
        Ok(PytorchModule { lines })
    }

    /// The module as the page shows and copies it: its marks left out.
    pub fn text(&self) -> String {
        let mut out: String = self
            .lines
            .iter()
            .map(|(code, _)| code.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        out.push('\n');
        out
    }

    /// Every mark, with its line's number (from 1).
    pub fn marks(&self) -> impl Iterator<Item = (usize, &Mark)> {
        self.lines
            .iter()
            .enumerate()
            .filter_map(|(i, (_, m))| m.as_ref().map(|m| (i + 1, m)))
    }

    /// The code of a stage whose figures are `figures`, for `model`, with the figures of head
    /// `head` sliced. Figures without a mark for this model are left out; an empty view when
    /// none has one.
    pub fn code_view(&self, figures: &[FigureName], model: &ModelShape, head: usize) -> CodeView {
        let applies = |m: &Mark, figure: FigureName| m.names(figure) && m.applies(&model.features);
        let lit: Vec<bool> = self
            .lines
            .iter()
            .map(|(_, m)| {
                m.as_ref()
                    .is_some_and(|m| figures.iter().any(|&f| applies(m, f)))
            })
            .collect();
        let tensors = figures
            .iter()
            .filter_map(|&figure| {
                let (tensor, dims) = self
                    .lines
                    .iter()
                    .filter_map(|(_, m)| m.as_ref())
                    .filter(|m| applies(m, figure))
                    .find_map(|m| m.tensor.as_ref())?;
                Some(figure_tensor(figure, tensor, dims, model, head))
            })
            .collect();
        let blocks = self
            .blocks()
            .into_iter()
            .filter(|(_, r)| lit[r.clone()].iter().any(|&l| l))
            .map(|(header, r)| CodeBlock {
                title: block_title(&self.lines[header].0),
                lines: r
                    .map(|i| CodeLine {
                        number: i + 1,
                        text: self.lines[i].0.clone(),
                        lit: lit[i],
                    })
                    .collect(),
            })
            .collect();
        CodeView { blocks, tensors }
    }

    /// The top-level `class` and `def` blocks: the header's index, and the lines from the
    /// comments right above the header to the block's last non-blank line.
    fn blocks(&self) -> Vec<(usize, std::ops::Range<usize>)> {
        let top = |code: &str| !code.is_empty() && !code.starts_with(char::is_whitespace);
        let header = |code: &str| code.starts_with("class ") || code.starts_with("def ");
        let mut out = Vec::new();
        let mut i = 0;
        while i < self.lines.len() {
            if !header(&self.lines[i].0) {
                i += 1;
                continue;
            }
            let mut start = i;
            while start > 0 && self.lines[start - 1].0.starts_with('#') {
                start -= 1;
            }
            let mut end = i + 1;
            while end < self.lines.len() && !top(&self.lines[end].0) {
                end += 1;
            }
            let mut last = end;
            while last > i + 1 && self.lines[last - 1].0.trim().is_empty() {
                last -= 1;
            }
            out.push((i, start..last));
            i = end;
        }
        out
    }
}

/// "class ScaledDotProductAttention" from its header line.
fn block_title(first: &str) -> String {
    first
        .split(['(', ':'])
        .next()
        .unwrap_or(first)
        .trim()
        .to_string()
}

fn figure_tensor(
    figure: FigureName,
    tensor: &str,
    dims: &[Dim],
    model: &ModelShape,
    head: usize,
) -> FigureTensor {
    let s = &model.sizes;
    // Query head h reads K/V group h ÷ (H/G).
    let group = head / (s.heads / s.groups.max(1)).max(1);
    let leading = &dims[..dims.len().saturating_sub(2)];
    let index: Vec<String> = leading
        .iter()
        .map(|d| match d {
            Dim::Heads => head.to_string(),
            Dim::Groups => group.to_string(),
            _ => "0".to_string(),
        })
        .collect();
    let slice = if index.is_empty() {
        tensor.to_string()
    } else {
        format!("{tensor}[{}]", index.join(", "))
    };
    FigureTensor {
        figure,
        tensor: tensor.to_string(),
        shape: dims.iter().map(|d| d.size(s)).collect(),
        axes: dims.iter().map(|d| d.meaning()).collect(),
        slice,
    }
}

mod computed;
pub use computed::computed_figures;

#[cfg(test)]
mod tests;

use super::*;
use crate::figure::HeadMatrix;

const SMALL: &str = r#"import math

# The padding mask: True where key j is [PAD].
def get_attn_pad_mask(seq_q, seq_k):
    B, Tq = seq_q.size()
    pad = seq_k.eq(0).unsqueeze(1)  # stage: mask if padding, causal -> pad (B, 1, Tk)
    return pad.expand(B, Tq, seq_k.size(1))


class ScaledDotProductAttention(nn.Module):
    def forward(self, Q, K, V, attn_mask):
        scores = Q @ K.transpose(-1, -2)  # stage: raw-scores -> scores (B, H, Tq, Tk)
        scores = scores / math.sqrt(Q.size(-1))  # stage: scaled-scores -> scores (B, H, Tq, Tk)
        scores = scores.masked_fill(attn_mask, -1e9)  # stage: mask, masked-scores -> scores (B, H, Tq, Tk)
        attn = torch.softmax(scores, dim=-1)  # stage: weights if softmax -> attn (B, H, Tq, Tk)
        return attn @ V, attn


class MultiHeadAttention(nn.Module):
    def forward(self, Q, K, V, attn_mask):
        k_s = self.W_K(K).view(B, -1, G, D).transpose(1, 2)  # stage: keys -> k_s (B, G, Tk, D)

        return k_s
"#;

fn shape(features: &[Feature]) -> ModelShape {
    ModelShape {
        features: features.to_vec(),
        sizes: Sizes {
            queries: 17,
            keys: 17,
            hidden: 64,
            heads: 4,
            groups: 2,
            head_size: 16,
            intermediate: 256,
            vocab: 100,
        },
    }
}

fn names(figures: &[&str]) -> Vec<FigureName> {
    figures
        .iter()
        .map(|f| FigureName::from_name(f).unwrap())
        .collect()
}

#[test]
fn a_stage_quotes_the_blocks_that_compute_its_figures_with_those_lines_lit() {
    let module = PytorchModule::parse(SMALL).unwrap();
    let view = module.code_view(
        &names(&["raw-scores", "scaled-scores"]),
        &shape(&[Feature::Softmax]),
        2,
    );
    assert_eq!(view.blocks.len(), 1);
    let block = &view.blocks[0];
    assert_eq!(block.title, "class ScaledDotProductAttention");
    let lit: Vec<&str> = block
        .lines
        .iter()
        .filter(|l| l.lit)
        .map(|l| l.text.trim())
        .collect();
    assert_eq!(
        lit,
        [
            "scores = Q @ K.transpose(-1, -2)",
            "scores = scores / math.sqrt(Q.size(-1))"
        ]
    );
    // The whole class, marks left out, numbered as in the file.
    assert_eq!(block.lines.first().unwrap().number, 10);
    assert!(block.lines.iter().all(|l| !l.text.contains("# stage")));
    assert_eq!(
        block.lines.last().unwrap().text.trim(),
        "return attn @ V, attn"
    );
    assert_eq!(
        view.tensors
            .iter()
            .map(|t| (t.figure.name(), t.slice.as_str(), t.shape.clone()))
            .collect::<Vec<_>>(),
        [
            ("raw-scores".to_string(), "scores[0, 2]", vec![1, 4, 17, 17]),
            (
                "scaled-scores".to_string(),
                "scores[0, 2]",
                vec![1, 4, 17, 17]
            ),
        ]
    );
    assert_eq!(view.tensors[0].axes, ["batch", "heads", "queries", "keys"]);
}

#[test]
fn a_mark_with_if_applies_only_to_models_with_one_of_its_features() {
    let module = PytorchModule::parse(SMALL).unwrap();
    let figures = names(&["mask", "weights"]);
    let softmax_padding =
        module.code_view(&figures, &shape(&[Feature::Softmax, Feature::Padding]), 0);
    assert_eq!(
        softmax_padding
            .blocks
            .iter()
            .map(|b| b.title.as_str())
            .collect::<Vec<_>>(),
        ["def get_attn_pad_mask", "class ScaledDotProductAttention"]
    );
    // The comment above the function comes with it.
    assert!(softmax_padding.blocks[0].lines[0]
        .text
        .starts_with("# The padding mask"));
    // The mask's tensor is the first applicable mark that names one.
    assert_eq!(softmax_padding.tensors[0].slice, "pad[0]");
    assert_eq!(softmax_padding.tensors[0].shape, [1, 1, 17]);
    let linear_no_mask = module.code_view(&figures, &shape(&[Feature::Linear, Feature::NoMask]), 0);
    assert_eq!(
        linear_no_mask.blocks.len(),
        1,
        "only the masked_fill line applies"
    );
    assert_eq!(
        linear_no_mask
            .tensors
            .iter()
            .map(|t| t.figure)
            .collect::<Vec<_>>(),
        [FigureName::Head(HeadMatrix::Mask)],
        "linear attention's weights are not softmax's"
    );
}

#[test]
fn a_head_reads_its_group_on_a_g_axis_and_cross_figures_use_the_same_lines() {
    let module = PytorchModule::parse(SMALL).unwrap();
    let mut model = shape(&[Feature::Softmax, Feature::Gqa, Feature::Cross]);
    model.sizes.keys = 9;
    let view = module.code_view(&names(&["cross-keys"]), &model, 3);
    assert_eq!(view.tensors[0].figure, FigureName::Cross(HeadMatrix::Keys));
    // Heads 0, 1 read group 0; heads 2, 3 group 1.
    assert_eq!(view.tensors[0].slice, "k_s[0, 1]");
    assert_eq!(view.tensors[0].shape, [1, 2, 9, 16]);
}

#[test]
fn a_figure_without_a_mark_quotes_nothing_and_the_text_leaves_the_marks_out() {
    let module = PytorchModule::parse(SMALL).unwrap();
    assert_eq!(
        module.code_view(&names(&["layer-output"]), &shape(&[]), 0),
        CodeView::default()
    );
    let text = module.text();
    assert!(!text.contains("# stage:"));
    assert!(text.contains("    pad = seq_k.eq(0).unsqueeze(1)\n"));
    assert_eq!(text.lines().count(), SMALL.lines().count());
    assert_eq!(module.marks().count(), 6);
}

#[test]
fn a_malformed_mark_is_refused_with_its_line() {
    for (bad, why) in [
        ("x = 1  # stage:", "names its figures"),
        ("x = 1  # stage: weights if sideways", "no feature"),
        (
            "x = 1  # stage: weights, sideways-scores",
            "no figure \"sideways-scores\"",
        ),
        (
            "x = 1  # stage: cross-weights",
            "computed by the lines of \"weights\"",
        ),
        ("x = 1  # stage: weights -> attn", "NAME (DIM"),
        ("x = 1  # stage: weights -> attn (B, H, Q)", "NAME (DIM"),
        ("x = 1  # stage: weights -> (B, H)", "NAME (DIM"),
    ] {
        let text = format!("import torch\n{bad}\n");
        let e = PytorchModule::parse(&text).unwrap_err().to_string();
        assert!(e.contains("line 2") && e.contains(why), "{bad}: {e}");
    }
}

#[test]
fn the_module_computes_each_models_own_figures() {
    let names = |features: &[Feature]| -> Vec<String> {
        computed_figures(features)
            .into_iter()
            .map(FigureName::name)
            .collect()
    };
    let rotary = names(&[Feature::Rotary, Feature::Softmax, Feature::Causal]);
    assert!(rotary.contains(&"rotated-queries".to_string()));
    assert!(rotary.contains(&"tiles".to_string()));
    assert!(!rotary.contains(&"embeddings-position".to_string()));
    let linear = names(&[Feature::Absolute, Feature::Linear, Feature::Padding]);
    assert!(
        linear.contains(&"phi-keys".to_string())
            && linear.contains(&"embeddings-position".to_string())
    );
    assert!(!linear.iter().any(|n| n.ends_with("scores") || n == "tiles"));
    let cross = names(&[
        Feature::Softmax,
        Feature::Padding,
        Feature::Seq2seq,
        Feature::Cross,
    ]);
    assert_eq!(
        cross,
        [
            "cross-decoder-input",
            "cross-encoder-output",
            "cross-queries",
            "cross-keys",
            "cross-values",
            "cross-raw-scores",
            "cross-scaled-scores",
            "cross-mask",
            "cross-masked-scores",
            "cross-weights",
            "cross-context"
        ]
    );
}

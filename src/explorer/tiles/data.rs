//! The "Tiles" stage at one step of tiled attention's schedule: the block being worked on,
//! each row's running max m and sum l so far, the output rows already final, and at the end
//! the check against the full kernel. Picks from the trace; the maths is the engine's.

use crate::components::heatmap_figure::HeatmapOptions;
use crate::explorer::figures::{
    dimension_figure, head_caption, tile_block, token_figure, Figure, Selection,
};
use crate::heatmap::{CellBlock, Scale};
use engine::inspect::Inspection;
use engine::ops::flash::weights_from_tiles;
use engine::{HeadTrace, Matrix};
use protocol::figure::{FigureName, HeadMatrix};
use std::ops::Range;

/// Where a query row is in the schedule at the step shown.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RowPhase {
    /// Its query block has not started: no m or l yet.
    Waiting,
    /// Its query block is taking in key blocks: m and l are running values.
    Working,
    /// Its query block is done: m and l are final and its output row is O = acc / l.
    Done,
}

/// One query row's running state after the step shown.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RowState {
    pub phase: RowPhase,
    /// m: −∞ until the row has seen an allowed key (None while waiting).
    pub max: Option<f32>,
    /// l = Σ_j exp(S_ij − m).
    pub sum: Option<f32>,
}

/// The schedule as the panel shows it at step `step` (0-based) of `steps`.
#[derive(Clone, Debug, PartialEq)]
pub struct TileFrame {
    pub step: usize,
    pub steps: usize,
    /// Rows per block.
    pub block: usize,
    pub q_block: usize,
    pub k_block: usize,
    /// Query rows and key columns of the block being worked on.
    pub rows: Range<usize>,
    pub keys: Range<usize>,
    /// One per query row (T).
    pub running: Vec<RowState>,
}

impl TileFrame {
    pub fn is_last(&self) -> bool {
        self.step + 1 == self.steps
    }

    pub fn outline(&self) -> CellBlock {
        CellBlock {
            rows: (self.rows.start, self.rows.end),
            cols: (self.keys.start, self.keys.end),
        }
    }

    /// "Step 3 of 9: query block 2 (rows 4–7) × key block 1 (keys 0–3)", 1-based for people.
    pub fn describe(&self) -> String {
        format!(
            "Step {} of {}: query block {} (rows {}–{}) × key block {} (keys {}–{})",
            self.step + 1,
            self.steps,
            self.q_block + 1,
            self.rows.start,
            self.rows.end - 1,
            self.k_block + 1,
            self.keys.start,
            self.keys.end - 1
        )
    }
}

/// The selected head, when its attention was tiled.
pub fn tiled_head(ins: &Inspection, sel: Selection) -> Option<&HeadTrace> {
    crate::explorer::figures::layer_and_head(ins, sel)
        .map(|(_, h)| h)
        .filter(|h| h.tiles.as_ref().is_some_and(|t| !t.is_empty()))
}

/// Whether the inspection's attention was tiled (then the stepper has a "Tiles" stage).
pub fn is_tiled(ins: &Inspection) -> bool {
    tiled_head(ins, Selection::default()).is_some()
}

/// The number of steps in the selected head's schedule (0 when it was not tiled).
pub fn step_count(ins: &Inspection, sel: Selection) -> usize {
    tiled_head(ins, sel).map_or(0, |h| h.tiles.as_ref().map_or(0, Vec::len))
}

/// The schedule after its step `step` (clamped to the last).
pub fn frame(head: &HeadTrace, step: usize) -> Option<TileFrame> {
    let tiles = head.tiles.as_ref().filter(|t| !t.is_empty())?;
    let t = head.masked.rows;
    let block = tile_block(tiles).max(1);
    let step = step.min(tiles.len() - 1);
    let now = &tiles[step];
    let mut running = vec![
        RowState {
            phase: RowPhase::Waiting,
            max: None,
            sum: None,
        };
        t
    ];
    // Steps go query block by query block, so every earlier step's rows are as final as the
    // schedule has made them; a block is done at its last step, where the next one moves on.
    for (k, s) in tiles.iter().enumerate().take(step + 1) {
        let done = tiles
            .get(k + 1)
            .is_none_or(|next| next.q_block != s.q_block);
        for (r, (&max, &sum)) in s.row_max.iter().zip(&s.row_sum).enumerate() {
            if let Some(row) = running.get_mut(s.q_block * block + r) {
                *row = RowState {
                    phase: if done {
                        RowPhase::Done
                    } else {
                        RowPhase::Working
                    },
                    max: Some(max),
                    sum: Some(sum),
                };
            }
        }
    }
    let rows = now.q_block * block..(now.q_block * block + now.row_max.len()).min(t);
    let keys = now.k_block * block..((now.k_block + 1) * block).min(head.masked.cols);
    Some(TileFrame {
        step,
        steps: tiles.len(),
        block,
        q_block: now.q_block,
        k_block: now.k_block,
        rows,
        keys,
        running,
    })
}

/// The output O so far: the rows whose query block is done; the others not yet computed
/// (non-finite, drawn hatched).
pub fn output_so_far(head: &HeadTrace, frame: &TileFrame) -> Matrix {
    let mut out = head.context.clone();
    let cols = out.cols.max(1);
    for (row, state) in out.data.chunks_exact_mut(cols).zip(&frame.running) {
        if state.phase != RowPhase::Done {
            row.fill(f32::NAN);
        }
    }
    out
}

/// The end of the stage: the weights the tiles give (exp(S − m)/l from each row's final m and
/// l) against the full kernel's softmax, and the largest difference between them.
#[derive(Clone, Debug, PartialEq)]
pub struct TilesCheck {
    pub from_tiles: Matrix,
    pub max_difference: f32,
}

pub fn check(head: &HeadTrace) -> Option<TilesCheck> {
    let from_tiles = weights_from_tiles(head)?;
    let max_difference = from_tiles.max_abs_difference(&head.weights)?;
    Some(TilesCheck {
        from_tiles,
        max_difference,
    })
}

impl TilesCheck {
    /// What the panel says at the end, with the number.
    pub fn verdict(&self) -> String {
        let same = if self.max_difference < 1e-5 {
            "Tiled = Full"
        } else {
            "Tiled ≠ Full"
        };
        format!(
            "{same}: the weights exp(S − m)/l from each row's final m and l equal the full softmax weights; largest difference {:.1e}.",
            self.max_difference
        )
    }
}

/// The figures at one step: the masked scores with the block outlined and the output rows so
/// far; at the last step also the tiles' weights beside the full kernel's.
pub fn tile_figures(
    ins: &Inspection,
    sel: Selection,
    frame: &TileFrame,
    check: Option<&TilesCheck>,
) -> Vec<Figure> {
    let Some(head) = tiled_head(ins, sel) else {
        return Vec::new();
    };
    let hc = |what: &str| head_caption(sel, what);
    let mut scores = token_figure(
        FigureName::Head(HeadMatrix::MaskedScores),
        ins,
        hc(&format!(
            "masked scores S = QKᵀ/√d_k + M, block (q {}, k {})",
            frame.q_block + 1,
            frame.k_block + 1
        )),
        &head.masked,
        260,
    );
    scores.options.outline = Some(frame.outline());
    let mut output = dimension_figure(
        FigureName::Tiles,
        ins,
        hc("output rows O = acc / l, as their blocks finish"),
        &output_so_far(head, frame),
        260,
        200,
    );
    // The colours of the finished output, from the first block on: rows keep their colour as
    // others fill in.
    let (lo, hi) = head.context.finite_range().unwrap_or((0.0, 1.0));
    output.options = HeatmapOptions {
        hatched: "not computed yet",
        scale: Some(Scale::for_range(lo, hi)),
        ..output.options
    };
    let mut figs = vec![scores, output];
    if let (true, Some(check)) = (frame.is_last(), check) {
        figs.push(token_figure(
            FigureName::TilesWeights,
            ins,
            hc("weights from the tiles exp(S − m)/l"),
            &check.from_tiles,
            220,
        ));
        figs.push(token_figure(
            FigureName::Head(HeadMatrix::Weights),
            ins,
            hc("Full softmax weights"),
            &head.weights,
            220,
        ));
    }
    figs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explorer::figures::tests::inspection_with;
    use engine::ops::attention::AttentionKernel;
    use engine::MaskMode;
    use protocol::ProbeInput;
    use wasm_bindgen_test::wasm_bindgen_test as test;

    fn tiled(mask: MaskMode) -> Inspection {
        let probe = ProbeInput {
            mask,
            ..ProbeInput::default()
        };
        inspection_with(probe, AttentionKernel::Tiled { block: 4 })
    }

    #[test]
    fn the_frames_walk_the_schedule_and_finish_rows_block_by_block() {
        let ins = tiled(MaskMode::Causal);
        let sel = Selection {
            layer: 1,
            head: 1,
            ..Selection::default()
        };
        let head = tiled_head(&ins, sel).unwrap();
        let t = ins.tokens.len();
        let steps = step_count(&ins, sel);
        // Causal: query block q takes key blocks 0..=q.
        let q_blocks = t.div_ceil(4);
        assert_eq!(steps, q_blocks * (q_blocks + 1) / 2);
        let first = frame(head, 0).unwrap();
        assert_eq!((first.rows.clone(), first.keys.clone()), (0..4, 0..4));
        assert_eq!(
            first.describe(),
            format!("Step 1 of {steps}: query block 1 (rows 0–3) × key block 1 (keys 0–3)")
        );
        // Causal block (0, 0) is query block 0's only one: its rows are done at once.
        assert!(first.running[..4].iter().all(|r| r.phase == RowPhase::Done));
        assert!(first.running[4..]
            .iter()
            .all(|r| r.phase == RowPhase::Waiting));
        let second = frame(head, 1).unwrap();
        assert_eq!((second.q_block, second.k_block), (1, 0));
        assert!(second.running[4..8]
            .iter()
            .all(|r| r.phase == RowPhase::Working));
        let out = output_so_far(head, &second);
        assert_eq!(out.row(0), head.context.row(0));
        assert!(out.row(4).iter().all(|x| x.is_nan()));
        let last = frame(head, steps + 5).unwrap();
        assert!(last.is_last());
        assert!(last.running.iter().all(|r| r.phase == RowPhase::Done));
        assert_eq!(output_so_far(head, &last), head.context);
        assert_eq!(last.outline().rows.1, t);
    }

    #[test]
    fn the_stage_ends_with_the_tiles_weights_equal_to_the_full_ones() {
        for mask in [MaskMode::Padding, MaskMode::Causal, MaskMode::None] {
            let ins = tiled(mask);
            let sel = Selection {
                layer: 0,
                head: 3,
                ..Selection::default()
            };
            let head = tiled_head(&ins, sel).unwrap();
            let check = check(head).unwrap();
            assert!(
                check.max_difference < 1e-6,
                "{mask:?}: {}",
                check.max_difference
            );
            assert!(check.verdict().starts_with("Tiled = Full"));
            let last = frame(head, usize::MAX).unwrap();
            let figs = tile_figures(&ins, sel, &last, Some(&check));
            assert_eq!(figs.len(), 4);
            assert_eq!(figs[0].options.outline, Some(last.outline()));
            assert_eq!(figs[3].data.matrix, head.weights);
            // Before the end, only the scores and the output so far.
            let early = frame(head, 0).unwrap();
            let early_figs = tile_figures(&ins, sel, &early, Some(&check));
            assert_eq!(early_figs.len(), 2);
            // The output's colours are the finished output's at every step.
            assert_eq!(early_figs[1].options.scale, figs[1].options.scale);
            assert!(early_figs[1].options.scale.is_some());
        }
        // A full-kernel inspection has no tiles stage at all.
        let full = crate::explorer::figures::tests::inspection(ProbeInput::default());
        assert!(!is_tiled(&full));
        assert!(is_tiled(&tiled(MaskMode::Padding)));
    }
}

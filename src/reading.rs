//! A figure read without sight or a pointer. A heatmap: a sentence that sums it up (what it
//! shows, its size, its largest values) and a cell cursor the keyboard moves, each cell read as
//! the tooltip writes it. A plot: a cursor that moves point by point along its steps. Plain data
//! and text, so the keys and the wording are tested without a page.

use engine::Matrix;

/// Where `key` moves a cursor at `at` along `len` points: the left and right arrows by one,
/// Home and End to the ends (`None` at first: the first arrow starts from the end the key
/// points away from). None: a key the cursor ignores, or nothing to move along.
pub fn along(key: &str, at: Option<usize>, len: usize) -> Option<usize> {
    let last = len.checked_sub(1)?;
    let at = at.map(|i| i.min(last));
    match key {
        "ArrowLeft" => Some(at.map_or(last, |i| i.saturating_sub(1))),
        "ArrowRight" => Some(at.map_or(0, |i| (i + 1).min(last))),
        "Home" => Some(0),
        "End" => Some(last),
        _ => None,
    }
}

/// The cell under the keyboard's cursor: row (query), column (key).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cursor {
    pub row: usize,
    pub col: usize,
}

impl Cursor {
    /// Where `key` (a `KeyboardEvent.key`) moves the cursor on a `rows` × `cols` grid: the
    /// arrows by one cell, Home and End to the row's ends. None: a key the cursor ignores (the
    /// page keeps it, Tab above all).
    pub fn moved(self, key: &str, rows: usize, cols: usize) -> Option<Cursor> {
        if rows == 0 || cols == 0 {
            return None;
        }
        // A matrix that shrank (a shorter sentence) keeps the cursor inside it.
        let (row, col) = (self.row.min(rows - 1), self.col.min(cols - 1));
        let (row, col) = match key {
            "ArrowUp" => (row.saturating_sub(1), col),
            "ArrowDown" => ((row + 1).min(rows - 1), col),
            _ => (row, along(key, Some(col), cols)?),
        };
        Some(Cursor { row, col })
    }
}

/// The point under a plot's keyboard cursor: which series, and where along it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PlotCursor {
    pub series: usize,
    pub point: usize,
}

impl PlotCursor {
    /// Where `key` moves the cursor (`None`: not placed yet) on series of `lens` points each:
    /// up and down to the series before and after, the rest along the series (`along`).
    pub fn moved(from: Option<PlotCursor>, key: &str, lens: &[usize]) -> Option<PlotCursor> {
        let last_series = lens.len().checked_sub(1)?;
        let series = from.map_or(0, |c| c.series.min(last_series));
        let (series, point) = match key {
            "ArrowUp" | "ArrowDown" => {
                let series = match key {
                    "ArrowUp" => series.saturating_sub(1),
                    _ => (series + 1).min(last_series),
                };
                // The same place along the next series, or its last point.
                let point = from
                    .map_or(0, |c| c.point)
                    .min(lens[series].checked_sub(1)?);
                (series, point)
            }
            _ => (series, along(key, from.map(|c| c.point), lens[series])?),
        };
        Some(PlotCursor { series, point })
    }
}

/// A plot's number read aloud, exactly enough to compare: whole numbers in full with commas
/// ("655,360"), others to four significant digits ("0.9541", "4.271e-5").
pub fn number_text(v: f64) -> String {
    let a = v.abs();
    if v.fract() == 0.0 && a < 1e15 {
        let digits = format!("{}", a as u64);
        let mut out = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i) % 3 == 0 {
                out.push(',');
            }
            out.push(c);
        }
        return if v < 0.0 { format!("−{out}") } else { out };
    }
    if (1e-3..1e6).contains(&a) {
        let decimals = (3 - a.log10().floor() as i32).max(0) as usize;
        let s = format!("{v:.decimals$}");
        return s.trim_end_matches('0').trim_end_matches('.').to_string();
    }
    format!("{v:.3e}")
}

/// An exact value as the tooltip writes it: exact zeros and −∞ say so.
pub fn value_text(v: f32) -> String {
    if v == f32::NEG_INFINITY {
        "−∞ (masked)".into()
    } else if v == 0.0 {
        "0 (exactly)".into()
    } else if v.is_finite() {
        format!("{v:.6}")
    } else {
        v.to_string()
    }
}

/// The label of row or column `i`, with its position (tokens repeat: "the #1", "the #5").
pub fn axis_text(labels: &[String], i: usize) -> String {
    match labels.get(i) {
        Some(l) => format!("{l} #{i}"),
        None => format!("#{i}"),
    }
}

/// Cell (`row`, `col`) read aloud as the tooltip shows it: "row → column = value".
pub fn cell_text(m: &Matrix, row_labels: &[String], col_labels: &[String], c: Cursor) -> String {
    if c.row >= m.rows || c.col >= m.cols {
        return String::new();
    }
    format!(
        "{} → {} = {}",
        axis_text(row_labels, c.row),
        axis_text(col_labels, c.col),
        value_text(m.get(c.row, c.col)),
    )
}

/// How many of the largest values the summary names.
const LARGEST: usize = 3;

/// The figure in one sentence: its caption, its size, how many cells are masked, and its
/// largest values with their rows and columns; then how to read every cell.
pub fn summary(caption: &str, m: &Matrix, row_labels: &[String], col_labels: &[String]) -> String {
    let mut finite: Vec<(usize, usize, f32)> = (0..m.rows)
        .flat_map(|r| (0..m.cols).map(move |c| (r, c)))
        .map(|(r, c)| (r, c, m.get(r, c)))
        .filter(|(_, _, v)| v.is_finite())
        .collect();
    let masked = m.rows * m.cols - finite.len();
    finite.sort_by(|a, b| b.2.total_cmp(&a.2));
    let largest: Vec<String> = finite
        .iter()
        .take(LARGEST)
        .map(|&(row, col, _)| cell_text(m, row_labels, col_labels, Cursor { row, col }))
        .collect();
    let masked = match masked {
        0 => String::new(),
        n => format!(", {n} masked"),
    };
    let largest = match largest.is_empty() {
        true => "no finite values".to_string(),
        false => format!("largest {}", largest.join("; ")),
    };
    format!(
        "{caption}: {} rows × {} columns{masked}; {largest}. Arrow keys move through the cells, Home and End to a row's ends.",
        m.rows, m.cols
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test as test;

    fn labels(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_arrows_move_one_cell_and_stop_at_the_edges_home_and_end_reach_the_rows_ends() {
        let c = Cursor { row: 0, col: 0 };
        assert_eq!(c.moved("ArrowUp", 3, 4), Some(c));
        assert_eq!(c.moved("ArrowLeft", 3, 4), Some(c));
        let c = c.moved("ArrowDown", 3, 4).unwrap();
        assert_eq!(c, Cursor { row: 1, col: 0 });
        let c = c.moved("ArrowRight", 3, 4).unwrap();
        assert_eq!(c, Cursor { row: 1, col: 1 });
        assert_eq!(c.moved("End", 3, 4), Some(Cursor { row: 1, col: 3 }));
        assert_eq!(
            Cursor { row: 1, col: 3 }.moved("ArrowRight", 3, 4),
            Some(Cursor { row: 1, col: 3 })
        );
        assert_eq!(c.moved("Home", 3, 4), Some(Cursor { row: 1, col: 0 }));
        assert_eq!(
            Cursor { row: 2, col: 0 }.moved("ArrowDown", 3, 4),
            Some(Cursor { row: 2, col: 0 })
        );
        // Tab and the rest are the page's.
        assert_eq!(c.moved("Tab", 3, 4), None);
        assert_eq!(c.moved("ArrowDown", 0, 0), None);
        // A cursor left outside a matrix that shrank comes back inside it.
        assert_eq!(
            Cursor { row: 9, col: 9 }.moved("ArrowUp", 3, 4),
            Some(Cursor { row: 1, col: 3 })
        );
    }

    #[test]
    fn a_plot_cursor_moves_point_by_point_and_jumps_to_the_ends() {
        // The first Left reads the latest point, the first Right the first.
        assert_eq!(along("ArrowLeft", None, 5), Some(4));
        assert_eq!(along("ArrowRight", None, 5), Some(0));
        assert_eq!(along("ArrowRight", Some(2), 5), Some(3));
        assert_eq!(along("ArrowRight", Some(4), 5), Some(4));
        assert_eq!(along("ArrowLeft", Some(0), 5), Some(0));
        assert_eq!(along("Home", Some(3), 5), Some(0));
        assert_eq!(along("End", None, 5), Some(4));
        // A record thinned since keeps the cursor on it.
        assert_eq!(along("ArrowLeft", Some(9), 5), Some(3));
        assert_eq!(along("ArrowLeft", None, 0), None);
        assert_eq!(along("Enter", Some(1), 5), None);
    }

    #[test]
    fn a_plot_cursor_moves_along_a_series_and_up_and_down_between_series() {
        let lens = [5, 3];
        let c = PlotCursor::moved(None, "ArrowRight", &lens).unwrap();
        assert_eq!(
            c,
            PlotCursor {
                series: 0,
                point: 0
            }
        );
        let c = PlotCursor::moved(Some(c), "End", &lens).unwrap();
        assert_eq!(
            c,
            PlotCursor {
                series: 0,
                point: 4
            }
        );
        // The next series is shorter: its last point.
        let c = PlotCursor::moved(Some(c), "ArrowDown", &lens).unwrap();
        assert_eq!(
            c,
            PlotCursor {
                series: 1,
                point: 2
            }
        );
        assert_eq!(PlotCursor::moved(Some(c), "ArrowDown", &lens), Some(c));
        let c = PlotCursor::moved(Some(c), "ArrowUp", &lens).unwrap();
        assert_eq!(
            c,
            PlotCursor {
                series: 0,
                point: 2
            }
        );
        assert_eq!(PlotCursor::moved(Some(c), "Tab", &lens), None);
        assert_eq!(PlotCursor::moved(None, "ArrowRight", &[]), None);
        assert_eq!(PlotCursor::moved(None, "ArrowDown", &[0, 0]), None);
    }

    #[test]
    fn a_plot_number_reads_exactly_enough() {
        assert_eq!(number_text(655_360.0), "655,360");
        assert_eq!(number_text(1024.0), "1,024");
        assert_eq!(number_text(-3.0), "−3");
        assert_eq!(number_text(0.0), "0");
        assert_eq!(number_text(0.954_12), "0.9541");
        assert_eq!(number_text(12.345_6), "12.35");
        assert_eq!(number_text(4.271e-5), "4.271e-5");
    }

    #[test]
    fn a_cell_reads_as_the_tooltip_writes_it() {
        let m = Matrix {
            rows: 2,
            cols: 2,
            data: vec![0.25, f32::NEG_INFINITY, 0.0, 0.75],
        };
        let (r, c) = (labels(&["the", "cat"]), labels(&["the", "cat"]));
        assert_eq!(
            cell_text(&m, &r, &c, Cursor { row: 0, col: 0 }),
            "the #0 → the #0 = 0.250000"
        );
        assert_eq!(
            cell_text(&m, &r, &c, Cursor { row: 0, col: 1 }),
            "the #0 → cat #1 = −∞ (masked)"
        );
        assert_eq!(
            cell_text(&m, &r, &c, Cursor { row: 1, col: 0 }),
            "cat #1 → the #0 = 0 (exactly)"
        );
        assert_eq!(cell_text(&m, &r, &c, Cursor { row: 5, col: 0 }), "");
    }

    #[test]
    fn the_summary_gives_the_size_the_masked_cells_and_the_three_largest_values() {
        let m = Matrix {
            rows: 2,
            cols: 3,
            data: vec![0.1, 0.7, f32::NEG_INFINITY, 0.4, 0.2, 0.3],
        };
        let (r, c) = (labels(&["a", "b"]), labels(&["x", "y", "z"]));
        assert_eq!(
            summary("Layer 1 · Head 1 · softmax weights", &m, &r, &c),
            "Layer 1 · Head 1 · softmax weights: 2 rows × 3 columns, 1 masked; largest a #0 → y #1 = 0.700000; b #1 → x #0 = 0.400000; b #1 → z #2 = 0.300000. Arrow keys move through the cells, Home and End to a row's ends."
        );
        let empty = Matrix {
            rows: 1,
            cols: 1,
            data: vec![f32::NEG_INFINITY],
        };
        assert!(summary("x", &empty, &[], &[]).contains("1 masked; no finite values"));
    }
}

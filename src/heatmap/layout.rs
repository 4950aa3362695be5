//! Where everything sits on a heatmap canvas. Pure geometry, shared by drawing and hovering.

/// What the columns are, which decides how they are labelled.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ColumnAxis {
    /// Key tokens: one rotated label per column (T×T matrices).
    #[default]
    Tokens,
    /// Feature dimensions 0…n−1: a few numbered ticks (T×D, T×C matrices).
    Dimensions,
    /// Heads side by side, `size` dimensions each: "head k" over each group, a line between.
    Heads { size: usize },
}

/// Pixel geometry of one heatmap: labels left and on top, cells, then the colour bar.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Layout {
    pub rows: usize,
    pub cols: usize,
    pub cell_w: u32,
    pub cell_h: u32,
    /// Top-left of the cell grid.
    pub grid_x: u32,
    pub grid_y: u32,
    pub bar_x: u32,
    pub width: u32,
    pub height: u32,
    /// Token labels and colour-bar ticks are drawn.
    pub labels: bool,
    /// The colour bar is drawn.
    pub bar: bool,
    pub columns: ColumnAxis,
}

/// Bounds and margins for [`Layout::fit`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fit {
    /// Largest width and height of the cell grid, px.
    pub max_w: u32,
    pub max_h: u32,
    /// Room for row labels (left) and column labels (top), px.
    pub left: u32,
    pub top: u32,
    /// Square cells (T×T matrices); else rows and columns size independently.
    pub square: bool,
    pub bar: bool,
    pub columns: ColumnAxis,
}

pub const BAR_WIDTH: u32 = 12;
const BAR_GAP: u32 = 10;
const BAR_TEXT: u32 = 52;
/// Below this a bar has no room for its three ticks.
const MIN_BAR_HEIGHT: u32 = 48;
/// Rows taller than this waste space in wide (T×C) matrices.
const MAX_WIDE_ROW: u32 = 20;

impl Layout {
    /// Square cells. `max_grid`: the largest side the cell grid may take; cells stay between 2
    /// and 28 px with labels. Without labels (thumbnails) the grid fills the canvas and cells
    /// may shrink to 1 px.
    pub fn new(rows: usize, cols: usize, max_grid: u32, labels: bool) -> Layout {
        if !labels {
            let longest = rows.max(cols).max(1) as u32;
            let cell = (max_grid / longest).clamp(1, 28);
            let (w, h) = (cell * cols as u32, cell * rows as u32);
            return Layout {
                rows,
                cols,
                cell_w: cell,
                cell_h: cell,
                grid_x: 0,
                grid_y: 0,
                bar_x: w,
                width: w.max(1),
                height: h.max(1),
                labels,
                bar: false,
                columns: ColumnAxis::Tokens,
            };
        }
        let fit = Fit {
            max_w: max_grid,
            max_h: max_grid,
            left: 84,
            top: 84,
            square: true,
            bar: true,
            columns: ColumnAxis::Tokens,
        };
        Layout::fit(rows, cols, fit)
    }

    /// A labelled heatmap within `fit`'s bounds.
    pub fn fit(rows: usize, cols: usize, fit: Fit) -> Layout {
        let by = |max: u32, n: usize| (max / n.max(1) as u32).clamp(2, 28);
        let (cell_w, cell_h) = if fit.square {
            let cell = by(fit.max_w, cols).min(by(fit.max_h, rows));
            (cell, cell)
        } else {
            (by(fit.max_w, cols), by(fit.max_h, rows).min(MAX_WIDE_ROW))
        };
        let grid_w = cell_w * cols as u32;
        let grid_h = cell_h * rows as u32;
        let bar_x = fit.left + grid_w + BAR_GAP;
        let width = if fit.bar {
            bar_x + BAR_WIDTH + BAR_TEXT
        } else {
            fit.left + grid_w + 4
        };
        let body = if fit.bar {
            grid_h.max(MIN_BAR_HEIGHT)
        } else {
            grid_h
        };
        Layout {
            rows,
            cols,
            cell_w,
            cell_h,
            grid_x: fit.left,
            grid_y: fit.top,
            bar_x,
            width,
            height: fit.top + body + 8,
            labels: true,
            bar: fit.bar,
            columns: fit.columns,
        }
    }

    /// The (row, col) under canvas pixel (x, y), if any.
    pub fn cell_at(&self, x: f64, y: f64) -> Option<(usize, usize)> {
        let (gx, gy) = (x - self.grid_x as f64, y - self.grid_y as f64);
        if gx < 0.0 || gy < 0.0 {
            return None;
        }
        let (r, c) = (
            (gy / self.cell_h as f64) as usize,
            (gx / self.cell_w as f64) as usize,
        );
        (r < self.rows && c < self.cols).then_some((r, c))
    }

    pub fn grid_width(&self) -> u32 {
        self.cell_w * self.cols as u32
    }

    pub fn grid_height(&self) -> u32 {
        self.cell_h * self.rows as u32
    }

    /// Height of the colour bar: the grid's, but never too short for its ticks.
    pub fn bar_height(&self) -> u32 {
        self.grid_height().max(MIN_BAR_HEIGHT)
    }
}

/// Room a column of labels needs, px: about 7 px a character at 12 px, labels cut at 12.
pub fn label_room(labels: &[String]) -> u32 {
    let longest = labels
        .iter()
        .map(|l| l.chars().count().min(12))
        .max()
        .unwrap_or(0) as u32;
    (10 + longest * 7).clamp(16, 96)
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn cell_at_inverts_the_grid() {
        let l = Layout::new(5, 7, 280, true);
        assert_eq!((l.cell_w, l.cell_h), (28, 28));
        let centre = |r: u32, c: u32| {
            (
                (l.grid_x + c * 28 + 14) as f64,
                (l.grid_y + r * 28 + 14) as f64,
            )
        };
        let (x, y) = centre(4, 6);
        assert_eq!(l.cell_at(x, y), Some((4, 6)));
        assert_eq!(l.cell_at(1.0, 1.0), None);
        let (x, y) = centre(5, 0);
        assert_eq!(l.cell_at(x, y), None);
    }

    #[test]
    fn long_sequences_shrink_cells_but_not_below_two_pixels() {
        assert_eq!(Layout::new(128, 128, 320, true).cell_w, 2);
        assert_eq!(Layout::new(32, 32, 320, true).cell_w, 10);
        // Thumbnails may go down to one pixel a cell.
        assert_eq!(Layout::new(128, 128, 64, false).cell_w, 1);
        assert_eq!(Layout::new(8, 8, 64, false).width, 64);
    }

    #[test]
    fn wide_matrices_get_their_own_column_width_and_readable_rows() {
        let fit = Fit {
            max_w: 320,
            max_h: 320,
            left: 40,
            top: 20,
            square: false,
            bar: true,
            columns: ColumnAxis::Dimensions,
        };
        let l = Layout::fit(9, 64, fit);
        assert_eq!((l.cell_w, l.cell_h), (5, MAX_WIDE_ROW));
        assert_eq!(
            l.cell_at(40.0 + 5.0 * 63.0 + 1.0, 20.0 + 20.0 * 8.0 + 1.0),
            Some((8, 63))
        );
        // A short grid still leaves the colour bar room for its ticks.
        let short = Layout::fit(1, 4, fit);
        assert!(short.height >= 20 + MIN_BAR_HEIGHT);
    }

    #[test]
    fn label_room_grows_with_the_longest_label_within_bounds() {
        let labels = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(label_room(&labels(&["[CLS]"])) < label_room(&labels(&["[CLS]", "chases"])));
        assert_eq!(label_room(&[]), 16);
        assert_eq!(
            label_room(&labels(&["a-very-long-token-indeed"])),
            10 + 12 * 7
        );
    }
}

//! Where everything sits on a heatmap canvas. Pure geometry, shared by drawing and hovering.

/// Pixel geometry of one heatmap: labels left and on top, cells, then the colour bar.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Layout {
    pub rows: usize,
    pub cols: usize,
    pub cell: u32,
    /// Top-left of the cell grid.
    pub grid_x: u32,
    pub grid_y: u32,
    pub bar_x: u32,
    pub width: u32,
    pub height: u32,
    pub labels: bool,
}

pub const BAR_WIDTH: u32 = 12;
const BAR_GAP: u32 = 10;
const BAR_TEXT: u32 = 52;

impl Layout {
    /// `max_grid`: the largest side the cell grid may take; cells stay between 2 and 28 px.
    /// Without labels (thumbnails) the grid fills the canvas.
    pub fn new(rows: usize, cols: usize, max_grid: u32, labels: bool) -> Layout {
        let longest = rows.max(cols).max(1) as u32;
        let cell = (max_grid / longest).clamp(2, 28);
        let (left, top) = if labels { (84, 84) } else { (0, 0) };
        let grid_w = cell * cols as u32;
        let grid_h = cell * rows as u32;
        let bar_x = left + grid_w + BAR_GAP;
        let width = if labels { bar_x + BAR_WIDTH + BAR_TEXT } else { grid_w };
        Layout { rows, cols, cell, grid_x: left, grid_y: top, bar_x, width, height: top + grid_h + 4, labels }
    }

    /// The (row, col) under canvas pixel (x, y), if any.
    pub fn cell_at(&self, x: f64, y: f64) -> Option<(usize, usize)> {
        let (gx, gy) = (x - self.grid_x as f64, y - self.grid_y as f64);
        if gx < 0.0 || gy < 0.0 {
            return None;
        }
        let (r, c) = ((gy / self.cell as f64) as usize, (gx / self.cell as f64) as usize);
        (r < self.rows && c < self.cols).then_some((r, c))
    }

    pub fn grid_height(&self) -> u32 {
        self.cell * self.rows as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn cell_at_inverts_the_grid() {
        let l = Layout::new(5, 7, 280, true);
        assert_eq!(l.cell, 28);
        let centre = |r: u32, c: u32| ((l.grid_x + c * 28 + 14) as f64, (l.grid_y + r * 28 + 14) as f64);
        let (x, y) = centre(4, 6);
        assert_eq!(l.cell_at(x, y), Some((4, 6)));
        assert_eq!(l.cell_at(1.0, 1.0), None);
        let (x, y) = centre(5, 0);
        assert_eq!(l.cell_at(x, y), None);
    }

    #[test]
    fn long_sequences_shrink_cells_but_not_below_two_pixels() {
        assert_eq!(Layout::new(128, 128, 320, true).cell, 2);
        assert_eq!(Layout::new(32, 32, 320, true).cell, 10);
    }
}

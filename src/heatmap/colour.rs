//! Colour scales: sequential for weights (0…max), diverging for signed values (−m…+m).

use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub enum Scale {
    /// Low → high along viridis; for non-negative values such as softmax weights.
    Sequential { lo: f32, hi: f32 },
    /// Blue ← 0 (white) → red, symmetric so 0 always sits at the centre.
    Diverging { magnitude: f32 },
}

impl Scale {
    /// The scale a matrix wants: diverging when it holds negative values, else sequential.
    pub fn for_range(lo: f32, hi: f32) -> Scale {
        if lo < 0.0 {
            let m = lo.abs().max(hi.abs());
            Scale::Diverging {
                magnitude: if m > 0.0 { m } else { 1.0 },
            }
        } else {
            Scale::Sequential {
                lo: 0.0,
                hi: if hi > 0.0 { hi } else { 1.0 },
            }
        }
    }

    pub fn range(self) -> (f32, f32) {
        match self {
            Scale::Sequential { lo, hi } => (lo, hi),
            Scale::Diverging { magnitude } => (-magnitude, magnitude),
        }
    }

    /// Position of `x` along the scale, clamped to [0, 1].
    pub fn position(self, x: f32) -> f32 {
        let (lo, hi) = self.range();
        ((x - lo) / (hi - lo)).clamp(0.0, 1.0)
    }

    pub fn colour(self, x: f32) -> [u8; 3] {
        let t = self.position(x);
        match self {
            Scale::Sequential { .. } => lerp_stops(&VIRIDIS, t),
            Scale::Diverging { .. } => lerp_stops(&BLUE_WHITE_RED, t),
        }
    }
}

/// Colour of a −∞ (masked) cell; hatched with `MASK_HATCH` so it cannot be mistaken for a value.
pub const MASK_FILL: [u8; 3] = [222, 222, 222];
pub const MASK_HATCH: [u8; 3] = [120, 120, 120];

const VIRIDIS: [[u8; 3]; 6] = [
    [68, 1, 84],
    [65, 68, 135],
    [42, 120, 142],
    [34, 168, 132],
    [122, 209, 81],
    [253, 231, 37],
];
const BLUE_WHITE_RED: [[u8; 3]; 5] = [
    [33, 102, 172],
    [146, 197, 222],
    [247, 247, 247],
    [244, 165, 130],
    [178, 24, 43],
];

fn lerp_stops(stops: &[[u8; 3]], t: f32) -> [u8; 3] {
    let x = t * (stops.len() - 1) as f32;
    let i = (x.floor() as usize).min(stops.len() - 2);
    let f = x - i as f32;
    let (a, b) = (stops[i], stops[i + 1]);
    std::array::from_fn(|k| (a[k] as f32 + (b[k] as f32 - a[k] as f32) * f).round() as u8)
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn diverging_puts_zero_at_white_and_is_symmetric() {
        let s = Scale::for_range(-0.5, 2.0);
        assert_eq!(s, Scale::Diverging { magnitude: 2.0 });
        assert_eq!(s.colour(0.0), [247, 247, 247]);
        assert_eq!(s.colour(-2.0), BLUE_WHITE_RED[0]);
        assert_eq!(s.colour(9.0), BLUE_WHITE_RED[4]);
    }

    #[test]
    fn sequential_spans_zero_to_max() {
        let s = Scale::for_range(0.0, 1.0);
        assert_eq!(s.colour(0.0), VIRIDIS[0]);
        assert_eq!(s.colour(1.0), VIRIDIS[5]);
        assert_eq!(
            Scale::for_range(0.0, 0.0),
            Scale::Sequential { lo: 0.0, hi: 1.0 }
        );
    }
}

//! What the whole-model reference tests share: a fixture's `expected.safetensors` (tensors by
//! name, JSON in its metadata) and the comparison against torch, |engine − torch| ≤ 1e-4 +
//! 1e-4·|torch| (justified in tests/reference.rs).

use safetensors::SafeTensors;
use std::path::Path;

pub const ATOL: f32 = 1e-4;
pub const RTOL: f32 = 1e-4;

/// A fixture's `expected.safetensors`.
pub struct Expected {
    pub bytes: Vec<u8>,
}

impl Expected {
    pub fn read(path: &Path) -> Self {
        Expected {
            bytes: std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
        }
    }

    pub fn tensors(&self) -> SafeTensors<'_> {
        SafeTensors::deserialize(&self.bytes).expect("fixture is safetensors")
    }

    /// (shape, values) of `name`, or None when the fixture does not hold it.
    pub fn get(&self, name: &str) -> Option<(Vec<usize>, Vec<f32>)> {
        let st = self.tensors();
        let view = st.tensor(name).ok()?;
        let data = view
            .data()
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        Some((view.shape().to_vec(), data))
    }

    pub fn tensor(&self, name: &str) -> Vec<f32> {
        self.get(name)
            .unwrap_or_else(|| panic!("fixture has no {name}"))
            .1
    }

    /// How many tensors' names start with `prefix`.
    pub fn count(&self, prefix: &str) -> usize {
        self.tensors()
            .names()
            .iter()
            .filter(|n| n.starts_with(prefix))
            .count()
    }

    /// The metadata entry `key` (JSON the fixture script wrote).
    pub fn metadata(&self, key: &str) -> String {
        let (_, header) = SafeTensors::read_metadata(&self.bytes).expect("safetensors header");
        header.metadata().as_ref().expect("metadata")[key].clone()
    }
}

/// Every value within the tolerance of torch's (NaN fails); returns the largest difference.
pub fn check(what: &str, got: &[f32], want: &[f32]) -> f32 {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    let mut worst = 0.0f32;
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let d = (g - w).abs();
        assert!(
            d <= ATOL + RTOL * w.abs(),
            "{what}[{i}]: engine {g}, torch {w} (|diff| {d:.2e})"
        );
        worst = worst.max(d);
    }
    worst
}

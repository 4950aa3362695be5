//! The Batch view: `data` turns the latest step's `BatchView` and the run's `MaskingCounts`
//! into chips, words and the `data-batch`/`data-counts` JSON; `view` lays them out.

pub mod data;
pub mod view;

pub use view::BatchPanel;

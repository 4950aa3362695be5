//! Pieces of the training panel that stand on their own: the loss curves, loading and saving
//! checkpoint files, and what the browser keeps between visits.

pub mod curves;
pub mod files;
pub mod storage;

//! Pieces of the training panel that stand on their own: the loss curves, and loading and
//! saving checkpoint files.

pub mod checkpoint;
pub mod curves;

//! Pieces of the training panel that stand on their own: the loss curves, the latest batch,
//! loading and saving checkpoint files, and the note on what the training mask does to NSP.

pub mod batch;
pub mod checkpoint;
pub mod curves;
pub mod mask_note;

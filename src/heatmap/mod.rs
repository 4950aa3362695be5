//! Heatmaps drawn with plotters: cells, hatching and colour bar into one RGB pixel buffer
//! (BitMapBackend), put on the canvas with a single `putImageData`; then the text (token
//! labels, colour-bar ticks) through plotters-canvas. One canvas call per heatmap for the
//! cells, however many there are.

pub mod colour;
pub mod layout;
mod render;

pub use colour::Scale;
pub use layout::{label_room, ColumnAxis, Fit, Layout};
pub use render::{draw, svg, CellBlock, HeatmapSpec};

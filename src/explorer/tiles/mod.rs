//! The "Tiles" stage of tiled attention: `data` picks the schedule's state at each step from
//! the trace, `view` animates it block by block.

pub mod data;
pub mod view;

pub use view::TilesPanel;

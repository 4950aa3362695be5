//! The loss and accuracy curves: `chart` draws one with plotters, `view` lays them out and
//! reads out the values. The record they draw is `protocol::Curves`.

pub mod chart;
pub mod view;

pub use view::LossCurves;

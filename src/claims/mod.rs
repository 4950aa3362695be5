//! The "Claims" panel: the tutorial's claims about attention, each with a Run
//! button that measures it in the worker. `state` is what the page knows of each run, `chart`
//! draws a result with plotters, `view` lays the panel out.

pub mod chart;
pub mod state;
pub mod view;

pub use view::ClaimsPanel;

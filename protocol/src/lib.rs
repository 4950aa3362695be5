//! The plain data that crosses between Attention Lab's page and its training worker, and what
//! the browser keeps between visits. No DOM, no maths: the engine computes, the worker owns the
//! model, the page draws; this crate is what they say to each other.
//!
//! Dependencies point one way: page and worker → `protocol` → `engine`'s data types. It builds
//! natively, so its rules are tested and its decoders fuzzed without a browser.

pub mod archive;
pub mod bundle;
pub mod claims;
pub mod course;
pub mod curves;
pub mod error;
pub mod fields;
pub mod figure;
pub mod generation;
pub mod kind;
pub mod link;
pub mod messages;
pub mod model_info;
pub mod notebook;
pub mod pytorch;
pub mod record;
pub mod remote;
pub mod restore;
pub mod rules;
pub mod settings;
pub mod stage;
pub mod turns;
pub mod view;
pub mod wire;
pub mod workers;

pub use bundle::ModelBundle;
pub use claims::{Claim, ClaimResult};
pub use curves::{CurvePoint, Curves, Series};
pub use error::{LabError, LabResult};
pub use generation::{GenerationSettings, GenerationStep};
pub use kind::ModelKind;
pub use messages::{
    Crash, FromClaimWorker, FromGradientWorker, FromWorker, Role, ToClaimWorker, ToGradientWorker,
    ToWorker, WorkerSays,
};
pub use model_info::ModelInfo;
pub use settings::{Architecture, LabSettings, Preset, ProbeInput, ProbeKernel, DEFAULT_CORPUS};
pub use workers::{WorkerCount, WorkersInUse};

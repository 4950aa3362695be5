//! Attention Lab's training worker as plain Rust: no JS types, no clock of its own, tested
//! natively. The web worker (`src/worker/` in the app) is glue around it: browser events in,
//! calls here, `postMessage` out.
//!
//! - `lead`: the training worker the page talks to (`Lead`): the session at the page's
//!   cadences, steps shared with gradient workers, claims passed to the claim worker, the
//!   store's jobs; the world outside through `Host`.
//! - `session`: the page's messages to the training worker in, replies out (`Session`).
//! - `lab`: one model with its trainer, tokenizer, settings and `history` of weights; `model`:
//!   which kind of model it is, and what each kind has.
//! - `shares`: a step cut into shares for gradient workers; `replica`: a gradient worker's copy.
//! - `claims`: the Claims panel's experiments, measured unit by unit; `claim_worker`: the claim
//!   worker's copy of the models and the claim it measures.
//! - `generation`: a decoder's generation, token by token.
//!
//! Imports point one way: worker core → `protocol` → engine.

pub mod claim_worker;
pub mod claims;
pub mod generation;
pub mod history;
pub mod lab;
pub mod lead;
pub mod model;
pub mod replica;
pub mod session;
pub mod shares;

//! Leakage (causal): the probe's last word changed, under the padding and the causal mask; in
//! one go.

use super::{Models, Started};
use engine::experiments::leakage;
use protocol::claims::Leakage;
use protocol::{LabError, LabResult, ProbeInput};

pub fn start(probe: &ProbeInput, models: &Models) -> LabResult<Started> {
    let (model, tokenizer) = models.lab.ok_or_else(LabError::no_model)?.parts();
    let measured = leakage(model, tokenizer, &probe.text)?;
    Ok(Started::Done(Leakage::result(&measured)))
}

//! The claims measured by a runner on a session's models, as the lead orders them, and in the
//! claim worker on a copy of them.

use super::*;
use crate::claim_worker::ClaimWorker;
use crate::session::tests::inspected;
use crate::session::Session;
use engine::inspect::Inspection;
use protocol::{FromWorker, LabSettings, ToClaimWorker, ToWorker, DEFAULT_CORPUS};

/// Milliseconds since the first call: the claims that time their units read a real clock.
fn wall_clock() -> impl Fn() -> f64 {
    let start = std::time::Instant::now();
    move || start.elapsed().as_secs_f64() * 1000.0
}

fn session(settings: LabSettings) -> Session {
    let mut s = Session::default();
    let corpus = DEFAULT_CORPUS.into();
    let replies = s.handle(ToWorker::Reset { corpus, settings }, Vec::new());
    assert!(matches!(replies[0].message, FromWorker::Ready { .. }));
    s
}

fn start(claim: Claim) -> ClaimOrder {
    ClaimOrder::Start {
        claim,
        probe: ProbeInput::default(),
    }
}

fn result(reports: &[ClaimReport]) -> Option<&LabResult<ClaimResult>> {
    reports.iter().find_map(|r| match r {
        ClaimReport::Done { result, .. } => Some(result),
        _ => None,
    })
}

fn progress(reports: &[ClaimReport]) -> Option<(usize, usize)> {
    reports.iter().find_map(|r| match r {
        ClaimReport::Progress { done, total, .. } => Some((*done, *total)),
        _ => None,
    })
}

/// Runs `claim` unit by unit to its result, as the lead's runner does.
fn run_claim(s: &Session, claim: Claim) -> ClaimResult {
    let result = run_to_end(claim, &s.claim_models());
    result.unwrap_or_else(|e| panic!("{claim:?}: {e}"))
}

#[test]
fn the_leakage_claim_gives_exact_zeros_before_the_change_under_causal() {
    let s = session(LabSettings::default());
    let probe = ProbeInput {
        text: "the dog chases a red ball".into(),
        ..ProbeInput::default()
    };
    let order = ClaimOrder::Start {
        claim: Claim::Leakage,
        probe,
    };
    let reports = ClaimRunner::default().obey(order, &s.claim_models());
    let result = result(&reports).unwrap().as_ref().unwrap();
    let (padding, causal) = (&result.plots[0].series[0], &result.plots[0].series[1]);
    assert_eq!(
        (padding.name.as_str(), causal.name.as_str()),
        ("Padding", "Causal")
    );
    // [CLS] the dog chases a red ball [SEP]: "ball" at 6 changes.
    assert!(causal.y[..6].iter().all(|&d| d == 0.0), "{:?}", causal.y);
    assert!(causal.y[6] > 0.0 && padding.y.iter().all(|&d| d > 0.0));
    assert!(result.verdict.text.starts_with("Borne out"));
}

#[test]
fn a_scaling_claim_runs_unit_by_unit_and_cancel_stops_it() {
    let s = session(LabSettings::default());
    let models = s.claim_models();
    let mut runner = ClaimRunner::default();
    let reports = runner.obey(start(Claim::Memory), &models);
    assert_eq!(progress(&reports), Some((0, 14)));
    assert!(runner.measuring());
    let clock = wall_clock();
    let unit = runner.unit(&models, &clock).into_iter().collect::<Vec<_>>();
    assert_eq!(progress(&unit), Some((1, 14)));
    let cancel = ClaimOrder::Cancel {
        claim: Claim::Memory,
    };
    assert_eq!(
        runner.obey(cancel, &models),
        [ClaimReport::Cancelled {
            claim: Claim::Memory
        }]
    );
    assert!(!runner.measuring() && runner.unit(&models, &clock).is_none());
    // KV cache answers at once, from this model's shape.
    let reports = runner.obey(start(Claim::KvCache), &models);
    let kv = result(&reports).unwrap().as_ref().unwrap();
    assert_eq!(kv.plots[0].series[0].x, [4.0, 1.0]);
    assert!(!runner.measuring());
}

/// A claim set aside for another (`ClaimOrder::Start` while it runs) waits, and goes on where
/// it was at `Resume`.
#[test]
fn a_claim_set_aside_goes_on_where_it_was() {
    let s = session(LabSettings::default());
    let models = s.claim_models();
    let mut runner = ClaimRunner::default();
    let clock = wall_clock();
    runner.obey(start(Claim::Memory), &models);
    runner.unit(&models, &clock);
    let reports = runner.obey(start(Claim::Time), &models);
    assert_eq!(progress(&reports), Some((0, 28)));
    let mut time = Vec::new();
    while runner.measuring() {
        time.extend(runner.unit(&models, &clock));
    }
    assert!(result(&time).unwrap().is_ok());
    let resume = ClaimOrder::Resume {
        claim: Claim::Memory,
    };
    assert!(runner.obey(resume, &models).is_empty());
    let unit = runner.unit(&models, &clock).into_iter().collect::<Vec<_>>();
    assert_eq!(progress(&unit), Some((2, 14)));
}

/// Extrapolation trains models of its own (no Compare needed): one unit per check of one of
/// them, 9 models × 30 checks in all; new models for the page do not stop it.
#[test]
fn the_extrapolation_claim_trains_its_own_models_and_goes_on_through_a_reset() {
    let s = session(LabSettings::default());
    let models = s.claim_models();
    let mut runner = ClaimRunner::default();
    let reports = runner.obey(start(Claim::Extrapolation), &models);
    assert_eq!(progress(&reports), Some((0, 270)));
    let clock = wall_clock();
    let unit = runner.unit(&models, &clock).into_iter().collect::<Vec<_>>();
    assert_eq!(progress(&unit), Some((1, 270)));
    assert!(
        runner.obey(ClaimOrder::ModelsReplaced, &models).is_empty(),
        "its models are its own: a Reset leaves it running"
    );
    assert!(runner.measuring());
    let unit = runner.unit(&models, &clock).into_iter().collect::<Vec<_>>();
    assert_eq!(progress(&unit), Some((2, 270)));
    // One that measures the page's model stops.
    runner.obey(start(Claim::Memory), &models);
    runner.obey(start(Claim::Heads), &models);
    let stopped = runner.obey(ClaimOrder::ModelsReplaced, &models);
    assert_eq!(
        stopped,
        [ClaimReport::Cancelled {
            claim: Claim::Heads
        }]
    );
}

/// Compare with A ÷√d_k and B None, on the small preset (d_k = 64): what the Scaling claim's
/// trained comparison reads.
fn scaling_pair() -> Session {
    session(LabSettings {
        preset: protocol::Preset::Small,
        batch_size: 2,
        max_len: 12,
        compare: Some(protocol::Architecture {
            scaling: engine::config::AttentionScaling::None,
            ..protocol::Architecture::default()
        }),
        ..LabSettings::default()
    })
}

#[test]
fn the_scaling_claim_saturates_softmax_without_the_scaling_and_reads_comparing_models() {
    let s = session(LabSettings::default());
    let r = run_claim(&s, Claim::Scaling);
    assert_eq!(r.plots.len(), 4, "no trained comparison without Compare");
    let largest = &r.plots[1].series;
    assert_eq!(
        (largest[0].name.as_str(), largest[1].name.as_str()),
        ("÷√d_k", "None")
    );
    assert_eq!(largest[0].x, protocol::claims::HEAD_SIZES.map(|d| d as f64));
    // Without ÷√d_k the largest weight climbs towards 1 with d_k; with it, it stays put.
    let (scaled, unscaled) = (&largest[0].y, &largest[1].y);
    assert!(
        unscaled.windows(2).all(|w| w[1] > w[0] - 0.01),
        "{unscaled:?}"
    );
    assert!(unscaled[8] > 0.9 && unscaled[0] < 0.5, "{unscaled:?}");
    let spread =
        scaled.iter().fold(0.0f64, |m, &y| m.max(y)) - scaled.iter().fold(1.0f64, |m, &y| m.min(y));
    assert!(spread < 0.05, "{scaled:?}");
    assert!(
        r.verdict.text.starts_with("Borne out"),
        "{}",
        r.verdict.text
    );
    let trained = r
        .numbers
        .iter()
        .find(|(k, _)| k == "Trained models")
        .unwrap();
    assert!(trained.1.contains("turn on Compare"), "{}", trained.1);

    let mut s = scaling_pair();
    s.train(3);
    let r = run_claim(&s, Claim::Scaling);
    assert_eq!(r.plots.len(), 5, "{:?}", r.numbers);
    let trained = &r.plots[4].series;
    assert_eq!(
        (trained[0].name.as_str(), trained[1].name.as_str()),
        ("A: ÷√d_k", "B: None")
    );
    assert_eq!(trained[0].x.last(), Some(&3.0));
    // The last point is each model's mean largest weight on the probe now.
    let inspect = ToWorker::Inspect {
        probe: ProbeInput::default(),
        at: None,
    };
    let (a, b) = inspected(&s.handle(inspect, Vec::new()));
    let now = |i: &Inspection| engine::experiments::mean_largest_weight(i);
    assert_eq!(trained[0].y.last(), Some(&now(&a)));
    assert_eq!(trained[1].y.last(), Some(&now(&b.unwrap())));
    assert!(
        r.verdict.text.contains("Trained side by side (d_k = 64)"),
        "{}",
        r.verdict.text
    );
}

/// The claim worker, given its copy (`copy_for_claims`).
fn claim_copy(s: &Session) -> ClaimWorker {
    let (copy, attachments) = s.copy_for_claims(true).unwrap();
    let mut c = ClaimWorker::default();
    assert!(c.handle(copy, attachments).is_empty());
    c
}

/// A claim run to its end in the claim worker.
fn run_claim_there(c: &mut ClaimWorker, claim: Claim) -> LabResult<ClaimResult> {
    let mut said = c.handle(ToClaimWorker::Order(start(claim)), Vec::new());
    let clock = wall_clock();
    while c.measuring() {
        said.extend(c.unit(&clock));
    }
    result(&said).expect("the claim ends").clone()
}

/// The claim worker measures a copy: Scaling's trained comparison reads Compare's two models
/// along the History there exactly as here, and the Heads claim gives the same result.
#[test]
fn a_claim_copy_measures_what_its_session_would() {
    let mut s = scaling_pair();
    s.train(11);
    let mut c = claim_copy(&s);
    let here = run_claim(&s, Claim::Scaling);
    let there = run_claim_there(&mut c, Claim::Scaling).unwrap();
    // History entries at steps 0, 5 and 10, and the current step.
    assert_eq!(here.plots[4].series[0].x, vec![0.0, 5.0, 10.0, 11.0]);
    assert_eq!(here, there);

    let mut s = session(LabSettings::default());
    s.train(2);
    let mut c = claim_copy(&s);
    assert_eq!(
        run_claim(&s, Claim::Heads),
        run_claim_there(&mut c, Claim::Heads).unwrap()
    );
}

/// A copy that does not load leaves the claim worker no model: the claim says so, rather than
/// measure the last copy again. Before any model, the copy is of none.
#[test]
fn a_claim_copy_that_does_not_load_leaves_no_model_to_measure() {
    let s = session(LabSettings::default());
    let mut c = claim_copy(&s);
    assert!(run_claim_there(&mut c, Claim::Heads).is_ok());
    let (copy, mut attachments) = s.copy_for_claims(false).unwrap();
    attachments[0].truncate(10);
    c.handle(copy, attachments);
    assert!(run_claim_there(&mut c, Claim::Heads).is_err());
    let (none, attachments) = Session::default().copy_for_claims(false).unwrap();
    assert!(attachments.is_empty());
    c.handle(none, attachments);
    assert!(run_claim_there(&mut c, Claim::KvCache).is_err());
}

//! The lead under a fake host: a clock the test moves, posts kept in order, wake-ups run when
//! the test says, and gradient and claim workers played by the real `Replica` and
//! `ClaimWorker`, whose answers the test delivers when it chooses.

use super::*;
use crate::claim_worker::ClaimWorker;
use crate::replica::{floats_of, vec_io, Replica};
use protocol::claims::REMEASURE_PLAYING_MAX_MS;
use protocol::turns::{ClaimOrder, ClaimReport};
use protocol::{Claim, FromClaimWorker, LabSettings, ProbeInput, DEFAULT_CORPUS};
use std::cell::Cell;

#[derive(Default)]
struct Fake {
    clock: Cell<f64>,
    /// Every ms the clock reads moves it on by this much (a step takes time).
    cost_per_read: f64,
    posted: Vec<FromWorker>,
    /// The clock at each post.
    posted_at: Vec<f64>,
    wakes: VecDeque<(Wake, Option<u32>)>,
    stored: Vec<StoreJob>,
    cores: usize,
    no_nested_workers: bool,
    /// Starting a gradient worker fails.
    refuse_workers: bool,
    gradient_workers: usize,
    /// Messages to gradient workers, with the weights of a job.
    to_gradients: VecDeque<(usize, ToGradientWorker, Option<Vec<f32>>)>,
    claim_worker: bool,
    to_claims: VecDeque<(ToClaimWorker, Vec<Vec<u8>>)>,
}

impl Host for Fake {
    fn now(&self) -> f64 {
        let t = self.clock.get();
        self.clock.set(t + self.cost_per_read);
        t
    }
    fn post(&mut self, reply: Reply) {
        self.posted.push(reply.message);
        self.posted_at.push(self.clock.get());
    }
    fn wake(&mut self, wake: Wake, after_ms: Option<u32>) {
        self.wakes.push_back((wake, after_ms));
    }
    fn store(&mut self, job: StoreJob) {
        self.stored.push(job);
    }
    fn cores(&self) -> usize {
        self.cores.max(1)
    }
    fn nested_workers(&self) -> bool {
        !self.no_nested_workers
    }
    fn gradient_workers(&mut self, count: usize) -> LabResult<()> {
        if count > 0 && self.refuse_workers {
            return Err(LabError::browser("workers are blocked"));
        }
        self.gradient_workers = count;
        Ok(())
    }
    fn to_gradient_worker(
        &mut self,
        index: usize,
        message: &ToGradientWorker,
        weights: Option<&[Param<'_>]>,
    ) -> LabResult<()> {
        assert!(index < self.gradient_workers, "no gradient worker {index}");
        self.to_gradients
            .push_back((index, message.clone(), weights.map(floats_of)));
        Ok(())
    }
    fn to_claim_worker(
        &mut self,
        message: &ToClaimWorker,
        attachments: &[Vec<u8>],
    ) -> LabResult<()> {
        self.claim_worker = true;
        self.to_claims
            .push_back((message.clone(), attachments.to_vec()));
        Ok(())
    }
    fn end_claim_worker(&mut self) {
        self.claim_worker = false;
        self.to_claims.clear();
    }
    fn die(&mut self, how: Crash) {
        panic!("asked to die: {how:?}");
    }
}

fn fake() -> Fake {
    Fake {
        cores: 1,
        ..Fake::default()
    }
}

fn reset(lead: &mut Lead, host: &mut Fake, settings: LabSettings) {
    lead.message(
        host,
        ToWorker::Reset {
            corpus: DEFAULT_CORPUS.into(),
            settings,
        },
        Vec::new(),
    );
}

/// A host that runs claims in a claim worker (`nested`) or between slices here, its started
/// lead, and the claim worker, for tests that must hold either way.
fn claims_run(nested: bool, host: Fake) -> (Fake, Lead, ClaimWorker) {
    let mut host = Fake {
        no_nested_workers: !nested,
        ..host
    };
    let lead = started(&mut host);
    (host, lead, ClaimWorker::default())
}

/// A lead with the default model, and its host with nothing posted yet.
fn started(host: &mut Fake) -> Lead {
    let mut lead = Lead::start(host);
    reset(&mut lead, host, LabSettings::default());
    assert!(host
        .posted
        .iter()
        .any(|m| matches!(m, FromWorker::Ready { .. })));
    host.posted.clear();
    lead
}

/// Run the wake-ups asked for, in order, `n` times at most, moving the clock `ms` before each.
fn run_wakes(lead: &mut Lead, host: &mut Fake, n: usize, ms: f64) {
    for _ in 0..n {
        let Some((wake, _)) = host.wakes.pop_front() else {
            return;
        };
        host.clock.set(host.clock.get() + ms);
        lead.wake(host, wake);
    }
}

/// Every loss point the page got, in the order it got them.
fn progress_points(posted: &[FromWorker]) -> Vec<CurvePoint> {
    posted
        .iter()
        .flat_map(|m| match m {
            FromWorker::Progress { points, .. } => points.clone(),
            _ => Vec::new(),
        })
        .collect()
}

fn points(posted: &[FromWorker]) -> Vec<u64> {
    progress_points(posted).iter().map(|p| p.step).collect()
}

fn progresses(posted: &[FromWorker]) -> usize {
    posted
        .iter()
        .filter(|m| matches!(m, FromWorker::Progress { .. }))
        .count()
}

fn step_of(lead: &Lead) -> u64 {
    lead.session().kept_models().unwrap().0.step
}

#[test]
fn playing_posts_every_loss_point_once_at_most_ten_times_a_second() {
    let mut host = fake();
    let mut lead = started(&mut host);
    // The fake clock stands still while steps run, so at full speed a slice would seem to
    // fit any number of steps: a limit of 100 steps/s takes one per 10 ms tick.
    lead.message(&mut host, ToWorker::Speed(Some(100.0)), Vec::new());
    lead.message(&mut host, ToWorker::Play, Vec::new());
    // 60 ticks 10 ms apart: 600 ms of play.
    run_wakes(&mut lead, &mut host, 60, 10.0);
    let played = progresses(&host.posted);
    lead.message(&mut host, ToWorker::Pause, Vec::new());
    let steps = points(&host.posted);
    let step = step_of(&lead);
    assert!((59..=61).contains(&step), "one step a tick, at step {step}");
    assert_eq!(
        steps,
        (1..=step).collect::<Vec<_>>(),
        "each point once, in order"
    );
    // Play's own Progress, then at most one per 100 ms of the 600.
    assert!(
        (2..=8).contains(&played),
        "{played} Progress posts while playing"
    );
    let last = host.posted.iter().rev().find_map(|m| match m {
        FromWorker::Progress { playing, .. } => Some(*playing),
        _ => None,
    });
    assert_eq!(
        last,
        Some(false),
        "Pause lets the held points through, not playing"
    );
    assert!(host.wakes.iter().all(|(w, _)| *w == Wake::Tick));
    // A tick asked for before the Pause takes no step.
    run_wakes(&mut lead, &mut host, 5, 10.0);
    assert_eq!(step_of(&lead), step);
}

#[test]
fn a_speed_limit_takes_the_steps_it_owes_and_no_more() {
    let mut host = fake();
    let mut lead = started(&mut host);
    lead.message(&mut host, ToWorker::Speed(Some(20.0)), Vec::new());
    lead.message(&mut host, ToWorker::Play, Vec::new());
    let (wake, after) = host.wakes[0];
    assert_eq!(
        (wake, after),
        (Wake::Tick, Some(50)),
        "a tick every 1000/20 ms"
    );
    // Two seconds of ticks, each 50 ms after the last.
    run_wakes(&mut lead, &mut host, 40, 50.0);
    let step = step_of(&lead);
    assert!(
        (38..=41).contains(&step),
        "20 steps/s for 2 s took {step} steps"
    );
}

#[test]
fn a_snapshot_comes_about_five_times_a_second_while_playing() {
    let mut host = fake();
    let mut lead = started(&mut host);
    lead.message(&mut host, ToWorker::Speed(Some(100.0)), Vec::new());
    lead.message(&mut host, ToWorker::Play, Vec::new());
    run_wakes(&mut lead, &mut host, 100, 10.0);
    let snapshots = host
        .posted
        .iter()
        .filter(|m| matches!(m, FromWorker::Inspected { .. }))
        .count();
    // 1000 ms of play.
    assert!(
        (4..=6).contains(&snapshots),
        "{snapshots} snapshots in a second"
    );
}

/// The gradient workers' jobs, answered by replicas as the browser's would, in job order.
fn answer_jobs(lead: &mut Lead, host: &mut Fake, replicas: &mut Vec<Replica>) {
    while let Some((index, message, weights)) = host.to_gradients.pop_front() {
        if replicas.len() <= index {
            replicas.resize_with(index + 1, Replica::default);
        }
        match message {
            ToGradientWorker::Replica { id, shape } => replicas[index].build(id, shape),
            ToGradientWorker::Gradients(job) => {
                let weights = weights.expect("a job brings its weights");
                let (losses, grads) = replicas[index]
                    .gradients(job, vec_io(&weights))
                    .expect("the share's gradients");
                lead.answered(host, index, Ok(losses), grads);
            }
            ToGradientWorker::Crash => panic!("not asked to crash"),
        }
    }
}

fn losses(posted: &[FromWorker]) -> Vec<f32> {
    progress_points(posted).iter().map(|p| p.loss).collect()
}

#[test]
fn steps_on_two_workers_match_one_workers_and_messages_wait_for_the_step() {
    let mut alone = fake();
    let mut one = started(&mut alone);
    for _ in 0..4 {
        one.message(&mut alone, ToWorker::Step, Vec::new());
    }

    let mut host = fake();
    let mut two = started(&mut host);
    two.message(
        &mut host,
        ToWorker::Workers(WorkerCount::Fixed(2)),
        Vec::new(),
    );
    assert!(host
        .posted
        .iter()
        .any(|m| matches!(m, FromWorker::Workers(WorkersInUse { using: 2, .. }))));
    let mut replicas = Vec::new();
    for k in 0..4 {
        two.message(&mut host, ToWorker::Step, Vec::new());
        assert_eq!(host.gradient_workers, 1);
        // The step waits for its share: a message meanwhile waits too.
        let before = host.posted.len();
        two.message(&mut host, ToWorker::Pause, Vec::new());
        assert_eq!(
            host.posted.len(),
            before,
            "step {k}: nothing before the answer"
        );
        answer_jobs(&mut two, &mut host, &mut replicas);
        // The step's Progress, then the Pause's.
        let after: Vec<_> = host.posted[before..].iter().collect();
        let first = after
            .iter()
            .position(|m| matches!(m, FromWorker::Progress { .. }));
        assert!(first.is_some(), "step {k}: the step replied");
    }
    let (a, b) = (losses(&alone.posted), losses(&host.posted));
    assert_eq!(a.len(), 4);
    assert_eq!(b.len(), 4);
    for (x, y) in a.iter().zip(&b) {
        assert!(
            (x - y).abs() <= 1e-4 * x.abs().max(1.0),
            "{a:?} against {b:?}"
        );
    }
    // The copy is built once, then only jobs go out.
    assert_eq!(replicas.len(), 1);
}

#[test]
fn a_gradient_worker_that_cannot_start_leaves_training_on_one() {
    let mut host = Fake {
        refuse_workers: true,
        ..fake()
    };
    let mut lead = started(&mut host);
    lead.message(
        &mut host,
        ToWorker::Workers(WorkerCount::Fixed(2)),
        Vec::new(),
    );
    lead.message(&mut host, ToWorker::Step, Vec::new());
    assert_eq!(step_of(&lead), 1, "the step was taken here");
    let why = host.posted.iter().rev().find_map(|m| match m {
        FromWorker::Workers(w) => Some(w.clone()),
        _ => None,
    });
    let why = why.unwrap();
    assert_eq!(why.using, 1);
    assert!(why.why.unwrap().contains("a second worker could not start"));
}

#[test]
fn a_dead_gradient_worker_stops_the_lead_as_its_own_death_would() {
    let mut host = fake();
    let mut lead = started(&mut host);
    lead.message(
        &mut host,
        ToWorker::Workers(WorkerCount::Fixed(2)),
        Vec::new(),
    );
    lead.message(&mut host, ToWorker::Step, Vec::new());
    lead.gradient_worker_died(&mut host, "it trapped".into());
    assert_eq!(host.gradient_workers, 0);
    assert!(matches!(
        host.posted.last(),
        Some(FromWorker::Crashed { message }) if message.contains("a gradient worker stopped: it trapped")
    ));
    // Nothing waits for the dead step: the next message is answered.
    lead.message(
        &mut host,
        ToWorker::Inspect {
            probe: ProbeInput::default(),
            at: None,
        },
        Vec::new(),
    );
    assert!(matches!(
        host.posted.last(),
        Some(FromWorker::Inspected { .. })
    ));
}

#[test]
fn auto_measures_both_sides_then_settles_on_the_faster() {
    let mut host = Fake { cores: 4, ..fake() };
    let mut lead = started(&mut host);
    lead.message(&mut host, ToWorker::Workers(WorkerCount::Auto), Vec::new());
    assert!(matches!(
        host.posted.last(),
        Some(FromWorker::Workers(WorkersInUse { most: 3, why: Some(why), .. })) if why.contains("measuring")
    ));
    // Every step costs the same on either side (each clock read moves it 1 ms): more workers
    // do not gain, so Auto settles on one.
    host.cost_per_read = 1.0;
    let mut replicas = Vec::new();
    lead.message(&mut host, ToWorker::Play, Vec::new());
    for _ in 0..400 {
        if host.wakes.is_empty() && host.to_gradients.is_empty() {
            break;
        }
        answer_jobs(&mut lead, &mut host, &mut replicas);
        run_wakes(&mut lead, &mut host, 1, 1.0);
        let settled = host.posted.iter().any(|m| {
            matches!(m, FromWorker::Workers(WorkersInUse { using: 1, why: Some(why), .. }) if why.contains("too little work to share"))
        });
        if settled {
            assert_eq!(host.gradient_workers, 0, "the gradient workers are ended");
            return;
        }
    }
    panic!(
        "Auto did not settle: {:?}",
        host.posted
            .iter()
            .filter(|m| matches!(m, FromWorker::Workers(_)))
            .collect::<Vec<_>>()
    );
}

/// The reports of the claim worker, delivered to the lead.
fn deliver(lead: &mut Lead, host: &mut Fake, reports: impl IntoIterator<Item = ClaimReport>) {
    for report in reports {
        lead.claim_news(host, FromClaimWorker::Report(report));
    }
}

/// The lead's messages to the claim worker, handled by a real claim worker, without
/// measuring units.
fn deliver_orders(lead: &mut Lead, host: &mut Fake, worker: &mut ClaimWorker) {
    while let Some((message, attachments)) = host.to_claims.pop_front() {
        let reports = worker.handle(message, attachments);
        deliver(lead, host, reports);
    }
}

/// The claim worker's next unit, its report delivered. Its clock moves a millisecond a read, as
/// the fake host's can: a clock that stands still makes every timing repeat its most
/// (`engine::experiments::MAX_REPEATS`), minutes for the Time claim.
fn claim_unit(lead: &mut Lead, host: &mut Fake, worker: &mut ClaimWorker) {
    let clock = Cell::new(0.0);
    let report = worker.unit(&|| {
        clock.set(clock.get() + 1.0);
        clock.get()
    });
    deliver(lead, host, report);
}

/// The claim worker's messages, handled by a real claim worker, its reports delivered back,
/// until it measures nothing.
fn run_claim_worker(lead: &mut Lead, host: &mut Fake, worker: &mut ClaimWorker) {
    loop {
        deliver_orders(lead, host, worker);
        if !worker.measuring() {
            return;
        }
        claim_unit(lead, host, worker);
    }
}

fn reports(posted: &[FromWorker]) -> impl DoubleEndedIterator<Item = &ClaimReport> {
    posted.iter().filter_map(|m| match m {
        FromWorker::Claim(report) => Some(report),
        _ => None,
    })
}

fn claims_done(posted: &[FromWorker]) -> Vec<Claim> {
    reports(posted)
        .filter_map(|r| match r {
            ClaimReport::Done { claim, result } => {
                assert!(result.is_ok(), "{claim:?}: {result:?}");
                Some(*claim)
            }
            _ => None,
        })
        .collect()
}

fn run(claim: Claim) -> ToWorker {
    ToWorker::RunClaim {
        claim,
        probe: ProbeInput::default(),
    }
}

fn starts(message: &ToClaimWorker, claim: Claim) -> bool {
    matches!(message, ToClaimWorker::Order(ClaimOrder::Start { claim: c, .. }) if *c == claim)
}

#[test]
fn claims_take_turns_in_the_claim_worker_while_training_goes_on() {
    let mut host = fake();
    let mut lead = started(&mut host);
    lead.message(&mut host, run(Claim::Leakage), Vec::new());
    lead.message(&mut host, run(Claim::KvCache), Vec::new());
    assert!(host.claim_worker, "the claim worker started");
    assert!(matches!(
        host.posted.last(),
        Some(FromWorker::Claim(ClaimReport::Queued {
            claim: Claim::KvCache
        }))
    ));
    // The first claim's copy and its start went out; the second waits in the lead.
    assert!(matches!(host.to_claims[0].0, ToClaimWorker::Copy { .. }));
    assert!(starts(&host.to_claims[1].0, Claim::Leakage));
    assert_eq!(host.to_claims.len(), 2);
    // Training goes on meanwhile, here.
    lead.message(&mut host, ToWorker::Step, Vec::new());
    assert_eq!(step_of(&lead), 1);
    let mut worker = ClaimWorker::default();
    run_claim_worker(&mut lead, &mut host, &mut worker);
    assert_eq!(
        claims_done(&host.posted),
        vec![Claim::Leakage, Claim::KvCache]
    );
}

/// Runs asked for one after another while one is under way: each waits its turn (the page is
/// told), then runs to its end; none is dropped. The same turns wherever claims run: in the
/// claim worker, or here between slices.
#[test]
fn claims_asked_for_while_one_runs_wait_their_turn_and_all_finish() {
    use Claim::{KvCache, Leakage, Memory, Time};
    for nested in [true, false] {
        // A millisecond a clock read: the Time claim's timings, measured here, repeat a few
        // times rather than their most.
        let (mut host, mut lead, mut worker) = claims_run(
            nested,
            Fake {
                cost_per_read: 1.0,
                ..fake()
            },
        );
        lead.message(&mut host, run(Memory), Vec::new());
        for claim in [Time, KvCache, Leakage] {
            host.posted.clear();
            lead.message(&mut host, run(claim), Vec::new());
            assert_eq!(
                host.posted,
                [FromWorker::Claim(ClaimReport::Queued { claim })],
                "{claim:?} waits its turn"
            );
        }
        // Cancel one that waits: the others keep their turn.
        host.posted.clear();
        let cancel = ToWorker::CancelClaim { claim: Leakage };
        lead.message(&mut host, cancel, Vec::new());
        assert_eq!(
            host.posted,
            [FromWorker::Claim(ClaimReport::Cancelled { claim: Leakage })]
        );
        // Bounded by units, not by time: Memory's 14, Time's 28 and KV cache's one go.
        for _ in 0..100 {
            run_claim_worker(&mut lead, &mut host, &mut worker);
            run_wakes(&mut lead, &mut host, 1, 1.0);
        }
        assert_eq!(host.claim_worker, nested);
        assert_eq!(claims_done(&host.posted), [Memory, Time, KvCache]);
        assert!(host.wakes.is_empty() && !worker.measuring());
    }
}

/// Cancel stops the claim under way, wherever it runs, and the next waiting one starts.
#[test]
fn cancel_stops_the_claim_under_way_and_the_next_starts() {
    for nested in [true, false] {
        let (mut host, mut lead, mut worker) = claims_run(nested, fake());
        // Memory starts (in the claim worker: its first report back), then KV cache waits.
        lead.message(&mut host, run(Claim::Memory), Vec::new());
        deliver_orders(&mut lead, &mut host, &mut worker);
        lead.message(&mut host, run(Claim::KvCache), Vec::new());
        let cancel = ToWorker::CancelClaim {
            claim: Claim::Memory,
        };
        lead.message(&mut host, cancel, Vec::new());
        deliver_orders(&mut lead, &mut host, &mut worker);
        let said: Vec<&ClaimReport> = reports(&host.posted).collect();
        assert!(
            matches!(
                said[..],
                [
                    ClaimReport::Progress {
                        claim: Claim::Memory,
                        done: 0,
                        total: 14
                    },
                    ClaimReport::Queued {
                        claim: Claim::KvCache
                    },
                    ClaimReport::Cancelled {
                        claim: Claim::Memory
                    },
                    ClaimReport::Done {
                        claim: Claim::KvCache,
                        result: Ok(_)
                    },
                ]
            ),
            "{said:?}"
        );
        // A unit asked for before the Cancel (measured here) finds nothing to measure, and
        // asks for no more.
        run_wakes(&mut lead, &mut host, 10, 1.0);
        assert!(!worker.measuring() && host.wakes.is_empty());
    }
}

#[test]
fn a_dead_claim_worker_ends_its_claim_with_why_and_the_next_starts_afresh() {
    let mut host = fake();
    let mut lead = started(&mut host);
    lead.message(&mut host, run(Claim::Leakage), Vec::new());
    lead.message(&mut host, run(Claim::KvCache), Vec::new());
    lead.claim_news(
        &mut host,
        FromClaimWorker::Crashed {
            message: "out of memory".into(),
        },
    );
    let ended = reports(&host.posted).find_map(|r| match r {
        ClaimReport::Done {
            claim: Claim::Leakage,
            result: Err(e),
        } => Some(e.to_string()),
        _ => None,
    });
    assert!(ended
        .unwrap()
        .contains("the claims' worker stopped: out of memory"));
    // The waiting claim started in a new claim worker, with a copy of its own.
    assert!(host.claim_worker);
    assert!(matches!(host.to_claims[0].0, ToClaimWorker::Copy { .. }));
    assert!(starts(&host.to_claims[1].0, Claim::KvCache));
}

#[test]
fn without_nested_workers_claims_run_in_the_lead_between_slices() {
    let mut host = Fake {
        no_nested_workers: true,
        ..fake()
    };
    let mut lead = started(&mut host);
    lead.message(&mut host, run(Claim::Memory), Vec::new());
    assert!(!host.claim_worker);
    assert_eq!(host.wakes.front(), Some(&(Wake::ClaimUnit, None)));
    run_wakes(&mut lead, &mut host, 200, 1.0);
    assert_eq!(claims_done(&host.posted), vec![Claim::Memory]);
}

/// The caption of the Heads claim's heatmap, which names the step it measured, in the last
/// result posted.
fn heads_at(posted: &[FromWorker]) -> Option<String> {
    reports(posted).rev().find_map(|r| match r {
        ClaimReport::Done {
            claim: Claim::Heads,
            result,
        } => Some(
            result
                .as_ref()
                .unwrap()
                .heatmap
                .as_ref()
                .unwrap()
                .caption
                .clone(),
        ),
        _ => None,
    })
}

/// Once it has run, the Heads claim is measured again at each Step and Pause, until the
/// model is replaced; the same whether it ran in the claim worker or here.
#[test]
fn the_heads_claim_follows_steps_and_pauses_until_a_reset() {
    let mut followed = Vec::new();
    for nested in [true, false] {
        let (mut host, mut lead, mut worker) = claims_run(nested, fake());
        lead.message(&mut host, run(Claim::Heads), Vec::new());
        run_claim_worker(&mut lead, &mut host, &mut worker);
        run_wakes(&mut lead, &mut host, 100, 1.0);
        assert_eq!(claims_done(&host.posted), [Claim::Heads]);
        host.posted.clear();
        lead.message(&mut host, ToWorker::Step, Vec::new());
        assert!(heads_at(&host.posted).unwrap().ends_with("(step 1)"));
        let stepped = reports(&host.posted).cloned().collect::<Vec<_>>();
        host.posted.clear();
        lead.message(&mut host, ToWorker::Pause, Vec::new());
        assert!(heads_at(&host.posted).unwrap().ends_with("(step 1)"));
        reset(&mut lead, &mut host, LabSettings::default());
        host.posted.clear();
        lead.message(&mut host, ToWorker::Step, Vec::new());
        assert!(heads_at(&host.posted).is_none());
        followed.push(stepped);
    }
    assert_eq!(followed[0], followed[1], "alike wherever it ran");
}

/// A measurement of the claim that follows training longer than `REMEASURE_PLAYING_MAX_MS`
/// does not end its measurements while playing: the wait before the next doubles each time.
#[test]
fn a_long_remeasurement_while_playing_backs_off_and_goes_on() {
    let mut host = fake();
    let mut lead = started(&mut host);
    lead.message(&mut host, run(Claim::Heads), Vec::new());
    let mut worker = ClaimWorker::default();
    run_claim_worker(&mut lead, &mut host, &mut worker);
    assert_eq!(claims_done(&host.posted), vec![Claim::Heads]);
    host.posted.clear();
    host.posted_at.clear();
    // Every reading of the clock costs 300 ms: a measurement between two readings takes
    // longer than the bar.
    host.cost_per_read = 300.0;
    assert!(host.cost_per_read > REMEASURE_PLAYING_MAX_MS);
    lead.message(&mut host, ToWorker::Play, Vec::new());
    let mut at = Vec::new();
    while at.len() < 5 && host.clock.get() < 600_000.0 {
        run_wakes(&mut lead, &mut host, 1, 0.0);
        for (m, t) in host.posted.drain(..).zip(host.posted_at.drain(..)) {
            if matches!(
                m,
                FromWorker::Claim(ClaimReport::Done {
                    claim: Claim::Heads,
                    ..
                })
            ) {
                at.push(t);
            }
        }
    }
    assert_eq!(at.len(), 5, "measured again at {at:?}");
    let waits: Vec<f64> = at.windows(2).map(|w| w[1] - w[0]).collect();
    // 19 × 300 ms first (the twentieth of the time), then the doubled waits overtake it:
    // 2 s, 4 s, 8 s, 16 s.
    assert!(waits[0] >= 19.0 * 300.0, "{waits:?}");
    assert!(waits.windows(2).all(|w| w[1] >= w[0]), "{waits:?}");
    assert!(
        waits[3] >= 16_000.0 && waits[3] >= 1.8 * waits[1],
        "{waits:?}"
    );
}

/// Length extrapolation trains for minutes: a claim run meanwhile goes first, ends, and
/// extrapolation goes on where it was, in the same claim worker.
#[test]
fn a_claim_run_while_extrapolation_trains_goes_first_and_extrapolation_goes_on() {
    let mut host = fake();
    let mut lead = started(&mut host);
    let mut worker = ClaimWorker::default();
    let progress = |posted: &[FromWorker]| {
        reports(posted)
            .filter_map(|r| match r {
                ClaimReport::Progress {
                    claim: Claim::Extrapolation,
                    done,
                    ..
                } => Some(*done),
                _ => None,
            })
            .max()
    };
    lead.message(&mut host, run(Claim::Extrapolation), Vec::new());
    deliver_orders(&mut lead, &mut host, &mut worker);
    for _ in 0..2 {
        claim_unit(&mut lead, &mut host, &mut worker);
    }
    let before = progress(&host.posted).expect("extrapolation under way");
    assert!(claims_done(&host.posted).is_empty());
    // Asked while it runs, the KV cache goes first and ends at once; extrapolation waited.
    lead.message(&mut host, run(Claim::KvCache), Vec::new());
    deliver_orders(&mut lead, &mut host, &mut worker);
    assert_eq!(claims_done(&host.posted), vec![Claim::KvCache]);
    // A claim measured unit by unit goes first too, and runs to its end before it.
    host.posted.clear();
    lead.message(&mut host, run(Claim::Memory), Vec::new());
    deliver_orders(&mut lead, &mut host, &mut worker);
    assert!(reports(&host.posted).any(|r| *r
        == ClaimReport::Queued {
            claim: Claim::Extrapolation
        }));
    while claims_done(&host.posted).is_empty() {
        claim_unit(&mut lead, &mut host, &mut worker);
        deliver_orders(&mut lead, &mut host, &mut worker);
        assert_eq!(progress(&host.posted), None, "extrapolation waits");
    }
    assert_eq!(claims_done(&host.posted), vec![Claim::Memory]);
    // Then extrapolation goes on from where it was.
    claim_unit(&mut lead, &mut host, &mut worker);
    let after = progress(&host.posted).expect("extrapolation goes on");
    assert!(after > before, "{before} → {after}");
}

#[test]
fn a_keep_lets_the_held_points_through_first_then_says_kept() {
    let mut host = fake();
    let mut lead = started(&mut host);
    lead.message(&mut host, ToWorker::Play, Vec::new());
    // Ticks close together: some points are held back.
    run_wakes(&mut lead, &mut host, 3, 1.0);
    lead.message(&mut host, ToWorker::Keep, Vec::new());
    assert_eq!(host.stored, vec![StoreJob::Keep]);
    let (model, _) = lead.models_to_keep().unwrap();
    let plan = lead.history_to_keep().unwrap();
    assert_eq!(
        plan.new_entries.len(),
        plan.index.steps.len(),
        "nothing written yet"
    );
    let written = Ok((model.step, Some((plan.generation, plan.index))));
    host.posted.clear();
    lead.kept(&mut host, written);
    let step = step_of(&lead);
    assert!(matches!(host.posted.last(), Some(FromWorker::Kept { step: s }) if *s == model.step));
    assert_eq!(
        points(&host.posted).last().copied(),
        Some(step),
        "the points up to the kept step came first"
    );
    // The entries written are not written again.
    assert!(lead.history_to_keep().unwrap().new_entries.is_empty());
}

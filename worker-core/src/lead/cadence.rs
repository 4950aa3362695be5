//! The page's cadences: training in time slices, at most ~`SLICE_MS` of steps per wake-up,
//! then the lead asks to be woken again (`Wake::Tick`), so Pause/Step/Inspect messages get
//! through between slices; loss points, snapshots and the Batch view held back to what the page
//! can take.

use super::{Host, Lead};
use crate::session::Reply;
use engine::batch_view::BatchView;
use protocol::FromWorker;

const SLICE_MS: f64 = 30.0;
/// Snapshots of the probe while playing: about five a second.
const SNAPSHOT_MS: f64 = 200.0;
/// Loss points go to the page at most ten times a second: each post redraws the curves.
const PROGRESS_MS: f64 = 100.0;
/// The Batch view's batch while playing, at most this often: each costs a forward pass here
/// and a redraw of its rows on the page, and one a third of a second is more than the eye
/// reads. Paused, every Progress carries it (Step's included).
const BATCH_MS: f64 = 350.0;
/// ... and at most a tenth of the time: that forward pass is the whole batch's, on this
/// worker alone (a third of a step), which for the small preset at batch 32 came every step.
const BATCH_SHARE: f64 = 0.1;

/// Training in slices, and the replies held to the page's cadences.
impl Lead {
    pub(super) fn tick(&mut self, host: &mut impl Host) {
        // A Pause (or Step) that came after this tick was asked for: no more steps.
        if !self.session.playing() || self.shared.is_some() {
            return;
        }
        if self.workers_now() > 1 {
            self.begin_shared(host, false);
            return;
        }
        let started = host.now();
        let steps = self.steps_due(started);
        let replies = self.session.train(steps);
        let ms_per_step = (host.now() - started).max(0.001) / steps as f64;
        self.measured(host, 1, steps, ms_per_step);
        self.report_steps(host, replies, ms_per_step, false);
    }

    /// As many steps as fit in a slice, or as the speed limit allows since the last tick.
    fn steps_due(&mut self, now_ms: f64) -> usize {
        let fit = (SLICE_MS / self.ms_per_step).floor().max(1.0);
        match self.session.speed {
            None => fit as usize,
            Some(sps) => {
                let owed = self.owed + sps * (now_ms - self.last_tick).max(0.0) / 1000.0;
                let steps = owed.floor().clamp(1.0, fit);
                self.owed = (owed - steps).max(0.0);
                steps as usize
            }
        }
    }

    /// After steps: the speed they went at, and the snapshot and the Heads claim when due
    /// (always after a single Step, as `Session::handle` does for one worker).
    pub(super) fn report_steps(
        &mut self,
        host: &mut impl Host,
        mut replies: Vec<Reply>,
        ms_per_step: f64,
        single: bool,
    ) {
        self.ms_per_step = 0.8 * self.ms_per_step + 0.2 * ms_per_step;
        if let Some(FromWorker::Progress {
            steps_per_second, ..
        }) = replies.first_mut().map(|r| &mut r.message)
        {
            *steps_per_second = if single {
                0.0
            } else {
                1000.0 / self.ms_per_step
            };
        }
        replies.extend(self.views_due(host, single));
        self.post_all(host, replies);
        self.schedule(host);
    }

    /// The snapshot and the claim that follows training measured again, when due.
    pub(super) fn views_due(&mut self, host: &mut impl Host, single: bool) -> Vec<Reply> {
        let mut replies = Vec::new();
        let s = &self.session;
        if single || host.now() - self.last_snapshot >= SNAPSHOT_MS || !s.playing() {
            self.last_snapshot = host.now();
            replies.push(s.snapshot());
        }
        replies.extend(match single {
            true => self.claims.measured_again(s),
            false => self.claims.measured_again_when_due(host, s),
        });
        replies
    }

    /// Replies to the page, Progress held back to its cadence (`hold_progress`).
    pub(super) fn post_all(&mut self, host: &mut impl Host, replies: Vec<Reply>) {
        for reply in replies {
            for r in self.hold_progress(host, reply) {
                host.post(r);
            }
        }
    }

    /// Progress replies are merged and let through at most every `PROGRESS_MS`, and always
    /// once play has stopped; other replies pass at once. `Kept` first lets the held points
    /// through, so the page has the curves up to the kept step when it keeps them.
    fn hold_progress(&mut self, host: &mut impl Host, reply: Reply) -> Vec<Reply> {
        let FromWorker::Progress {
            points,
            points_b,
            steps_per_second,
            playing,
            ..
        } = reply.message
        else {
            let held =
                matches!(reply.message, FromWorker::Kept { .. }) && !self.unsent.0.is_empty();
            if held {
                let playing = self.session.playing();
                return vec![self.release_progress(host, 0.0, playing), reply];
            }
            return vec![reply];
        };
        self.unsent.0.extend(points);
        self.unsent.1.extend(points_b);
        if playing && host.now() - self.last_progress < PROGRESS_MS {
            return Vec::new();
        }
        vec![self.release_progress(host, steps_per_second, playing)]
    }

    /// The held loss points as one Progress reply (a steps/s of 0 leaves the page's figure as
    /// is), with the masking counts as they are now, and the latest batch when `BATCH_MS` have
    /// passed since the last one (and nine times what it cost) or play has stopped.
    pub(super) fn release_progress(
        &mut self,
        host: &impl Host,
        steps_per_second: f64,
        playing: bool,
    ) -> Reply {
        let at = host.now();
        self.last_progress = at;
        let batch = match self.batch_made.take() {
            // Paused: the batch of the step it stopped on.
            _ if !playing => Some(self.batch_view(host)),
            Some(made) => Some(made),
            None if self.batch_due(at) => Some(self.batch_view(host)),
            None => None,
        };
        let (points, points_b) = std::mem::take(&mut self.unsent);
        let mut reply = self.session.progress(points, points_b, steps_per_second);
        if let FromWorker::Progress {
            playing: p,
            batch: carried,
            ..
        } = &mut reply.message
        {
            *p = playing;
            if let Some(view) = batch {
                *carried = view;
            }
        }
        reply
    }

    /// A Batch view is due while playing: `BATCH_MS` have passed since the last one, and nine
    /// times what it cost.
    pub(super) fn batch_due(&self, at: f64) -> bool {
        let wait = BATCH_MS.max(self.batch_cost * (1.0 - BATCH_SHARE) / BATCH_SHARE);
        at - self.last_batch >= wait
    }

    pub(super) fn batch_view(&mut self, host: &impl Host) -> Option<BatchView> {
        let at = host.now();
        let view = self.session.batch_view();
        self.last_batch = host.now();
        self.batch_cost = host.now() - at;
        view
    }

    /// The same workload and timing loop as the native `bench_step` example, for WASM/native
    /// ratios.
    pub(super) fn bench(&self, host: &impl Host, iters: usize, warmup: usize) -> Reply {
        let results = engine::workload::presets()
            .iter()
            .map(|p| {
                let ms = engine::workload::median_step_ms(p, iters, warmup, || host.now());
                (p.name.to_string(), ms)
            })
            .collect();
        FromWorker::Bench { results }.into()
    }
}

//! How many workers train: the Workers setting, and for Auto a measurement of whether more
//! workers step faster than one (`AutoMeasurement`); the page is told which, and why not more.

use super::{Host, Lead};
use protocol::workers::{AutoMeasurement, Measured, WorkerCount, WorkersInUse};
use protocol::FromWorker;

/// How many workers train now, and why not more.
pub(super) enum Choice {
    Settled(WorkersInUse),
    /// Auto, with more than one worker possible: measuring whether they gain.
    Measuring(AutoMeasurement),
}

/// How many workers train.
impl Lead {
    /// Decide afresh how many workers train, from the setting (and for Auto, a measurement).
    pub(super) fn choose_workers(&mut self, host: &mut impl Host) {
        let cores = host.cores();
        let most = self.workers.most(cores);
        self.choice = match self.workers {
            _ if most > 1 && !host.nested_workers() => Choice::Settled(WorkersInUse {
                using: 1,
                most,
                why: Some("this browser cannot start workers from a worker".into()),
            }),
            WorkerCount::Fixed(n) => Choice::Settled(WorkersInUse {
                using: n,
                most: n,
                why: None,
            }),
            WorkerCount::Auto if most == 1 => Choice::Settled(WorkersInUse {
                using: 1,
                most: 1,
                why: Some(format!(
                    "this device has {cores} core{}, and one is left for the page",
                    if cores == 1 { "" } else { "s" }
                )),
            }),
            WorkerCount::Auto => Choice::Measuring(AutoMeasurement::new(most)),
        };
        if self.workers_now() == 1 {
            self.clear_gradient_workers(host);
        }
        host.post(FromWorker::Workers(self.in_use()).into());
    }

    pub(super) fn settle(&mut self, host: &mut impl Host, using: usize, why: Option<String>) {
        let most = match &self.choice {
            Choice::Settled(w) => w.most,
            Choice::Measuring(m) => m.most,
        };
        self.choice = Choice::Settled(WorkersInUse { using, most, why });
        if using == 1 {
            self.clear_gradient_workers(host);
        }
        host.post(FromWorker::Workers(self.in_use()).into());
    }

    pub(super) fn workers_now(&self) -> usize {
        match &self.choice {
            Choice::Settled(w) => w.using,
            Choice::Measuring(m) => m.workers(),
        }
    }

    fn in_use(&self) -> WorkersInUse {
        match &self.choice {
            Choice::Settled(w) => w.clone(),
            Choice::Measuring(m) => WorkersInUse {
                using: m.workers(),
                most: m.most,
                why: Some(format!(
                    "measuring whether {} workers step faster than one",
                    m.most
                )),
            },
        }
    }

    /// `steps` steps on `workers` workers took `ms_per_step` each: a sample for Auto's
    /// measurement, which settles once it has all its rounds.
    pub(super) fn measured(
        &mut self,
        host: &mut impl Host,
        workers: usize,
        steps: usize,
        ms_per_step: f64,
    ) {
        let (before, found, most) = match &mut self.choice {
            Choice::Measuring(m) => (m.workers(), m.record(workers, steps, ms_per_step), m.most),
            Choice::Settled(w) => (w.using, None, w.most),
        };
        match found {
            Some(Measured {
                using,
                one_ms,
                many_ms,
            }) => {
                let why = (using == 1).then(|| {
                    format!(
                        "at batch {}, a step took {one_ms:.1} ms on one worker and {many_ms:.1} ms on {most}: too little work to share",
                        self.session.batch_size()
                    )
                });
                self.settle(host, using, why);
            }
            // The measurement moved to the other side: the header says so.
            None if self.workers_now() != before => {
                host.post(FromWorker::Workers(self.in_use()).into())
            }
            None => {}
        }
    }
}

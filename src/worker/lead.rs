//! The lead's glue: `worker_core::lead::Lead` and the browser around it (`Web`, its `Host`):
//! the page's packets in, replies posted, wake-ups as tasks and timers, the gradient workers
//! and the claim worker as child workers, and the browser's store.

use super::child::Child;
use super::pool::{Listeners, Pool};
use super::{crash, now, post, read};
use crate::storage;
use crate::tasks::{after_ms, next_task};
use protocol::{
    Crash, FromClaimWorker, FromWorker, LabResult, Role, ToClaimWorker, ToGradientWorker, ToWorker,
};
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::{Rc, Weak};
use wasm_bindgen::prelude::*;
use worker_core::lead::{Host, Lead, StoreJob, Wake};
use worker_core::replica::Param;
use worker_core::session::Reply;

/// The lead and the browser around it, owned by the callbacks that reach them, and the events
/// that came while they were busy.
struct Shared {
    state: RefCell<State>,
    waiting: RefCell<VecDeque<Event>>,
    /// Work on the browser's store, waiting its turn, and whether it is under way.
    store_jobs: RefCell<VecDeque<StoreJob>>,
    storing: Cell<bool>,
}

struct State {
    lead: Lead,
    web: Web,
}

/// What a browser event does to the lead.
type Event = Box<dyn FnOnce(&mut Lead, &mut Web)>;

/// The browser, as the lead's `Host`.
struct Web {
    /// The state this is part of, for the callbacks it hands out.
    me: Weak<Shared>,
    gradient_workers: Pool,
    claim_worker: Option<Child>,
    /// How a test asked the lead to die: done once the lead is no longer borrowed, as the
    /// message's last act.
    dying: Option<Crash>,
}

/// Run the event `f` on the lead and its host, then die if the lead asked to (`Host::die`: a
/// test).
///
/// The state is borrowed only here. An event that comes while it is borrowed waits, and runs
/// as soon as the one under way ends, in the order they came: a browser may run a worker's
/// events inside a call that looks synchronous (in Firefox the lead stalled, some of the time,
/// as it started the claim worker, until such events waited instead of being dropped), and an
/// event lost there (a wake-up, an answer) would stop the lead for good. A borrow that is never
/// released means a panic trapped inside one (`panic = "abort"` leaves no unwinding to release
/// it): the worker is dead, its first panic was reported, and what still comes waits forever
/// rather than being reported as a second death.
fn with(shared: &Weak<Shared>, f: impl FnOnce(&mut Lead, &mut Web) + 'static) {
    let Some(shared) = shared.upgrade() else {
        return;
    };
    let Ok(mut guard) = shared.state.try_borrow_mut() else {
        shared.waiting.borrow_mut().push_back(Box::new(f));
        return;
    };
    let State { lead, web } = &mut *guard;
    let mut next: Option<Event> = Some(Box::new(f));
    while let Some(event) = next {
        event(lead, web);
        if let Some(how) = web.dying.take() {
            drop(guard);
            crash(how);
            return;
        }
        next = shared.waiting.borrow_mut().pop_front();
    }
}

/// What the lead does with each packet from the page.
pub fn start() -> impl FnMut(JsValue) {
    let shared = Rc::new_cyclic(|me: &Weak<Shared>| Shared {
        state: RefCell::new(State {
            lead: Lead::default(),
            web: Web {
                me: me.clone(),
                gradient_workers: Pool::default(),
                claim_worker: None,
                dying: None,
            },
        }),
        waiting: RefCell::default(),
        store_jobs: RefCell::default(),
        storing: Cell::new(false),
    });
    with(&Rc::downgrade(&shared), |lead, web| {
        *lead = Lead::start(web)
    });
    // The page's packets hold the state alive.
    move |data: JsValue| {
        with(&Rc::downgrade(&shared), move |lead, web| {
            match read::<ToWorker>(&data) {
                Ok((message, attachments)) => lead.message(web, message, attachments),
                Err(e) => web.post(FromWorker::Failed(e).into()),
            }
        })
    }
}

impl Host for Web {
    fn now(&self) -> f64 {
        now()
    }

    fn post(&mut self, reply: Reply) {
        post(&reply.message, &reply.attachments);
    }

    fn wake(&mut self, wake: Wake, after: Option<u32>) {
        let me = self.me.clone();
        let run = move || with(&me, move |lead, web| lead.wake(web, wake));
        match after {
            None => next_task(run),
            Some(ms) => after_ms(Closure::once_into_js(run), ms as i32),
        }
    }

    fn store(&mut self, job: StoreJob) {
        let Some(shared) = self.me.upgrade() else {
            return;
        };
        let mut jobs = shared.store_jobs.borrow_mut();
        if !jobs.contains(&job) {
            jobs.push_back(job);
        }
        if !shared.storing.replace(true) {
            wasm_bindgen_futures::spawn_local(run_store(self.me.clone()));
        }
    }

    fn cores(&self) -> usize {
        js_sys::Reflect::get(&super::scope(), &"navigator".into())
            .and_then(|navigator| js_sys::Reflect::get(&navigator, &"hardwareConcurrency".into()))
            .ok()
            .and_then(|n| n.as_f64())
            .map_or(1, |n| n as usize)
            .max(1)
    }

    fn nested_workers(&self) -> bool {
        js_sys::Reflect::has(&super::scope(), &"Worker".into()).unwrap_or(false)
    }

    fn gradient_workers(&mut self, count: usize) -> LabResult<()> {
        let (answer, death) = (self.me.clone(), self.me.clone());
        let listeners = Listeners {
            answer: Rc::new(move |index, result, grads| {
                with(&answer, move |lead, web| {
                    lead.answered(web, index, result, grads)
                })
            }),
            death: Rc::new(move |why| {
                with(&death, |lead, web| lead.gradient_worker_died(web, why))
            }),
        };
        self.gradient_workers.resize(count, &listeners)
    }

    fn to_gradient_worker(
        &mut self,
        index: usize,
        message: &ToGradientWorker,
        weights: Option<&[Param<'_>]>,
    ) -> LabResult<()> {
        self.gradient_workers.send(index, message, weights)
    }

    fn to_claim_worker(
        &mut self,
        message: &ToClaimWorker,
        attachments: &[Vec<u8>],
    ) -> LabResult<()> {
        if self.claim_worker.is_none() {
            let (news, death) = (self.me.clone(), self.me.clone());
            self.claim_worker = Some(Child::spawn(
                Role::Claims,
                move |said: FromClaimWorker, _, _| {
                    with(&news, |lead, web| lead.claim_news(web, said))
                },
                Rc::new(move |why: String| {
                    with(&death, move |lead, web| lead.claim_worker_died(web, &why))
                }),
            )?);
        }
        let attachments: Vec<&[u8]> = attachments.iter().map(Vec::as_slice).collect();
        match &self.claim_worker {
            Some(child) => child.send(message, &attachments),
            None => Ok(()),
        }
    }

    fn end_claim_worker(&mut self) {
        if let Some(child) = self.claim_worker.take() {
            child.end();
        }
    }

    fn die(&mut self, how: Crash) {
        self.dying = Some(how);
    }
}

/// The store's jobs, one at a time and in order. Here rather than on the page: the small
/// preset with its Adam moments is ~40 MB, and copying that on the page's main thread took
/// 70–110 ms every few seconds. A keep asked for while one waits is the same keep, of the model
/// as it is when its turn comes.
async fn run_store(me: Weak<Shared>) {
    loop {
        let Some(shared) = me.upgrade() else { return };
        let job = shared.store_jobs.borrow_mut().pop_front();
        if job.is_none() {
            shared.storing.set(false);
        }
        drop(shared);
        match job {
            Some(StoreJob::Keep) => keep(&me).await,
            Some(StoreJob::RestoreHistory { generation }) => {
                if let Some((index, entries)) = storage::load_history().await {
                    with(&me, move |lead, web| {
                        lead.history_read(web, generation, &index, entries)
                    });
                }
            }
            None => break,
        }
    }
}

/// What `f` reads of the lead, between events (a task's microtasks run after it, so the lead
/// is free; None only if it is not).
fn read_lead<T>(me: &Weak<Shared>, f: impl FnOnce(&Lead) -> T) -> Option<T> {
    let shared = me.upgrade()?;
    let state = shared.state.try_borrow().ok()?;
    Some(f(&state.lead))
}

/// Write the current model, then the History entries not written yet, then tell the page.
async fn keep(me: &Weak<Shared>) {
    let Some(models) = read_lead(me, Lead::models_to_keep) else {
        return;
    };
    let written = match models {
        Ok((model, model_b)) => match storage::save_model(&model, model_b.as_ref()).await {
            Ok(()) => match read_lead(me, Lead::history_to_keep).flatten() {
                Some(plan) => storage::save_history(&plan.index, &plan.new_entries)
                    .await
                    .map(|()| (model.step, Some((plan.generation, plan.index)))),
                None => Ok((model.step, None)),
            },
            Err(e) => Err(e),
        },
        Err(e) => Err(e),
    };
    with(me, move |lead, web| lead.kept(web, written));
}

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
use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::{Rc, Weak};
use wasm_bindgen::prelude::*;
use worker_core::lead::{Host, Lead, StoreJob, Wake};
use worker_core::replica::Param;
use worker_core::session::Reply;

/// The lead and the browser around it, owned by the callbacks that reach them.
struct State {
    lead: Lead,
    web: Web,
}

/// The browser, as the lead's `Host`.
struct Web {
    /// The state this is part of, for the callbacks it hands out.
    me: Weak<RefCell<State>>,
    gradient_workers: Pool,
    claim_worker: Option<Child>,
    /// Work on the browser's store, waiting its turn, and whether it is under way.
    store_jobs: VecDeque<StoreJob>,
    storing: bool,
    /// How a test asked the lead to die: done once the lead is no longer borrowed, as the
    /// message's last act.
    dying: Option<Crash>,
}

/// Run `f` on the lead and its host, then die if the lead asked to (`Host::die`: a test).
///
/// The state is borrowed only here, and nothing here waits, so a borrow that is still held
/// means a panic trapped inside one (`panic = "abort"` leaves no unwinding to release it): the
/// worker is dead, its first panic was reported, and the timers and messages that still come
/// are ignored rather than reported as a second death.
fn with(state: &Weak<RefCell<State>>, f: impl FnOnce(&mut Lead, &mut Web)) {
    let Some(state) = state.upgrade() else { return };
    let Ok(mut guard) = state.try_borrow_mut() else {
        return;
    };
    let State { lead, web } = &mut *guard;
    f(lead, web);
    let dying = web.dying.take();
    drop(guard);
    if let Some(how) = dying {
        crash(how);
    }
}

/// What the lead does with each packet from the page.
pub fn start() -> impl FnMut(JsValue) {
    let state = Rc::new_cyclic(|me: &Weak<RefCell<State>>| {
        RefCell::new(State {
            lead: Lead::default(),
            web: Web {
                me: me.clone(),
                gradient_workers: Pool::default(),
                claim_worker: None,
                store_jobs: VecDeque::new(),
                storing: false,
                dying: None,
            },
        })
    });
    let me = Rc::downgrade(&state);
    with(&me, |lead, web| *lead = Lead::start(web));
    // The page's packets hold the state alive.
    move |data: JsValue| {
        with(&Rc::downgrade(&state), |lead, web| {
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
        let run = move || with(&me, |lead, web| lead.wake(web, wake));
        match after {
            None => next_task(run),
            Some(ms) => after_ms(Closure::once_into_js(run), ms as i32),
        }
    }

    fn store(&mut self, job: StoreJob) {
        if !self.store_jobs.contains(&job) {
            self.store_jobs.push_back(job);
        }
        if std::mem::replace(&mut self.storing, true) {
            return;
        }
        wasm_bindgen_futures::spawn_local(run_store(self.me.clone()));
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
                with(&answer, |lead, web| {
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
                    with(&death, |lead, web| lead.claim_worker_died(web, &why))
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
async fn run_store(me: Weak<RefCell<State>>) {
    loop {
        let Some(state) = me.upgrade() else { return };
        let job = state.borrow_mut().web.store_jobs.pop_front();
        drop(state);
        match job {
            Some(StoreJob::Keep) => keep(&me).await,
            Some(StoreJob::RestoreHistory { generation }) => {
                if let Some((index, entries)) = storage::load_history().await {
                    with(&me, |lead, web| {
                        lead.history_read(web, generation, &index, entries)
                    });
                }
            }
            None => break,
        }
    }
    with(&me, |_, web| web.storing = false);
}

/// Write the current model, then the History entries not written yet, then tell the page.
async fn keep(me: &Weak<RefCell<State>>) {
    let read = |f: &dyn Fn(&Lead) -> _| me.upgrade().map(|s| f(&s.borrow().lead));
    let Some(models) = read(&|lead: &Lead| lead.models_to_keep()) else {
        return;
    };
    let written = match models {
        Ok((model, model_b)) => match storage::save_model(&model, model_b.as_ref()).await {
            Ok(()) => match me.upgrade().and_then(|s| s.borrow().lead.history_to_keep()) {
                Some(plan) => storage::save_history(&plan.index, &plan.new_entries)
                    .await
                    .map(|()| (model.step, Some((plan.generation, plan.index)))),
                None => Ok((model.step, None)),
            },
            Err(e) => Err(e),
        },
        Err(e) => Err(e),
    };
    with(me, |lead, web| lead.kept(web, written));
}

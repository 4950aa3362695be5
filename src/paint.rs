//! Canvas drawing, spread over tasks. A snapshot changes every figure on the page at once, and
//! drawn in the task that received it, that one task ran past 50 ms on a busy machine: the page
//! could not answer a click meanwhile. So effects do not draw; they hand a draw to their
//! canvas's `PaintSlot`, and a queue runs the draws in macrotasks of their own, about
//! `BUDGET_MS` of drawing each. A newer draw for a canvas replaces one still waiting.
//!
//! Draws run after the effect that queued them, possibly after its component is gone: they read
//! signals with `try_` methods.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::MessageChannel;

/// Drawing per task before the queue yields to the browser (input, rendering, messages).
const BUDGET_MS: f64 = 8.0;

type Draw = Box<dyn FnOnce()>;

thread_local! {
    static QUEUE: RefCell<VecDeque<(u64, Draw)>> = RefCell::default();
    static NEXT_SLOT: Cell<u64> = const { Cell::new(0) };
    static WAKING: Cell<bool> = const { Cell::new(false) };
    /// A message to oneself is a new task without `setTimeout`'s 4 ms clamp.
    static CHANNEL: Option<MessageChannel> = wake_channel();
}

/// One canvas's place in the paint queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PaintSlot(u64);

impl PaintSlot {
    #[allow(clippy::new_without_default)]
    pub fn new() -> PaintSlot {
        let id = NEXT_SLOT.get();
        NEXT_SLOT.set(id + 1);
        PaintSlot(id)
    }

    /// Run `draw` soon, in a later task. It replaces this slot's draw if that has not run yet,
    /// and keeps its place in the queue.
    pub fn paint(self, draw: impl FnOnce() + 'static) {
        QUEUE.with_borrow_mut(
            |queue| match queue.iter_mut().find(|(slot, _)| *slot == self.0) {
                Some(waiting) => waiting.1 = Box::new(draw),
                None => queue.push_back((self.0, Box::new(draw))),
            },
        );
        wake();
    }
}

/// Draws still waiting (tests wait for 0).
pub fn pending() -> usize {
    QUEUE.with_borrow(VecDeque::len)
}

fn wake() {
    if WAKING.replace(true) {
        return;
    }
    let posted = CHANNEL.with(|c| c.as_ref().map(|c| c.port1().post_message(&JsValue::NULL)));
    if !matches!(posted, Some(Ok(()))) {
        // No channel (it could not be made): draw now rather than never.
        WAKING.set(false);
        run_for(f64::INFINITY);
    }
}

fn wake_channel() -> Option<MessageChannel> {
    let channel = MessageChannel::new().ok()?;
    let on_message = Closure::<dyn FnMut()>::new(|| {
        WAKING.set(false);
        run_for(BUDGET_MS);
    });
    channel
        .port2()
        .set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    // Lives as long as the page, like the channel.
    on_message.forget();
    Some(channel)
}

/// Draw from the front of the queue until `budget_ms` have passed; wake again for the rest.
fn run_for(budget_ms: f64) {
    let start = now();
    while let Some((_, draw)) = QUEUE.with_borrow_mut(VecDeque::pop_front) {
        draw();
        if now() - start >= budget_ms {
            break;
        }
    }
    if pending() > 0 {
        wake();
    }
}

fn now() -> f64 {
    web_sys::window()
        .and_then(|w| w.performance())
        .map_or_else(js_sys::Date::now, |p| p.now())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::tick;
    use std::rc::Rc;
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    async fn draws_run_later_once_per_slot_in_order() {
        let log: Rc<RefCell<Vec<&str>>> = Rc::default();
        let (a, b) = (PaintSlot::new(), PaintSlot::new());
        let push = |s: &'static str| {
            let log = log.clone();
            move || log.borrow_mut().push(s)
        };
        a.paint(push("a1"));
        b.paint(push("b"));
        a.paint(push("a2"));
        assert!(
            log.borrow().is_empty(),
            "nothing is drawn in the caller's task"
        );
        tick(20).await;
        assert_eq!(*log.borrow(), ["a2", "b"], "a2 replaced a1 in a1's place");
        assert_eq!(pending(), 0);
    }

    #[test]
    async fn a_long_queue_yields_between_tasks() {
        let ran = Rc::new(Cell::new(0));
        for _ in 0..6 {
            let ran = ran.clone();
            PaintSlot::new().paint(move || {
                let start = now();
                while now() - start < 5.0 {}
                ran.set(ran.get() + 1);
            });
        }
        // A message to oneself runs after the current task, before a 0 ms timer at the latest.
        let first = Rc::new(Cell::new(0));
        let seen = first.clone();
        let ran_now = ran.clone();
        let probe = Closure::once_into_js(move || seen.set(ran_now.get()));
        let port = MessageChannel::new().unwrap();
        port.port2().set_onmessage(Some(probe.unchecked_ref()));
        port.port1().post_message(&JsValue::NULL).unwrap();
        tick(100).await;
        assert_eq!(ran.get(), 6, "every draw ran");
        assert!(
            first.get() < 6,
            "all six 5 ms draws ran in one task ({} before another task got in)",
            first.get()
        );
    }
}

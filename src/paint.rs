//! Canvas drawing, spread over tasks. A snapshot changes every figure on the page at once, and
//! drawn in the task that received it, that one task ran past 50 ms on a busy machine: the page
//! could not answer a click meanwhile. So effects do not draw; they hand a draw to their
//! canvas's `PaintSlot`, and a queue runs the draws in macrotasks of their own, about
//! `BUDGET_MS` of drawing each. A newer draw for a canvas replaces one still waiting.
//!
//! Only figures in view are kept up to date. A canvas is drawn the first time at once, wherever
//! it is; after that, while an IntersectionObserver says it is out of view (farther than
//! `AHEAD` from the viewport, or inside a hidden panel), its latest draw is held, and it runs
//! when the canvas comes near, or the page is printed. While training, snapshots arrive five
//! times a second and most of the explorer's figures are below the fold.
//!
//! Draws run after the effect that queued them, possibly after its component is gone: they read
//! signals with `try_` methods.

use leptos::prelude::on_cleanup;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{Element, IntersectionObserver, IntersectionObserverEntry, IntersectionObserverInit};

/// Drawing per task before the queue yields to the browser (input, rendering, messages).
const BUDGET_MS: f64 = 8.0;

/// How near the viewport a canvas counts as in view (the observer's root margin): half a
/// screen above and below, so a figure is redrawn before scrolling brings it in.
const AHEAD: &str = "50% 0px";

type Draw = Box<dyn FnOnce()>;

thread_local! {
    static QUEUE: RefCell<VecDeque<(u64, Draw)>> = RefCell::default();
    static NEXT_SLOT: Cell<u64> = const { Cell::new(0) };
    static WAKING: Cell<bool> = const { Cell::new(false) };
    static WATCHED: RefCell<Vec<Watched>> = RefCell::default();
    static OBSERVER: Option<IntersectionObserver> = visibility_observer();
}

/// A slot's canvas, whether it is in view, and the draw held while it is not.
struct Watched {
    slot: u64,
    canvas: Element,
    in_view: bool,
    held: Option<Draw>,
}

/// One canvas's place in the paint queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PaintSlot(u64);

impl PaintSlot {
    /// A slot for one canvas. Inside a component, the slot stops watching its canvas when the
    /// component is gone.
    #[allow(clippy::new_without_default)]
    pub fn new() -> PaintSlot {
        let id = NEXT_SLOT.get();
        NEXT_SLOT.set(id + 1);
        on_cleanup(move || forget(id));
        PaintSlot(id)
    }

    /// Draw on `canvas` soon, in a later task; or, if the canvas has been drawn before and is
    /// out of view now, when it comes into view. `draw` replaces this slot's draw if that has
    /// not run yet, and keeps its place in the queue.
    pub fn paint(self, canvas: &Element, draw: impl FnOnce() + 'static) {
        self.watch(canvas);
        let draw_now = WATCHED.with_borrow_mut(|watched| {
            match watched.iter_mut().find(|w| w.slot == self.0) {
                Some(w) if !w.in_view => {
                    w.held = Some(Box::new(draw));
                    None
                }
                _ => Some(Box::new(draw)),
            }
        });
        if let Some(draw) = draw_now {
            enqueue(self.0, draw);
        }
    }

    /// Start watching `canvas` unless this slot already does. A canvas new to the slot counts
    /// as in view: the observer has not said where it is yet, and every figure shows something
    /// from the start.
    fn watch(self, canvas: &Element) {
        // None: already watched. Some(old): watched from now on, in place of `old` if any.
        let started: Option<Option<Element>> = WATCHED.with_borrow_mut(|watched| {
            let fresh = || Watched {
                slot: self.0,
                canvas: canvas.clone(),
                in_view: true,
                held: None,
            };
            match watched.iter_mut().find(|w| w.slot == self.0) {
                Some(w) if w.canvas == *canvas => None,
                // The component made a new canvas: watch that one instead.
                Some(w) => Some(Some(std::mem::replace(w, fresh()).canvas)),
                None => {
                    watched.push(fresh());
                    Some(None)
                }
            }
        });
        let Some(replaced) = started else { return };
        OBSERVER.with(|observer| {
            if let Some(observer) = observer {
                if let Some(old) = &replaced {
                    observer.unobserve(old);
                }
                observer.observe(canvas);
            }
        });
    }
}

fn enqueue(slot: u64, draw: Draw) {
    QUEUE.with_borrow_mut(|queue| match queue.iter_mut().find(|(s, _)| *s == slot) {
        Some(waiting) => waiting.1 = draw,
        None => queue.push_back((slot, draw)),
    });
    wake();
}

/// The observer's news of a canvas: into view, its held draw is queued.
fn seen(canvas: &Element, in_view: bool) {
    let released = WATCHED.with_borrow_mut(|watched| {
        let w = watched.iter_mut().find(|w| w.canvas == *canvas)?;
        w.in_view = in_view;
        let draw = if in_view { w.held.take() } else { None };
        draw.map(|draw| (w.slot, draw))
    });
    if let Some((slot, draw)) = released {
        enqueue(slot, draw);
    }
}

/// The slot's component is gone: stop watching its canvas.
fn forget(slot: u64) {
    let gone = WATCHED.with_borrow_mut(|watched| {
        let at = watched.iter().position(|w| w.slot == slot)?;
        Some(watched.swap_remove(at).canvas)
    });
    if let Some(canvas) = gone {
        OBSERVER.with(|o| o.as_ref().map(|o| o.unobserve(&canvas)));
    }
}

/// Without an observer (it could not be made), every canvas counts as in view.
fn visibility_observer() -> Option<IntersectionObserver> {
    let on_change = Closure::<dyn FnMut(js_sys::Array)>::new(|entries: js_sys::Array| {
        for entry in entries.iter() {
            let entry: IntersectionObserverEntry = entry.unchecked_into();
            seen(&entry.target(), entry.is_intersecting());
        }
    });
    let options = IntersectionObserverInit::new();
    options.set_root_margin(AHEAD);
    let observer =
        IntersectionObserver::new_with_options(on_change.as_ref().unchecked_ref(), &options).ok();
    // Lives as long as the page, like the observer.
    on_change.forget();
    // Draws are held only where there is an observer: only then has printing any to release.
    if observer.is_some() {
        before_print(draw_everything);
    }
    observer
}

/// Run `f` each time the page is about to be laid out for print.
fn before_print(f: fn()) {
    let listener = Closure::<dyn FnMut()>::new(f);
    if let Some(window) = web_sys::window() {
        let _ = window
            .add_event_listener_with_callback("beforeprint", listener.as_ref().unchecked_ref());
    }
    // Lives as long as the page.
    listener.forget();
}

/// A printout shows every figure, in view or not: run every held and queued draw now, before
/// the page is laid out for print.
fn draw_everything() {
    let held: Vec<(u64, Draw)> = WATCHED.with_borrow_mut(|watched| {
        watched
            .iter_mut()
            .filter_map(|w| w.held.take().map(|draw| (w.slot, draw)))
            .collect()
    });
    for (slot, draw) in held {
        enqueue(slot, draw);
    }
    run_for(f64::INFINITY);
}

/// Draws still waiting (tests wait for 0).
pub fn pending() -> usize {
    QUEUE.with_borrow(VecDeque::len)
}

fn wake() {
    if WAKING.replace(true) {
        return;
    }
    crate::tasks::next_task(|| {
        WAKING.set(false);
        run_for(BUDGET_MS);
    });
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
    use crate::testing::{settled, until};
    use std::rc::Rc;
    use wasm_bindgen_test::wasm_bindgen_test as test;

    /// A 10×10 canvas fixed at `top` (CSS), in the test page.
    fn canvas_at(top: &str) -> Element {
        let doc = web_sys::window().unwrap().document().unwrap();
        let canvas = doc.create_element("canvas").unwrap();
        let style = format!("position: fixed; left: 0; top: {top}; width: 10px; height: 10px");
        canvas.set_attribute("style", &style).unwrap();
        doc.body().unwrap().append_child(&canvas).unwrap();
        canvas
    }

    /// The names of the draws that ran, in order.
    #[derive(Clone, Default)]
    struct Ran(Rc<RefCell<Vec<&'static str>>>);

    impl Ran {
        fn draw(&self, name: &'static str) -> impl FnOnce() + 'static {
            let log = self.0.clone();
            move || log.borrow_mut().push(name)
        }

        fn names(&self) -> Vec<&'static str> {
            self.0.borrow().clone()
        }
    }

    /// A canvas far above the viewport (beyond the margin that counts as near), drawn once as
    /// "first", then given the draw `held`, which waits.
    async fn far_canvas_holding(ran: &Ran, held: &'static str) -> (Element, PaintSlot) {
        let canvas = canvas_at("-100000px");
        let slot = PaintSlot::new();
        slot.paint(&canvas, ran.draw("first"));
        settled().await;
        assert_eq!(
            ran.names(),
            ["first"],
            "the first draw runs wherever the canvas is"
        );
        // The observer reports at the browser's next rendering.
        let out_of_view =
            || WATCHED.with_borrow(|w| w.iter().any(|w| w.canvas == canvas && !w.in_view));
        assert!(
            until(out_of_view, 5000).await,
            "the observer never said the canvas is out of view"
        );
        slot.paint(&canvas, ran.draw(held));
        settled().await;
        assert_eq!(ran.names(), ["first"], "out of view, a newer draw waits");
        assert_eq!(pending(), 0, "a held draw is not in the queue");
        (canvas, slot)
    }

    #[test]
    async fn draws_run_later_once_per_slot_in_order() {
        let ran = Ran::default();
        let (a, b) = (PaintSlot::new(), PaintSlot::new());
        let (canvas_a, canvas_b) = (canvas_at("0"), canvas_at("0"));
        a.paint(&canvas_a, ran.draw("a1"));
        b.paint(&canvas_b, ran.draw("b"));
        a.paint(&canvas_a, ran.draw("a2"));
        assert!(
            ran.names().is_empty(),
            "nothing is drawn in the caller's task"
        );
        settled().await;
        assert_eq!(ran.names(), ["a2", "b"], "a2 replaced a1 in a1's place");
        assert_eq!(pending(), 0);
        canvas_a.remove();
        canvas_b.remove();
    }

    #[test]
    async fn a_canvas_out_of_view_is_redrawn_when_it_comes_into_view() {
        let ran = Ran::default();
        let (canvas, slot) = far_canvas_holding(&ran, "second").await;
        slot.paint(&canvas, ran.draw("third"));
        let in_view = "position: fixed; left: 0; top: 0; width: 10px; height: 10px";
        canvas.set_attribute("style", in_view).unwrap();
        // The observer reports at the browser's next rendering; the draw then runs in a task.
        assert!(
            until(|| ran.names().len() > 1, 5000).await,
            "never drawn in view"
        );
        settled().await;
        assert_eq!(
            ran.names(),
            ["first", "third"],
            "in view, the latest draw runs once"
        );
        canvas.remove();
    }

    #[test]
    async fn printing_draws_every_held_figure_at_once() {
        let ran = Ran::default();
        let (canvas, _slot) = far_canvas_holding(&ran, "held").await;
        let event = web_sys::Event::new("beforeprint").unwrap();
        web_sys::window().unwrap().dispatch_event(&event).unwrap();
        assert_eq!(
            ran.names(),
            ["first", "held"],
            "drawn within the beforeprint event"
        );
        canvas.remove();
    }

    #[test]
    async fn a_long_queue_yields_between_tasks() {
        let ran = Rc::new(Cell::new(0));
        let doc = web_sys::window().unwrap().document().unwrap();
        for _ in 0..6 {
            let ran = ran.clone();
            let canvas = doc.create_element("canvas").unwrap();
            PaintSlot::new().paint(&canvas, move || {
                let start = now();
                while now() - start < 5.0 {}
                ran.set(ran.get() + 1);
            });
        }
        // A task queued behind the queue's first: how many draws ran before it.
        let first = Rc::new(Cell::new(0));
        let seen = first.clone();
        let ran_now = ran.clone();
        crate::tasks::next_task(move || seen.set(ran_now.get()));
        settled().await;
        assert_eq!(ran.get(), 6, "every draw ran");
        assert!(
            first.get() < 6,
            "all six 5 ms draws ran in one task ({} before another task got in)",
            first.get()
        );
    }
}

//! A fixed-size chart canvas redrawn whenever its data changes: the effect hands the draw to
//! the canvas's `PaintSlot` (see `paint`), which runs it in a task of its own with the data as
//! it is then. What a failed draw says is returned, for the figure to show.

use crate::paint::PaintSlot;
use leptos::prelude::*;
use protocol::LabResult;
use web_sys::HtmlCanvasElement;

pub fn paint_on_change<T: Send + Sync + 'static>(
    canvas: NodeRef<leptos::html::Canvas>,
    data: Signal<T>,
    draw: fn(&HtmlCanvasElement, &T) -> LabResult<()>,
) -> RwSignal<Option<String>> {
    let failed = RwSignal::new(None::<String>);
    let slot = PaintSlot::new();
    Effect::new(move |_| {
        data.track();
        let Some(shown) = canvas.get() else {
            return;
        };
        slot.paint(&shown, move || {
            let Some(canvas) = canvas.try_get_untracked().flatten() else {
                return;
            };
            if let Some(result) = data.try_with_untracked(|d| draw(&canvas, d)) {
                failed.try_set(result.err().map(|e| e.to_string()));
            }
        });
    });
    failed
}

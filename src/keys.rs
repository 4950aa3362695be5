//! Keyboard shortcuts (Space, S, the arrow keys) and when they must stay out of the way.

use wasm_bindgen::JsCast;

/// Whether a key press belongs to the user's typing or choosing (a text field, a select) or to
/// a browser shortcut (with Alt, Ctrl or Meta), and so is not ours.
pub fn is_editing(ev: &web_sys::KeyboardEvent) -> bool {
    let in_field = ev
        .target()
        .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
        .is_some_and(|e| {
            matches!(
                e.tag_name().to_ascii_lowercase().as_str(),
                "input" | "textarea" | "select"
            )
        });
    in_field || ev.alt_key() || ev.ctrl_key() || ev.meta_key()
}

/// Whether Space, pressed here, already does something of its own: it presses a focused button
/// or link, toggles a checkbox or opens a `<summary>`. Play/pause must not take it from them (a
/// tour answer chosen with Space would start training instead).
pub fn space_is_taken(ev: &web_sys::KeyboardEvent) -> bool {
    const OWN_SPACE: &str = "button, a[href], summary, label, [role=button], [role=checkbox], \
                             [role=radio], [role=switch], [role=tab], [role=menuitem]";
    ev.target()
        .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
        .and_then(|e| e.closest(OWN_SPACE).ok().flatten())
        .is_some()
}

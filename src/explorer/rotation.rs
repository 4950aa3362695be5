//! Rotary models: one small dial per position showing how one pair of q's (and k's)
//! dimensions turns. Grey: the pair as projected; coloured: after the rotation by t·θ_i. The
//! values come from the trace, the angles from the engine's RoPE.

use crate::explorer::figures::{head_caption, layer_and_head, Selection};
use engine::inspect::Inspection;
use engine::ops::rope;
use engine::Matrix;
use leptos::prelude::*;
use std::sync::Arc;

/// Radius of a dial, px.
const R: f64 = 17.0;

/// One position's pair, before and after its rotation.
#[derive(Clone, Debug, PartialEq)]
pub struct Dial {
    pub token: String,
    pub before: (f32, f32),
    pub after: (f32, f32),
    /// t·θ_i, radians.
    pub angle: f64,
}

/// Dimensions (2i, 2i + 1) of every row of `m` and `rotated`, for pair `pair` of a head of
/// width `d`.
pub fn dials(tokens: &[String], m: &Matrix, rotated: &Matrix, pair: usize) -> Vec<Dial> {
    let d = m.cols;
    if 2 * pair + 1 >= d || (rotated.rows, rotated.cols) != (m.rows, m.cols) {
        return Vec::new();
    }
    (0..m.rows)
        .map(|t| Dial {
            token: tokens.get(t).cloned().unwrap_or_default(),
            before: (m.get(t, 2 * pair), m.get(t, 2 * pair + 1)),
            after: (rotated.get(t, 2 * pair), rotated.get(t, 2 * pair + 1)),
            angle: rope::angle(t, pair, d),
        })
        .collect()
}

/// End of a line from the dial's centre in the direction of (x, y) (y up), R long.
fn tip((x, y): (f32, f32)) -> (String, String) {
    let (x, y) = (f64::from(x), f64::from(y));
    let n = x.hypot(y);
    let (ux, uy) = if n > 0.0 { (x / n, y / n) } else { (0.0, 0.0) };
    (format!("{:.1}", R + R * ux), format!("{:.1}", R - R * uy))
}

fn dial_view(d: &Dial) -> impl IntoView {
    let (bx, by) = tip(d.before);
    let (ax, ay) = tip(d.after);
    let size = format!("{}", 2.0 * R);
    let title = format!(
        "{}: ({:.2}, {:.2}) turned by {:.2} rad to ({:.2}, {:.2})",
        d.token, d.before.0, d.before.1, d.angle, d.after.0, d.after.1
    );
    view! {
        <div class="dial" title=title>
            <svg width=size.clone() height=size.clone() viewBox=format!("-1 -1 {} {}", 2.0 * R + 2.0, 2.0 * R + 2.0) role="img">
                <circle cx=R cy=R r=R class="rim"/>
                <line x1=R y1=R x2=bx y2=by class="before"/>
                <line x1=R y1=R x2=ax y2=ay class="after"/>
            </svg>
            <span class="dial-token">{d.token.clone()}</span>
            <span class="dial-angle">{format!("{:.2}", d.angle)}</span>
        </div>
    }
}

#[component]
pub fn RotationPicture(
    ins: Memo<Option<Arc<Inspection>>>,
    selection: Memo<Selection>,
) -> impl IntoView {
    let pair = RwSignal::new(0usize);
    let head_dim = Memo::new(move |_| {
        let sel = selection.get();
        ins.with(|i| {
            i.as_ref()
                .and_then(|i| layer_and_head(i, sel))
                .map_or(0, |(_, h)| h.q.cols)
        })
    });
    let rows = Memo::new(move |_| {
        let (sel, p) = (selection.get(), pair.get());
        ins.with(|i| {
            let i = i.as_ref()?;
            let (_, h) = layer_and_head(i, sel)?;
            let (q, k) = (h.q_rotated.as_ref()?, h.k_rotated.as_ref()?);
            Some([
                ("q", dials(&i.tokens, &h.q, q, p)),
                ("k", dials(&i.tokens, &h.k, k, p)),
            ])
        })
    });
    let caption = move || {
        let p = pair.get();
        head_caption(
            selection.get(),
            &format!(
                "rotation of dimensions ({}, {}) per position",
                2 * p,
                2 * p + 1
            ),
        )
    };
    let angles = move || {
        rows.with(|r| {
            r.as_ref().map(|[(_, q), _]| {
                serde_json::to_string(&q.iter().map(|d| d.angle).collect::<Vec<_>>())
                    .unwrap_or_default()
            })
        })
    };
    let options = move || {
        (0..head_dim.get() / 2)
            .map(|i| {
                view! { <option value=i.to_string() prop:selected=move || pair.get() == i>{format!("{} ({}, {})", i, 2 * i, 2 * i + 1)}</option> }
            })
            .collect_view()
    };
    view! {
        <figure class="rotation" data-angles=angles>
            <figcaption>{caption}</figcaption>
            <label class="pair">"Pair "
                <select on:change=move |ev| pair.set(event_target_value(&ev).parse().unwrap_or(0))>{options}</select>
            </label>
            {move || rows.get().map(|rows| rows.into_iter().map(|(name, dials)| view! {
                <div class="dial-row">
                    <span class="dial-name">{name}</span>
                    {dials.iter().map(dial_view).collect_view()}
                </div>
            }).collect_view())}
            <p class="legend">
                <span class="swatch before"></span>" as projected "
                <span class="swatch after"></span>" after turning by t·θ"<sub>"i"</sub>" (radians under each dial): the same length, a new direction"
            </p>
        </figure>
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn each_dial_turns_its_pair_by_the_positions_angle() {
        let m = Matrix {
            rows: 3,
            cols: 4,
            data: vec![1.0, 0.0, 0.5, 0.5, 1.0, 0.0, 0.5, 0.5, 0.0, 2.0, 1.0, 1.0],
        };
        let rotated = Matrix {
            data: (0..12).map(|x| x as f32).collect(),
            ..m.clone()
        };
        let tokens: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
        let d = dials(&tokens, &m, &rotated, 1);
        assert_eq!(d.len(), 3);
        assert_eq!((d[2].before, d[2].after), ((1.0, 1.0), (10.0, 11.0)));
        // Pair 1 of 4 dims: θ = 10000^(−1/2) = 0.01, so position 2 turns by 0.02.
        assert!((d[2].angle - 0.02).abs() < 1e-12);
        assert_eq!(d[0].angle, 0.0);
        assert!(dials(&tokens, &m, &rotated, 2).is_empty());
        // (1, 0) points right; y is up on the dial and down in SVG.
        assert_eq!(tip((1.0, 0.0)), ("34.0".to_string(), "17.0".to_string()));
        assert_eq!(tip((0.0, 3.0)), ("17.0".to_string(), "0.0".to_string()));
    }
}

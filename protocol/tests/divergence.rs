//! Where a diverging run left its recent loss range: the rewind point after a NaN stop.

use protocol::{CurvePoint, Curves};

fn curves(losses: &[f32]) -> Curves {
    let mut c = Curves::new();
    c.extend(losses.iter().enumerate().map(|(i, &loss)| CurvePoint {
        step: i as u64 + 1,
        loss,
        ..CurvePoint::default()
    }));
    c
}

/// A noisy, slowly falling loss around 5.
fn healthy(n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| 5.0 - 0.004 * i as f32 + if i % 3 == 0 { 0.2 } else { -0.1 })
        .collect()
}

#[test]
fn a_healthy_run_never_left_its_range() {
    assert_eq!(curves(&healthy(200)).left_range_at(), None);
    assert_eq!(curves(&[]).left_range_at(), None);
    assert_eq!(curves(&[3.0]).left_range_at(), None);
}

#[test]
fn a_run_that_climbs_towards_nan_left_where_the_climb_began() {
    // 100 healthy steps, then a learning rate of 1000: the loss jumps and wanders, far above.
    let mut losses = healthy(100);
    losses.extend([40.0, 9000.0, 300.0, 12000.0, 80.0]);
    assert_eq!(curves(&losses).left_range_at(), Some(101));
    // From the first step on: the run left its range at its second point.
    assert_eq!(curves(&[8.0, 400.0, 90.0, 7000.0]).left_range_at(), Some(2));
    // Back in range at the end: no divergence to rewind from.
    losses.push(4.9);
    assert_eq!(curves(&losses).left_range_at(), None);
}

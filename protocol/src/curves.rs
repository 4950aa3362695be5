//! Loss and accuracy curves as data: a bounded record of `CurvePoint`s with a smoothed view.
//! The page draws it (`training::curves` in the web app) and keeps it beside the model.
//!
//! Memory is bounded: at most `MAX_POINTS` points are kept. Each kept point is the mean of a
//! bucket of consecutive steps; when the record grows past `MAX_POINTS`, neighbouring buckets
//! are merged pairwise and new buckets hold twice as many steps (1, 2, 4, … steps per point).
//! The mean over all steps is preserved; a bucket's `step` is the last step in it, so the curve
//! always ends at the latest step.
//!
//! Smoothing is an exponential moving average with `SMOOTHING` = 0.95 per training step
//! (a bucket of k steps decays the average by 0.95ᵏ), debiased like TensorBoard's
//! (divided by 1 − 0.95ⁿ) so the first points are not pulled towards zero.

use serde::{Deserialize, Serialize};

/// One point of the loss curves: one training step, or the mean of a bucket of them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CurvePoint {
    pub step: u64,
    pub loss: f32,
    pub mlm_loss: f32,
    pub nsp_loss: f32,
    pub mlm_accuracy: f32,
    pub nsp_accuracy: f32,
}

/// Most points kept (per series; all series share the steps).
pub const MAX_POINTS: usize = 5_000;

/// EMA factor per training step: s ← β·s + (1 − β)·x, about a 20-step window.
pub const SMOOTHING: f64 = 0.95;

/// The five series of a `CurvePoint`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Series {
    Loss,
    MlmLoss,
    NspLoss,
    MlmAccuracy,
    NspAccuracy,
    /// A decoder's curves: its loss is all next-token loss, and its MLM-head accuracy is how
    /// often the argmax was the next token. Views of the stored fields, not stored twice.
    NextTokenLoss,
    NextTokenAccuracy,
}

impl Series {
    /// The stored fields (each once).
    pub const ALL: [Series; 5] = [
        Series::Loss,
        Series::MlmLoss,
        Series::NspLoss,
        Series::MlmAccuracy,
        Series::NspAccuracy,
    ];

    pub fn value(self, p: &CurvePoint) -> f32 {
        match self {
            Series::Loss => p.loss,
            Series::MlmLoss => p.mlm_loss,
            Series::NspLoss => p.nsp_loss,
            Series::MlmAccuracy => p.mlm_accuracy,
            Series::NspAccuracy => p.nsp_accuracy,
            Series::NextTokenLoss => p.loss,
            Series::NextTokenAccuracy => p.mlm_accuracy,
        }
    }

    fn value_mut(self, p: &mut CurvePoint) -> &mut f32 {
        match self {
            Series::Loss => &mut p.loss,
            Series::MlmLoss => &mut p.mlm_loss,
            Series::NspLoss => &mut p.nsp_loss,
            Series::MlmAccuracy => &mut p.mlm_accuracy,
            Series::NspAccuracy => &mut p.nsp_accuracy,
            Series::NextTokenLoss => &mut p.loss,
            Series::NextTokenAccuracy => &mut p.mlm_accuracy,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Series::Loss => "total",
            Series::MlmLoss | Series::MlmAccuracy => "MLM",
            Series::NspLoss | Series::NspAccuracy => "NSP",
            Series::NextTokenLoss | Series::NextTokenAccuracy => "next token",
        }
    }
}

/// the browser beside the model; a record read back is checked before it is used.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "CurvesRecord")]
pub struct Curves {
    /// Bucket means, ascending `step` (= the last step of each bucket).
    points: Vec<CurvePoint>,
    /// Training steps merged into each point.
    counts: Vec<u32>,
    /// Steps per bucket for new points: 1, 2, 4, …
    stride: u32,
}

impl Default for Curves {
    fn default() -> Self {
        Curves {
            points: Vec::new(),
            counts: Vec::new(),
            stride: 1,
        }
    }
}

/// `Curves` as stored, before its invariants are checked.
#[derive(Deserialize)]
struct CurvesRecord {
    points: Vec<CurvePoint>,
    counts: Vec<u32>,
    stride: u32,
}

impl TryFrom<CurvesRecord> for Curves {
    type Error = String;

    fn try_from(r: CurvesRecord) -> Result<Curves, String> {
        let ascending = r.points.windows(2).all(|w| w[0].step < w[1].step);
        let counted = r.counts.iter().all(|&k| (1..=r.stride).contains(&k));
        let fits = r.points.len() == r.counts.len() && r.points.len() <= MAX_POINTS;
        // Training stops before a non-finite loss becomes a point.
        let finite = r.points.iter().all(|p| {
            [
                p.loss,
                p.mlm_loss,
                p.nsp_loss,
                p.mlm_accuracy,
                p.nsp_accuracy,
            ]
            .iter()
            .all(|v| v.is_finite())
        });
        if ascending && counted && fits && finite && r.stride.is_power_of_two() {
            Ok(Curves {
                points: r.points,
                counts: r.counts,
                stride: r.stride,
            })
        } else {
            Err("not a loss record".into())
        }
    }
}

impl Curves {
    pub fn new() -> Self {
        Self::default()
    }

    /// The record up to `step`: the curves of a model kept at that step.
    pub fn until(mut self, step: u64) -> Curves {
        let keep = self.points.partition_point(|p| p.step <= step);
        self.points.truncate(keep);
        self.counts.truncate(keep);
        self
    }

    /// Add one step's point. A step at or before the last one kept (after a rewind) first drops
    /// the points from that step on: the run continues from there.
    pub fn push(&mut self, p: CurvePoint) {
        if self.points.last().is_some_and(|last| p.step <= last.step) {
            let keep = self.points.partition_point(|q| q.step < p.step);
            self.points.truncate(keep);
            self.counts.truncate(keep);
        }
        match (self.points.last_mut(), self.counts.last_mut()) {
            (Some(last), Some(count)) if *count < self.stride => {
                *last = merge(last, *count, &p, 1);
                *count += 1;
            }
            _ => {
                self.points.push(p);
                self.counts.push(1);
            }
        }
        if self.points.len() > MAX_POINTS {
            self.halve();
        }
    }

    pub fn extend(&mut self, points: impl IntoIterator<Item = CurvePoint>) {
        for p in points {
            self.push(p);
        }
    }

    /// Merge neighbouring buckets pairwise; new buckets hold twice as many steps.
    fn halve(&mut self) {
        let mut points = Vec::with_capacity(self.points.len() / 2 + 1);
        let mut counts = Vec::with_capacity(points.capacity());
        for (ps, cs) in self.points.chunks(2).zip(self.counts.chunks(2)) {
            match (ps, cs) {
                ([a, b], [ca, cb]) => {
                    points.push(merge(a, *ca, b, *cb));
                    counts.push(ca + cb);
                }
                _ => {
                    points.push(ps[0]);
                    counts.push(cs[0]);
                }
            }
        }
        self.points = points;
        self.counts = counts;
        self.stride *= 2;
    }

    pub fn points(&self) -> &[CurvePoint] {
        &self.points
    }

    /// Training steps behind each kept point (same order as `points`).
    pub fn counts(&self) -> &[u32] {
        &self.counts
    }

    pub fn len(&self) -> usize {
        self.points.len()
    }

    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }

    pub fn last(&self) -> Option<&CurvePoint> {
        self.points.last()
    }

    /// The first step at which the loss left its recent range for good: the earliest point
    /// such that it and every point after it lie above the highest of the `RECENT` points
    /// before it (with a 5% margin for noise). None when the last point is back in range. A point's loss is
    /// that of the weights before its step, so weights kept before `step − 1` are unharmed.
    pub fn left_range_at(&self) -> Option<u64> {
        const RECENT: usize = 20;
        let p = &self.points;
        let mut lowest_after = f32::INFINITY;
        let mut start = None;
        for j in (1..p.len()).rev() {
            lowest_after = lowest_after.min(p[j].loss);
            let high = p[j.saturating_sub(RECENT)..j]
                .iter()
                .map(|q| q.loss)
                .fold(f32::NEG_INFINITY, f32::max);
            // The earliest such j wins: inside the stretch, the window holds the climb itself.
            if lowest_after > high + 0.05 * high.abs() {
                start = Some(j);
            }
        }
        // A bucket's point stands for all its steps: the first of them.
        start.map(|j| p[j].step + 1 - u64::from(self.counts[j]))
    }

    /// The debiased EMA of every series, one point per kept point (same steps).
    pub fn smoothed(&self) -> Vec<CurvePoint> {
        let mut average = [0.0f64; 5];
        let mut weight = [0.0f64; 5];
        let mut out = Vec::with_capacity(self.points.len());
        for (p, &count) in self.points.iter().zip(&self.counts) {
            let decay = SMOOTHING.powi(count as i32);
            let mut s = CurvePoint {
                step: p.step,
                ..CurvePoint::default()
            };
            for (i, series) in Series::ALL.into_iter().enumerate() {
                let x = series.value(p) as f64;
                if x.is_finite() {
                    // s ← βᵏ·s + (1 − βᵏ)·x; weight = 1 − βⁿ over the finite values seen
                    average[i] = decay * average[i] + (1.0 - decay) * x;
                    weight[i] = decay * weight[i] + (1.0 - decay);
                }
                *series.value_mut(&mut s) = if weight[i] > 0.0 {
                    (average[i] / weight[i]) as f32
                } else {
                    f32::NAN
                };
            }
            out.push(s);
        }
        out
    }

    /// Index of the kept point whose step is nearest to `step` (ties go to the earlier one).
    pub fn nearest(&self, step: f64) -> Option<usize> {
        if self.points.is_empty() {
            return None;
        }
        let after = self.points.partition_point(|p| (p.step as f64) < step);
        let candidates = [
            after.checked_sub(1),
            (after < self.points.len()).then_some(after),
        ];
        candidates.into_iter().flatten().min_by(|&a, &b| {
            let da = (self.points[a].step as f64 - step).abs();
            let db = (self.points[b].step as f64 - step).abs();
            da.total_cmp(&db)
        })
    }
}

/// The weighted mean of two buckets; a non-finite value gives way to a finite one. The
/// merged bucket ends at the later step.
fn merge(a: &CurvePoint, wa: u32, b: &CurvePoint, wb: u32) -> CurvePoint {
    let mut out = CurvePoint {
        step: a.step.max(b.step),
        ..CurvePoint::default()
    };
    let (wa, wb) = (wa as f64, wb as f64);
    for series in Series::ALL {
        let (x, y) = (series.value(a) as f64, series.value(b) as f64);
        *series.value_mut(&mut out) = match (x.is_finite(), y.is_finite()) {
            (true, true) => ((x * wa + y * wb) / (wa + wb)) as f32,
            (true, false) => x as f32,
            (false, _) => y as f32,
        };
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(step: u64, loss: f32) -> CurvePoint {
        CurvePoint {
            step,
            loss,
            mlm_loss: loss * 0.75,
            nsp_loss: loss * 0.25,
            mlm_accuracy: 0.5,
            nsp_accuracy: (step % 2) as f32,
        }
    }

    #[test]
    fn memory_stays_bounded_and_the_mean_is_kept() {
        let mut c = Curves::new();
        let n = 23_456u64;
        c.extend((1..=n).map(|s| point(s, s as f32)));
        assert!(c.len() <= MAX_POINTS, "{} points kept", c.len());
        assert!(c.len() > MAX_POINTS / 4, "thinned too much: {}", c.len());
        assert_eq!(
            c.last().unwrap().step,
            n,
            "the curve ends at the latest step"
        );
        assert_eq!(
            c.counts().iter().map(|&k| k as u64).sum::<u64>(),
            n,
            "every step counted once"
        );
        let mean: f64 = c
            .points()
            .iter()
            .zip(c.counts())
            .map(|(p, &k)| p.loss as f64 * k as f64)
            .sum::<f64>()
            / n as f64;
        assert!(
            (mean - (n + 1) as f64 / 2.0).abs() < 1e-2 * n as f64 / 1000.0,
            "mean {mean}"
        );
        assert!(
            c.points().windows(2).all(|w| w[0].step < w[1].step),
            "steps ascend"
        );
    }

    #[test]
    fn few_points_are_kept_as_they_are() {
        let mut c = Curves::new();
        c.extend((0..100).map(|s| point(s, 1.0 + s as f32)));
        assert_eq!(c.len(), 100);
        assert_eq!(c.points()[42], point(42, 43.0));
    }

    #[test]
    fn a_rewind_drops_the_points_after_it() {
        let mut c = Curves::new();
        c.extend((1..=50).map(|s| point(s, 2.0)));
        c.push(point(20, 9.0));
        assert_eq!(c.len(), 20);
        assert_eq!(*c.last().unwrap(), point(20, 9.0));
        assert_eq!(c.points()[18].step, 19);
        // A rewind to the very start keeps only the new first point.
        c.push(point(0, 1.0));
        assert_eq!(c.len(), 1);
    }

    #[test]
    fn smoothing_is_a_debiased_ema() {
        let mut c = Curves::new();
        c.extend([point(1, 4.0), point(2, 2.0)]);
        let s = c.smoothed();
        assert_eq!(s[0].loss, 4.0, "debiased: the first value is itself");
        // (0.95·0.05·4 + 0.05·2) / (1 − 0.95²)
        let want = (0.95 * 0.05 * 4.0 + 0.05 * 2.0) / (1.0 - 0.95f64 * 0.95);
        assert!(
            (s[1].loss as f64 - want).abs() < 1e-5,
            "{} vs {want}",
            s[1].loss
        );

        // A noisy constant smooths towards the constant; raw alternates 0/1.
        let mut c = Curves::new();
        c.extend((1..=400).map(|s| point(s, 1.0)));
        let last = *c.smoothed().last().unwrap();
        assert!(
            (last.nsp_accuracy - 0.5).abs() < 0.05,
            "{}",
            last.nsp_accuracy
        );
        assert!((last.loss - 1.0).abs() < 1e-5);
    }

    #[test]
    fn smoothing_skips_non_finite_values() {
        let mut c = Curves::new();
        let mut p = point(1, 3.0);
        p.mlm_accuracy = f32::NAN;
        c.extend([p, point(2, 3.0)]);
        let s = c.smoothed();
        assert!(s[0].mlm_accuracy.is_nan());
        assert_eq!(s[1].mlm_accuracy, 0.5);
    }

    #[test]
    fn nearest_finds_the_closest_step() {
        let mut c = Curves::new();
        assert_eq!(c.nearest(3.0), None);
        c.extend([10, 20, 40].map(|s| point(s, 1.0)));
        assert_eq!(c.nearest(-5.0), Some(0));
        assert_eq!(c.nearest(14.0), Some(0));
        assert_eq!(c.nearest(16.0), Some(1));
        assert_eq!(c.nearest(31.0), Some(2));
        assert_eq!(c.nearest(1e9), Some(2));
    }
}

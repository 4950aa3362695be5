//! Training over several workers (data parallel): what the training worker (the lead) tells
//! its gradient workers, and what the page is told about how many work.
//!
//! Each step the lead draws one batch (one generator: the Batch view and the masking counts
//! do not depend on how many workers there are) and cuts it into shares of rows
//! (`engine::step::plan_step`). A gradient worker gets a share's rows, the step's dropout seed
//! and the whole batch's loss counts (`engine::step::Share`), and the weights as they are; it
//! answers with that share's gradients. The lead sums them in share order and updates.

use crate::{LabError, LabResult};
use engine::batch::Batch;
use engine::config::BertConfig;
use engine::forward::{ForwardOptions, Losses};
use engine::model::Parts;
use engine::seq2seq::Seq2SeqBatch;
use engine::step::Share;
use ndarray::{Array1, Array2};
use serde::{Deserialize, Serialize};

/// How many workers train: "auto" lets the page measure whether more than one gains.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum WorkerCount {
    /// Up to `hardwareConcurrency − 1` (at most `MAX_WORKERS`), fewer when a step is too small
    /// to gain from them, as measured.
    #[default]
    Auto,
    /// Exactly this many (1 to `MAX_WORKERS`): a run is then the same every time.
    Fixed(usize),
}

/// The most workers that train one model: past four, a step's gradient exchange costs more
/// than its share of the work saves at the sizes trained here.
pub const MAX_WORKERS: usize = 4;

impl WorkerCount {
    /// The "Workers" select's values, in order.
    pub const CHOICES: [WorkerCount; 5] = [
        WorkerCount::Auto,
        WorkerCount::Fixed(1),
        WorkerCount::Fixed(2),
        WorkerCount::Fixed(3),
        WorkerCount::Fixed(4),
    ];

    /// As the select writes it: `auto`, `1`, … `4`.
    pub fn key(self) -> String {
        match self {
            WorkerCount::Auto => "auto".into(),
            WorkerCount::Fixed(n) => n.to_string(),
        }
    }

    /// The select's value read back; anything else is an error naming the choices.
    pub fn parse(text: &str) -> LabResult<WorkerCount> {
        match text.trim() {
            "auto" => Ok(WorkerCount::Auto),
            n => match n.parse::<usize>() {
                Ok(n) if (1..=MAX_WORKERS).contains(&n) => Ok(WorkerCount::Fixed(n)),
                _ => Err(LabError::setting(format!(
                    "Workers must be auto or 1 to {MAX_WORKERS}, not \"{n}\""
                ))),
            },
        }
    }

    /// The most workers this may use, on a machine of `cores` logical cores: Auto leaves one
    /// core to the page.
    pub fn most(self, cores: usize) -> usize {
        match self {
            WorkerCount::Auto => cores.saturating_sub(1).clamp(1, MAX_WORKERS),
            WorkerCount::Fixed(n) => n.clamp(1, MAX_WORKERS),
        }
    }
}

/// How many workers train now, and why not more (the page's header says it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkersInUse {
    pub using: usize,
    /// The most the setting allows on this machine.
    pub most: usize,
    /// Why fewer than `most` (a measurement, or a gradient worker that could not start).
    pub why: Option<String>,
}

/// Auto's measurement: whether `most` workers step clearly faster than one. Training
/// alternates between one worker and `most`, `PHASE_STEPS` steps at a time, for `ROUNDS`
/// rounds, and the median of the rounds' ratios decides. Alternating matters: a browser's
/// compiler tiers its code up during the first steps, and a machine's speed drifts, so two
/// sides measured one after the other once compare the moments more than the worker counts.
#[derive(Clone, Debug, PartialEq)]
pub struct AutoMeasurement {
    pub most: usize,
    /// ms per step of each finished round: (on one worker, on `most`).
    rounds: Vec<(f64, f64)>,
    /// The phase under way: on `most` workers (else one), its counted steps and their ms,
    /// and how many steps it still leaves uncounted.
    on_many: bool,
    steps: usize,
    ms: f64,
    skip: usize,
    /// ms per step of this round's phase on one worker, once it ended.
    one_ms: f64,
}

/// What Auto's measurement found.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Measured {
    pub using: usize,
    /// Median ms per step on one worker and on `most`, over the rounds.
    pub one_ms: f64,
    pub many_ms: f64,
}

impl AutoMeasurement {
    pub const ROUNDS: usize = 3;
    pub const PHASE_STEPS: usize = 4;
    /// The first steps on one worker (a fresh model's first allocations), and the first on
    /// `most` (the gradient workers start and compile) are not counted.
    pub const WARM_UP: usize = 2;
    /// `most` workers are kept only when a step takes at most this fraction of one worker's:
    /// the gain must pay for the page's share of the cores too.
    pub const GAIN: f64 = 0.9;

    pub fn new(most: usize) -> Self {
        AutoMeasurement {
            most,
            rounds: Vec::new(),
            on_many: false,
            steps: 0,
            ms: 0.0,
            skip: Self::WARM_UP,
            one_ms: 0.0,
        }
    }

    /// How many workers the next steps run on.
    pub fn workers(&self) -> usize {
        if self.on_many {
            self.most
        } else {
            1
        }
    }

    /// `steps` steps on `workers` workers took `ms_per_step` each. Steps on another count than
    /// the phase's (one that ended as the phase changed) are not counted. Some(…) once decided.
    pub fn record(&mut self, workers: usize, steps: usize, ms_per_step: f64) -> Option<Measured> {
        if workers != self.workers() || !ms_per_step.is_finite() {
            return None;
        }
        let skipped = steps.min(self.skip);
        self.skip -= skipped;
        self.steps += steps - skipped;
        self.ms += (steps - skipped) as f64 * ms_per_step;
        if self.steps < Self::PHASE_STEPS {
            return None;
        }
        let mean = self.ms / self.steps as f64;
        (self.steps, self.ms) = (0, 0.0);
        if !self.on_many {
            self.one_ms = mean;
            self.on_many = true;
            // Only the first phase on `most` waits for the gradient workers to start.
            self.skip = if self.rounds.is_empty() {
                Self::WARM_UP
            } else {
                0
            };
            return None;
        }
        self.rounds.push((self.one_ms, mean));
        self.on_many = false;
        if self.rounds.len() < Self::ROUNDS {
            return None;
        }
        let median = |mut v: Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let ratio = median(self.rounds.iter().map(|(one, many)| many / one).collect());
        Some(Measured {
            using: if ratio < Self::GAIN { self.most } else { 1 },
            one_ms: median(self.rounds.iter().map(|r| r.0).collect()),
            many_ms: median(self.rounds.iter().map(|r| r.1).collect()),
        })
    }
}

/// A model's shape, for a gradient worker to build a copy of it once; the weights come with
/// every job.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ReplicaShape {
    Bert(Stack),
    EncoderDecoder { encoder: Stack, decoder: Stack },
}

/// One BERT's shape: its `config.json` (as text: the config keeps unknown keys beside its own,
/// which a binary format cannot write) and which optional parts it has.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Stack {
    pub config_json: String,
    pub parts: Parts,
}

impl Stack {
    pub fn new(config: &BertConfig, parts: Parts) -> Self {
        Stack {
            config_json: config.to_json(),
            parts,
        }
    }

    pub fn config(&self) -> LabResult<BertConfig> {
        Ok(BertConfig::from_json(&self.config_json)?)
    }
}

/// One share of one step for a gradient worker. Attachment: the model's weights (f32, in
/// parameter order), as they are before the step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GradientJob {
    /// Which replica the weights are for (`ToWorker::Replica`).
    pub replica: u64,
    pub opts: ForwardOptions,
    pub share: Share,
    pub batch: ShareBatch,
}

/// A share's rows of the step's batch.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ShareBatch {
    Bert(WireBatch),
    EncoderDecoder {
        source: WireBatch,
        target: WireBatch,
    },
}

impl ShareBatch {
    pub fn bert(batch: &Batch) -> Self {
        ShareBatch::Bert(batch.into())
    }

    pub fn encoder_decoder(batch: &Seq2SeqBatch) -> Self {
        ShareBatch::EncoderDecoder {
            source: (&batch.source).into(),
            target: (&batch.target).into(),
        }
    }
}

/// The gradients of a share: its losses (already divided by the whole batch's counts, so the
/// shares' losses add up). Attachment: the gradients (f32, in parameter order).
pub type GradientResult = Result<Losses, LabError>;

/// `engine::batch::Batch` as plain vectors (row-major, `rows` × `cols`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WireBatch {
    pub rows: usize,
    pub cols: usize,
    pub input_ids: Vec<u32>,
    pub token_type_ids: Vec<u32>,
    pub attention_mask: Vec<u8>,
    pub mlm_labels: Option<Vec<i64>>,
    pub nsp_labels: Option<Vec<u32>>,
}

impl From<&Batch> for WireBatch {
    fn from(b: &Batch) -> Self {
        let flat = |a: &Array2<u32>| a.iter().copied().collect();
        WireBatch {
            rows: b.batch_size(),
            cols: b.seq_len(),
            input_ids: flat(&b.input_ids),
            token_type_ids: flat(&b.token_type_ids),
            attention_mask: b.attention_mask.iter().copied().collect(),
            mlm_labels: b.mlm_labels.as_ref().map(|l| l.iter().copied().collect()),
            nsp_labels: b.nsp_labels.as_ref().map(|l| l.to_vec()),
        }
    }
}

impl TryFrom<WireBatch> for Batch {
    type Error = LabError;

    fn try_from(w: WireBatch) -> LabResult<Batch> {
        let shape = (w.rows, w.cols);
        fn matrix<T>(shape: (usize, usize), values: Vec<T>) -> LabResult<Array2<T>> {
            Array2::from_shape_vec(shape, values).map_err(|_| {
                LabError::Malformed(format!(
                    "a share's batch is not {}×{} tokens",
                    shape.0, shape.1
                ))
            })
        }
        let nsp_labels = match w.nsp_labels {
            Some(l) if l.len() != w.rows => {
                return Err(LabError::Malformed(format!(
                    "a share's batch has {} NSP labels for {} rows",
                    l.len(),
                    w.rows
                )))
            }
            l => l.map(Array1::from),
        };
        Ok(Batch {
            input_ids: matrix(shape, w.input_ids)?,
            token_type_ids: matrix(shape, w.token_type_ids)?,
            attention_mask: matrix(shape, w.attention_mask)?,
            mlm_labels: w.mlm_labels.map(|l| matrix(shape, l)).transpose()?,
            nsp_labels,
        })
    }
}

#[cfg(test)]
mod tests {

    /// Feeds `measurement` steps as the lead would: ticks of `per_tick` steps on one worker,
    /// single steps on several, with each side's ms per step from `ms(workers, round)`.
    fn measure(
        m: &mut AutoMeasurement,
        per_tick: usize,
        mut ms: impl FnMut(usize, usize) -> f64,
    ) -> (Measured, usize) {
        let mut taken = 0;
        for _ in 0..1000 {
            let workers = m.workers();
            let steps = if workers == 1 { per_tick } else { 1 };
            taken += steps;
            if let Some(found) = m.record(workers, steps, ms(workers, m.rounds.len())) {
                return (found, taken);
            }
        }
        panic!("no decision after 1000 records");
    }

    #[test]
    fn auto_keeps_more_workers_only_when_the_median_round_gains_clearly() {
        // Two workers 20% faster: kept, after 3 rounds of 4 + 4 steps and 2 + 2 warm-up steps.
        let mut m = AutoMeasurement::new(2);
        let (found, taken) = measure(&mut m, 1, |w, _| if w == 1 { 10.0 } else { 8.0 });
        assert_eq!(
            found,
            Measured {
                using: 2,
                one_ms: 10.0,
                many_ms: 8.0
            }
        );
        assert_eq!(
            taken,
            3 * 2 * AutoMeasurement::PHASE_STEPS + 2 * AutoMeasurement::WARM_UP
        );
        // 5% faster: not enough.
        let mut m = AutoMeasurement::new(3);
        assert_eq!(
            measure(&mut m, 1, |w, _| if w == 1 { 10.0 } else { 9.5 })
                .0
                .using,
            1
        );
        // One round's outlier (the machine busy while one worker stepped) does not decide.
        let mut m = AutoMeasurement::new(2);
        let (found, _) = measure(&mut m, 1, |w, round| match (w, round) {
            (1, 1) => 30.0,
            (1, _) => 10.0,
            _ => 10.5,
        });
        assert_eq!(found.using, 1);
    }

    #[test]
    fn auto_leaves_out_the_warm_up_and_steps_from_the_other_side() {
        // The first steps on each side are slow (compiling, starting workers): not counted.
        let mut m = AutoMeasurement::new(2);
        let mut seen = [0usize; 2];
        let (found, _) = measure(&mut m, 1, |w, _| {
            let i = usize::from(w > 1);
            seen[i] += 1;
            if seen[i] <= AutoMeasurement::WARM_UP {
                1000.0
            } else if w == 1 {
                10.0
            } else {
                7.0
            }
        });
        assert_eq!(found.using, 2);
        assert_eq!((found.one_ms, found.many_ms), (10.0, 7.0));
        // A tick of many steps on one worker ends its phase at once; a step on two workers
        // that finishes after the phase went back to one is not counted.
        let mut m = AutoMeasurement::new(2);
        assert_eq!(m.record(1, 30, 10.0), None);
        assert_eq!(m.workers(), 2);
        assert_eq!(m.record(1, 5, 99.0), None);
        assert_eq!(m.workers(), 2);
        assert_eq!(m.record(2, 1, f64::NAN), None);
        assert_eq!(m.steps, 0);
    }
    use super::*;
    use crate::wire;

    fn batch() -> Batch {
        Batch {
            input_ids: Array2::from_shape_fn((2, 3), |(r, c)| (r * 3 + c) as u32),
            token_type_ids: Array2::from_shape_fn((2, 3), |(_, c)| u32::from(c > 1)),
            attention_mask: Array2::from_shape_fn((2, 3), |(r, c)| u8::from(r == 0 || c < 2)),
            mlm_labels: Some(Array2::from_shape_fn((2, 3), |(r, c)| {
                if c == 1 {
                    r as i64 + 7
                } else {
                    -100
                }
            })),
            nsp_labels: Some(Array1::from(vec![0, 1])),
        }
    }

    #[test]
    fn a_batch_crosses_exactly_and_a_misshapen_one_is_an_error() {
        let sent = ShareBatch::bert(&batch());
        let back: ShareBatch = wire::decode(&wire::encode(&sent).unwrap()).unwrap();
        let ShareBatch::Bert(w) = back else {
            panic!("another kind of batch")
        };
        assert_eq!(Batch::try_from(w.clone()).unwrap(), batch());
        let short = WireBatch {
            input_ids: vec![1, 2],
            ..w.clone()
        };
        assert!(Batch::try_from(short).is_err());
        let labels = WireBatch {
            nsp_labels: Some(vec![0]),
            ..w
        };
        assert!(Batch::try_from(labels).is_err());
    }

    #[test]
    fn a_models_shape_crosses_in_the_wire_format() {
        let mut config = BertConfig::tiny(40);
        config.extra.insert("custom".into(), "kept".into());
        let shape = ReplicaShape::Bert(Stack::new(&config, Parts::ALL));
        let back: ReplicaShape = wire::decode(&wire::encode(&shape).unwrap()).unwrap();
        let ReplicaShape::Bert(stack) = back else {
            panic!("another kind of model")
        };
        assert_eq!(stack.config().unwrap(), config);
        assert_eq!(stack.parts, Parts::ALL);
    }

    #[test]
    fn the_setting_reads_what_it_writes_and_refuses_the_rest() {
        for count in WorkerCount::CHOICES {
            assert_eq!(WorkerCount::parse(&count.key()).unwrap(), count);
        }
        for bad in ["0", "5", "", "two", "-1", "🧠"] {
            assert!(WorkerCount::parse(bad).is_err(), "{bad}");
        }
        // Auto leaves a core to the page, uses at least one, at most four.
        assert_eq!(WorkerCount::Auto.most(2), 1);
        assert_eq!(WorkerCount::Auto.most(1), 1);
        assert_eq!(WorkerCount::Auto.most(4), 3);
        assert_eq!(WorkerCount::Auto.most(16), MAX_WORKERS);
        assert_eq!(WorkerCount::Fixed(2).most(1), 2);
    }
}

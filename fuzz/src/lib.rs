//! A small mutation fuzzer that runs on stable Rust: no sanitizer, no compiler plug-in, no
//! nightly. Each target is a function from bytes to `Ok` or an error message (a clear error is
//! a good outcome); a panic is a crash, caught with `catch_unwind` and kept with its input.
//!
//! Why not cargo-fuzz (libFuzzer): it needs a nightly compiler for its sanitizer flags, and the
//! project builds on the machine's one stable toolchain. Coverage guidance is replaced by a
//! cheaper signal: an input joins the corpus when it gives an outcome not seen before (a new
//! error message, with its numbers blanked), so mutations keep exploring past each check.
//!
//! Mutations: flip a bit, set a byte to an edge value, insert or delete a run, duplicate a
//! run, splice two corpus entries, insert a word of the target's dictionary. A target may
//! name a "hot" prefix (the safetensors header) that receives most mutations.

pub mod targets;

use std::collections::HashSet;
use std::panic::{self, AssertUnwindSafe};
use std::time::{Duration, Instant};

/// One thing that reads user input.
pub struct Target {
    pub name: &'static str,
    /// Valid (or nearly valid) inputs to start from.
    pub seeds: fn() -> Vec<Vec<u8>>,
    /// Tokens worth inserting: keys, special tokens, edge numbers.
    pub dictionary: &'static [&'static str],
    /// Most mutations fall in the first `hot_prefix` bytes (0 = anywhere).
    pub hot_prefix: usize,
    /// Ok, or the error a user would see. Must never panic.
    pub run: fn(&[u8]) -> Result<(), String>,
}

/// How long to fuzz one target: a number of cases, a time, or whichever ends first.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    pub cases: Option<u64>,
    pub time: Option<Duration>,
}

#[derive(Debug)]
pub struct Crash {
    pub input: Vec<u8>,
    pub message: String,
}

#[derive(Debug)]
pub struct Report {
    pub target: &'static str,
    pub cases: u64,
    pub outcomes: usize,
    pub corpus: usize,
    pub crashes: Vec<Crash>,
    pub slowest: Duration,
}

/// xorshift64*: the fuzzer's own generator, so a seed replays a run exactly.
pub struct Xorshift(u64);

impl Xorshift {
    pub fn new(seed: u64) -> Self {
        Xorshift(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in 0..n (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

const EDGE_BYTES: [u8; 10] = [0, 1, 0x7f, 0x80, 0xff, b'0', b'9', b'-', b'"', b'\n'];

/// A position for an edit: inside the hot prefix three times out of four.
fn position(rng: &mut Xorshift, len: usize, hot: usize) -> usize {
    if len == 0 {
        return 0;
    }
    if hot > 0 && rng.below(4) != 0 {
        rng.below(len.min(hot))
    } else {
        rng.below(len)
    }
}

/// One to four random edits of `input`, sometimes mixed with `other`.
pub fn mutate(
    input: &[u8],
    other: &[u8],
    dictionary: &[&str],
    hot: usize,
    rng: &mut Xorshift,
) -> Vec<u8> {
    let mut out = input.to_vec();
    for _ in 0..1 + rng.below(4) {
        let len = out.len();
        match rng.below(8) {
            0 if len > 0 => {
                let i = position(rng, len, hot);
                out[i] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                let i = position(rng, len, hot);
                out[i] = EDGE_BYTES[rng.below(EDGE_BYTES.len())];
            }
            2 => {
                let i = position(rng, len, hot);
                let n = 1 + rng.below(8);
                let bytes: Vec<u8> = (0..n).map(|_| rng.next_u64() as u8).collect();
                out.splice(i..i, bytes);
            }
            3 if len > 0 => {
                let i = position(rng, len, hot);
                let n = (1 + rng.below(16)).min(len - i);
                out.drain(i..i + n);
            }
            4 if len > 0 => {
                let i = position(rng, len, hot);
                let n = (1 + rng.below(32)).min(len - i);
                let run = out[i..i + n].to_vec();
                out.splice(i..i, run);
            }
            5 if !other.is_empty() => {
                // Splice: our head, their tail.
                let (i, j) = (position(rng, len, hot), rng.below(other.len()));
                out.truncate(i);
                out.extend_from_slice(&other[j..]);
            }
            6 if !dictionary.is_empty() => {
                let i = position(rng, len, hot);
                let word = dictionary[rng.below(dictionary.len())].as_bytes();
                out.splice(i..i, word.iter().copied());
            }
            _ if len > 0 => {
                // Truncate: files cut short are a common real failure.
                out.truncate(rng.below(len));
            }
            _ => out.push(rng.next_u64() as u8),
        }
    }
    out
}

/// An outcome's class: the error text with quoted parts and digits blanked and serde's
/// "at line L column C" cut, so "row 3" and "row 4", or two unknown keys, are one class.
fn outcome_class(result: &Result<(), String>) -> String {
    let Err(message) = result else {
        return "ok".into();
    };
    let message = message.split(" at line ").next().unwrap_or_default();
    let mut class = String::new();
    let mut quote = None;
    for c in message.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if matches!(c, '"' | '`' | '\'') => {
                quote = Some(c);
                class.push('_');
            }
            None if c.is_ascii_digit() => class.push('#'),
            None => class.push(c),
        }
    }
    class.chars().take(100).collect()
}

fn run_caught(target: &Target, input: &[u8]) -> std::result::Result<Result<(), String>, String> {
    panic::catch_unwind(AssertUnwindSafe(|| (target.run)(input))).map_err(|p| {
        p.downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "panic with a non-string payload".into())
    })
}

/// Fuzzes one target within `budget`, from `seed`. Crashes are collected, not fatal.
pub fn fuzz(target: &Target, budget: Budget, seed: u64) -> Report {
    let mut rng = Xorshift::new(seed);
    let mut corpus = (target.seeds)();
    assert!(!corpus.is_empty(), "{}: no seed inputs", target.name);
    let mut outcomes = HashSet::new();
    let mut crashes: Vec<Crash> = Vec::new();
    let mut crash_messages = HashSet::new();
    let mut slowest = Duration::ZERO;
    let started = Instant::now();
    let mut cases = 0u64;
    // Seeds first, as they are.
    let mut queue: Vec<Vec<u8>> = corpus.clone();
    loop {
        if budget.cases.is_some_and(|n| cases >= n)
            || budget.time.is_some_and(|t| started.elapsed() >= t)
        {
            break;
        }
        let input = queue.pop().unwrap_or_else(|| {
            let a = &corpus[rng.below(corpus.len())];
            let b = &corpus[rng.below(corpus.len())];
            mutate(a, b, target.dictionary, target.hot_prefix, &mut rng)
        });
        let t0 = Instant::now();
        let result = run_caught(target, &input);
        slowest = slowest.max(t0.elapsed());
        cases += 1;
        match result {
            Ok(result) => {
                if outcomes.insert(outcome_class(&result)) && corpus.len() < 4096 {
                    corpus.push(input);
                }
            }
            Err(message) => {
                if crash_messages.insert(message.clone()) {
                    crashes.push(Crash { input, message });
                }
            }
        }
    }
    Report {
        target: target.name,
        cases,
        outcomes: outcomes.len(),
        corpus: corpus.len(),
        crashes,
        slowest,
    }
}

/// Keeps the default panic message off stderr while fuzzing (crashes are reported instead).
pub fn quiet_panics() {
    panic::set_hook(Box::new(|_| {}));
}

//! JSON on stdout: one value per line, f32 written as the shortest decimal that reads back the
//! same, non-finite numbers (the −∞ of masked scores) as `null`.

use engine::Matrix;
use serde::Serialize;
use std::io::Write;

/// A matrix as an array of rows; `None` prints as `null`.
pub type Rows = Vec<Vec<Option<f32>>>;

pub fn rows(m: &Matrix) -> Rows {
    (0..m.rows).map(|r| finite(m.row(r))).collect()
}

/// The numbers, non-finite ones as `None`.
pub fn finite(xs: &[f32]) -> Vec<Option<f32>> {
    xs.iter().map(|x| x.is_finite().then_some(*x)).collect()
}

/// Writes `value` and a newline to stdout. A closed pipe (`| head`) is not an error.
pub fn print<T: Serialize>(value: &T) {
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if serde_json::to_writer(&mut out, value).is_ok() {
        let _ = writeln!(out);
        let _ = out.flush();
    }
}

//! JSON on stdout: one value per line, f32 written as the shortest decimal that reads back the
//! same. Matrices go out as rows (`Matrix::as_rows`), the −∞ of masked scores as `null`.

use serde::Serialize;
use std::io::Write;

/// Writes `value` and a newline to stdout. A closed pipe (`| head`) is not an error.
pub fn print<T: Serialize>(value: &T) {
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if serde_json::to_writer(&mut out, value).is_ok() {
        let _ = writeln!(out);
        let _ = out.flush();
    }
}

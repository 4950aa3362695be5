//! Readers of what the binary writes: its JSON (matrices as lists of rows) and safetensors
//! files, so that tests state shapes and numbers rather than unwrap chains.

use serde_json::Value;

/// A matrix's (rows, columns).
pub fn dims(m: &Value) -> (usize, usize) {
    let rows = m.as_array().unwrap();
    (rows.len(), rows[0].as_array().unwrap().len())
}

/// Row `r`, column `c` of a matrix.
pub fn at(m: &Value, r: usize, c: usize) -> &Value {
    &m[r][c]
}

/// A number, or a panic naming what was there instead.
pub fn float(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// A list of strings (tokens).
pub fn strings(v: &Value) -> Vec<&str> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect()
}

/// The "id" of each line.
pub fn ids(tokens: &[Value]) -> Vec<u64> {
    tokens.iter().map(|t| t["id"].as_u64().unwrap()).collect()
}

/// Σ_d a[i][d]·b[j][d]
pub fn dot_rows(a: &Value, i: usize, b: &Value, j: usize) -> f64 {
    let (x, y) = (a[i].as_array().unwrap(), b[j].as_array().unwrap());
    x.iter().zip(y).map(|(x, y)| float(x) * float(y)).sum()
}

/// Same JSON structure, numbers equal within `tol` relative (absolute below 1).
pub fn assert_close(a: &Value, b: &Value, tol: f64, at: &str) {
    match (a, b) {
        (Value::Number(_), Value::Number(_)) => {
            let (x, y) = (float(a), float(b));
            assert!((x - y).abs() <= tol * x.abs().max(1.0), "{at}: {x} vs {y}");
        }
        (Value::Array(x), Value::Array(y)) => {
            assert_eq!(x.len(), y.len(), "{at}");
            for (i, (x, y)) in x.iter().zip(y).enumerate() {
                assert_close(x, y, tol, &format!("{at}[{i}]"));
            }
        }
        (Value::Object(x), Value::Object(y)) => {
            assert_eq!(
                x.keys().collect::<Vec<_>>(),
                y.keys().collect::<Vec<_>>(),
                "{at}"
            );
            for (k, v) in x {
                assert_close(v, &y[k], tol, &format!("{at}.{k}"));
            }
        }
        _ => assert_eq!(a, b, "{at}"),
    }
}

/// `line` is an object with exactly these keys (in any order).
pub fn assert_keys(line: &Value, want: &[&str]) {
    let mut keys: Vec<&str> = line
        .as_object()
        .unwrap()
        .keys()
        .map(|k| k.as_str())
        .collect();
    let mut want = want.to_vec();
    keys.sort_unstable();
    want.sort_unstable();
    assert_eq!(keys, want, "{line}");
}

/// A safetensors file's header (8-byte length, then JSON) and where its data starts.
pub fn safetensors_header(bytes: &[u8]) -> (serde_json::Map<String, Value>, usize) {
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    (serde_json::from_slice(&bytes[8..8 + n]).unwrap(), 8 + n)
}

/// Tensor names from a safetensors header.
pub fn safetensors_names(bytes: &[u8]) -> Vec<String> {
    let (header, _) = safetensors_header(bytes);
    header
        .keys()
        .filter(|k| *k != "__metadata__")
        .cloned()
        .collect()
}

/// An F32 tensor of a safetensors file, flattened.
pub fn safetensors_f32(bytes: &[u8], name: &str) -> Vec<f32> {
    let (header, start) = safetensors_header(bytes);
    let entry = &header[name];
    assert_eq!(entry["dtype"], "F32", "{name}");
    let offsets = entry["data_offsets"].as_array().unwrap();
    let (a, b) = (
        start + offsets[0].as_u64().unwrap() as usize,
        start + offsets[1].as_u64().unwrap() as usize,
    );
    bytes[a..b]
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// A string of the safetensors metadata, parsed as JSON.
pub fn safetensors_metadata(bytes: &[u8], key: &str) -> Value {
    let (header, _) = safetensors_header(bytes);
    serde_json::from_str(header["__metadata__"][key].as_str().unwrap()).unwrap()
}

//! `attention-lab-fuzz [--seconds S | --cases N] [--seed X] [TARGET ...]`: fuzzes each target
//! (all by default) and prints one JSON line per target; exits 1 when anything crashed, and
//! writes each crashing input to artifacts/fuzz/TARGET-N.bin.
use attention_lab_fuzz::{fuzz, quiet_panics, targets::ALL, Budget};
use std::time::Duration;

fn main() {
    let mut budget = Budget {
        cases: None,
        time: Some(Duration::from_secs(10)),
    };
    let (mut seed, mut names) = (1u64, Vec::new());
    let mut args = std::env::args_os().skip(1);
    while let Some(arg) = args.next() {
        let arg = arg.to_string_lossy().into_owned();
        let mut value = || -> String {
            let v = args.next().map(|v| v.to_string_lossy().into_owned());
            v.unwrap_or_else(|| usage(&format!("{arg} needs a value")))
        };
        match arg.as_str() {
            "--seconds" => {
                budget = Budget {
                    cases: None,
                    time: Some(Duration::from_secs_f64(number(&value()))),
                }
            }
            "--cases" => {
                budget = Budget {
                    cases: Some(number(&value()) as u64),
                    time: None,
                }
            }
            "--seed" => seed = number(&value()) as u64,
            "-h" | "--help" => usage(""),
            name if ALL.iter().any(|t| t.name == name) => names.push(name.to_string()),
            other => usage(&format!("unknown target or flag {other:?}")),
        }
    }
    quiet_panics();
    let mut crashed = false;
    for target in ALL
        .iter()
        .filter(|t| names.is_empty() || names.iter().any(|n| n == t.name))
    {
        let report = fuzz(target, budget, seed);
        for (i, crash) in report.crashes.iter().enumerate() {
            crashed = true;
            let path = format!("artifacts/fuzz/{}-{i}.bin", target.name);
            let _ = std::fs::create_dir_all("artifacts/fuzz");
            let _ = std::fs::write(&path, &crash.input);
            eprintln!("CRASH {}: {} (input in {path})", target.name, crash.message);
        }
        println!(
            "{{\"target\":\"{}\",\"cases\":{},\"outcomes\":{},\"corpus\":{},\"crashes\":{},\"slowest_ms\":{:.1}}}",
            report.target, report.cases, report.outcomes, report.corpus, report.crashes.len(),
            report.slowest.as_secs_f64() * 1e3
        );
    }
    std::process::exit(i32::from(crashed));
}

fn number(s: &str) -> f64 {
    s.parse::<f64>()
        .ok()
        .filter(|x| x.is_finite() && *x >= 0.0)
        .unwrap_or_else(|| usage(&format!("{s:?} is not a non-negative number")))
}

fn usage(problem: &str) -> ! {
    let targets: Vec<&str> = ALL.iter().map(|t| t.name).collect();
    if !problem.is_empty() {
        eprintln!("attention-lab-fuzz: {problem}");
    }
    eprintln!(
        "usage: attention-lab-fuzz [--seconds S | --cases N] [--seed X] [TARGET ...]\ntargets: {}",
        targets.join(" ")
    );
    std::process::exit(2);
}

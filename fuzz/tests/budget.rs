//! The test command's fuzz budget: every target, a fixed number of cases from a fixed seed
//! (so a run is reproducible and its length does not depend on the machine's speed), and no
//! crash. `./dev fuzz SECONDS` runs the same targets for as long as asked.
use attention_lab_fuzz::{fuzz, quiet_panics, targets::ALL, Budget, Target};

const CASES_PER_TARGET: u64 = 2_000;

#[test]
fn no_target_crashes_within_the_budget() {
    quiet_panics();
    let mut failures = Vec::new();
    for target in ALL {
        let report = fuzz(
            target,
            Budget {
                cases: Some(CASES_PER_TARGET),
                time: None,
            },
            7,
        );
        eprintln!(
            "{}: {} cases, {} outcomes, corpus {}, slowest {:.1} ms",
            report.target,
            report.cases,
            report.outcomes,
            report.corpus,
            report.slowest.as_secs_f64() * 1e3
        );
        assert_eq!(report.cases, CASES_PER_TARGET);
        assert!(
            report.outcomes >= 2,
            "{}: every input gave the same outcome",
            report.target
        );
        for crash in report.crashes {
            failures.push(format!(
                "{}: {} on {:?}",
                target.name,
                crash.message,
                String::from_utf8_lossy(&crash.input)
            ));
        }
    }
    assert!(failures.is_empty(), "crashes:\n{}", failures.join("\n"));
}

/// The fuzzer finds a planted bug, so the budget test above can fail.
#[test]
fn the_fuzzer_finds_a_planted_panic() {
    fn planted(input: &[u8]) -> Result<(), String> {
        let s = String::from_utf8_lossy(input);
        let n: i64 = s.trim().parse().map_err(|_| "not a number".to_string())?;
        assert!(n >= 0, "negative {n}");
        Ok(())
    }
    const PLANTED: Target = Target {
        name: "planted",
        seeds: || vec![b"12".to_vec()],
        dictionary: &["-", "9"],
        hot_prefix: 0,
        run: planted,
    };
    quiet_panics();
    let report = fuzz(
        &PLANTED,
        Budget {
            cases: Some(5_000),
            time: None,
        },
        3,
    );
    assert!(
        report
            .crashes
            .iter()
            .any(|c| c.message.starts_with("negative")),
        "the planted panic was not found in {} cases",
        report.cases
    );
}

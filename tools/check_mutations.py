#!/usr/bin/env python3
"""Every reference test can fail: plant a known bug in a copy of the engine, run
engine/tests/reference.rs against it, and require that the tests named for that bug fail.

    python tools/check_mutations.py [--keep-going]

Each mutation is one regex replacement in one engine source file (the script stops with a
message if the pattern no longer matches exactly once, e.g. after a refactor: update the table). The copy
lives in a temp dir with its own target dir; the work tree is not touched. No Python maths here,
only cargo; ~20 s per mutation after the first build.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# (name, file under engine/src, regex that must match exactly once, replacement, tests that
# must fail). Anchored on names (function signatures, fields) rather than whole lines, so
# reformatting does not break them.
MUTATIONS = [
    ("no 1/sqrt(d_k)", "forward/mod.rs",
     r"scale: 1\.0 / \(config\.head_size\(\) as f32\)\.sqrt\(\)", "scale: 1.0",
     ["forward_matches_transformers_tensor_by_tensor", "trace_intermediates_follow_the_formula",
      "loss_and_gradients_match_torch_padding_mask"]),
    ("causal mask ignored", "batch.rs",
     r"(MaskMode::Causal => attention_mask\[j\] != 0) && j <= i", r"\1",
     ["forward_matches_transformers_tensor_by_tensor", "loss_and_gradients_match_torch_causal_mask",
      "adam_three_steps_match_torch_causal_mask"]),
    ("padding mask ignored", "batch.rs",
     r"MaskMode::Padding => attention_mask\[j\] != 0", "MaskMode::Padding => true",
     ["forward_matches_transformers_tensor_by_tensor", "loss_and_gradients_match_torch_padding_mask"]),
    ("tanh GELU instead of erf", "ops/gelu.rs",
     r"(pub fn gelu\(x: f32\) -> f32 \{\n)[^\n]*",
     r"\1    0.5 * x * (1.0 + (0.797_884_6f32 * (x + 0.044715 * x * x * x)).tanh())",
     ["forward_matches_transformers_tensor_by_tensor"]),
    ("GELU gradient without x*pdf", "ops/gelu.rs", r"cdf \+ x \* pdf", "cdf",
     ["loss_and_gradients_match_torch_padding_mask", "loss_and_gradients_match_torch_causal_mask"]),
    ("no padding_idx on the word embeddings", "backward/embeddings.rs", r"Some\(pad_token_id\)", "None",
     ["loss_and_gradients_match_torch_no_mask"]),
    ("LayerNorm eps 1e-5 instead of the config's", "ops/layernorm.rs", r"\(var \+ eps as f32\)", "(var + 1e-5)",
     ["forward_matches_transformers_tensor_by_tensor"]),
    ("Adam without the second-moment bias correction", "optim.rs",
     r"let bc2_sqrt = [^;]+;", "let bc2_sqrt = 1.0f32;",
     ["adam_three_steps_match_torch_padding_mask", "adam_three_steps_match_torch_causal_mask"]),
]


def run_tests(engine_dir, target_dir):
    env = dict(os.environ, CARGO_TARGET_DIR=str(target_dir))
    p = subprocess.run(
        ["cargo", "test", "--manifest-path", str(engine_dir / "Cargo.toml"), "--test", "reference", "--",
         "--test-threads", "2"],
        capture_output=True, text=True, env=env)
    failed = {l.split()[1] for l in p.stdout.splitlines() if l.startswith("test ") and l.rstrip().endswith("FAILED")}
    if p.returncode != 0 and not failed:
        raise RuntimeError(f"cargo test did not run:\n{p.stderr[-3000:]}")
    return failed


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--keep-going", action="store_true", help="report all mutations even after a miss")
    args = ap.parse_args()
    missed = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        target = tmp / "target"
        engine = tmp / "engine"
        shutil.copytree(ROOT / "engine", engine, ignore=shutil.ignore_patterns("target"))
        shutil.copy(ROOT / "Cargo.lock", engine / "Cargo.lock")
        baseline = run_tests(engine, target)
        if baseline:
            sys.exit(f"the unmutated engine already fails: {sorted(baseline)}")
        print("unmutated engine: all reference tests pass")
        for name, file, pattern, replacement, must_fail in MUTATIONS:
            path = engine / "src" / file
            original = path.read_text()
            mutated, n = re.subn(pattern, replacement, original)
            if n != 1:
                sys.exit(f"{name}: /{pattern}/ matches engine/src/{file} {n} times, not once; update MUTATIONS")
            path.write_text(mutated)
            try:
                failed = run_tests(engine, target)
            finally:
                path.write_text(original)
            caught = [t for t in must_fail if t in failed]
            status = "caught" if len(caught) == len(must_fail) else "MISSED"
            print(f"{status:7} {name}: {len(failed)} tests fail ({', '.join(sorted(failed)) or 'none'})")
            if status == "MISSED":
                missed.append(name)
                if not args.keep_going:
                    break
    if missed:
        sys.exit(f"mutations not caught by their tests: {missed}")
    print("every planted bug is caught")


if __name__ == "__main__":
    main()

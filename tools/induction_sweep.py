#!/usr/bin/env python3
"""Runs `attention-lab train --task repeat` over seeds and prints, per seed, the step of the
phase change (the first evaluation with second-copy accuracy >= 0.9), the best previous-token
score of layer 1, the best induction score of layer 2, and whether the textbook pair formed
(both >= 0.5). Dev only: the table the Induction heads claim's setting was chosen by.

    python3 tools/induction_sweep.py --config tiny.json --seeds 1-5 -- --batch-size 32 --lr 1e-3
"""
import argparse, json, subprocess, sys

CHANGE = 0.9
CLEAR = 0.5


def run(binary, config, seed, extra):
    cmd = [binary, "train", "--init", config, "--task", "repeat", "--seed", str(seed)] + extra
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    lines = [json.loads(l) for l in out.splitlines() if l.strip()]
    evals = [l for l in lines if "heads" in l]
    ablations = [l for l in lines if "copy2_accuracy_without" in l]
    change = next((e["step"] for e in evals if e["copy2_accuracy"] >= CHANGE), None)
    last = evals[-1]
    layers = max(h["layer"] for h in last["heads"])
    best = {}
    for h in last["heads"]:
        for score in ("previous", "duplicate", "induction"):
            key = (h["layer"], score)
            if key not in best or h[score] > best[key][0]:
                best[key] = (h[score], h["head"])
    pair = any(
        best[(l, "previous")][0] >= CLEAR and best[(l + 1, "induction")][0] >= CLEAR
        for l in range(1, layers)
    )
    return {
        "seed": seed,
        "change": change,
        "copy2": last["copy2_accuracy"],
        "copy1": last["copy1_accuracy"],
        "best": {f"L{l} {s}": f"{v:.2f} (H{h})" for (l, s), (v, h) in sorted(best.items())},
        "pair": pair,
        "ablations": ablations[-1]["copy2_accuracy_without"] if ablations else None,
    }


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--binary", default="target/release/attention-lab")
    p.add_argument("--config", required=True)
    p.add_argument("--seeds", default="1-5")
    p.add_argument("extra", nargs="*")
    a = p.parse_args()
    lo, hi = map(int, a.seeds.split("-"))
    results = []
    for seed in range(lo, hi + 1):
        r = run(a.binary, a.config, seed, a.extra)
        results.append(r)
        print(json.dumps(r), flush=True)
    changed = sum(r["change"] is not None for r in results)
    pairs = sum(r["pair"] for r in results)
    print(f"# {' '.join(a.extra)}: change in {changed} of {len(results)}, pair in {pairs} of {len(results)}",
          flush=True)


if __name__ == "__main__":
    sys.exit(main())

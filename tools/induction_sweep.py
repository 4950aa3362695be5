#!/usr/bin/env python3
"""Runs `attention-lab train --task repeat` over seeds and prints, per seed, the step of the
phase change (the first evaluation with second-copy accuracy >= 0.9), the second copy's accuracy
at the end, the best previous-token score of layer 1, the best induction score of layer 2,
whether the textbook pair formed (both >= 0.5), and the head whose ablation costs the second
copy most. Dev only: the tables the Induction heads claim's setting was chosen and reported by.

    python3 tools/induction_sweep.py --config tiny.json --seeds 1-10 [--parallel 2] [--screen] [--out DIR] -- [train flags]

Without train flags the CLI trains the page's Repeat setting (`engine::repeat::RepeatTask`).
`--screen` stops a run 300 steps after its change (enough to count changes while choosing a
setting; the scores are then those of that step, and there is no ablation). `--out DIR` keeps
each run's JSON lines (DIR/SEED.jsonl) and reuses those already there.
"""
import argparse
import concurrent.futures as cf
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

CHANGE = 0.9
CLEAR = 0.5


def run(binary, config, seed, extra, screen, out):
    path = os.path.join(out, f"{seed}.jsonl") if out else None
    cmd = [binary, "train", "--init", config, "--task", "repeat", "--seed", str(seed), "--threads", "1"] + extra
    change = []  # the step of the change, once seen

    def stop(d):
        if not (screen and "heads" in d):
            return False
        if not change and d["copy2_accuracy"] >= CHANGE:
            change.append(d["step"])
        return bool(change) and d["step"] >= change[0] + 300

    return common.sweep_run(cmd, path, stop)[0]


def summary(seed, lines):
    evals = [l for l in lines if "heads" in l]
    ablations = [l for l in lines if "copy2_accuracy_without" in l]
    change = next((e["step"] for e in evals if e["copy2_accuracy"] >= CHANGE), None)
    last = evals[-1]
    best = {}
    for h in last["heads"]:
        for score in ("previous", "duplicate", "induction"):
            key = (h["layer"], score)
            if key not in best or h[score] > best[key][0]:
                best[key] = (h[score], h["head"])
    prev, ind = best[(1, "previous")], best[(2, "induction")]
    needed = None
    if ablations:
        w = min(ablations[-1]["copy2_accuracy_without"], key=lambda a: a["copy2_accuracy"])
        needed = f"L{w['layer']} H{w['head']} → {w['copy2_accuracy']:.2f}"
    return {
        "seed": seed, "change": change, "step": last["step"], "copy2": last["copy2_accuracy"],
        "copy1": last["copy1_accuracy"], "previous": f"{prev[0]:.2f} (L1 H{prev[1]})",
        "induction": f"{ind[0]:.2f} (L2 H{ind[1]})", "pair": prev[0] >= CLEAR and ind[0] >= CLEAR,
        "most_needed": needed,
    }


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--binary", default="target/release/attention-lab")
    p.add_argument("--config", required=True)
    p.add_argument("--seeds", default="1-5")
    p.add_argument("--parallel", type=int, default=1)
    p.add_argument("--screen", action="store_true")
    p.add_argument("--out")
    p.add_argument("extra", nargs="*")
    a = p.parse_args()
    if a.out:
        os.makedirs(a.out, exist_ok=True)
    lo, hi = map(int, a.seeds.split("-"))
    seeds = range(lo, hi + 1)
    with cf.ThreadPoolExecutor(a.parallel) as ex:
        runs = list(ex.map(lambda s: run(a.binary, a.config, s, a.extra, a.screen, a.out), seeds))
    results = [summary(s, lines) for s, lines in zip(seeds, runs)]
    print("| seed | change | second copy at the end | best L1 previous | best L2 induction | pair | most needed head (second copy without it) |")
    print("|---|---|---|---|---|---|---|")
    for r in results:
        change = f"{r['change']:,}" if r["change"] is not None else "—"
        print(f"| {r['seed']} | {change} | {r['copy2']:.2f} (step {r['step']:,}) | {r['previous']} | {r['induction']} "
              f"| {'yes' if r['pair'] else 'no'} | {r['most_needed'] or '—'} |")
    steps = sorted(r["change"] for r in results if r["change"] is not None)
    changed = len(steps)
    median = steps[len(steps) // 2] if steps else None
    print(f"# {' '.join(a.extra) or 'the Repeat setting'}: change in {changed} of {len(results)}"
          f" (median step {median}, worst {steps[-1] if steps else None}), pair in {sum(r['pair'] for r in results)} of {len(results)}",
          flush=True)


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Runs `attention-lab train` (the page's default run, or it with the flags given) over seeds
with `--heads-every`, and prints per seed the first step at which the Heads claim is borne out
(two heads take different roles, both decided), whether it stays borne out to the end of the
run, and the two heads with different roles at that step (the pair with the largest shares).
Dev only: the tables the default run's setting was chosen and reported by
(`engine::default_run`).

    python3 tools/heads_sweep.py --seeds 1-10 [--steps 6000] [--every 100] [--screen N]
                                 [--out DIR] [--binary PATH] -- [train flags]

Without train flags the CLI trains the page's default run. Each run is one thread
(`--threads 1`), so its CPU time gives the native steps/s of the setting (training and the
measurements; a measurement reads 32 sentences, about a step's work). `--screen N` stops a run
N measurements after its first "borne out" (enough to choose a setting; "stays" then covers
those). `--out DIR` keeps each run's JSON lines (DIR/SEED.jsonl, with the CPU seconds in
DIR/SEED.cpu) and reuses those already there.
"""
import argparse
import os
import resource
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


def cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run(binary, seed, steps, every, extra, screen, out):
    path = os.path.join(out, f"{seed}.jsonl") if out else None
    cmd = [binary, "train", "--seed", str(seed), "--threads", "1", "--steps", str(steps),
           "--heads-every", str(every)] + extra
    since = []  # the measurements since the first "borne out", that one included

    def stop(d):
        if since or d["verdict"] == "borne out":
            since.append(d)
        return screen is not None and len(since) > screen

    before = cpu_seconds()
    # The measurements; a step's losses are not kept.
    lines, made = common.sweep_run(cmd, path, stop, keep=lambda d: "heads" in d)
    cpu_path = path[:-6] + ".cpu" if path else None
    if made:
        cpu = cpu_seconds() - before
        if cpu_path:
            with open(cpu_path, "w") as f:
                f.write(f"{cpu}\n")
    else:
        cpu = float(open(cpu_path).read()) if os.path.exists(cpu_path) else None
    return lines, cpu


def pair(line):
    """The two heads taking different roles with the largest shares, as "L1 H2 previous 62%"."""
    taking = []
    for h in line["heads"]:
        if h["role"] is not None:
            share = h["shares"][line["relations"].index(h["role"])]
            taking.append((share, f"L{h['layer']} H{h['head']} {h['role']} {share * 100:.0f}%", h["role"]))
    best = None
    for i, a in enumerate(taking):
        for b in taking[i + 1:]:
            if a[2] != b[2] and (best is None or a[0] + b[0] > best[0]):
                best = (a[0] + b[0], sorted([a, b], key=lambda t: t[1]))
    return ", ".join(t[1] for t in best[1]) if best else "—"


def summary(seed, lines, cpu):
    first = next((i for i, l in enumerate(lines) if l["verdict"] == "borne out"), None)
    last_step = lines[-1]["step"]
    return {
        "seed": seed,
        "borne": lines[first]["step"] if first is not None else None,
        "stays": first is not None and all(l["verdict"] == "borne out" for l in lines[first:]),
        "until": last_step,
        "pair": pair(lines[first]) if first is not None else "—",
        "end": lines[-1]["verdict"],
        "steps_per_s": last_step / cpu if cpu else None,
    }


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--binary", default="target/release/attention-lab")
    p.add_argument("--seeds", default="1-10")
    p.add_argument("--steps", type=int, default=6000)
    p.add_argument("--every", type=int, default=100)
    p.add_argument("--screen", type=int)
    p.add_argument("--out")
    p.add_argument("extra", nargs="*")
    a = p.parse_args()
    if a.out:
        os.makedirs(a.out, exist_ok=True)
    lo, hi = map(int, a.seeds.split("-"))
    results = []
    started = time.time()
    print("| seed | borne out at step | stays (to step) | two heads with different roles, then | verdict at the end | native steps/s |")
    print("|---|---|---|---|---|---|")
    for seed in range(lo, hi + 1):
        lines, cpu = run(a.binary, seed, a.steps, a.every, a.extra, a.screen, a.out)
        r = summary(seed, lines, cpu)
        results.append(r)
        borne = f"{r['borne']:,}" if r["borne"] is not None else "—"
        speed = f"{r['steps_per_s']:.0f}" if r["steps_per_s"] else "—"
        print(f"| {seed} | {borne} | {'yes' if r['stays'] else 'no'} ({r['until']:,}) | {r['pair']} | {r['end']} | {speed} |",
              flush=True)
    steps = sorted(r["borne"] for r in results if r["borne"] is not None)
    median = steps[(len(steps) - 1) // 2] if steps else None
    speeds = [r["steps_per_s"] for r in results if r["steps_per_s"]]
    speed = sum(speeds) / len(speeds) if speeds else None
    print(f"# {' '.join(a.extra) or 'the default run'}: borne out in {len(steps)} of {len(results)} within {a.steps:,} steps"
          f" (median step {median}, worst {steps[-1] if steps else None}); stays in {sum(r['stays'] for r in results)};"
          f" native {speed:.0f} steps/s (one thread); {time.time() - started:.0f} s" if speed else "",
          flush=True)


if __name__ == "__main__":
    sys.exit(main())

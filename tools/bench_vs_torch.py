#!/usr/bin/env python3
"""Training-step speed of the Rust engine next to PyTorch eager, one thread each, same run.

    python tools/bench_vs_torch.py [--iters 50] [--warmup 5] [--rounds 5] [--best] [--skip-build]

Workload (the same on both sides, see engine/benches/common/mod.rs): BertForPreTraining with
vocab 2000, dropout 0.1 (train mode), Adam(lr 1e-3), batch B = 8 with no padding, 15% of the
positions masked and labelled, NSP labels; presets
    tiny : hidden 64,  2 layers, 4 heads, intermediate 256,  T = 32
    small: hidden 256, 4 layers, 4 heads, intermediate 1024, T = 64
Each iteration times forward, backward and the optimiser update separately and the whole step
(zero grads + forward + backward + update). The run alternates Rust and torch in `rounds`
rounds of iters/rounds steps (after warm-up), so load from other processes hits both sides
alike; reported is the median over rounds of each round's median (or, --best, the best round).

torch: torch.set_num_threads(1), eager attention, `model(..., labels=, next_sentence_label=)`
(HF computes MLM logits at every position). Rust: `cargo run --release --example bench_step`,
single-threaded by construction (matrixmultiply without its threading feature); its default
training path runs the MLM decoder on labelled rows only, so the same phases are also reported
with MlmScope::AllPositions ("*_all_positions") for a like-for-like comparison.

Targets (step, torch_ms / rust_ms): tiny >= 2, small >= 1. Exit status 1 if one is missed.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VOCAB, BATCH, MASK_PROB = 2000, 8, 0.15
PRESETS = {
    "tiny": dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=256, seq_len=32),
    "small": dict(hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024, seq_len=64),
}
TARGETS = {"tiny": 2.0, "small": 1.0}
PHASES = ["forward", "backward", "update", "step"]


def torch_batch(torch, seq_len):
    g = torch.Generator().manual_seed(7)
    ids = torch.randint(5, VOCAB, (BATCH, seq_len), generator=g)
    labels = torch.full((BATCH, seq_len), -100)
    per_row = round(seq_len * MASK_PROB)
    for b in range(BATCH):
        pos = 1 + torch.randperm(seq_len - 1, generator=g)[:per_row]
        labels[b, pos] = ids[b, pos]
        ids[b, pos] = 4  # [MASK]
    token_type = (torch.arange(seq_len) >= seq_len // 2).long().expand(BATCH, seq_len).contiguous()
    return dict(
        input_ids=ids,
        token_type_ids=token_type,
        attention_mask=torch.ones(BATCH, seq_len, dtype=torch.long),
        labels=labels,
        next_sentence_label=torch.arange(BATCH) % 2,
    )


class TorchBench:
    """One preset's model, Adam and batch, kept across rounds so its state keeps evolving."""

    def __init__(self, name):
        import torch
        from transformers import BertConfig, BertForPreTraining

        self.torch = torch
        p = dict(PRESETS[name])
        seq_len = p.pop("seq_len")
        config = BertConfig(vocab_size=VOCAB, max_position_embeddings=128, **p)  # dropout 0.1 default
        self.model = BertForPreTraining._from_config(config, attn_implementation="eager")
        assert self.model.config._attn_implementation == "eager"
        self.model.train()
        self.opt = torch.optim.Adam(self.model.parameters(), lr=1e-3)
        self.batch = torch_batch(torch, seq_len)
        self.params = sum(p.numel() for p in self.model.parameters())

    def run(self, iters, warmup):
        """Median ms per phase over `iters` steps after `warmup`."""
        times = {k: [] for k in PHASES}
        for i in range(warmup + iters):
            t0 = time.perf_counter()
            self.opt.zero_grad()
            tf = time.perf_counter()
            loss = self.model(**self.batch).loss
            t1 = time.perf_counter()
            loss.backward()
            t2 = time.perf_counter()
            self.opt.step()
            t3 = time.perf_counter()
            assert self.torch.isfinite(loss)
            if i >= warmup:
                for k, v in zip(PHASES, (t1 - tf, t2 - t1, t3 - t2, t3 - t0)):
                    times[k].append(v * 1e3)
        return {k: statistics.median(v) for k, v in times.items()}


def rust_command(build):
    if build:
        subprocess.run(["cargo", "build", "--quiet", "--release", "-p", "attention-lab-engine", "--example", "bench_step"],
                       cwd=ROOT, check=True)
    return [str(ROOT / "target" / "release" / "examples" / "bench_step")]


def bench_rust(cmd, iters, warmup):
    out = subprocess.run(cmd + [str(iters), str(warmup)], cwd=ROOT, check=True, capture_output=True, text=True)
    return json.loads(out.stdout)["presets"]


def torch_info():
    """Version, BLAS and threading lines of torch's build config (call after set_num_threads)."""
    import torch

    lines = []
    for l in torch.__config__.show().splitlines():
        l = l.strip()
        if l.startswith("- Build settings"):
            lines += [f"- {kv.strip()}" for kv in l.split(":", 1)[1].split(",") if kv.strip().startswith(("BLAS_INFO", "USE_MKL", "USE_OPENMP"))]
        elif any(k in l for k in ("MKL", "OpenMP", "CPU capability")):
            lines.append(l)
    lines += [l.strip() for l in torch.__config__.parallel_info().splitlines() if "threads" in l.lower() or "backend" in l.lower()]
    return torch.__version__, lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=5, help="alternate rust/torch this many times")
    ap.add_argument("--best", action="store_true", help="report the best round instead of the median")
    ap.add_argument("--skip-build", action="store_true", help="use target/release/examples/bench_step as is")
    ap.add_argument("--json", type=Path, help="also write the numbers here")
    args = ap.parse_args()

    import torch

    torch.set_num_threads(1)
    torch.manual_seed(0)
    cmd = rust_command(build=not args.skip_build)
    benches = {name: TorchBench(name) for name in PRESETS}
    # Rounds alternate the two sides, so load from other processes (2 shared cores) falls on
    # both alike; per phase the median of the round medians is reported, and the best round.
    per_iter = max(1, args.iters // args.rounds)
    rounds_rust, rounds_torch = [], []
    for r in range(args.rounds):
        rounds_rust.append(bench_rust(cmd, per_iter, args.warmup))
        rounds_torch.append({name: b.run(per_iter, args.warmup if r == 0 else 1) for name, b in benches.items()})
    pool = statistics.median if not args.best else min
    rust = {name: {"params": rounds_rust[0][name]["params"],
                   "median_ms": {k: pool(rr[name]["median_ms"][k] for rr in rounds_rust)
                                 for k in rounds_rust[0][name]["median_ms"]}} for name in PRESETS}
    tch = {name: {"params": benches[name].params,
                  "median_ms": {k: pool(rt[name][k] for rt in rounds_torch) for k in PHASES}} for name in PRESETS}

    version, info = torch_info()
    print(f"torch {version}, torch.__config__ (after torch.set_num_threads(1)):")
    for l in info:
        print(f"  {l}")
    print(f"load average (1/5/15 min): {os.getloadavg()} on {os.cpu_count()} cores; other processes skew both sides")
    print(f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')} (torch does not use OpenBLAS; "
          "the Rust engine uses matrixmultiply, no BLAS)")
    how = "best round" if args.best else "median of the round medians"
    print(f"{args.rounds} alternating rounds of {per_iter} steps (+ warm-up); {how}; ms per batch of {BATCH}\n")
    print(f"{'preset':6} {'phase':10} {'torch':>9} {'rust':>9} {'torch/rust':>10} {'rust(all pos)':>13} {'ratio':>6}")
    ok = True
    summary = {}
    for name in PRESETS:
        r, t = rust[name]["median_ms"], tch[name]["median_ms"]
        assert rust[name]["params"] == tch[name]["params"], (name, rust[name]["params"], tch[name]["params"])
        summary[name] = {}
        for ph in PHASES:
            ratio = t[ph] / r[ph]
            ratio_all = t[ph] / r[f"{ph}_all_positions"]
            summary[name][ph] = {"torch_ms": t[ph], "rust_ms": r[ph], "ratio": ratio,
                                 "rust_all_positions_ms": r[f"{ph}_all_positions"], "ratio_all_positions": ratio_all}
            print(f"{name:6} {ph:10} {t[ph]:9.3f} {r[ph]:9.3f} {ratio:9.2f}x {r[ph + '_all_positions']:13.3f} {ratio_all:5.2f}x")
        step = summary[name]["step"]["ratio"]
        met = step >= TARGETS[name]
        ok &= met
        print(f"  -> {name}: step {step:.2f}x torch (target >= {TARGETS[name]:g}x): {'MET' if met else 'MISSED'}; "
              f"params {rust[name]['params']}\n")
    if args.json:
        args.json.write_text(json.dumps({"torch": version, "iters": args.iters, "results": summary}, indent=1))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()

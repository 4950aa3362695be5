"""Shared bits of the check and sweep scripts: paths, the CLI, a sweep's run of one seed, the shape of
`inspect`'s JSON, masks."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLI = ROOT / "target" / "release" / "attention-lab"


def build_cli():
    """`cargo build --release -p attention-lab-cli` (a no-op when up to date)."""
    print("building the CLI (cargo build --release -p attention-lab-cli) ...", file=sys.stderr)
    subprocess.run(["cargo", "build", "--quiet", "--release", "-p", "attention-lab-cli"], cwd=ROOT, check=True)


def run_cli(*args):
    """Runs the CLI; returns stdout, raising with its stderr when it fails."""
    cmd = [str(CLI), *map(str, args)]
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stderr}")
    return p.stdout


def sweep_run(cmd, path, stop, keep=lambda _: True):
    """One seed's run of a sweep: the JSON objects `cmd` prints, a line each, that `keep`
    accepts, until `stop(object)` says of one of them that the run has shown enough (the process
    is then killed). With `path`, they are kept there, and a run whose file is already there is
    read back instead of made again. Returns (objects, made): `made` is False for a run read
    back."""
    if path and os.path.exists(path) and os.path.getsize(path) > 0:
        with open(path) as f:
            return [json.loads(l) for l in f if l.strip()], False
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines, stopped = [], False
    for line in p.stdout:
        if not line.strip():
            continue
        d = json.loads(line)
        if not keep(d):
            continue
        lines.append(d)
        if stop(d):
            stopped = True
            p.kill()
            break
    p.wait()
    if p.returncode != 0 and not stopped:
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stderr.read()}")
    if path:
        with open(path, "w") as f:
            f.write("".join(json.dumps(l) + "\n" for l in lines))
    return lines, True


def matrix(m):
    """A trace Matrix ({rows, cols, data} with null for -inf) or nested lists -> list of rows."""
    import numpy as np

    if isinstance(m, dict):
        data = np.array([np.nan if x is None else x for x in m["data"]], dtype=np.float64)
        return data.reshape(m["rows"], m["cols"])
    return np.array(m, dtype=np.float64)


def additive_mask(torch, attention_mask, mode):
    """The `attention_mask` argument that makes HF BERT apply the engine's MaskMode `mode`.

    padding: HF's own 2-D mask. none: all ones. causal: a prepared 4-D additive mask
    (B, 1, T, T), 0 where key j <= query i and j is not padding, finfo.min elsewhere, which
    transformers 5 passes to eager attention as is.
    """
    if mode == "padding":
        return attention_mask
    if mode == "none":
        return torch.ones_like(attention_mask)
    assert mode == "causal", mode
    b, t = attention_mask.shape
    tril = torch.tril(torch.ones(t, t, dtype=torch.bool))
    allowed = tril[None] & attention_mask.bool()[:, None, :]
    m = torch.zeros(b, 1, t, t, dtype=torch.float32)
    return m.masked_fill(~allowed[:, None], torch.finfo(torch.float32).min)


def load_json(text):
    return json.loads(text)

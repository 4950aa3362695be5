"""Op-level reference fixtures for the attention variants, read by engine/tests/attention_reference.rs.

Called by make_fixtures.py (`write(out_dir)`; its --check mode recomputes and compares). Writes
engine/tests/fixtures/attention/*.json, one case per file:

  softmax_*.json   sliding window, padding / causal / no mask, GQA and MQA: the output of
                   torch.nn.functional.scaled_dot_product_attention with the same explicit
                   boolean mask (enable_gqa=True when G < H), and the gradients of q, k, v for
                   the loss Σ r ⊙ output. The Rust test runs both the full and the tiled kernel
                   (several block sizes) against each.
  linear_*.json    linear attention (Katharopoulos et al. 2020) by a direct torch implementation
                   of context_i = Σ_j φ(q_i)·φ(k_j) v_j / Σ_j φ(q_i)·φ(k_j), φ = elu + 1, over the
                   allowed keys; padding and causal masks, output and gradients.
  alibi_*.json     ALiBi (Press et al. 2022) by a direct torch implementation: softmax(QKᵀ·scale
                   − m_h·|i − j| + M)·V, its slopes m_h from transformers' BLOOM
                   (`build_alibi_tensor`, which holds m_h·j); padding, causal, window, GQA, for
                   H = 4 and the non-powers of two H = 6 and 12; output and gradients.
  rope.json        transformers' RoFormer rotary embeddings: RoFormerSinusoidalPositionalEmbedding's
                   table and RoFormerSelfAttention.apply_rotary_position_embeddings on q and k,
                   with gradients.

Every file: {"name", "kind": "softmax" | "linear" | "alibi" | "rope", "B", "T", "H", "G", "D",
  "mask": "none" | "padding" | "causal", "window": int | null, "key_mask": [[int]] (B×T),
  "scale": f, "q": [f] (B, T, H·D) row-major, "k", "v": [f] (B, T, G·D), "r": [f] upstream
  gradient shaped as the output, "out": [f], "dq", "dk", "dv": [f]} (rope: q and k only, "out_q",
  "out_k" the rotated ones, "r_q", "r_k", "dq", "dk").
Inputs are rounded to 3 decimals, so Rust and torch read the same floats; softmax and linear
references are computed in float64, rope in float32 as RoFormer does.
"""

import json
from pathlib import Path

import torch
import torch.nn.functional as F


def rand(gen, *shape):
    return torch.round(torch.randn(*shape, generator=gen, dtype=torch.float64) * 1000) / 1000


def flat(x):
    return [float(f"{v:.8g}") for v in x.detach().reshape(-1).tolist()]


def key_mask(b, t):
    """Sequence 0 all real, sequence 1 with its last key padded."""
    m = torch.ones(b, t, dtype=torch.int64)
    m[1, -1] = 0
    return m


def allowed(mask, window, km, t):
    """(B, 1, T, T) boolean: query i may see key j (the engine's MaskMode + window)."""
    i = torch.arange(t)[:, None]
    j = torch.arange(t)[None, :]
    a = torch.ones(km.shape[0], 1, t, t, dtype=torch.bool)
    if mask in ("padding", "causal"):
        a &= km[:, None, None, :].bool()
    if mask == "causal":
        a &= j <= i
    if window is not None:
        a &= (i - j).abs() < window
    return a


def heads(x, n, d):
    """(B, T, n·D) → (B, n, T, D)."""
    b, t, _ = x.shape
    return x.reshape(b, t, n, d).transpose(1, 2)


def merge(x):
    b, n, t, d = x.shape
    return x.transpose(1, 2).reshape(b, t, n * d)


def alibi_slopes(h):
    """transformers' BLOOM slopes (H): build_alibi_tensor gives m_h·j for key j, so key 1's."""
    from transformers.models.bloom.modeling_bloom import build_alibi_tensor

    return build_alibi_tensor(torch.ones(1, 2), h, torch.float64)[:, 0, 1]


def alibi_bias(h, t):
    """(1, H, T, T): −m_h·|i − j|, the bias each head adds to its scaled scores."""
    i = torch.arange(t)[:, None]
    j = torch.arange(t)[None, :]
    return -alibi_slopes(h)[:, None, None] * (i - j).abs().to(torch.float64)[None]


def case(name, kind, seed, b=2, t=7, h=4, g=4, d=4, mask="padding", window=None, scale=None):
    gen = torch.Generator().manual_seed(seed)
    q, k, v = rand(gen, b, t, h * d), rand(gen, b, t, g * d), rand(gen, b, t, g * d)
    r = rand(gen, b, t, h * d)
    km = key_mask(b, t)
    a = allowed(mask, window, km, t)
    q.requires_grad_(), k.requires_grad_(), v.requires_grad_()
    qh, kh, vh = heads(q, h, d), heads(k, g, d), heads(v, g, d)
    # BERT's 1/√d unless the case says otherwise (a model with "attention_scaling": "none": 1).
    scale = 1.0 / d**0.5 if scale is None else scale
    if kind == "softmax":
        out = F.scaled_dot_product_attention(qh, kh, vh, attn_mask=a, scale=scale, enable_gqa=g < h)
    elif kind == "alibi":
        # Direct formula: the bias before the mask, then softmax over the allowed keys.
        kh, vh = kh.repeat_interleave(h // g, dim=1), vh.repeat_interleave(h // g, dim=1)
        s = (qh @ kh.transpose(-1, -2)) * scale + alibi_bias(h, t)
        out = torch.softmax(s.masked_fill(~a, float("-inf")), dim=-1) @ vh
    else:
        # Direct formula, T×T on purpose: the reference is the definition, not the algorithm.
        kh, vh = kh.repeat_interleave(h // g, dim=1), vh.repeat_interleave(h // g, dim=1)
        phi_q, phi_k = F.elu(qh) + 1, F.elu(kh) + 1
        w = (phi_q @ phi_k.transpose(-1, -2)) * a
        out = (w @ vh) / w.sum(-1, keepdim=True)
    out = merge(out)
    (out * r).sum().backward()
    return {
        "name": name, "kind": kind, "B": b, "T": t, "H": h, "G": g, "D": d,
        "mask": mask, "window": window, "key_mask": km.tolist(), "scale": scale,
        "q": flat(q), "k": flat(k), "v": flat(v), "r": flat(r), "out": flat(out),
        "dq": flat(q.grad), "dk": flat(k.grad), "dv": flat(v.grad),
    }


def rope_case(seed=7, b=2, t=9, h=2, d=6):
    from transformers.models.roformer.modeling_roformer import (
        RoFormerSelfAttention,
        RoFormerSinusoidalPositionalEmbedding,
    )

    gen = torch.Generator().manual_seed(seed)
    q, k = rand(gen, b, t, h * d).float(), rand(gen, b, t, h * d).float()
    r_q, r_k = rand(gen, b, t, h * d).float(), rand(gen, b, t, h * d).float()
    emb = RoFormerSinusoidalPositionalEmbedding(32, d)
    with torch.no_grad():
        emb.weight.copy_(emb.create_weight())
    sinusoidal_pos = emb((b, t))[None, None, :, :]
    q.requires_grad_(), k.requires_grad_()
    out_q, out_k = RoFormerSelfAttention.apply_rotary_position_embeddings(sinusoidal_pos, heads(q, h, d), heads(k, h, d))
    out_q, out_k = merge(out_q), merge(out_k)
    ((out_q * r_q).sum() + (out_k * r_k).sum()).backward()
    return {
        "name": "rope", "kind": "rope", "B": b, "T": t, "H": h, "G": h, "D": d,
        "q": flat(q), "k": flat(k), "r_q": flat(r_q), "r_k": flat(r_k),
        "out_q": flat(out_q), "out_k": flat(out_k), "dq": flat(q.grad), "dk": flat(k.grad),
    }


CASES = [
    ("softmax_padding", "softmax", dict(mask="padding")),
    ("softmax_causal", "softmax", dict(mask="causal")),
    ("softmax_none", "softmax", dict(mask="none")),
    ("softmax_window_padding", "softmax", dict(mask="padding", window=3)),
    ("softmax_window_causal", "softmax", dict(mask="causal", window=2)),
    ("softmax_gqa", "softmax", dict(mask="padding", g=2)),
    ("softmax_mqa_causal", "softmax", dict(mask="causal", g=1)),
    ("softmax_gqa_window_causal", "softmax", dict(mask="causal", g=2, window=3)),
    ("linear_padding", "linear", dict(mask="padding")),
    ("linear_causal", "linear", dict(mask="causal")),
    ("linear_gqa_causal", "linear", dict(mask="causal", g=2)),
    # Unscaled scores, d = 16 so that 1 and 1/√d differ by 4×.
    ("softmax_unscaled_padding", "softmax", dict(mask="padding", d=16, scale=1.0)),
    ("softmax_unscaled_causal_window", "softmax", dict(mask="causal", d=16, window=3, scale=1.0)),
    ("alibi_padding", "alibi", dict(mask="padding", h=6, g=6, d=2)),
    ("alibi_causal", "alibi", dict(mask="causal")),
    ("alibi_none", "alibi", dict(mask="none", h=12, g=12, d=2)),
    ("alibi_window_padding", "alibi", dict(mask="padding", window=3)),
    ("alibi_window_causal", "alibi", dict(mask="causal", h=6, g=3, d=2, window=3)),
    ("alibi_gqa_causal", "alibi", dict(mask="causal", h=12, g=4, d=2)),
]


def write(out_dir):
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    fixtures = [case(name, kind, 100 + n, **kw) for n, (name, kind, kw) in enumerate(CASES)]
    fixtures.append(rope_case())
    for f in fixtures:
        (out_dir / f"{f['name']}.json").write_text(json.dumps(f, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    write(Path(__file__).resolve().parent.parent / "engine" / "tests" / "fixtures" / "attention")

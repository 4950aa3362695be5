#!/usr/bin/env python3
"""Checks pytorch/attention_lab.py, the plain-PyTorch module the page shows and exports as a
notebook, against the engine's torch fixtures, and its stage marks against their contract.

    tools/.venv/bin/python tools/check_pytorch_module.py [--cli BINARY [--minilm DIR]] [--keep DIR]

Fixtures (engine/tests/fixtures/): reference/ (BertForPreTraining: every forward case of
cases.json, the training files' losses, gradients and optimiser steps), variants/gqa1, gqa2,
rotary (padding and causal: hidden states, attention weights, logits, losses, gradients) and
RoFormer's own checkpoints, decoder/lm, seq2seq/model (encoder output, decoder self- and
cross-attention, logits, loss, gradients, one Adam step), and the op-level attention/*.json
(window, no mask, unscaled, ALiBi, linear, GQA/MQA, rope; the softmax ones also tiled).
Every loaded checkpoint must fill every parameter, use every tensor, and save back under the
same names.

Stage marks (`# stage: NAME[, NAME] [if FEATURE, ...] [-> TENSOR (DIMS)]`, pytorch/README.md):
the grammar, and for every figure of every view of every kind of model exactly one applicable
mark with `->`. The names, features, dimensions and views are the project's own, read from
protocol/names.json (generated from the Rust enums by protocol/tests/names.rs): this script
spells none of them. The marked tensors are read while the module runs (sys.settrace), sliced
as the page slices them, and compared with the fixtures' q/k/v and hidden states and with each
other.

--cli BINARY: trains small models from scratch with `attention-lab train` (absolute, rotary,
ALiBi, GQA, linear, unscaled, a decoder, Repeat, an encoder–decoder), then compares every
matrix of `attention-lab inspect` (q, k, v, rotated, φ, scores, masks, weights, context, tiles,
hidden, logits) under several masks and windows with the module's marked tensors.

Then `attention-lab heads` on those of them trained on a corpus (encoders and decoders, each
attention), on the page's default run (`train` with no model, 3,000 steps) and, with --minilm
DIR, on MiniLM: every head's shares, standard errors, the baseline, roles and verdict recomputed
from the rows it printed (ids, segments, counted queries) by the module's own forward pass, one
sentence at a time, with the relations, the ratio estimator's error and the calls as `heads
--help` states them.

Tolerance 1e-4 absolute. Prints one line per case with its largest difference, writes
pytorch/record.json's "fixtures" (and with --cli, "cli" and "heads") keeping its other keys, and
exits non-zero on any failure.
"""

import argparse
import contextlib
import importlib.util
import json
import platform
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import torch
from safetensors import safe_open
from safetensors.torch import load_file

ROOT = Path(__file__).resolve().parent.parent
MODULE = ROOT / "pytorch" / "attention_lab.py"
RECORD = ROOT / "pytorch" / "record.json"
NAMES_FILE = ROOT / "protocol" / "names.json"


def fnv1a64(data):
    """FNV-1a, 64 bits, as 16 hex digits: the fingerprint protocol/tests/pytorch_record.rs checks
    the record against (it tells an edited module from the one the record was made for)."""
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"
FIXTURES = ROOT / "engine" / "tests" / "fixtures"
HEADS_SOURCE = "engine/src/experiments/heads.rs"
TOLERANCE = 1e-4

spec = importlib.util.spec_from_file_location("attention_lab", MODULE)
al = importlib.util.module_from_spec(spec)
spec.loader.exec_module(al)


class Cases:
    """Each case's largest difference; a case fails past TOLERANCE or when `ok` says so."""

    def __init__(self):
        self.cases = []

    def add(self, name, diff, ok=None, tolerance=TOLERANCE):
        diff = float(diff)
        ok = (diff <= tolerance) if ok is None else (ok and diff <= tolerance)
        self.cases.append({"name": name, "max_abs_diff": diff, "ok": bool(ok)})
        print(f"{'ok  ' if ok else 'FAIL'}  {diff:.2e}  {name}", flush=True)

    def guard(self, name, check, *args):
        """Runs one family's check; an exception is a failing case that names it."""
        try:
            check(*args)
        except Exception as e:  # noqa: BLE001 - any error fails the case, with its message
            self.add(f"{name}: {type(e).__name__}: {e}", float("inf"), ok=False)

    @property
    def passed(self):
        return all(c["ok"] for c in self.cases)


def diff(a, b):
    """Largest |a − b|, −∞ equal to −∞ (and NaN anywhere a failure)."""
    a = torch.as_tensor(a, dtype=torch.float64)
    b = torch.as_tensor(b, dtype=torch.float64)
    if a.shape != b.shape:
        raise AssertionError(f"shapes differ: {tuple(a.shape)} vs {tuple(b.shape)}")
    same_inf = torch.isinf(a) & torch.isinf(b) & (torch.sign(a) == torch.sign(b))
    d = (a - b).abs().masked_fill(same_inf, 0.0)
    return float("inf") if torch.isnan(d).any() else (d.max().item() if d.numel() else 0.0)


# ------------------------------------------------------------------------ stage marks

MARK = re.compile(
    r"^(?P<code>.*\S)  +# stage: (?P<names>[a-z-]+(?:, [a-z-]+)*)"
    r"(?: if (?P<features>[a-z-]+(?:, [a-z-]+)*))?"
    r"(?: -> (?P<tensor>[A-Za-z_][A-Za-z_0-9]*) \((?P<dims>[A-Za-z0-9]+(?:, [A-Za-z0-9]+)*)\))?$"
)
EXPORTED = json.loads(NAMES_FILE.read_text())
# A figure is marked by the lines that compute it: cross-attention's head matrices by
# self-attention's ("cross-weights" by those of "weights").
COMPUTED_AS = {f["name"]: f["computed_as"] for f in EXPORTED["figures"]}
# What a mark may name: a figure computed by lines of its own.
NAMES = {name for name, own in COMPUTED_AS.items() if name == own}
FEATURES = set(EXPORTED["mark_features"])
DIMS = set(EXPORTED["mark_dims"])
# Each attention the stepper walks, for every kind of model: its features, and the figures the
# module computes for it (ModelShape::computed_figures), as the marks name them.
VIEWS = [(", ".join(v["features"]), set(v["features"]), [COMPUTED_AS[f] for f in v["figures"]])
         for v in EXPORTED["views"]]


def parse_marks():
    """{line number: mark} of the module, and the grammar's errors."""
    marks, errors = {}, []
    for n, line in enumerate(MODULE.read_text().splitlines(), 1):
        if "# stage:" not in line:
            continue
        m = MARK.match(line)
        if not m:
            errors.append(f"line {n}: not in the mark grammar: {line.strip()}")
            continue
        mark = {
            "line": n,
            "names": m["names"].split(", "),
            "features": m["features"].split(", ") if m["features"] else None,
            "tensor": m["tensor"],
            "dims": m["dims"].split(", ") if m["dims"] else None,
        }
        errors += [f"line {n}: unknown name {x}" for x in mark["names"] if x not in NAMES]
        errors += [f"line {n}: unknown feature {x}" for x in mark["features"] or [] if x not in FEATURES]
        errors += [f"line {n}: unknown dimension {x}" for x in mark["dims"] or [] if x not in DIMS and not x.isdigit()]
        if mark["tensor"] and len(mark["names"]) != 1:
            errors.append(f"line {n}: a mark with -> names one figure")
        marks[n] = mark
    return marks, errors


def applies(mark, features):
    return mark["features"] is None or any(f in features for f in mark["features"])


def arrow_lines(marks, name, features):
    return [m for m in marks.values() if name in m["names"] and m["tensor"] and applies(m, features)]


def check_mark_contract(cases):
    marks, errors = parse_marks()
    cases.add(f"marks: grammar ({len(marks)} marked lines)", 0.0, ok=not errors)
    for e in errors:
        print("   ", e)
    problems = []
    for desc, features, figures in VIEWS:
        for f in figures:
            n = len(arrow_lines(marks, f, features))
            if n != 1:
                problems.append(f"{desc}: {f} has {n} applicable marks with ->")
    computed = {f for _, _, figures in VIEWS for f in figures}
    unused = computed - {n for m in marks.values() for n in m["names"]}
    problems += [f"no mark names {n}" for n in sorted(unused)]
    cases.add(f"marks: exactly one '->' per figure in each of {len(VIEWS)} views", 0.0, ok=not problems)
    for p in problems[:20]:
        print("   ", p)
    return marks


class MarkTracer:
    """Records the marked tensors while the module runs: after a marked line executes, the
    value of its TENSOR, the `self` of its frame and the `self` of its caller."""

    def __init__(self, marks):
        self.marks = {n: m for n, m in marks.items() if m["tensor"]}
        self.pending = {}
        self.records = []  # (line, self, caller self, value)
        self.file = str(MODULE)

    def __enter__(self):
        sys.settrace(self._global)
        return self

    def __exit__(self, *exc):
        sys.settrace(None)

    def _global(self, frame, event, arg):
        return self._local if frame.f_code.co_filename == self.file else None

    def _local(self, frame, event, arg):
        line = self.pending.pop(frame, None)
        if line is not None:
            value = frame.f_locals.get(self.marks[line]["tensor"])
            caller = frame.f_back.f_locals.get("self") if frame.f_back else None
            if isinstance(value, torch.Tensor):
                self.records.append((line, frame.f_locals.get("self"), caller, value.detach().clone()))
        if event == "line" and frame.f_lineno in self.marks:
            self.pending[frame] = frame.f_lineno
        return self._local


def module_parts(model):
    """{id(module): (part, layer)} for every module a mark's frame can be: "encoder", "self",
    "cross" by layer, the embeddings (layer None)."""
    parts = {}

    def bert(m, part):
        parts[id(m)] = (part, None)
        parts[id(m.embedding)] = (part, None)
        for l, layer in enumerate(m.layers):
            parts[id(layer)] = (part, l)
            parts[id(layer.pos_ffn)] = (part, l)
            mha = al.layer_attention(layer)
            parts[id(mha)] = parts[id(mha.attention)] = (part, l)
            if isinstance(layer, al.DecoderLayer):
                parts[id(layer.dec_enc_attn)] = parts[id(layer.dec_enc_attn.attention)] = ("cross", l)

    if isinstance(model, al.EncoderDecoder):
        bert(model.encoder, "encoder")
        bert(model.decoder, "self")
    else:
        bert(model, "self")
    return parts


def features_of(config, mask, window, part):
    c = config
    if part == "cross":
        return {"softmax", "padding", "cross", "seq2seq"}
    f = {c.position_embedding_type, c.attention_type}
    f.add({"padding": "padding", "causal": "causal", "none": "no-mask"}["causal" if c.is_decoder else mask])
    if c.is_decoder:
        f.add("decoder")
    if window:
        f.add("window")
    if c.num_key_value_heads < c.num_attention_heads:
        f.add("gqa")
    return f


class Figures:
    """The marked tensors of one traced forward, as the page reads them: figure(name, part,
    layer, head) → the matrix, after checking the tensor's shape against its DIMS."""

    def __init__(self, marks, tracer, model, sizes):
        self.marks, self.model, self.sizes = marks, model, sizes
        parts = module_parts(model)
        self.by = {}  # (line, part, layer) -> [values in call order]
        for line, self_, caller, value in tracer.records:
            if self_ is None:  # get_attn_mask: its caller is the BERT; first call self, then cross
                part, _ = parts.get(id(caller), ("?", None))
                key = (line, part, None)
                if part == "self" and key in self.by and isinstance(model, al.EncoderDecoder):
                    key = (line, "cross", None)
            else:
                part, layer = parts.get(id(self_), ("?", None))
                key = (line, part, layer)
            self.by.setdefault(key, []).append(value)

    def config(self, part):
        m = self.model
        if isinstance(m, al.EncoderDecoder):
            return (m.encoder if part == "encoder" else m.decoder).config
        return m.config

    def figure(self, name, part, layer, head, mask, window):
        c = self.config(part)
        features = features_of(c, mask, window, part)
        marks = arrow_lines(self.marks, name, features)
        assert len(marks) == 1, (name, part, features, len(marks))
        mark = marks[0]
        in_module = part if part != "cross" else "self"
        candidates = [(mark["line"], part, layer), (mark["line"], in_module, layer), (mark["line"], part, None),
                      (mark["line"], in_module, None)]
        values = next((self.by[k] for k in candidates if k in self.by), None)
        assert values, f"{name}: line {mark['line']} did not run for {part} layer {layer}"
        value = values[0]  # one call per module (get_attn_mask: one per part)
        H = c.num_attention_heads
        G = H if part == "cross" else c.num_key_value_heads  # cross-attention's K/V have every head
        sizes = dict(B=1, C=c.hidden_size, H=H, G=G, D=c.head_size, I=c.intermediate_size, V=c.vocab_size)
        sizes.update(self.sizes[part])
        want = [int(d) if d.isdigit() else sizes[d] for d in mark["dims"]]
        assert list(value.shape) == want, f"{name}: {mark['tensor']} is {list(value.shape)}, marked {mark['dims']} = {want}"
        index = []
        for d in mark["dims"][:-2]:
            index.append({"B": 0, "1": 0, "H": head, "G": head // (H // G) if head is not None else None}[d])
        return value[tuple(index)]


def trace(model, marks, call, grad=False):
    """call() with the marked tensors recorded; with grad, the graph is kept for backward."""
    tracer = MarkTracer(marks)
    with torch.set_grad_enabled(grad), tracer:
        out = call()
    return out, tracer


# ----------------------------------------------------------------------- checkpoints


def load_dir(path):
    path = Path(path)
    config = json.loads((path / "config.json").read_text())
    tensors = load_file(str(path / "model.safetensors"))
    model = al.build_model(config, list(tensors))
    unfilled, unused = al.load_hf_weights(model, tensors)
    model.eval()
    return model, tensors, unfilled, unused


def check_round_trip(cases, name, model, tensors, unfilled, unused, allowed_unused=()):
    saved = al.hf_state_dict(model)
    expected = {n: t for n, t in tensors.items() if n not in unused and not al._is_derived_buffer(n)}
    same_names = set(saved) == set(expected)
    d = max((diff(saved[n], expected[n].float()) for n in expected if n in saved), default=0.0)
    ok = not unfilled and set(unused) <= set(allowed_unused) and same_names
    cases.add(f"{name}: loads with nothing unfilled, saves the same {len(saved)} names", d, ok=ok)
    if not ok:
        print("    unfilled", unfilled, "unused", unused,
              "names only saved", sorted(set(saved) - set(expected))[:5], "only loaded", sorted(set(expected) - set(saved))[:5])


def named_grads(model):
    if isinstance(model, al.EncoderDecoder):
        out = {}
        for half, prefix in (("encoder", ""), ("decoder", "bert.")):
            for n, p in al.hf_params(getattr(model, half)):
                n = prefix + n[len("bert."):] if n.startswith("bert.") else n
                out[f"{half}.{n}"] = p
        return out
    return dict(al.hf_params(model))


def is_key_bias(name):
    """A key bias's gradient is 0 in exact arithmetic (q·b_K adds one constant to a whole row of
    scores, which softmax ignores), float noise in practice; Adam's update ≈ lr·sign(g) turns
    that noise into ±lr per step, in directions no two implementations agree on. As the
    engine's tests (engine/tests/reference.rs), those weights are held to 2·lr·steps."""
    return name.endswith("self.key.bias")


def check_adam_weights(cases, name, named, expected, lr, steps, extra=0.0):
    """Weights after Adam: key biases to 2·lr·steps, everything else to the tolerance."""
    rest = max([diff(named[n].detach().reshape(-1), w) for n, w in expected.items() if not is_key_bias(n)] + [extra])
    keys = max(diff(named[n].detach().reshape(-1), w) for n, w in expected.items() if is_key_bias(n))
    cases.add(f"{name}: losses and weights (key biases aside)", rest)
    cases.add(f"{name}: key biases, zero gradient in exact arithmetic, within 2·lr·steps = {2 * lr * steps:g}",
              keys, tolerance=2 * lr * steps + TOLERANCE)


def t(x, dtype=torch.long):
    return torch.tensor(x, dtype=dtype)


# ------------------------------------------------------------------ fixture families


def check_reference(cases, marks):
    d = FIXTURES / "reference"
    model, tensors, unfilled, unused = load_dir(d / "model")
    check_round_trip(cases, "reference/model", model, tensors, unfilled, unused)
    for c in json.loads((d / "cases.json").read_text())["cases"]:
        ids, tt, am = t([c["input_ids"]]), t([c["token_type_ids"]]), t([c["attention_mask"]])
        out, tracer = trace(model, marks, lambda: model(ids, tt, am, c["mask"]))
        T = ids.size(1)
        figures = Figures(marks, tracer, model, {"self": {"T": T, "Tq": T, "Tk": T}})
        worst = 0.0
        for l, layer in enumerate(c["layers"]):
            for h, head in enumerate(layer["heads"]):
                worst = max(worst, diff(out.attentions[l][0, h], head["weights"]))
                for name, key in (("queries", "q"), ("keys", "k"), ("values", "v"), ("weights", "weights")):
                    worst = max(worst, diff(figures.figure(name, "self", l, h, c["mask"], None), head[key]))
        for l, hs in enumerate(c["hidden_states"]):
            worst = max(worst, diff(out.hidden_states[l][0], hs))
        worst = max(worst, diff(out.pooled[0], c["pooled"]), diff(out.logits[0], c["mlm_logits"]),
                    diff(out.nsp_logits[0], c["nsp_logits"]))
        cases.add(f"reference/{c['name']} ({c['mask']}): q, k, v, weights, hidden states, pooled, MLM and NSP logits", worst)
        if c["name"] in ("pair", "causal_padded"):
            check_figure_consistency(cases, f"reference/{c['name']}", figures, out, c["mask"], None)
    for mode in ("padding", "causal", "none"):
        f = json.loads((d / f"train_{mode}.json").read_text())
        check_training(cases, d / "model", f, mode)


def forward_batch(model, b, mode):
    return model(t(b["input_ids"]), t(b["token_type_ids"]), t(b["attention_mask"]), mode)


def check_training(cases, model_dir, f, mode):
    b = f["batch"]
    model, *_ = load_dir(model_dir)
    named = dict(al.hf_params(model))
    out = forward_batch(model, b, mode)
    total, mlm, nsp = al.mlm_nsp_loss(out, t(b["mlm_labels"]), t(b["nsp_labels"]))
    total.backward()
    loss_diff = max(diff(total.item(), f["loss"]["total"]), diff(mlm.item(), f["loss"]["mlm"]),
                    diff(nsp.item(), f["loss"]["nsp"]))
    grad_diff = max(diff(named[n].grad.reshape(-1), g["data"]) for n, g in f["grads"].items())
    cases.add(f"reference/train_{mode}: loss (total, MLM, NSP)", loss_diff)
    cases.add(f"reference/train_{mode}: gradients of all {len(f['grads'])} parameters", grad_diff,
              ok=set(f["grads"]) == set(named))
    for opt_name in ("sgd", "adam"):
        if opt_name not in f:
            continue
        spec_ = f[opt_name]
        model, *_ = load_dir(model_dir)
        named = dict(al.hf_params(model))
        opt = (torch.optim.SGD if opt_name == "sgd" else torch.optim.Adam)(model.parameters(), lr=spec_["lr"])
        losses = []
        for _ in range(spec_["steps"]):
            opt.zero_grad()
            loss = al.mlm_nsp_loss(forward_batch(model, b, mode), t(b["mlm_labels"]), t(b["nsp_labels"]))[0]
            losses.append(loss.item())
            loss.backward()
            opt.step()
        weights = {n: torch.tensor(w["data"]) for n, w in spec_["weights"].items()}
        what = f"reference/train_{mode}: {spec_['steps']} {opt_name} step(s)"
        if opt_name == "adam":
            check_adam_weights(cases, what, named, weights, spec_["lr"], spec_["steps"], diff(losses, spec_["losses"]))
        else:
            cases.add(f"{what}: weights", max(diff(named[n].detach().reshape(-1), w) for n, w in weights.items()))


def expected_of(path):
    tensors = load_file(str(path))
    with safe_open(str(path), "pt") as f:
        meta = f.metadata()
    return tensors, meta


def check_variants(cases, marks):
    for name in ("gqa1", "gqa2", "rotary"):
        d = FIXTURES / "variants" / name
        model, tensors, unfilled, unused = load_dir(d)
        check_round_trip(cases, f"variants/{name}", model, tensors, unfilled, unused)
        exp, meta = expected_of(d / "expected.safetensors")
        b = json.loads(meta["batch"])
        for mode in ("padding", "causal"):
            model, *_ = load_dir(d)
            named = dict(al.hf_params(model))
            out, tracer = trace(model, marks, lambda: forward_batch(model, b, mode), grad=True)
            total, mlm, nsp = al.mlm_nsp_loss(out, t(b["mlm_labels"]), t(b["nsp_labels"]))
            worst = max(
                diff(torch.stack([h[0] for h in out.hidden_states]), exp[f"{mode}.hidden_states"]),
                diff(torch.stack([a[0] for a in out.attentions]), exp[f"{mode}.attentions"]),
                diff(out.logits, exp[f"{mode}.mlm_logits"]), diff(out.nsp_logits, exp[f"{mode}.nsp_logits"]),
                diff(torch.stack([total, mlm, nsp]), exp[f"{mode}.loss"]))
            cases.add(f"variants/{name} ({mode}): hidden states, weights, logits, losses", worst)
            grads = {k[len(f"{mode}.grad."):]: v for k, v in exp.items() if k.startswith(f"{mode}.grad.")}
            if grads:
                total.backward()
                g = max(diff(named[n].grad, v) for n, v in grads.items())
                cases.add(f"variants/{name} ({mode}): gradients of all {len(grads)} parameters", g,
                          ok=set(grads) == set(named))
            T = len(b["input_ids"][0])
            # The tracer saw the whole batch; the figures are row 0's.
            figures = Figures(marks, tracer, model, {"self": {"B": len(b["input_ids"]), "T": T, "Tq": T, "Tk": T}})
            check_figure_consistency(cases, f"variants/{name} ({mode})", figures, out, mode, None)
    # RoFormer's own checkpoints: "roformer." and bare names, its sinusoidal buffer skipped.
    exp, meta = expected_of(FIXTURES / "variants" / "rotary" / "expected.safetensors")
    b = json.loads(meta["batch"])
    for name in ("roformer_model", "roformer_mlm"):
        d = FIXTURES / "variants" / name
        model, tensors, unfilled, unused = load_dir(d)
        # RoFormerForMaskedLM's MLM head without NSP: not a pre-training head, unused (as the engine).
        allowed = [n for n in unused if n.startswith("cls.")] if name == "roformer_mlm" else []
        check_round_trip(cases, f"variants/{name}", model, tensors, unfilled, unused, allowed)
        with torch.no_grad():
            out = forward_batch(model, b, "padding")
        cases.add(f"variants/{name}: hidden states equal the rotary model's",
                  diff(torch.stack([h[0] for h in out.hidden_states]), exp["padding.hidden_states"]))


def check_decoder(cases):
    d = FIXTURES / "decoder" / "lm"
    model, tensors, unfilled, unused = load_dir(d)
    check_round_trip(cases, "decoder/lm", model, tensors, unfilled, unused)
    exp, meta = expected_of(d / "expected.safetensors")
    b = json.loads(meta["batch"])
    named = dict(al.hf_params(model))
    # A decoder is causal whatever mask is asked for.
    out = forward_batch(model, b, "padding")
    loss = al.next_token_loss(out.logits, t(b["labels"]))
    worst = max(diff(out.logits, exp["logits"]), diff(loss.reshape(1), exp["loss"]),
                diff(torch.stack([h[0] for h in out.hidden_states]), exp["hidden_states"]),
                diff(torch.stack([a[0] for a in out.attentions]), exp["attentions"]))
    cases.add("decoder/lm: logits, next-token loss, hidden states, causal weights", worst)
    loss.backward()
    grads = {k[5:]: v for k, v in exp.items() if k.startswith("grad.")}
    cases.add(f"decoder/lm: gradients of all {len(grads)} parameters",
              max(diff(named[n].grad, v) for n, v in grads.items()), ok=set(grads) == set(named))
    model, *_ = load_dir(d)
    named = dict(al.hf_params(model))
    opt = torch.optim.Adam(model.parameters(), lr=float(meta["adam_lr"]))
    al.next_token_loss(forward_batch(model, b, "padding").logits, t(b["labels"])).backward()
    opt.step()
    adam = {k[5:]: v.reshape(-1) for k, v in exp.items() if k.startswith("adam.")}
    check_adam_weights(cases, "decoder/lm: one Adam step", named, adam, float(meta["adam_lr"]), 1)


def check_seq2seq(cases, marks):
    d = FIXTURES / "seq2seq" / "model"
    model, tensors, unfilled, unused = load_dir(d)
    check_round_trip(cases, "seq2seq/model", model, tensors, unfilled, unused)
    exp, meta = expected_of(d / "expected.safetensors")
    b = json.loads(meta["batch"])

    def run(m):
        return m(t(b["input_ids"]), t(b["attention_mask"]), t(b["decoder_input_ids"]), t(b["decoder_attention_mask"]))

    out, tracer = trace(model, marks, lambda: run(model), grad=True)
    loss = al.seq2seq_loss(out.logits, t(b["labels"]))
    worst = max(diff(out.logits, exp["logits"]), diff(loss.reshape(1), exp["loss"]),
                diff(out.encoder_hidden_states[-1], exp["encoder_hidden"]),
                diff(torch.stack([h[1] for h in out.hidden_states]), exp["decoder_hidden_states"]),
                diff(torch.stack([a[1] for a in out.attentions]), exp["decoder_self_attentions"]),
                diff(torch.stack([a[1] for a in out.cross_attentions]), exp["cross_attentions"]))
    cases.add("seq2seq/model: logits, loss, encoder output, decoder hidden, self- and cross-attention", worst)
    named = named_grads(model)
    loss.backward()
    grads = {k[5:]: v for k, v in exp.items() if k.startswith("grad.")}
    cases.add(f"seq2seq/model: gradients of all {len(grads)} parameters",
              max(diff(named[n].grad, v) for n, v in grads.items()), ok=set(grads) == set(named))
    B, Ts, Tt = len(b["input_ids"]), len(b["input_ids"][0]), len(b["decoder_input_ids"][0])
    figures = Figures(marks, tracer, model, {"encoder": {"B": B, "T": Ts, "Tq": Ts, "Tk": Ts},
                                             "self": {"B": B, "T": Tt, "Tq": Tt, "Tk": Tt},
                                             "cross": {"B": B, "T": Tt, "Tq": Tt, "Tk": Ts}})
    check_figure_consistency(cases, "seq2seq/model", figures, out, "causal", None)
    model, *_ = load_dir(d)
    named = named_grads(model)
    opt = torch.optim.Adam(model.parameters(), lr=float(meta["adam_lr"]))
    al.seq2seq_loss(run(model).logits, t(b["labels"])).backward()
    opt.step()
    adam = {k[5:]: v.reshape(-1) for k, v in exp.items() if k.startswith("adam.")}
    check_adam_weights(cases, "seq2seq/model: one Adam step", named, adam, float(meta["adam_lr"]), 1)


def heads(x, n):
    B, T, _ = x.shape
    return x.view(B, T, n, -1).transpose(1, 2)


def merge(x):
    B, n, T, D = x.shape
    return x.transpose(1, 2).reshape(B, T, n * D)


def check_attention_ops(cases):
    for path in sorted((FIXTURES / "attention").glob("*.json")):
        f = json.loads(path.read_text())
        B, T, H, G, D = f["B"], f["T"], f["H"], f["G"], f["D"]
        shape_q, shape_kv = (B, T, H * D), (B, T, G * D)
        if f["kind"] == "rope":
            q = torch.tensor(f["q"]).view(shape_q).requires_grad_()
            k = torch.tensor(f["k"]).view(shape_q).requires_grad_()
            out_q, out_k = merge(al.apply_rotary(heads(q, H))), merge(al.apply_rotary(heads(k, H)))
            ((out_q * torch.tensor(f["r_q"]).view(shape_q)).sum() + (out_k * torch.tensor(f["r_k"]).view(shape_q)).sum()).backward()
            worst = max(diff(out_q.reshape(-1), f["out_q"]), diff(out_k.reshape(-1), f["out_k"]),
                        diff(q.grad.reshape(-1), f["dq"]), diff(k.grad.reshape(-1), f["dk"]))
            cases.add("attention/rope: apply_rotary and its gradients", worst)
            continue
        q = torch.tensor(f["q"]).view(shape_q).requires_grad_()
        k = torch.tensor(f["k"]).view(shape_kv).requires_grad_()
        v = torch.tensor(f["v"]).view(shape_kv).requires_grad_()
        mode = f["mask"]
        attn_mask = al.get_attn_mask(t(f["key_mask"]), T, mode, f["window"])
        causal = mode == "causal"
        if f["kind"] == "linear":
            attention = al.LinearAttention()
        else:
            attention = al.ScaledDotProductAttention(f["scale"], 0.0, alibi=f["kind"] == "alibi")
        context, _ = attention(heads(q, H), heads(k, G), heads(v, G), attn_mask, causal, f["window"])
        out = merge(context)
        (out * torch.tensor(f["r"]).view(shape_q)).sum().backward()
        worst = max(diff(out.reshape(-1), f["out"]), diff(q.grad.reshape(-1), f["dq"]),
                    diff(k.grad.reshape(-1), f["dk"]), diff(v.grad.reshape(-1), f["dv"]))
        what = f"{f['kind']}, {mode}, window {f['window']}, H {H} G {G}, scale {f['scale']:.3g}"
        cases.add(f"attention/{f['name']} ({what}): output and gradients", worst)
        if f["kind"] != "linear":
            with torch.no_grad():
                worst = 0.0
                for block in (1, 2, 3, 4, 7):
                    context, _ = attention(heads(q, H), heads(k, G), heads(v, G), attn_mask, causal, f["window"], block)
                    worst = max(worst, diff(merge(context).reshape(-1), f["out"]))
            cases.add(f"attention/{f['name']}: tiled_attention, blocks 1, 2, 3, 4, 7", worst)


def check_figure_consistency(cases, name, figures, out, mask, window):
    """The marked tensors agree with the outputs and with each other: embeddings-norm is
    hidden state 0, each layer's input the one before, layer-output the next, the concatenated
    heads each head's context side by side, GELU of the pre-activation the activation, the sum
    of the lookups the embeddings' sum, the cross-attention's sources the decoder's X and the
    encoder's output. Per head: weights are out.attentions'."""
    parts = ["encoder", "self"] if isinstance(figures.model, al.EncoderDecoder) else ["self"]
    worst = 0.0
    for part in parts:
        c = figures.config(part)
        hidden = out.encoder_hidden_states if part == "encoder" else out.hidden_states
        attentions = out.encoder_attentions if part == "encoder" else out.attentions
        row = 0  # the figures are the first example's
        fig = lambda n, l=None, h=None, p=part: figures.figure(n, p, l, h, mask, window)
        summed = fig("embeddings-token") + fig("embeddings-segment")
        if c.position_embedding_type == "absolute":
            summed = summed + fig("embeddings-position")
        worst = max(worst, diff(summed, fig("embeddings-sum")), diff(fig("embeddings-norm"), hidden[0][row]))
        for l in range(c.num_hidden_layers):
            worst = max(worst, diff(fig("input", l), hidden[l][row]), diff(fig("layer-output", l), hidden[l + 1][row]),
                        diff(fig("ffn-activation", l), al.gelu(fig("ffn-pre-activation", l))))
            concat = torch.cat([fig("context", l, h) for h in range(c.num_attention_heads)], dim=-1)
            worst = max(worst, diff(concat, fig("concatenated-heads", l)))
            rotary = c.position_embedding_type == "rotary"
            for h in range(c.num_attention_heads):
                worst = max(worst, diff(fig("weights", l, h), attentions[l][row, h]))
                if c.attention_type == "softmax":
                    q = fig("rotated-queries" if rotary else "queries", l, h)
                    k = fig("rotated-keys" if rotary else "keys", l, h)
                    worst = max(worst, diff(q @ k.T, fig("raw-scores", l, h)))
            if part == "self" and isinstance(figures.model, al.EncoderDecoder):
                cross = lambda n, h=None: figures.figure(n, "cross", l, h, mask, window)
                worst = max(worst, diff(cross("cross-encoder-output"), out.encoder_hidden_states[-1][row]),
                            diff(cross("cross-decoder-input"), fig("attention-add-norm", l)))
                for h in range(c.num_attention_heads):
                    worst = max(worst, diff(cross("weights", h), out.cross_attentions[l][row, h]),
                                diff(cross("queries", h) @ cross("keys", h).T, cross("raw-scores", h)))
    cases.add(f"{name}: marked tensors agree with the outputs and with each other", worst)


# ------------------------------------------------------------------------------ CLI


CORPUS = """the cat sat on the mat .
the dog ran to the park and the bird flew over the house
a big red bird sat in the tree
it was happy , and the sun was hot
she saw a small cat in the park
he ran to the small house
we saw the dog and the cat
the sun is big and red
a small cat sat in the big tree
the bird was sad
"""

CLI_MODELS = [
    # (name, config changes, train arguments)
    ("absolute", {}, []),
    ("rotary", {"position_embedding_type": "rotary"}, []),
    ("alibi", {"position_embedding_type": "alibi"}, []),
    ("gqa2", {"num_key_value_heads": 2}, []),
    ("mqa-rotary", {"num_key_value_heads": 1, "position_embedding_type": "rotary"}, []),
    ("linear", {"attention_type": "linear"}, []),
    ("linear-gqa-rotary", {"attention_type": "linear", "num_key_value_heads": 2, "position_embedding_type": "rotary"}, []),
    ("unscaled", {"attention_scaling": "none"}, []),
    ("decoder", {}, ["--objective", "next-token"]),
    ("decoder-alibi-gqa", {"position_embedding_type": "alibi", "num_key_value_heads": 2}, ["--objective", "next-token"]),
    ("repeat", {"position_embedding_type": "rotary"}, ["--task", "repeat", "--segment", "3-6", "--alphabet", "10"]),
    ("seq2seq-reverse", {}, ["--objective", "seq2seq", "--task", "reverse"]),
    ("seq2seq-rotary-gqa", {"position_embedding_type": "rotary", "num_key_value_heads": 2}, ["--objective", "seq2seq", "--task", "copy"]),
    ("seq2seq-linear", {"attention_type": "linear"}, ["--objective", "seq2seq", "--task", "reply"]),
]

INPUTS = [
    # (text, pair, mask, window, pad_to)
    ("the cat sat on the mat", "it was happy", "padding", None, None),
    ("the dog ran to the park", None, "causal", None, 10),
    ("a big red bird", "the sun is hot", "none", None, 12),
    ("she saw a small cat in the tree", None, "padding", 3, None),
    ("he ran to the house", "we saw it", "causal", 2, 13),
]
REPEAT_INPUTS = [("c f a h c f a h", None, "padding", None, None), ("b d e b d e", None, "causal", 3, 9)]

# `attention-lab inspect`'s key for each head figure (the command line's JSON names them).
HEAD_KEYS = {"queries": "q", "keys": "k", "values": "v", "rotated-queries": "q_rotated", "rotated-keys": "k_rotated",
             "phi-queries": "phi_q", "phi-keys": "phi_k", "raw-scores": "scores", "scaled-scores": "scaled",
             "alibi-bias": "alibi_bias", "masked-scores": "masked", "weights": "weights", "context": "context"}
assert set(HEAD_KEYS) <= NAMES, f"not figures of protocol/names.json: {set(HEAD_KEYS) - NAMES}"


def matrix(m):
    """An inspect matrix (nested lists, null = −∞) as a tensor."""
    return torch.tensor([[float("-inf") if x is None else x for x in row] for row in m], dtype=torch.float64)


def compare_heads(figures, part, layer, heads_json, mask, window):
    worst = 0.0
    for h, head in enumerate(heads_json):
        for name, key in HEAD_KEYS.items():
            if head.get(key) is None:
                continue
            worst = max(worst, diff(figures.figure(name, part, layer, h, mask, window), matrix(head[key])))
        if head.get("masked") is not None:
            m = matrix(head["masked"])
            worst = max(worst, diff(figures.figure("mask", part, layer, h, mask, window),
                                    torch.zeros_like(m).masked_fill(torch.isinf(m), float("-inf"))))
    return worst


def run_cli(binary, *args):
    p = subprocess.run([str(binary), *map(str, args)], capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{binary} {' '.join(map(str, args))}: {p.stderr}")
    return p.stdout


def check_cli(cases, marks, binary, work):
    work = Path(work)
    work.mkdir(parents=True, exist_ok=True)
    (work / "corpus.txt").write_text(CORPUS)
    base = {"vocab_size": 10, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
            "intermediate_size": 64, "max_position_embeddings": 32}
    for name, changes, args in CLI_MODELS:
        cases.guard(f"cli/{name}", check_cli_model, cases, marks, binary, work, base, name, changes, args)


def check_cli_model(cases, marks, binary, work, base, name, changes, args):
    cfg = work / f"{name}.json"
    cfg.write_text(json.dumps({**base, **changes}))
    out_dir = work / name
    extra = [] if "repeat" in args else ["--corpus", work / "corpus.txt"]
    run_cli(binary, "train", "--init", cfg, *extra, "--steps", 30, "--save", out_dir, "--threads", 1, *args)
    model, tensors, unfilled, unused = load_dir(out_dir)
    check_round_trip(cases, f"cli/{name}", model, tensors, unfilled, unused)
    if isinstance(model, al.EncoderDecoder):
        check_cli_seq2seq(cases, marks, binary, name, model, out_dir)
        return
    last = model.config.num_hidden_layers - 1
    for text, pair, mask, window, pad_to in (REPEAT_INPUTS if name == "repeat" else INPUTS):
        if window and model.config.attention_type == "linear":
            continue
        flags = ["--model", out_dir, "--text", text, "--mask", mask]
        flags += ["--pair", pair] if pair else []
        flags += ["--window", window] if window else []
        flags += ["--pad-to", pad_to] if pad_to else []
        j = json.loads(run_cli(binary, "inspect", *flags))
        ids, tt, am = t([j["input_ids"]]), t([j["token_type_ids"]]), t([j["attention_mask"]])
        out, tracer = trace(model, marks, lambda: model(ids, tt, am, mask, window))
        T = ids.size(1)
        figures = Figures(marks, tracer, model, {"self": {"T": T, "Tq": T, "Tk": T}})
        worst = max(compare_heads(figures, "self", l, layer["heads"], mask, window) for l, layer in enumerate(j["layers"]))
        worst = max(worst, diff(out.hidden_states[-1][0], matrix(j["hidden"])),
                    diff(figures.figure("layer-output", "self", last, None, mask, window), matrix(j["hidden"])))
        if j.get("mlm_logits") is not None:
            worst = max(worst, diff(out.logits[0], matrix(j["mlm_logits"])))
        if j.get("nsp_logits") is not None:
            worst = max(worst, diff(out.nsp_logits[0], j["nsp_logits"]))
        what = f"{mask}{f', window {window}' if window else ''}{', pair' if pair else ''}{f', padded to {pad_to}' if pad_to else ''}"
        cases.add(f"cli/{name} ({what}): every head's q, k, v, scores, mask, weights, context; hidden; logits", worst)
        if model.config.attention_type == "softmax":
            check_cli_tiles(cases, binary, name, model, flags, ids, tt, am, mask, window)


def check_cli_tiles(cases, binary, name, model, args, ids, tt, am, mask, window, block=3):
    j = json.loads(run_cli(binary, "inspect", *args, "--attention", "tiled", "--block", block))
    with torch.no_grad():
        out = model(ids, tt, am, mask, window, block=block)
        full = model(ids, tt, am, mask, window)
    worst, same_schedule = diff(out.hidden_states[-1], full.hidden_states[-1]), True
    for l, layer in enumerate(j["layers"]):
        for h, head in enumerate(layer["heads"]):
            mine = [(qb, kb, m[0, h], s[0, h]) for qb, kb, m, s in out.tiles[l]]
            schedule = [(x["q_block"], x["k_block"]) for x in head["tiles"]] == [(qb, kb) for qb, kb, _, _ in mine]
            same_schedule &= schedule
            for x, (_, _, m, s) in zip(head["tiles"], mine if schedule else []):
                worst = max(worst, diff(m, [float("-inf") if v is None else v for v in x["row_max"]]), diff(s, x["row_sum"]))
    cases.add(f"cli/{name} ({mask}{f', window {window}' if window else ''}): tiles of block {block}: schedule, row max and sum", worst,
              ok=same_schedule)


def check_cli_seq2seq(cases, marks, binary, name, model, out_dir):
    for source, target in (("the cat sat on the mat", "mat the on sat cat the"), ("a big red bird", "bird red")):
        j = json.loads(run_cli(binary, "inspect", "--model", out_dir, "--text", source, "--target", target))
        vocab = (out_dir / "vocab.txt").read_text().split("\n")
        src = t([[vocab.index(x) for x in j["source_tokens"]]])
        tgt = t([[vocab.index(x) for x in j["target_tokens"]]])
        out, tracer = trace(model, marks, lambda: model(src, torch.ones_like(src), tgt, torch.ones_like(tgt)))
        Ts, Tt = src.size(1), tgt.size(1)
        figures = Figures(marks, tracer, model, {"encoder": {"T": Ts, "Tq": Ts, "Tk": Ts},
                                                 "self": {"T": Tt, "Tq": Tt, "Tk": Tt},
                                                 "cross": {"T": Tt, "Tq": Tt, "Tk": Ts}})
        worst = max(compare_heads(figures, "encoder", l, layer["heads"], "padding", None)
                    for l, layer in enumerate(j["encoder_layers"]))
        for l, layer in enumerate(j["decoder_layers"]):
            worst = max(worst, compare_heads(figures, "self", l, layer["self"], "causal", None),
                        compare_heads(figures, "cross", l, layer["cross"], "padding", None))
        worst = max(worst, diff(out.logits[0], matrix(j["logits"])))
        cases.add(f"cli/{name} ({source!r} → {target!r}): encoder, decoder self and cross heads, logits", worst)


# ---------------------------------------------------------------------------- heads

# `attention-lab heads`'s relations, in its order; a key is the first that holds of self,
# [CLS], [SEP], previous, next, else rest (engine::experiments::heads::role).
RELATIONS = ["self", "previous", "next", "[CLS]", "[SEP]", "rest"]
SELF, PREVIOUS, NEXT, CLS, SEP, REST = range(6)
# A head takes a relation (not "rest") holding at least this share, with this many standard
# errors to spare, and more than the baseline (`heads --help`).
ROLE_SHARE, STANDARD_ERRORS = 0.5, 2.0
# The default run is borne out at a median of 1,800 steps over unseen seeds (docs/heads.md):
# trained this long, its heads take roles, so the roles and the verdict are compared too.
DEFAULT_RUN_STEPS = 3000


def relations(ids, cls, sep):
    """(T, T): the relation of key j to query i, by the precedence above."""
    T = len(ids)
    i = torch.arange(T)[:, None].expand(T, T)
    j = torch.arange(T)[None, :].expand(T, T)
    key = torch.tensor(ids)[None, :].expand(T, T)
    r = torch.full((T, T), REST)
    for rel, holds in ((NEXT, j == i + 1), (PREVIOUS, j == i - 1), (SEP, key == sep), (CLS, key == cls), (SELF, i == j)):
        r = torch.where(holds, torch.full_like(r, rel), r)  # the later, the earlier in precedence
    return r


def ratio_error(sums, counts):
    """The standard error over sentences of R = Σ y_s ÷ Σ n_s: √(S/(S−1) · Σ (y_s − R·n_s)²) ÷ Σ n_s
    (`sums` (S, ...), `counts` (S,)); infinite below two sentences."""
    S, n = sums.shape[0], counts.sum()
    if S < 2:
        return torch.full(sums.shape[1:], float("inf"), dtype=torch.float64)
    R = sums.sum(0) / n
    spread = ((sums - R * counts.view(-1, *[1] * (sums.dim() - 1))) ** 2).sum(0)
    return (S / (S - 1) * spread).sqrt() / n


def measure_heads(model, rows, cls, sep):
    """Each head's shares (L·H, 6), their standard errors over sentences, and the baseline (6),
    from the module's attention weights on `rows` (`heads`' printed rows: ids, segments, the
    query positions counted), each sentence one forward pass of its own, every position real."""
    causal = model.config.is_decoder  # a decoder reads its sentences under its causal mask
    sums, counts, baseline = [], [], torch.zeros(6, dtype=torch.float64)
    for row in rows:
        ids = t([row["ids"]])
        with torch.no_grad():
            out = model(ids, t([row["segments"]]), torch.ones_like(ids), "padding")
        weights = torch.stack([a[0] for a in out.attentions]).flatten(0, 1).double()  # (L·H, T, T)
        queries = t(row["queries"])
        rel = relations(row["ids"], cls, sep)[queries]  # (Q, T)
        one_hot = torch.nn.functional.one_hot(rel, 6).double()  # (Q, T, 6)
        sums.append(torch.einsum("nqt,qtr->nr", weights[:, queries], one_hot))
        counts.append(len(row["queries"]))
        T = len(row["ids"])
        sees = torch.ones(T, T, dtype=torch.bool)
        sees = sees.tril() if causal else sees
        uniform = sees[queries].double() / sees[queries].sum(1, keepdim=True)
        baseline += torch.einsum("qt,qtr->r", uniform, one_hot)
    sums, counts = torch.stack(sums), torch.tensor(counts, dtype=torch.float64)
    return sums.sum(0) / counts.sum(), ratio_error(sums, counts), baseline / counts.sum()


def role_calls(shares, errors, baseline):
    """Each head's role (a relation's name, or None) and the verdict, by `heads --help`'s rules:
    a call takes when share − 2·error clears the bar (≥ 50% and above the baseline), is not
    decided when only share + 2·error does; borne out when two heads take different roles, not
    borne out when no two could even were every undecided call a take."""
    clears = lambda x: (x >= ROLE_SHARE) & (x > baseline[:REST])
    margin = STANDARD_ERRORS * errors[:, :REST]
    takes = clears(shares[:, :REST] - margin)
    could = clears(shares[:, :REST] + margin)
    roles = [RELATIONS[int(torch.where(k, s, -1.0).argmax())] if k.any() else None
             for s, k in zip(shares[:, :REST], takes)]

    def two_differ(calls):
        sets = [set(torch.nonzero(c).flatten().tolist()) for c in calls]
        return any(r != q for a, mine in enumerate(sets) for theirs in sets[a + 1:] for r in mine for q in theirs)

    verdict = "borne out" if two_differ(takes) else "not decided" if two_differ(could) else "not borne out"
    return roles, verdict


def check_heads(cases, binary, name, model_dir, corpus=None):
    """`heads` on a checkpoint, recomputed from the rows it printed by the module: shares, errors,
    baseline to TOLERANCE; roles and verdict equal."""
    printed = json.loads(run_cli(binary, "heads", "--model", model_dir, *(["--corpus", corpus] if corpus else [])))
    assert printed["relations"] == RELATIONS, printed["relations"]
    model, _, unfilled, _ = load_dir(model_dir)
    assert not unfilled, f"parameters the checkpoint does not fill: {unfilled[:5]}"
    vocab = (Path(model_dir) / "vocab.txt").read_text().split("\n")
    rows = printed["rows"]
    shares, errors, baseline = measure_heads(model, rows, vocab.index("[CLS]"), vocab.index("[SEP]"))
    heads = printed["heads"]
    L, H = model.config.num_hidden_layers, model.config.num_attention_heads
    numbered = [(h["layer"], h["head"]) for h in heads] == [(l + 1, h + 1) for l in range(L) for h in range(H)]
    printed_errors = [[float("inf") if e is None else e for e in h["errors"]] for h in heads]
    found = {"shares": diff([h["shares"] for h in heads], shares), "errors": diff(printed_errors, errors),
             "baseline": diff(printed["baseline"], baseline)}
    queries = sum(len(r["queries"]) for r in rows)
    cases.add(f"heads/{name} ({L}×{H} heads, {len(rows)} sentences, {queries} query rows): shares, errors, baseline "
              f"(largest differences {found['shares']:.1e}, {found['errors']:.1e}, {found['baseline']:.1e})",
              max(found.values()), ok=numbered)
    roles, verdict = role_calls(shares, errors, baseline)
    taken = [f"L{h['layer']} H{h['head']} {h['role']}" for h in heads if h["role"]]
    same = [h["role"] for h in heads] == roles and printed["verdict"] == verdict
    cases.add(f"heads/{name}: roles and verdict recomputed ({verdict}; {', '.join(taken) or 'no head takes a role'})",
              0.0, ok=same)
    if not same:
        print(f"    printed {[h['role'] for h in heads]} {printed['verdict']!r}, recomputed {roles} {verdict!r}")


def check_heads_models(cases, binary, work, minilm):
    """`heads` on the CLI's models trained on a corpus (encoders and decoders of each attention),
    on the page's default run trained DEFAULT_RUN_STEPS steps, and on MiniLM (when given)."""
    work = Path(work)
    models = []
    for name, _, args in CLI_MODELS:
        if "--task" in args:
            continue  # Repeat reads no corpus; an encoder–decoder has no one stack of heads
        models.append((f"cli/{name}", work / name, work / "corpus.txt"))
    default_run = work / "default-run"
    run_cli(binary, "train", "--steps", DEFAULT_RUN_STEPS, "--save", default_run, "--threads", 1)
    models.append((f"default run, {DEFAULT_RUN_STEPS} steps (default corpus)", default_run, None))
    if minilm:
        models.append(("MiniLM-L6-H384 (default corpus)", Path(minilm), None))
    for name, model_dir, corpus in models:
        cases.guard(f"heads/{name}", check_heads, cases, binary, name, model_dir, corpus)


# ------------------------------------------------------------------------------ main


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cli", type=Path, help="an attention-lab binary: also compare with `inspect`")
    ap.add_argument("--keep", type=Path, help="train the --cli models into DIR (kept) instead of a temp dir")
    ap.add_argument("--minilm", type=Path, help="a MiniLM checkpoint directory: with --cli, also recompute its `heads`")
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)

    cases = Cases()
    marks = check_mark_contract(cases)
    cases.guard("reference", check_reference, cases, marks)
    cases.guard("variants", check_variants, cases, marks)
    cases.guard("decoder", check_decoder, cases)
    cases.guard("seq2seq", check_seq2seq, cases, marks)
    cases.guard("attention", check_attention_ops, cases)
    fixtures = cases

    record = json.loads(RECORD.read_text()) if RECORD.exists() else {}
    # The marks were checked against the names the project exported.
    module_hash = {path: fnv1a64((ROOT / path).read_bytes()) for path in ("pytorch/attention_lab.py", "protocol/names.json")}
    # The heads' recomputation vouches for the engine's measurement as well as for the module.
    heads_hash = {**module_hash, HEADS_SOURCE: fnv1a64((ROOT / HEADS_SOURCE).read_bytes())}
    section = lambda hashes, cases: {"hashes": hashes, "torch": torch.__version__, "python": platform.python_version(),
                                     "tolerance": TOLERANCE, "cases": cases.cases, "passed": cases.passed}
    record["fixtures"] = section(module_hash, fixtures)
    sections = [fixtures]
    if args.cli:
        cli, heads = Cases(), Cases()
        binary = args.cli.resolve()
        with contextlib.nullcontext(args.keep) if args.keep else tempfile.TemporaryDirectory() as work:
            check_cli(cli, marks, binary, work)
            check_heads_models(heads, binary, work, args.minilm)
        record["cli"] = section(module_hash, cli)
        record["heads"] = section(heads_hash, heads)
        sections += [cli, heads]
    RECORD.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
    total = sum(len(s.cases) for s in sections)
    failed = sum(not c["ok"] for s in sections for c in s.cases)
    print(f"{total - failed} of {total} cases passed; written to {RECORD.relative_to(ROOT)}")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

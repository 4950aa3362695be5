#!/usr/bin/env python3
"""Reference fixtures for engine/tests/reference.rs, computed by PyTorch + HF `transformers`.

Run (from the repository root, with the tools venv, see tools/README.md):

    python tools/make_fixtures.py            # writes engine/tests/fixtures/reference/
    python tools/make_fixtures.py --check    # recomputes and fails if the committed files differ

Everything is seeded, so a rerun writes the same bytes (same torch version, CPU).

What it writes, under engine/tests/fixtures/reference/:

  model/                 a tiny random `BertForPreTraining` in the Hugging Face layout, written by
                         `save_pretrained` (config.json, model.safetensors, vocab.txt,
                         tokenizer_config.json, ...). The Rust side loads it with
                         `engine::checkpoint::load_dir`, so this also tests reading a real
                         HF-written checkpoint (tied decoder absent from the file, etc.).
                         Vocab: [PAD] [UNK] [CLS] [SEP] [MASK] then 35 whole words (lower case,
                         plus "." "," "?"), hidden 16, 2 layers, 2 heads (D = 8), intermediate 32,
                         max_position 32, dropout 0, eager attention. Every parameter (biases and
                         LayerNorm γ/β included) is drawn at random with a large scale so attention
                         is far from uniform and no term of the maths is invisible.

  cases.json             forward cases:
    {
      "model": "model",                 # checkpoint dir, relative to this file
      "max_len": 32,                    # max_len passed to Tokenizer::encode
      "cases": [ {
        "name": str,
        "text": str, "pair": str | null, "pad_to": int | null,
        "mask": "none" | "padding" | "causal",     # engine MaskMode
        "tokens": [str] (T), "input_ids": [int] (T), "token_type_ids": [int] (T),
        "attention_mask": [int] (T),     # 1 real token, 0 padding (the tokenizer's)
        "layers": [ {                   # per layer l
            "heads": [ {                # per head h: rows = tokens
                "q": [[f]] (T×D), "k": [[f]] (T×D), "v": [[f]] (T×D),
                "weights": [[f]] (T×T)  # softmax(QKᵀ/√D + M), row = query, col = key
            } ] } ],
        "hidden_states": [[[f]]] (L+1, T, C),  # [0] embeddings after LayerNorm, [l+1] layer l output
        "pooled": [f] (C),
        "mlm_logits": [[f]] (T×V),
        "nsp_logits": [f] (2)
      } ]
    }
  train_padding.json, train_causal.json, train_none.json: one training batch under MaskMode
  padding / causal / none:
    {
      "mask": "padding" | "causal",
      "batch": { "input_ids": [[int]] (B×T), "token_type_ids": [[int]], "attention_mask": [[int]],
                 "mlm_labels": [[int]] (-100 = ignored), "nsp_labels": [int] (B) },
      "loss": { "total": f, "mlm": f, "nsp": f },   # as BertForPreTraining computes it
      "grads": { hf_name: { "shape": [int], "data": [f] (row-major) } },  # d total / dθ, every parameter
      "sgd":  { "lr": f, "steps": 1, "weights": { hf_name: {shape, data} } },  # torch.optim.SGD(lr),
                                                                              # padding file only
      "adam": { "lr": f, "steps": 3, "losses": [f] (loss before each step),
                "weights": { hf_name: {shape, data} } }  # torch.optim.Adam(lr); not in train_none
    }
    hf_name is the name in `BertForPreTraining.named_parameters()`; the tied decoder weight appears
    once, as bert.embeddings.word_embeddings.weight, with the gradient of both uses summed.

Floats are rounded to 7 significant digits (f32 has ~7.2), so the file itself adds at most
~5e-8 relative error.

Masks. Padding: HF's own 2-D mask. None: HF gets an all-ones mask (every key visible, padding
too). Causal: HF gets a prepared 4-D additive mask (B, 1, T, T) = 0 where (j <= i and key j is
not padding), finfo(float32).min elsewhere, which eager attention adds to QKᵀ/√D as is; the
script asserts that the resulting weights are exactly zero above the diagonal and on padding keys.
"""

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import torch
from transformers import BertConfig, BertForPreTraining, BertTokenizer

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "engine" / "tests" / "fixtures" / "reference"

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = (
    "the a cat dog sat on mat ran to park big small red blue bird flew over house and it "
    "was happy sad we saw tree in sun is hot she he . , ?"
).split()
VOCAB = SPECIALS + WORDS
assert len(VOCAB) == 40 and len(set(VOCAB)) == 40

MAX_LEN = 32
SEED = 1234
INIT_STD = 0.4

# (name, text, pair, pad_to, mask)
CASES = [
    ("single", "The cat sat on the mat.", None, None, "padding"),
    ("pair", "the dog ran to the park", "it was happy .", None, "padding"),
    ("padded", "a red bird flew", None, 10, "padding"),
    ("unknown_words", "The zebra saw cats in the tree?", None, None, "padding"),
    ("no_mask_padded", "she is sad", None, 7, "none"),
    ("causal", "we saw the big red house", None, None, "causal"),
    ("causal_padded", "he is hot", "the sun is big", 12, "causal"),
]

# Training batch: pairs, padded to T, some positions replaced by [MASK] and labelled.
TRAIN_T = 12
TRAIN_EXAMPLES = [
    # (text, pair, nsp label, positions to mask)
    ("the cat sat on the mat", "it was happy", 0, [2, 5, 9]),
    ("a big dog ran", "the sun is hot", 1, [3, 7]),
    ("she saw a bird", "we ran", 0, [1, 4, 6]),
]
SGD_LR = 0.1
ADAM_LR = 0.01
ADAM_STEPS = 3


def r7(x):
    """Round to 7 significant digits; json writes the shortest repr of the rounded double."""
    return float(f"{x:.7g}")


def rounded(t):
    """Tensor -> nested lists of 7-digit floats."""
    t = t.detach().to(torch.float64)
    if t.dim() == 0:
        return r7(t.item())
    return [rounded(s) for s in t] if t.dim() > 1 else [r7(x) for x in t.tolist()]


def flat(t):
    return {"shape": list(t.shape), "data": [r7(x) for x in t.detach().reshape(-1).tolist()]}


def build_model():
    torch.manual_seed(SEED)
    config = BertConfig(
        vocab_size=len(VOCAB),
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=MAX_LEN,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        initializer_range=INIT_STD,
        pad_token_id=0,
    )
    model = BertForPreTraining(config)
    # Every parameter random, biases and LayerNorm included, so none can be silently ignored.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "LayerNorm.weight" in name:
                p.copy_(1.0 + 0.2 * torch.randn_like(p))
            elif "LayerNorm.bias" in name or name.endswith(".bias"):
                p.copy_(0.1 * torch.randn_like(p))
            else:
                p.copy_(INIT_STD * torch.randn_like(p))
    model.eval()
    return model


def load_eager(model_dir: Path):
    model = BertForPreTraining.from_pretrained(model_dir, attn_implementation="eager")
    model.eval()
    assert model.config._attn_implementation == "eager"
    return model


def additive_mask(attention_mask, mode):
    """(B, T) 0/1 -> the mask argument HF gets for `mode`."""
    if mode == "padding":
        return attention_mask
    if mode == "none":
        return torch.ones_like(attention_mask)
    assert mode == "causal"
    b, t = attention_mask.shape
    tril = torch.tril(torch.ones(t, t, dtype=torch.bool))
    allowed = tril[None, :, :] & attention_mask.bool()[:, None, :]  # (B, T_q, T_k)
    m = torch.zeros(b, 1, t, t, dtype=torch.float32)
    return m.masked_fill(~allowed[:, None], torch.finfo(torch.float32).min)


def check_mask_effect(weights, attention_mask, mode):
    """The weights must be exactly zero where the engine's MaskMode forbids a key."""
    t = attention_mask.shape[-1]
    for i in range(t):
        for j in range(t):
            forbidden = (mode in ("padding", "causal") and attention_mask[0, j] == 0) or (
                mode == "causal" and j > i
            )
            if forbidden:
                assert weights[..., i, j].abs().max().item() == 0.0, (mode, i, j)
    if mode == "none" and (attention_mask == 0).any():
        j = int((attention_mask[0] == 0).nonzero()[0])
        assert weights[..., :, j].min().item() > 0.0, "mask none must let padding keys through"


def forward_case(model, tok, name, text, pair, pad_to, mode):
    kwargs = {"max_length": pad_to, "padding": "max_length"} if pad_to else {}
    enc = tok(text, pair, return_tensors="pt", **kwargs)
    ids, tt, am = enc["input_ids"], enc["token_type_ids"], enc["attention_mask"]
    tokens = tok.convert_ids_to_tokens(ids[0].tolist())

    captured = {}
    hooks = []
    for l, layer in enumerate(model.bert.encoder.layer):
        for part in ("query", "key", "value"):
            mod = getattr(layer.attention.self, part)
            hooks.append(
                mod.register_forward_hook(lambda m, i, o, l=l, part=part: captured.__setitem__((l, part), o))
            )
    with torch.no_grad():
        out = model.bert(
            input_ids=ids,
            token_type_ids=tt,
            attention_mask=additive_mask(am, mode),
            output_attentions=True,
            output_hidden_states=True,
        )
        mlm, nsp = model.cls(out.last_hidden_state, out.pooler_output)
    for h in hooks:
        h.remove()

    cfg = model.config
    n_heads, d = cfg.num_attention_heads, cfg.hidden_size // cfg.num_attention_heads
    layers = []
    for l in range(cfg.num_hidden_layers):
        w = out.attentions[l][0]  # (H, T, T)
        check_mask_effect(w, am, mode)
        heads = []
        for h in range(n_heads):
            sl = slice(h * d, (h + 1) * d)
            heads.append(
                {
                    "q": rounded(captured[(l, "query")][0, :, sl]),
                    "k": rounded(captured[(l, "key")][0, :, sl]),
                    "v": rounded(captured[(l, "value")][0, :, sl]),
                    "weights": rounded(w[h]),
                }
            )
        layers.append({"heads": heads})

    # Attention must be far from uniform, or a wrong scale/mask could hide in the tolerance.
    w0 = out.attentions[0][0]
    assert w0.max().item() > 0.6, f"{name}: attention too uniform ({w0.max().item():.3f})"

    return {
        "name": name,
        "text": text,
        "pair": pair,
        "pad_to": pad_to,
        "mask": mode,
        "tokens": tokens,
        "input_ids": ids[0].tolist(),
        "token_type_ids": tt[0].tolist(),
        "attention_mask": am[0].tolist(),
        "layers": layers,
        "hidden_states": [rounded(hs[0]) for hs in out.hidden_states],
        "pooled": rounded(out.pooler_output[0]),
        "mlm_logits": rounded(mlm[0]),
        "nsp_logits": rounded(nsp[0]),
    }


def training_batch(tok):
    mask_id = tok.convert_tokens_to_ids("[MASK]")
    ids, tts, ams, labels, nsp = [], [], [], [], []
    for text, pair, nsp_label, positions in TRAIN_EXAMPLES:
        enc = tok(text, pair, max_length=TRAIN_T, padding="max_length")
        row = list(enc["input_ids"])
        lab = [-100] * TRAIN_T
        for p in positions:
            assert enc["attention_mask"][p] == 1 and row[p] not in tok.all_special_ids, (text, p)
            lab[p] = row[p]
            row[p] = mask_id
        ids.append(row)
        tts.append(list(enc["token_type_ids"]))
        ams.append(list(enc["attention_mask"]))
        labels.append(lab)
        nsp.append(nsp_label)
    assert any(0 in a for a in ams), "the training batch must contain padding"
    return {"input_ids": ids, "token_type_ids": tts, "attention_mask": ams, "mlm_labels": labels, "nsp_labels": nsp}


def losses(model, batch, mode):
    ids = torch.tensor(batch["input_ids"])
    am = torch.tensor(batch["attention_mask"])
    labels = torch.tensor(batch["mlm_labels"])
    nsp_labels = torch.tensor(batch["nsp_labels"])
    out = model(
        input_ids=ids,
        token_type_ids=torch.tensor(batch["token_type_ids"]),
        attention_mask=additive_mask(am, mode),
        labels=labels,
        next_sentence_label=nsp_labels,
    )
    ce = torch.nn.CrossEntropyLoss()
    mlm = ce(out.prediction_logits.view(-1, model.config.vocab_size), labels.view(-1))
    nsp = ce(out.seq_relationship_logits.view(-1, 2), nsp_labels.view(-1))
    assert torch.allclose(out.loss, mlm + nsp)
    return out.loss, mlm, nsp


def train_fixture(model_dir, batch, mode, with_sgd, with_adam):
    model = load_eager(model_dir)
    model.zero_grad()
    total, mlm, nsp = losses(model, batch, mode)
    total.backward()
    names = [n for n, _ in model.named_parameters()]
    assert "cls.predictions.decoder.weight" not in names, "tied decoder must be listed once"
    grads = {n: flat(p.grad if p.grad is not None else torch.zeros_like(p)) for n, p in model.named_parameters()}

    if with_sgd:
        sgd_model = load_eager(model_dir)
        opt = torch.optim.SGD(sgd_model.parameters(), lr=SGD_LR)
        sgd_model.zero_grad()
        losses(sgd_model, batch, mode)[0].backward()
        opt.step()

    fixture = {
        "mask": mode,
        "batch": batch,
        "loss": {"total": r7(total.item()), "mlm": r7(mlm.item()), "nsp": r7(nsp.item())},
        "grads": grads,
    }
    if with_adam:
        adam_model = load_eager(model_dir)
        opt = torch.optim.Adam(adam_model.parameters(), lr=ADAM_LR)
        adam_losses = []
        for _ in range(ADAM_STEPS):
            opt.zero_grad()
            loss = losses(adam_model, batch, mode)[0]
            adam_losses.append(r7(loss.item()))
            loss.backward()
            opt.step()
        weights = {n: flat(p) for n, p in adam_model.named_parameters()}
        fixture["adam"] = {"lr": ADAM_LR, "steps": ADAM_STEPS, "losses": adam_losses, "weights": weights}
    if with_sgd:
        weights = {n: flat(p) for n, p in sgd_model.named_parameters()}
        fixture["sgd"] = {"lr": SGD_LR, "steps": 1, "weights": weights}
    return fixture


def write_all(out: Path):
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    model_dir = out / "model"
    model_dir.mkdir(parents=True, exist_ok=True)
    build_model().save_pretrained(model_dir)
    # transformers 5 saves tokenizer.json and tokenizer_config.json but no vocab.txt, which
    # BERT checkpoints carry and the engine reads: write it as the classic layout has it.
    BertTokenizer(vocab={t: i for i, t in enumerate(VOCAB)}, do_lower_case=True).save_pretrained(model_dir)
    (model_dir / "vocab.txt").write_text("\n".join(VOCAB) + "\n")

    # Everything below uses the checkpoint as saved, read back the way a user would.
    tok = BertTokenizer.from_pretrained(model_dir)
    model = load_eager(model_dir)
    cases = [forward_case(model, tok, *c) for c in CASES]
    assert "[UNK]" in cases[3]["tokens"]
    dump(out / "cases.json", {"model": "model", "max_len": MAX_LEN, "cases": cases})

    batch = training_batch(tok)
    # SGD does not depend on the mask: once is enough, and keeps the files small. Mask "none"
    # is the one where padding positions are seen, so the only one where nn.Embedding's
    # padding_idx (no gradient into the [PAD] row from lookups) changes a gradient.
    for mode, with_sgd, with_adam in (("padding", True, True), ("causal", False, True), ("none", False, False)):
        fixture = train_fixture(model_dir, batch, mode, with_sgd, with_adam)
        dump(out / f"train_{mode}.json", fixture)


def dump(path: Path, obj):
    path.write_text(json.dumps(obj, separators=(",", ":")) + "\n")


def main():
    import fixtures_attention  # op-level fixtures of the attention variants (its own docstring)
    import fixtures_decoder  # BertLMHeadModel: causal LM, gradients, Adam, generate (its own docstring)
    import fixtures_models  # whole-model fixtures of the attention variants (its own docstring)
    import fixtures_seq2seq  # BERT2BERT EncoderDecoderModel: cross attention, gradients, Adam, generate

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="recompute into a temp dir and compare")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    # (writer, directory it fills)
    targets = [
        (write_all, args.out),
        (fixtures_models.write, args.out.parent / "variants"),
        (fixtures_attention.write, args.out.parent / "attention"),
        (fixtures_decoder.write, args.out.parent / "decoder"),
        (fixtures_seq2seq.write, args.out.parent / "seq2seq"),
    ]
    if not args.check:
        for write, out in targets:
            write(out)
            total = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
            for f in sorted(out.rglob("*")):
                if f.is_file():
                    print(f"{f.stat().st_size:>8}  {f.relative_to(ROOT)}")
            print(f"{total:>8}  total bytes")
        return
    bad = []
    for write, out in targets:
        with tempfile.TemporaryDirectory() as tmp:
            write(Path(tmp))
            for f in sorted(Path(tmp).rglob("*")):
                if f.is_file():
                    committed = out / f.relative_to(tmp)
                    if not committed.exists() or committed.read_bytes() != f.read_bytes():
                        bad.append(str(committed))
    if bad:
        sys.exit(f"fixtures differ from a fresh run: {bad}")
    print("fixtures are up to date")


if __name__ == "__main__":
    main()

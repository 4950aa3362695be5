"""Decoder (causal language model) fixtures, for the engine's `BertLMHeadModel` support.

Called from make_fixtures.py (`fixtures_decoder.write(out_dir)`), so `make_fixtures.py --check`
covers them too. Made with torch 2.15.0 (the +cu132 wheel, run on CPU), transformers 5.24.0
and safetensors 0.8.0. Writes engine/tests/fixtures/decoder/ (about 96 KB):

  lm/                a tiny random `transformers.BertLMHeadModel` (vocab 40, hidden 16, 2 layers,
                     H = 2 heads, D = 8, intermediate 32, max_position 32, dropout 0, eager
                     attention), `BertConfig(is_decoder=True)`: its self-attention is causal
                     (query i sees keys j <= i) and the model has no pooler. Every parameter is
                     random (biases and LayerNorm too, large scale, as fixtures_models.py draws
                     them). The LM head is BERT's MLM head (transform dense + GELU + LayerNorm,
                     then the decoder tied to the word embeddings, plus cls.predictions.bias).
    config.json, model.safetensors (and generation_config.json)   from `save_pretrained`
                     (safe serialization); config.json says "is_decoder": true and
                     architectures ["BertLMHeadModel"]. model.safetensors holds the tied decoder
                     once: its keys are bert.embeddings.*, bert.encoder.layer.{l}.*,
                     cls.predictions.bias and cls.predictions.transform.* (no decoder.weight, no
                     decoder.bias, no pooler).
    vocab.txt        one token per line, VOCAB order (as fixtures_models.py writes it).
    expected.safetensors   float32, for a padded batch of B = 3 rows, T = 10, each row
                     [CLS] sentence [SEP] then [PAD]s; token_type_ids all 0; attention_mask the
                     plain 2-D 0/1 mask (BertLMHeadModel builds the causal mask itself); labels =
                     input_ids with -100 at padding, which BertLMHeadModel shifts itself (position
                     t's logits predict labels[t + 1]):
      logits          (B, T, V)
      loss            (1,)          the model's own loss = mean cross-entropy of
                                    logits[:, :-1] against labels[:, 1:], -100 ignored
      hidden_states   (L+1, T, C)   batch row 0: embeddings, then each layer's output
      attentions      (L, H, T, T)  batch row 0, softmax weights (row = query); exactly 0 above
                                    the diagonal and on padding keys (asserted, all rows)
      grad.{name}     d loss / d parameter, one per parameter (see names below)
      adam.{name}     every parameter after ONE torch.optim.Adam(lr = 0.01) step on that loss,
                      from the saved checkpoint
    {name} is the engine's parameter name: bert.embeddings.word_embeddings.weight, ...,
    bert.encoder.layer.{l}...., cls.predictions.bias, cls.predictions.transform.dense.weight,
    cls.predictions.transform.dense.bias, cls.predictions.transform.LayerNorm.weight/.bias.
    These are exactly `BertLMHeadModel.named_parameters()`' names: the tied decoder weight is
    listed once, as bert.embeddings.word_embeddings.weight (its gradient is the sum of both uses),
    and the decoder bias, which is the same Parameter as cls.predictions.bias, as
    cls.predictions.bias. (The script asserts this; it would map a differently named tied
    parameter onto the engine's name.)
    Metadata (strings):
      "batch"     JSON {"input_ids", "token_type_ids", "attention_mask", "labels"}: lists of
                  lists of ints
      "adam_lr"   "0.01"
      "generate"  JSON list of {"prompt": [ids], "max_new_tokens": N, "tokens": [ids]}: tokens are
                  only the NEW tokens of `model.generate(prompt, attention_mask=ones,
                  max_new_tokens=N, do_sample=False, eos_token_id=SEP, pad_token_id=PAD)`
                  (greedy; it stops after emitting [SEP], which is included). The script checks
                  that greedy decoding by hand (full forward on the growing sequence, argmax of
                  the last row, stop at [SEP]; generate() itself uses the KV cache) gives the
                  same tokens, and that the top-1 logit beats the top-2 by more than GAP = 1e-3
                  at every step (the smallest is 0.0146), so float error cannot flip an argmax.
                  The prompts are [CLS] + "the cat", [CLS] + "a big dog ran to", [CLS] alone,
                  max_new_tokens 12: two cases end with [SEP] before 12 tokens, one does not.
"""

import json
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors import safe_open
from safetensors.torch import save_file
from transformers import BertConfig, BertLMHeadModel

# The vocabulary, weight scale and randomisation of the other whole-model fixtures.
from fixtures_models import CLS, INIT_STD, PAD, SEP, VOCAB, randomize

# Not fixtures_models.py's 4321: with it every greedy case below repeats one word and none
# reaches [SEP] (so stopping would go untested). With 4481 two cases stop at [SEP] (after 10 and
# 5 new tokens), one runs to max_new_tokens, and the smallest top-1/top-2 gap is 0.0146.
SEED = 4481
T = 10
ADAM_LR = 0.01
GAP = 1e-3
SENTENCES = ["the cat sat on the mat", "a big dog ran", "she saw a bird ."]
# (prompt words after [CLS], max_new_tokens)
PROMPTS = [("the cat", 12), ("a big dog ran to", 12), ("", 12)]
SIZES = dict(
    vocab_size=len(VOCAB),
    hidden_size=16,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=32,
    max_position_embeddings=32,
    hidden_dropout_prob=0.0,
    attention_probs_dropout_prob=0.0,
    initializer_range=INIT_STD,
    pad_token_id=PAD,
)


def ids_of(text):
    return [VOCAB.index(w) for w in text.split()]


def batch():
    """The padded batch, ids straight from VOCAB (every word is in it)."""
    ids, tts, ams, labels = [], [], [], []
    for s in SENTENCES:
        row = [CLS] + ids_of(s) + [SEP]
        assert len(row) <= T
        am = [1] * len(row) + [0] * (T - len(row))
        row += [PAD] * (T - len(row))
        ids.append(row)
        tts.append([0] * T)
        ams.append(am)
        labels.append([r if a else -100 for r, a in zip(row, am)])
    assert any(0 in a for a in ams)
    return {"input_ids": ids, "token_type_ids": tts, "attention_mask": ams, "labels": labels}


def build_model():
    config = BertConfig(is_decoder=True, **SIZES)
    config._attn_implementation = "eager"
    model = BertLMHeadModel(config)
    randomize(model)
    model.eval()
    pred = model.cls.predictions
    assert pred.decoder.weight is model.bert.embeddings.word_embeddings.weight, "decoder must be tied"
    assert pred.decoder.bias is pred.bias, "decoder bias must be tied"
    assert model.bert.pooler is None
    return model


# transformers' name of a tied parameter -> the engine's (empty if transformers already uses
# the engine's names, which write() asserts for the rest).
TIED_NAMES = {
    "cls.predictions.decoder.weight": "bert.embeddings.word_embeddings.weight",
    "cls.predictions.decoder.bias": "cls.predictions.bias",
}


def engine_named(model):
    """(engine name, parameter) for every distinct parameter of a BertLMHeadModel."""
    out, seen = [], set()
    for n, p in model.named_parameters():
        n = TIED_NAMES.get(n, n)
        assert n not in seen, n
        seen.add(n)
        out.append((n, p))
    assert "bert.embeddings.word_embeddings.weight" in seen and "cls.predictions.bias" in seen
    assert not any("pooler" in n or "decoder" in n for n in seen)
    return out


def run(model, b):
    return model(
        input_ids=torch.tensor(b["input_ids"]),
        token_type_ids=torch.tensor(b["token_type_ids"]),
        attention_mask=torch.tensor(b["attention_mask"]),
        labels=torch.tensor(b["labels"]),
        output_attentions=True,
        output_hidden_states=True,
    )


def check_causal(attentions, attention_mask):
    """Exactly zero above the diagonal and on padding keys, every row/layer/head."""
    t = attention_mask.shape[1]
    allowed = torch.tril(torch.ones(t, t, dtype=torch.bool))[None] & attention_mask.bool()[:, None, :]
    for w in attentions:  # (B, H, T, T)
        assert (w.masked_select(~allowed[:, None]) == 0).all(), "masked weights must be exactly 0"
        assert (w.masked_select(allowed[:, None].expand_as(w)) > 0).all()


def greedy_by_hand(model, prompt, n):
    """Full forward on the growing sequence, argmax of the last row; (new tokens, min gap)."""
    seq, new, gap = list(prompt), [], float("inf")
    with torch.no_grad():
        for _ in range(n):
            logits = model(input_ids=torch.tensor([seq]), attention_mask=torch.ones(1, len(seq), dtype=torch.long)).logits
            top = torch.topk(logits[0, -1], 2).values
            gap = min(gap, (top[0] - top[1]).item())
            tok = int(logits[0, -1].argmax())
            seq.append(tok)
            new.append(tok)
            if tok == SEP:
                break
    return new, gap


def generate_cases(model):
    cases = []
    for words, n in PROMPTS:
        prompt = [CLS] + ids_of(words)
        with torch.no_grad():
            out = model.generate(
                torch.tensor([prompt]),
                attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
                max_new_tokens=n,
                do_sample=False,
                eos_token_id=SEP,
                pad_token_id=PAD,
            )
        assert out[0, : len(prompt)].tolist() == prompt
        tokens = out[0, len(prompt) :].tolist()
        by_hand, gap = greedy_by_hand(model, prompt, n)
        assert tokens == by_hand, (prompt, tokens, by_hand)
        assert gap > GAP, f"prompt {prompt}: top-1/top-2 logit gap {gap:.2e} <= {GAP}"
        cases.append({"prompt": prompt, "max_new_tokens": n, "tokens": tokens})
    return cases


def save_sorted(tensors, path: Path, metadata):
    """save_file, then the header's __metadata__ keys put in sorted order: safetensors (0.8)
    writes them from a Rust HashMap, so with several keys their order, and the file's bytes,
    change from one process to the next. Only the order changes (same length, same offsets)."""
    save_file(tensors, path, metadata=metadata)
    raw = path.read_bytes()
    n = int.from_bytes(raw[:8], "little")
    text = raw[8 : 8 + n].decode("utf-8")
    header = json.loads(text)
    dump = lambda h: json.dumps(h, separators=(",", ":"), ensure_ascii=False)
    assert dump(header) == text.rstrip(" "), "unexpected safetensors header formatting"
    header["__metadata__"] = dict(sorted(header["__metadata__"].items()))
    fixed = dump(header).ljust(n).encode("utf-8")
    assert len(fixed) == n
    path.write_bytes(raw[:8] + fixed + raw[8 + n :])


def write(out: Path):
    """Writes every file listed in the module docstring under `out`."""
    torch.manual_seed(SEED)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    b = batch()
    d = out / "lm"
    d.mkdir(parents=True, exist_ok=True)

    model = build_model()
    model.save_pretrained(d, safe_serialization=True)
    saved = json.loads((d / "config.json").read_text())
    assert saved["is_decoder"] is True and saved["architectures"] == ["BertLMHeadModel"], saved
    print(f"{d / 'config.json'}: is_decoder = {json.dumps(saved['is_decoder'])}")
    (d / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    with safe_open(d / "model.safetensors", "pt") as f:
        keys = sorted(f.keys())
    assert not any("decoder" in k or "pooler" in k for k in keys), keys

    # Forward and gradients.
    model.zero_grad()
    out_ = run(model, b)
    labels = torch.tensor(b["labels"])
    shifted = F.cross_entropy(
        out_.logits[:, :-1].reshape(-1, len(VOCAB)), labels[:, 1:].reshape(-1), ignore_index=-100
    )
    assert torch.allclose(out_.loss, shifted, rtol=1e-6, atol=0), (out_.loss.item(), shifted.item())
    out_.loss.backward()
    check_causal(out_.attentions, torch.tensor(b["attention_mask"]))
    w0 = out_.attentions[0][0]
    assert w0.max().item() > 0.6, f"attention too uniform ({w0.max().item():.3f})"
    assert len(out_.hidden_states) == SIZES["num_hidden_layers"] + 1

    named = engine_named(model)
    assert sorted(n for n, _ in named) == keys, "checkpoint keys must be the parameter names"
    tensors = {
        "logits": out_.logits,
        "loss": out_.loss.reshape(1),
        "hidden_states": torch.stack([h[0] for h in out_.hidden_states]),
        "attentions": torch.stack([a[0] for a in out_.attentions]),
    }
    for n, p in named:
        tensors[f"grad.{n}"] = p.grad.clone() if p.grad is not None else torch.zeros_like(p)
    model.zero_grad()

    # One Adam step from the checkpoint as saved, read back the way a user would.
    adam_model = BertLMHeadModel.from_pretrained(d, attn_implementation="eager")
    adam_model.eval()
    adam_named = engine_named(adam_model)
    with torch.no_grad():
        for (n, p), (n2, p2) in zip(named, adam_named):
            assert n == n2 and torch.equal(p, p2), n
    opt = torch.optim.Adam(adam_model.parameters(), lr=ADAM_LR)
    opt.zero_grad()
    loss = run(adam_model, b).loss
    assert torch.equal(loss, out_.loss)
    loss.backward()
    opt.step()
    for n, p in adam_named:
        tensors[f"adam.{n}"] = p

    cases = generate_cases(model)
    meta = {
        "batch": json.dumps(b, separators=(",", ":")),
        "adam_lr": str(ADAM_LR),
        "generate": json.dumps(cases, separators=(",", ":")),
    }
    tensors = {k: v.detach().contiguous().float() for k, v in tensors.items()}
    save_sorted(tensors, d / "expected.safetensors", meta)

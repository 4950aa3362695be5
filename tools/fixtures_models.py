"""Whole-model fixtures for the attention variants, read by engine/tests/variants_reference.rs.

Called from make_fixtures.py (`fixtures_models.write(out_dir)`), so `make_fixtures.py --check`
covers them too. Writes engine/tests/fixtures/variants/ (about 360 KB):

  gqa1/, gqa2/       a tiny `BertForPreTraining` (vocab 40, hidden 16, 2 layers, H = 4 heads,
                     D = 4, intermediate 32, max_position 32) whose self-attention is
                     `torch.nn.functional.scaled_dot_product_attention(q, k, v, mask,
                     enable_gqa=True)` with G = 1 (multi-query) and G = 2 K/V groups: key and
                     value are Linear(C, G·D). Saved by `save_pretrained`, so config.json carries
                     num_key_value_heads and the safetensors the [G·D, C] shapes under BERT names.
  rotary/            a `transformers.RoFormerModel` (2 heads, D = 8: the only rotary maths is
                     RoFormer's own) with BERT's pooler and pre-training heads on top (decoder
                     tied to the word embeddings), saved under BertForPreTraining names with a
                     BERT config.json that says position_embedding_type "rotary".
  roformer_model/    the same RoFormerModel, `save_pretrained`: bare names, model_type roformer.
  roformer_mlm/      a `RoFormerForMaskedLM` with the same encoder and its own MLM head,
                     `save_pretrained`: roformer.* and cls.predictions.* names.

  Each of gqa1/, gqa2/, rotary/ also holds expected.safetensors, for a padded training batch
  (B = 3, T = 12, [MASK]ed positions labelled, NSP labels) under MaskMode padding and causal
  ({mask} below):
    {mask}.hidden_states  (L+1, T, C)  batch row 0: embeddings, then each layer's output
    {mask}.attentions     (L, H, T, T) batch row 0, softmax weights (row = query)
    {mask}.mlm_logits     (B, T, V)
    {mask}.nsp_logits     (B, 2)
    {mask}.loss           (3,)          total, mlm, nsp as BertForPreTraining computes them
    {mask}.grad.{name}    d total / d parameter, `BertForPreTraining.named_parameters()` names
                          (both masks, but padding only for gqa1: the files stay < 400 KB)
  and its metadata holds the batch as JSON ("batch": input_ids, token_type_ids,
  attention_mask, mlm_labels, nsp_labels).

Masks as tools/README.md explains for BERT: every model here gets a prepared 4-D additive mask
(B, 1, T, T) (0 where allowed, finfo(float32).min elsewhere), which both BERT and RoFormer add
to the scores as is. Weights are drawn with a large scale (as make_fixtures.py does) so that
attention is sharp and no term can hide in the tolerance.
"""

import json
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import save_file
from transformers import BertConfig, BertForPreTraining, RoFormerConfig, RoFormerForMaskedLM, RoFormerModel
from transformers.models.bert.modeling_bert import BertPooler, BertPreTrainingHeads, BertSelfAttention

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = (
    "the a cat dog sat on mat ran to park big small red blue bird flew over house and it "
    "was happy sad we saw tree in sun is hot she he . , ?"
).split()
VOCAB = SPECIALS + WORDS
PAD, CLS, SEP, MASK = 0, 2, 3, 4
SEED = 4321
INIT_STD = 0.4
T = 12
# (sentence A, sentence B, NSP label, positions to [MASK])
EXAMPLES = [
    ("the cat sat on the mat", "it was happy", 0, [2, 5, 9]),
    ("a big dog ran", "the sun is hot", 1, [3, 7]),
    ("she saw a bird", "we ran", 0, [1, 4, 6]),
]
SIZES = dict(
    vocab_size=len(VOCAB),
    hidden_size=16,
    num_hidden_layers=2,
    intermediate_size=32,
    max_position_embeddings=32,
    hidden_dropout_prob=0.0,
    attention_probs_dropout_prob=0.0,
    initializer_range=INIT_STD,
    pad_token_id=PAD,
)


def batch():
    """The padded training batch, ids straight from VOCAB (every word is in it)."""
    ids, tts, ams, labels, nsp = [], [], [], [], []
    for a, b, label, positions in EXAMPLES:
        wa = [VOCAB.index(w) for w in a.split()]
        wb = [VOCAB.index(w) for w in b.split()]
        row = [CLS] + wa + [SEP] + wb + [SEP]
        tt = [0] * (len(wa) + 2) + [1] * (len(wb) + 1)
        assert len(row) <= T
        am = [1] * len(row) + [0] * (T - len(row))
        tt += [0] * (T - len(row))
        row += [PAD] * (T - len(row))
        lab = [-100] * T
        for p in positions:
            assert am[p] == 1 and row[p] > MASK
            lab[p], row[p] = row[p], MASK
        ids.append(row)
        tts.append(tt)
        ams.append(am)
        labels.append(lab)
        nsp.append(label)
    assert any(0 in a for a in ams)
    return {"input_ids": ids, "token_type_ids": tts, "attention_mask": ams, "mlm_labels": labels, "nsp_labels": nsp}


def additive_mask(attention_mask, mode):
    """(B, T) 0/1 -> (B, 1, T, T) additive: 0 allowed, finfo.min masked."""
    b, t = attention_mask.shape
    allowed = attention_mask.bool()[:, None, :].expand(b, t, t)
    if mode == "causal":
        allowed = allowed & torch.tril(torch.ones(t, t, dtype=torch.bool))
    else:
        assert mode == "padding"
    m = torch.zeros(b, 1, t, t)
    return m.masked_fill(~allowed[:, None], torch.finfo(torch.float32).min)


def randomize(module):
    """Every parameter random (biases and LayerNorm too), large scale: sharp attention."""
    with torch.no_grad():
        for name, p in module.named_parameters():
            if not p.requires_grad:
                continue  # RoFormer's sinusoidal table
            if "LayerNorm.weight" in name:
                p.copy_(1.0 + 0.2 * torch.randn_like(p))
            elif "LayerNorm.bias" in name or name.endswith(".bias"):
                p.copy_(0.1 * torch.randn_like(p))
            else:
                p.copy_(INIT_STD * torch.randn_like(p))


# ---------------------------------------------------------------- GQA: BERT with SDPA(enable_gqa)


class GqaSelfAttention(BertSelfAttention):
    """BertSelfAttention with G K/V groups: query Linear(C, H·D), key/value Linear(C, G·D);
    attention = scaled_dot_product_attention(..., enable_gqa=True), which repeats each group
    for H/G consecutive query heads (transformers' repeat_kv order)."""

    def __init__(self, config, groups):
        super().__init__(config)  # a BertSelfAttention, so transformers records its weights
        c, h = config.hidden_size, config.num_attention_heads
        self.h, self.g, self.d = h, groups, c // h
        self.query = torch.nn.Linear(c, h * self.d)
        self.key = torch.nn.Linear(c, groups * self.d)
        self.value = torch.nn.Linear(c, groups * self.d)

    def forward(self, hidden_states, attention_mask=None, **kwargs):
        b, t, _ = hidden_states.shape
        q = self.query(hidden_states).view(b, t, self.h, self.d).transpose(1, 2)  # (B, H, T, D)
        k = self.key(hidden_states).view(b, t, self.g, self.d).transpose(1, 2)  # (B, G, T, D)
        v = self.value(hidden_states).view(b, t, self.g, self.d).transpose(1, 2)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=attention_mask, enable_gqa=True)
        # The weights, for comparison only (not on the gradient path).
        with torch.no_grad():
            kk = k.repeat_interleave(self.h // self.g, dim=1)
            weights = torch.softmax(q @ kk.transpose(-1, -2) / self.d**0.5 + attention_mask, dim=-1)
            check = weights @ v.repeat_interleave(self.h // self.g, dim=1)
            assert torch.allclose(check, out, atol=1e-5), (check - out).abs().max()
        return out.transpose(1, 2).reshape(b, t, self.h * self.d), weights


def gqa_model(groups):
    config = BertConfig(num_attention_heads=4, num_key_value_heads=groups, **SIZES)
    config._attn_implementation = "eager"
    model = BertForPreTraining(config)
    for layer in model.bert.encoder.layer:
        layer.attention.self = GqaSelfAttention(config, groups)
    randomize(model)
    model.eval()
    return model


def run_bert(model, b, mode):
    """(outputs for expected.safetensors, loss tensor) of a BertForPreTraining-like model."""
    am = torch.tensor(b["attention_mask"])
    out = model(
        input_ids=torch.tensor(b["input_ids"]),
        token_type_ids=torch.tensor(b["token_type_ids"]),
        attention_mask=additive_mask(am, mode),
        labels=torch.tensor(b["mlm_labels"]),
        next_sentence_label=torch.tensor(b["nsp_labels"]),
        output_attentions=True,
        output_hidden_states=True,
    )
    return out.loss, out.prediction_logits, out.seq_relationship_logits, out.hidden_states, out.attentions


# ---------------------------------------------------------------- rotary: RoFormer + BERT heads


class RotaryPreTraining(torch.nn.Module):
    """RoFormerModel with BertForPreTraining's pooler and heads (decoder tied to the word
    embeddings): the loss the engine's rotary BertForPreTraining computes, with RoFormer's
    own rotary maths."""

    def __init__(self, roformer, bert_config):
        super().__init__()
        self.roformer = roformer
        self.pooler = BertPooler(bert_config)
        self.cls = BertPreTrainingHeads(bert_config)
        # Tied as BertForPreTraining ties them: decoder weight = word embeddings, decoder
        # bias = predictions.bias.
        self.cls.predictions.decoder.weight = roformer.embeddings.word_embeddings.weight
        self.cls.predictions.decoder.bias = self.cls.predictions.bias

    def named_bert_parameters(self):
        """(BertForPreTraining name, parameter), the tied decoder listed once."""
        out = []
        for n, p in self.roformer.named_parameters():
            if p.requires_grad:
                out.append(("bert." + n, p))
        out += [("bert.pooler." + n, p) for n, p in self.pooler.named_parameters()]
        out += [
            ("cls." + n, p)
            for n, p in self.cls.named_parameters()
            if n not in ("predictions.decoder.weight", "predictions.decoder.bias")
        ]
        return out

    def forward(self, input_ids, token_type_ids, attention_mask, labels, next_sentence_label, **_):
        out = self.roformer(
            input_ids=input_ids,
            token_type_ids=token_type_ids,
            attention_mask=attention_mask,
            output_attentions=True,
            output_hidden_states=True,
        )
        seq = out.last_hidden_state
        mlm, nsp = self.cls(seq, self.pooler(seq))
        ce = torch.nn.CrossEntropyLoss()
        loss = ce(mlm.reshape(-1, mlm.shape[-1]), labels.reshape(-1)) + ce(nsp, next_sentence_label)
        return loss, mlm, nsp, out.hidden_states, out.attentions


def rotary_models():
    rc = RoFormerConfig(num_attention_heads=2, embedding_size=16, rotary_value=False, hidden_act="gelu", **SIZES)
    roformer = RoFormerModel(rc)
    roformer.eval()
    assert not hasattr(roformer, "embeddings_project")
    bc = BertConfig(num_attention_heads=2, position_embedding_type="rotary", **SIZES)
    model = RotaryPreTraining(roformer, bc)
    randomize(model)
    model.eval()
    mlm = RoFormerForMaskedLM(rc)
    randomize(mlm.cls)
    mlm.roformer.load_state_dict(roformer.state_dict())
    mlm.eval()
    return model, bc, mlm


# ---------------------------------------------------------------- writing


def expected(model, named, b, run, grad_modes=("padding", "causal")):
    """The tensors of expected.safetensors for both masks, gradients for `grad_modes`."""
    tensors = {}
    for mode in ("padding", "causal"):
        model.zero_grad()
        loss, mlm, nsp, hidden, attentions = run(model, b, mode)
        ce = torch.nn.CrossEntropyLoss()
        mlm_loss = ce(mlm.reshape(-1, mlm.shape[-1]), torch.tensor(b["mlm_labels"]).reshape(-1))
        nsp_loss = ce(nsp, torch.tensor(b["nsp_labels"]))
        assert torch.allclose(loss, mlm_loss + nsp_loss)
        loss.backward()
        w0 = attentions[0][0]
        assert w0.max().item() > 0.6, f"attention too uniform ({w0.max().item():.3f})"
        am = torch.tensor(b["attention_mask"])
        for w in attentions:
            allowed = additive_mask(am, mode)[:, 0] == 0  # (B, T, T)
            assert (w.masked_select(~allowed[:, None]) == 0).all(), "masked weights must be exactly 0"
        tensors[f"{mode}.hidden_states"] = torch.stack([h[0] for h in hidden])
        tensors[f"{mode}.attentions"] = torch.stack([a[0] for a in attentions])
        tensors[f"{mode}.mlm_logits"] = mlm
        tensors[f"{mode}.nsp_logits"] = nsp
        tensors[f"{mode}.loss"] = torch.stack([loss, mlm_loss, nsp_loss])
        for n, p in named() if mode in grad_modes else []:
            tensors[f"{mode}.grad.{n}"] = p.grad.clone() if p.grad is not None else torch.zeros_like(p)
    return {k: v.detach().contiguous().float() for k, v in tensors.items()}


def write_vocab(d: Path):
    (d / "vocab.txt").write_text("\n".join(VOCAB) + "\n")


def write(out: Path):
    """Writes every file listed in the module docstring under `out`."""
    torch.manual_seed(SEED)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    b = batch()
    meta = {"batch": json.dumps(b, separators=(",", ":"))}

    for groups in (1, 2):
        d = out / f"gqa{groups}"
        d.mkdir(parents=True, exist_ok=True)
        model = gqa_model(groups)
        model.save_pretrained(d)
        saved = json.loads((d / "config.json").read_text())
        assert saved["num_key_value_heads"] == groups
        write_vocab(d)

        def named(model=model):
            return [(n, p) for n, p in model.named_parameters() if n != "cls.predictions.decoder.weight"]

        grad_modes = ("padding",) if groups == 1 else ("padding", "causal")
        save_file(expected(model, named, b, run_bert, grad_modes), d / "expected.safetensors", metadata=meta)

    model, bc, mlm = rotary_models()
    d = out / "rotary"
    d.mkdir(parents=True, exist_ok=True)
    config = bc.to_dict()
    config["architectures"] = ["BertForPreTraining"]
    for key in ("transformers_version", "dtype", "torch_dtype"):
        config.pop(key, None)
    (d / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    weights = {n: p.detach().contiguous() for n, p in model.named_bert_parameters()}
    save_file(weights, d / "model.safetensors", metadata={"format": "pt"})
    write_vocab(d)
    save_file(expected(model, model.named_bert_parameters, b, lambda m, b, mode: m(
        input_ids=torch.tensor(b["input_ids"]),
        token_type_ids=torch.tensor(b["token_type_ids"]),
        attention_mask=additive_mask(torch.tensor(b["attention_mask"]), mode),
        labels=torch.tensor(b["mlm_labels"]),
        next_sentence_label=torch.tensor(b["nsp_labels"]),
    )), d / "expected.safetensors", metadata=meta)

    for name, m in (("roformer_model", model.roformer), ("roformer_mlm", mlm)):
        d = out / name
        d.mkdir(parents=True, exist_ok=True)
        m.save_pretrained(d)
        write_vocab(d)
    # The MLM model's encoder is the rotary model's: same hidden states.
    with torch.no_grad():
        ids = torch.tensor(b["input_ids"])
        mask = additive_mask(torch.tensor(b["attention_mask"]), "padding")
        a = model.roformer(input_ids=ids, attention_mask=mask).last_hidden_state
        c = mlm.roformer(input_ids=ids, attention_mask=mask).last_hidden_state
        assert torch.equal(a, c)

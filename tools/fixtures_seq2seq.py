"""Encoder-decoder (seq2seq) fixtures, for the engine's BERT2BERT `EncoderDecoderModel` support.

Called from make_fixtures.py (`fixtures_seq2seq.write(out_dir)`), so `make_fixtures.py --check`
covers them too. Made with torch 2.15.0 (run on CPU), transformers 5.24.0 and safetensors 0.8.0.
Same VOCAB, specials, randomize() and INIT_STD as fixtures_decoder.py. Writes
engine/tests/fixtures/seq2seq/ (about 215 KB):

  model/             a tiny random `transformers.EncoderDecoderModel` (BERT2BERT), built as
                     `EncoderDecoderModel(encoder=BertModel(enc_cfg, add_pooling_layer=False),
                     decoder=BertLMHeadModel(dec_cfg))`. Both halves: vocab 40, hidden C = 16,
                     L = 2 layers, H = 2 heads (D = 8), intermediate 32, max_position 32,
                     dropout 0, pad_token_id PAD, eager attention. enc_cfg is a plain BertConfig
                     (bidirectional, no pooler); dec_cfg has is_decoder = True (causal
                     self-attention) and add_cross_attention = True (each decoder layer has a
                     `crossattention` block after its self-attention: query from the decoder,
                     key/value from the encoder's last hidden state, masked by the source
                     attention_mask). model.config.decoder_start_token_id = CLS, pad_token_id =
                     PAD (the generation config's decoder_start_token_id too). Every parameter is
                     random (biases and LayerNorm too, large scale). The decoder's LM head is
                     BERT's MLM head with its decoder tied to the DECODER's word embeddings; the
                     encoder's and the decoder's embeddings are separate (not tied; the config
                     has no tie_encoder_decoder).
    config.json, model.safetensors, generation_config.json   from `save_pretrained` (safe
                     serialization). config.json: "model_type": "encoder-decoder",
                     "is_encoder_decoder": true, architectures ["EncoderDecoderModel"],
                     "decoder_start_token_id": 2, "pad_token_id": 0, and full "encoder" and
                     "decoder" sub-configs ("model_type": "bert"; the decoder's with
                     "is_decoder": true, "add_cross_attention": true).
                     model.safetensors keys (99):
                       encoder.embeddings.{word,position,token_type}_embeddings.weight,
                       encoder.embeddings.LayerNorm.{weight,bias},
                       encoder.encoder.layer.{l}.{attention.self.{query,key,value},
                         attention.output.dense, intermediate.dense, output.dense}.{weight,bias},
                       encoder.encoder.layer.{l}.{attention.output,output}.LayerNorm.{weight,bias},
                       decoder.bert.embeddings.* (as the encoder's),
                       decoder.bert.encoder.layer.{l}.* (as the encoder's) plus
                       decoder.bert.encoder.layer.{l}.crossattention.{self.{query,key,value},
                         output.dense}.{weight,bias}, ...crossattention.output.LayerNorm.{weight,bias},
                       decoder.cls.predictions.bias,
                       decoder.cls.predictions.transform.{dense,LayerNorm}.{weight,bias}.
                     No pooler and no decoder.cls.predictions.decoder.* (tied, stored once).
                     NOTE: `EncoderDecoderModel.from_pretrained` builds its encoder with
                     `AutoModel.from_config`, i.e. WITH a pooler, and reports
                     encoder.pooler.dense.{weight,bias} as MISSING (newly initialised). The
                     pooler takes no part in the seq2seq forward or loss, so this changes nothing
                     below (asserted: the reloaded model gives the same loss bit for bit and
                     its pooler gets no gradient).
    vocab.txt        one token per line, VOCAB order.
    expected.safetensors   float32, for a batch of B = 2 pairs (token_type_ids all 0 on both
                     sides, not passed):
                       input_ids        [CLS] source words [SEP], then [PAD] up to Ts = 8
                                        (row 0 "the cat sat on the mat" fills all 8; row 1
                                        "a big dog ran" has 2 padding positions)
                       attention_mask   1 on the source tokens, 0 on padding
                       labels           the source words in REVERSE order, then [SEP], then
                                        -100 up to Tt = 7 (row 0 fills all 7, row 1 has 2 -100s)
                       decoder_input_ids   built by the model from labels (the script passes
                                        only input_ids, attention_mask and labels):
                                        shift_tokens_right(labels, PAD, CLS) = [CLS] +
                                        labels[:-1], with -100 replaced by PAD
                       decoder_attention_mask   also built by the model when labels are given
                                        and no mask is: 1 where decoder_input_ids != PAD
                     (the script asserts that passing these two explicitly gives the same result).
                     The loss is the model's own: mean cross-entropy of logits[b, t] against
                     labels[b, t] (NO further shift: position t, fed decoder_input_ids[t] =
                     labels[t-1], predicts labels[t]), -100 ignored.
      logits                   (B, Tt, V)
      loss                     (1,)
      encoder_hidden           (B, Ts, C)       the encoder's last layer output (all rows)
      decoder_hidden_states    (L+1, Tt, C)     batch row 1: decoder embeddings, then each layer
      decoder_self_attentions  (L, H, Tt, Tt)   batch row 1, softmax weights (row = query):
                                                exactly 0 above the diagonal and on padded
                                                decoder keys (asserted, all rows)
      cross_attentions         (L, H, Tt, Ts)   batch row 1 (the padded source): exactly 0 on
                                                source padding columns (asserted, all rows)
      grad.{name}     d loss / d parameter, one per model.safetensors key (above)
      adam.{name}     every parameter after ONE torch.optim.Adam(lr = 0.01) step on that loss,
                      from the checkpoint as saved and reloaded with from_pretrained
    {name} is exactly `named_parameters()`' name, which is the model.safetensors key: the tied
    LM-head decoder weight is listed once, as decoder.bert.embeddings.word_embeddings.weight (its
    gradient is the sum of both uses), and its bias as decoder.cls.predictions.bias (asserted).
    Metadata (strings):
      "batch"     JSON {"input_ids", "attention_mask", "labels", "decoder_input_ids",
                  "decoder_attention_mask"}: lists of lists of ints
      "adam_lr"   "0.01"
      "no_grad"   JSON list of the parameter names that get no gradient (written as zeros in
                  grad.*): [] for this model (every parameter gets one)
      "generate"  JSON list of {"input_ids": [source ids], "max_new_tokens": 10, "tokens": [ids]},
                  one per source row, unpadded (attention_mask all ones): tokens are only the NEW
                  tokens of `model.generate(input_ids, attention_mask, max_new_tokens=10,
                  decoder_start_token_id=CLS, eos_token_id=SEP, pad_token_id=PAD,
                  do_sample=False)` (the leading decoder start [CLS] is dropped; greedy; it
                  stops after emitting [SEP], which is included). The script checks that greedy
                  decoding by hand (full forward on the growing decoder sequence, argmax of the
                  last row, stop at [SEP]; generate() itself uses the KV cache) gives the same
                  tokens, and that the top-1 logit beats the top-2 by more than GAP = 1e-3 at
                  every step, so float error cannot flip an argmax.
"""

import json
import warnings
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors import safe_open
from transformers import BertConfig, BertLMHeadModel, BertModel, EncoderDecoderModel
from transformers.utils import logging as hf_logging

from fixtures_decoder import CLS, INIT_STD, PAD, SEP, VOCAB, ids_of, randomize, save_sorted

# Not fixtures_decoder.py's 4481: with it the cross attention is nearly uniform (max weight 0.30
# over 6 source keys), which a wrong scale or mask could hide in. With 60 (the first of 0..149
# whose cross attention peaks above 0.5 in both layers and whose greedy cases include one that
# stops at [SEP]) the peak is 0.92, source row 0 generates 3 tokens ending with [SEP], row 1 runs
# to max_new_tokens, and the smallest top-1/top-2 gap is 0.112.
SEED = 60
TS = 8
TT = 7
ADAM_LR = 0.01
GAP = 1e-3
MAX_NEW = 10
SENTENCES = ["the cat sat on the mat", "a big dog ran"]
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
ROW = 1  # the batch row whose attentions / decoder hidden states are written (padded source)


def batch():
    """Sources [CLS] words [SEP] padded to TS; labels reversed words + [SEP], -100 to TT."""
    ids, ams, labels = [], [], []
    for s in SENTENCES:
        words = ids_of(s)
        row = [CLS] + words + [SEP]
        lab = words[::-1] + [SEP]
        assert len(row) <= TS and len(lab) <= TT
        ams.append([1] * len(row) + [0] * (TS - len(row)))
        ids.append(row + [PAD] * (TS - len(row)))
        labels.append(lab + [-100] * (TT - len(lab)))
    assert 0 in ams[ROW] and -100 in labels[ROW]
    return {"input_ids": ids, "attention_mask": ams, "labels": labels}


def build_model():
    enc_cfg = BertConfig(**SIZES)
    dec_cfg = BertConfig(is_decoder=True, add_cross_attention=True, **SIZES)
    enc_cfg._attn_implementation = "eager"
    dec_cfg._attn_implementation = "eager"
    model = EncoderDecoderModel(
        encoder=BertModel(enc_cfg, add_pooling_layer=False), decoder=BertLMHeadModel(dec_cfg)
    )
    model.config.decoder_start_token_id = CLS
    model.config.pad_token_id = PAD
    model.generation_config.decoder_start_token_id = CLS
    model.generation_config.pad_token_id = PAD
    randomize(model)
    model.eval()
    check_structure(model)
    return model


def check_structure(model):
    assert model.config.encoder._attn_implementation == "eager"
    assert model.config.decoder._attn_implementation == "eager"
    assert not getattr(model.config, "tie_encoder_decoder", False)
    dec = model.decoder
    pred = dec.cls.predictions
    assert pred.decoder.weight is dec.bert.embeddings.word_embeddings.weight, "LM head must be tied"
    assert pred.decoder.bias is pred.bias, "LM head bias must be tied"
    assert model.encoder.embeddings.word_embeddings.weight is not dec.bert.embeddings.word_embeddings.weight
    assert dec.bert.pooler is None


def run(model, b, **extra):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # "loss computed in the framework" notice
        return model(
            input_ids=torch.tensor(b["input_ids"]),
            attention_mask=torch.tensor(b["attention_mask"]),
            labels=torch.tensor(b["labels"]),
            output_attentions=True,
            output_hidden_states=True,
            **extra,
        )


def check_masks(out, src_mask, dec_mask):
    """Decoder self-attention: exactly 0 above the diagonal and on padded decoder keys, > 0
    elsewhere; cross attention: exactly 0 on source padding columns, > 0 elsewhere."""
    t = dec_mask.shape[1]
    allowed = torch.tril(torch.ones(t, t, dtype=torch.bool))[None] & dec_mask.bool()[:, None, :]
    for w in out.decoder_attentions:  # (B, H, Tt, Tt)
        assert (w.masked_select(~allowed[:, None]) == 0).all(), "decoder self-attention not causal"
        assert (w.masked_select(allowed[:, None].expand_as(w)) > 0).all()
    cross_ok = src_mask.bool()[:, None, None, :]  # (B, 1, 1, Ts)
    for w in out.cross_attentions:  # (B, H, Tt, Ts)
        assert (w.masked_select(~cross_ok.expand_as(w)) == 0).all(), "cross attention sees padding"
        assert (w.masked_select(cross_ok.expand_as(w)) > 0).all()


def greedy_by_hand(model, src, n):
    """Full forward on the growing decoder sequence, argmax of the last row; (new tokens, gap)."""
    seq, new, gap = [CLS], [], float("inf")
    ids = torch.tensor([src])
    am = torch.ones_like(ids)
    with torch.no_grad():
        for _ in range(n):
            logits = model(input_ids=ids, attention_mask=am, decoder_input_ids=torch.tensor([seq])).logits
            top = torch.topk(logits[0, -1], 2).values
            gap = min(gap, (top[0] - top[1]).item())
            tok = int(logits[0, -1].argmax())
            seq.append(tok)
            new.append(tok)
            if tok == SEP:
                break
    return new, gap


def generate_cases(model, b):
    cases, gaps = [], []
    for row, am in zip(b["input_ids"], b["attention_mask"]):
        src = [t for t, a in zip(row, am) if a]
        with torch.no_grad():
            out = model.generate(
                input_ids=torch.tensor([src]),
                attention_mask=torch.ones(1, len(src), dtype=torch.long),
                max_new_tokens=MAX_NEW,
                decoder_start_token_id=CLS,
                eos_token_id=SEP,
                pad_token_id=PAD,
                do_sample=False,
            )
        assert out[0, 0].item() == CLS, out
        tokens = out[0, 1:].tolist()
        by_hand, gap = greedy_by_hand(model, src, MAX_NEW)
        assert tokens == by_hand, (src, tokens, by_hand)
        assert gap > GAP, f"source {src}: top-1/top-2 logit gap {gap:.2e} <= {GAP}"
        gaps.append(gap)
        cases.append({"input_ids": src, "max_new_tokens": MAX_NEW, "tokens": tokens})
    return cases, min(gaps)


def write(out: Path):
    """Writes every file listed in the module docstring under `out`."""
    torch.manual_seed(SEED)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    b = batch()
    d = out / "model"
    d.mkdir(parents=True, exist_ok=True)

    model = build_model()
    model.save_pretrained(d, safe_serialization=True)
    saved = json.loads((d / "config.json").read_text())
    assert saved["model_type"] == "encoder-decoder" and saved["is_encoder_decoder"] is True, saved
    assert saved["architectures"] == ["EncoderDecoderModel"], saved
    assert saved["decoder_start_token_id"] == CLS and saved["pad_token_id"] == PAD, saved
    assert saved["encoder"]["model_type"] == "bert" and saved["encoder"]["is_decoder"] is False
    assert saved["decoder"]["is_decoder"] is True and saved["decoder"]["add_cross_attention"] is True
    (d / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    with safe_open(d / "model.safetensors", "pt") as f:
        keys = sorted(f.keys())
    assert not any("pooler" in k or "cls.predictions.decoder" in k for k in keys), keys

    # Forward and gradients: the model builds decoder_input_ids and their mask from labels.
    model.zero_grad()
    o = run(model, b)
    labels = torch.tensor(b["labels"])
    dec_ids = model.prepare_decoder_input_ids_from_labels(labels)
    dec_mask = (dec_ids != PAD).long()
    b["decoder_input_ids"] = dec_ids.tolist()
    b["decoder_attention_mask"] = dec_mask.tolist()
    with torch.no_grad():
        explicit = run(model, b, decoder_input_ids=dec_ids, decoder_attention_mask=dec_mask)
    assert torch.equal(explicit.logits, o.logits), "the model must build the same decoder inputs"
    ce = F.cross_entropy(o.logits.reshape(-1, len(VOCAB)), labels.reshape(-1), ignore_index=-100)
    assert torch.allclose(o.loss, ce, rtol=1e-6, atol=0), (o.loss.item(), ce.item())
    o.loss.backward()
    check_masks(o, torch.tensor(b["attention_mask"]), dec_mask)
    for w in (o.decoder_attentions[0][ROW], o.cross_attentions[0][ROW]):
        assert w.max().item() > 0.6, f"attention too uniform ({w.max().item():.3f})"
    n_layers = SIZES["num_hidden_layers"]
    assert len(o.decoder_hidden_states) == n_layers + 1 and len(o.cross_attentions) == n_layers

    named = list(model.named_parameters())
    assert sorted(n for n, _ in named) == keys, "checkpoint keys must be the parameter names"
    tensors = {
        "logits": o.logits,
        "loss": o.loss.reshape(1),
        "encoder_hidden": o.encoder_last_hidden_state,
        "decoder_hidden_states": torch.stack([h[ROW] for h in o.decoder_hidden_states]),
        "decoder_self_attentions": torch.stack([a[ROW] for a in o.decoder_attentions]),
        "cross_attentions": torch.stack([a[ROW] for a in o.cross_attentions]),
    }
    no_grad = []
    for n, p in named:
        if p.grad is None:
            no_grad.append(n)
        tensors[f"grad.{n}"] = p.grad.clone() if p.grad is not None else torch.zeros_like(p)
    model.zero_grad()

    # One Adam step from the checkpoint as saved, read back the way a user would. from_pretrained
    # adds an encoder pooler (AutoModel.from_config) that the checkpoint lacks; it is unused.
    torch.manual_seed(SEED)  # the missing pooler's fresh init draws from the global RNG
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # the load report lists the two MISSING pooler keys
    try:
        adam_model, info = EncoderDecoderModel.from_pretrained(
            d, attn_implementation="eager", output_loading_info=True
        )
    finally:
        hf_logging.set_verbosity(verbosity)
    assert info["missing_keys"] <= {"encoder.pooler.dense.weight", "encoder.pooler.dense.bias"}, info
    assert not info["unexpected_keys"] and not info["mismatched_keys"], info
    adam_model.eval()
    check_structure(adam_model)
    adam_params = dict(adam_model.named_parameters())
    with torch.no_grad():
        for n, p in named:
            assert torch.equal(p, adam_params[n]), n
    opt = torch.optim.Adam(adam_model.parameters(), lr=ADAM_LR)
    opt.zero_grad()
    loss = run(adam_model, b).loss
    assert torch.equal(loss, o.loss)
    loss.backward()
    for n, p in adam_params.items():
        assert (p.grad is None) == (n in no_grad or n not in keys), n
    opt.step()
    for n, _ in named:
        tensors[f"adam.{n}"] = adam_params[n]

    cases, gap = generate_cases(model, b)
    meta = {
        "batch": json.dumps(b, separators=(",", ":")),
        "adam_lr": str(ADAM_LR),
        "no_grad": json.dumps(no_grad),
        "generate": json.dumps(cases, separators=(",", ":")),
    }
    print(f"{d}: {len(keys)} tensors, no_grad {no_grad}, generate {cases}, min top-1/top-2 gap {gap:.4f}")
    tensors = {k: v.detach().contiguous().float() for k, v in tensors.items()}
    save_sorted(tensors, d / "expected.safetensors", meta)

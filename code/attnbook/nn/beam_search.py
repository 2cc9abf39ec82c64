"""Beam search for the encoder-decoder Transformer (chapter 10).

Greedy decoding keeps one prefix and extends it by its most probable token.
Beam search keeps the ``beam_width`` prefixes with the highest total
log-probability; at every step it extends each by every token and keeps the
best ``beam_width`` of the extensions. With ``beam_width=1`` it is greedy
decoding.
"""

import torch

from .._checks import (
    require_finite_number,
    require_flag,
    require_float,
    require_ids,
    require_int,
)
from .decoder import EncoderDecoderTransformer


def _require_model(model) -> None:
    if not isinstance(model, EncoderDecoderTransformer):
        raise TypeError(
            "model must be an EncoderDecoderTransformer, got "
            f"{type(model).__name__}"
        )


MAX_ALPHA = 10.0  # beyond it lp overflows float32 for long outputs


def length_penalty(lengths: torch.Tensor, alpha: float) -> torch.Tensor:
    """GNMT's length penalty (Wu et al. 2016, section 7):
    lp(|y|) = ((5 + |y|) / 6) ** alpha, elementwise over ``lengths``.

    Beam search with a penalty ranks an output y by log p(y | x) / lp(|y|);
    alpha = 0 gives lp = 1 (no normalisation), and a larger alpha favours
    longer outputs. Vaswani et al. (2017) used alpha = 0.6. lengths: a float
    tensor of lengths >= 0; alpha in [0, MAX_ALPHA].
    """
    require_float("lengths", lengths)
    if lengths.numel() and not bool((lengths >= 0).all()):
        raise ValueError("lengths must be >= 0 (and not NaN)")
    _require_alpha(alpha)
    return ((5.0 + lengths) / 6.0) ** alpha


def _require_alpha(alpha) -> float:
    return require_finite_number("alpha", alpha, 0.0, MAX_ALPHA)


def _step_logits(model, tokens, t, memory, mask, cache, memory_kv):
    """Logits (B * k, vocab) for the next token of every prefix: one cached
    decoder ``step`` for the last token, or ``decode`` over the whole prefix
    when ``cache`` is None."""
    if cache is None:
        return model.decode(tokens, memory, mask)[:, -1]
    x = model.embed_target(tokens[:, -1:], start=t)
    x, _, _ = model.decoder.step(x, cache, memory_kv, mask)
    return model.output(x[:, -1])


@torch.inference_mode()
def beam_search(
    model: EncoderDecoderTransformer,
    src: torch.Tensor,
    src_lens=None,
    beam_width: int = 4,
    max_len: int = 16,
    alpha: float = 0.0,
    use_cache: bool = False,
):
    """Beam search from BOS for every source sequence.

    src (B, n_src) ids, src_lens (B,) or None. A prefix that has produced EOS
    is finished: it is extended only by EOS, at no cost, and its length stays
    that up to and including its EOS. Prefixes are ranked by total
    log-probability divided by ``length_penalty(length, alpha)`` (alpha = 0:
    total log-probability). Stops after ``max_len`` tokens or once every kept
    prefix is finished. Returns (tokens (B, T) without the BOS, the best
    prefix of each input; scores (B,) its ranking score).

    ``use_cache=False`` re-runs the teacher-forced ``decode`` on the
    B * beam_width prefixes at each step. ``use_cache=True`` runs the
    decoder's ``step`` on the newest token and keeps every layer's keys and
    values in a ``KVCache``; as the kept prefixes change parents, the cache
    is gathered by the parent of each new beam (``cache.reorder(rows)``).
    Both give the same beams.
    """
    _require_model(model)
    require_int("beam_width", beam_width)
    require_int("max_len", max_len)
    alpha = _require_alpha(alpha)
    require_flag("use_cache", use_cache)
    if max_len > model.tgt_positions.max_len:
        raise ValueError(
            f"max_len ({max_len}) must be at most max_tgt_len "
            f"({model.tgt_positions.max_len})"
        )
    memory, mask = model.encode(src, src_lens)
    batch, k = src.shape[0], beam_width
    memory = memory.repeat_interleave(k, dim=0)  # (B * k, n_src, d_model)
    if mask is not None:
        mask = mask.repeat_interleave(k, dim=0)
    cache = memory_kv = None
    if use_cache:
        cache = model.decoder.new_cache()
        memory_kv = model.decoder.memory_keys_values(memory)
    tokens = torch.full((batch * k, 1), model.bos, device=src.device)
    # only the first beam is live at the start: the others are copies
    log_p = torch.full((batch, k), float("-inf"), device=src.device)
    log_p[:, 0] = 0.0
    lengths = torch.zeros(batch, k, device=src.device)  # up to the EOS
    for t in range(max_len):
        finished = tokens[:, -1] == model.eos
        if t > 0 and finished.all():
            break
        logits = _step_logits(model, tokens, t, memory, mask, cache, memory_kv)
        log_probs = torch.log_softmax(logits.float(), dim=-1)
        log_probs[finished] = float("-inf")
        log_probs[finished, model.eos] = 0.0
        vocab = log_probs.shape[-1]
        total = log_p[:, :, None] + log_probs.view(batch, k, vocab)
        grown = lengths + (~finished).view(batch, k).float()  # (B, k)
        ranked = total / length_penalty(grown, alpha)[:, :, None]
        _, best = ranked.view(batch, k * vocab).topk(k, dim=-1)
        beam, token = best // vocab, best % vocab
        log_p = total.view(batch, -1).gather(1, best)
        lengths = grown.gather(1, beam)
        rows = torch.arange(batch, device=src.device)[:, None] * k + beam
        rows = rows.flatten()
        tokens = torch.cat([tokens[rows], token.flatten()[:, None]], dim=1)
        if use_cache:
            cache.reorder(rows)  # each beam keeps its parent's past
    scores = log_p[:, 0] / length_penalty(lengths[:, 0], alpha)
    return tokens.view(batch, k, -1)[:, 0, 1:], scores


@torch.inference_mode()
def sequence_log_probs(
    model: EncoderDecoderTransformer, src, src_lens, tokens: torch.Tensor
) -> torch.Tensor:
    """The model's total log-probability of each output ``tokens`` (B, T)
    (without BOS, as ``generate`` and ``beam_search`` return them), up to and
    including its first EOS: (B,). The score ``beam_search`` maximises."""
    _require_model(model)
    require_ids("tokens", tokens, model.tgt_vocab_size, dims=2)
    if tokens.dtype != torch.int64 or tokens.shape[1] == 0:
        raise ValueError(
            "tokens must be int64 of shape (B, T) with T >= 1, got "
            f"{tokens.dtype} {tuple(tokens.shape)}"
        )
    memory, mask = model.encode(src, src_lens)
    if tokens.shape[0] != memory.shape[0]:
        raise ValueError(
            f"tokens hold {tokens.shape[0]} outputs for "
            f"{memory.shape[0]} sources"
        )
    bos = torch.full_like(tokens[:, :1], model.bos)
    logits = model.decode(torch.cat([bos, tokens[:, :-1]], 1), memory, mask)
    log_probs = torch.log_softmax(logits.float(), dim=-1)
    picked = log_probs.gather(-1, tokens[..., None])[..., 0]  # (B, T)
    is_eos = (tokens == model.eos).long()
    after_eos = (is_eos.cumsum(1) - is_eos) > 0  # positions past the EOS
    return picked.masked_fill(after_eos, 0.0).sum(1)

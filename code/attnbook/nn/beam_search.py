"""Beam search for the encoder-decoder Transformer (chapter 10).

Greedy decoding keeps one prefix and extends it by its most probable token.
Beam search keeps the ``beam_width`` prefixes with the highest total
log-probability; at every step it extends each by every token and keeps the
best ``beam_width`` of the extensions. With ``beam_width=1`` it is greedy
decoding.
"""

import torch

from .._checks import require_ids, require_int
from .decoder import EncoderDecoderTransformer


def _require_model(model) -> None:
    if not isinstance(model, EncoderDecoderTransformer):
        raise TypeError(
            "model must be an EncoderDecoderTransformer, got "
            f"{type(model).__name__}"
        )


@torch.inference_mode()
def beam_search(
    model: EncoderDecoderTransformer,
    src: torch.Tensor,
    src_lens=None,
    beam_width: int = 4,
    max_len: int = 16,
):
    """Beam search from BOS for every source sequence.

    src (B, n_src) ids, src_lens (B,) or None. A prefix that has produced EOS
    is finished: it is extended only by EOS, at no cost. Scores are total
    log-probabilities (no length normalisation). Stops after ``max_len``
    tokens or once every kept prefix is finished. Returns (tokens (B, T)
    without the BOS, the best prefix of each input; scores (B,) its total
    log-probability). Each step re-runs the teacher-forced ``decode`` on the
    B * beam_width prefixes (no key-value cache: short outputs only).
    """
    _require_model(model)
    require_int("beam_width", beam_width)
    require_int("max_len", max_len)
    if max_len > model.tgt_positions.max_len:
        raise ValueError(
            f"max_len ({max_len}) must be at most max_tgt_len "
            f"({model.tgt_positions.max_len})"
        )
    memory, mask = model.encode(src, src_lens)
    batch, k = src.shape[0], beam_width
    memory = memory.repeat_interleave(k, dim=0)  # (B * k, n_src, E)
    if mask is not None:
        mask = mask.repeat_interleave(k, dim=0)
    tokens = torch.full((batch * k, 1), model.bos, device=src.device)
    # only the first beam is live at the start: the others are copies
    scores = torch.full((batch, k), float("-inf"), device=src.device)
    scores[:, 0] = 0.0
    for _ in range(max_len):
        logits = model.decode(tokens, memory, mask)[:, -1]
        log_probs = torch.log_softmax(logits.float(), dim=-1)
        finished = tokens[:, -1] == model.eos
        if tokens.shape[1] > 1 and finished.all():
            break
        log_probs[finished] = float("-inf")
        log_probs[finished, model.eos] = 0.0
        vocab = log_probs.shape[-1]
        total = scores[:, :, None] + log_probs.view(batch, k, vocab)
        scores, best = total.view(batch, k * vocab).topk(k, dim=-1)
        beam, token = best // vocab, best % vocab
        rows = torch.arange(batch, device=src.device)[:, None] * k + beam
        tokens = torch.cat(
            [tokens[rows.flatten()], token.flatten()[:, None]], dim=1
        )
    return tokens.view(batch, k, -1)[:, 0, 1:], scores[:, 0]


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
    bos = torch.full_like(tokens[:, :1], model.bos)
    logits = model.decode(torch.cat([bos, tokens[:, :-1]], 1), memory, mask)
    log_probs = torch.log_softmax(logits.float(), dim=-1)
    picked = log_probs.gather(-1, tokens[..., None])[..., 0]  # (B, T)
    is_eos = (tokens == model.eos).long()
    after_eos = (is_eos.cumsum(1) - is_eos) > 0  # positions past the EOS
    return picked.masked_fill(after_eos, 0.0).sum(1)

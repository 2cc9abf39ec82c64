"""Chapter 14: what a head computes, read from its weights and tested by
changing what it does.

A head of ``MultiHeadAttention`` has four matrices: W_Q^h, W_K^h, W_V^h
(d_k, E), the rows of the input projection that make its queries, keys and
values, and W_O^h (E, d_k), the columns of the output projection that read
its d_k numbers back into the residual stream. Two products describe it
(Elhage et al. 2021): the **QK circuit** X_q W_Q^hT W_K^h X_k^T / sqrt(d_k),
the score of every query input against every key input, and the **OV
circuit** X W_V^hT W_O^hT U^T, what attending to an input adds to the
logits (U the unembedding).

``language_model_forward`` runs chapter 12's ``DecoderOnlyTransformer``
block by block so that each layer's attention weights can be read and
replaced (``edit``) before they weigh the values: the interventions of
"Is attention explanation?".
"""

import math

import torch

from .._checks import (
    require_callable,
    require_float,
    require_int,
    require_int_in,
    require_module_dtype,
    require_tensor,
)
from .._random import require_generator
from ..core.attention import attention
from ..core.masking import causal_mask
from ..core.scoring import scaled_dot_score
from ..measure.head_scores import induction_score, previous_token_score
from ..nn.attention_only import AttentionOnlyTransformer
from ..nn.language_model import DecoderOnlyTransformer
from ..nn.multihead import MultiHeadAttention, merge_heads, split_heads
from ..tasks.induction import repeated_batch


def head_matrices(layer: MultiHeadAttention, head: int) -> dict:
    """The four matrices of one head of ``layer`` (no biases added).

    Returns {"q", "k", "v": (d_k, E), "o": (E, d_k)}: the head's queries are
    x @ q.T, its keys x @ k.T, its values x @ v.T, and it adds
    weighted_values @ o.T to the output (before any output bias).
    """
    if not isinstance(layer, MultiHeadAttention):
        raise TypeError(
            "layer must be an attnbook MultiHeadAttention, got "
            f"{type(layer).__name__}"
        )
    if layer.num_kv_heads != layer.num_heads:
        raise ValueError(
            "head_matrices reads layers whose heads have their own keys "
            f"and values (num_kv_heads = num_heads), got {layer.num_kv_heads}"
            f" key-value heads for {layer.num_heads} heads"
        )
    require_int_in("head", head, 0, layer.num_heads - 1)
    d, embed = layer.head_dim, layer.embed_dim
    rows = slice(head * d, (head + 1) * d)
    w_q, w_k, w_v = layer.in_proj_weight.detach().split(embed)
    return {
        "q": w_q[rows],
        "k": w_k[rows],
        "v": w_v[rows],
        "o": layer.out_proj.weight.detach()[:, rows],
    }


def qk_circuit(layer, head: int, query_inputs, key_inputs) -> torch.Tensor:
    """The scores (a, b) the head gives query inputs (a, E) against key
    inputs (b, E): query_inputs W_Q^hT W_K^h key_inputs^T / sqrt(d_k), as
    ``scaled_dot_score`` scores them (no mask, no softmax)."""
    m = head_matrices(layer, head)
    _check_inputs(layer, query_inputs=query_inputs, key_inputs=key_inputs)
    queries, keys = query_inputs @ m["q"].T, key_inputs @ m["k"].T
    return queries @ keys.T / math.sqrt(layer.head_dim)


def ov_circuit(layer, head: int, inputs, unembed) -> torch.Tensor:
    """What the head adds to the logits (a, V) when it attends with weight
    1 to each of the inputs (a, E): inputs W_V^hT W_O^hT unembed^T, with
    ``unembed`` (V, E) the model's unembedding matrix."""
    m = head_matrices(layer, head)
    _check_inputs(layer, inputs=inputs, unembed=unembed)
    return inputs @ m["v"].T @ m["o"].T @ unembed.T


def _check_inputs(layer, **inputs) -> None:
    """Each input (a, embed_dim), a float tensor of the layer's dtype."""
    for name, x in inputs.items():
        require_float(name, x)
        if x.dim() != 2 or x.shape[1] != layer.embed_dim:
            raise ValueError(
                f"{name} must have shape (a, {layer.embed_dim}), got "
                f"{tuple(x.shape)}"
            )
    require_module_dtype(layer, **inputs)


@torch.no_grad()
def language_model_forward(model, tokens, edit=None):
    """Logits (B, n, V) of a ``DecoderOnlyTransformer`` (multi-head
    attention, causal mask), and every layer's attention weights
    (layers, B, heads, n, n) as the heads used them.

    edit: None, or a function ``edit(layer, weights) -> weights`` called in
        each layer with its weights (B, heads, n, n); what it returns (same
        shape) weighs the values instead. ``edit`` must not change its
        argument in place.
    """
    if not isinstance(model, DecoderOnlyTransformer):
        raise TypeError(
            "model must be a DecoderOnlyTransformer, got "
            f"{type(model).__name__}"
        )
    if edit is not None:
        require_callable(edit=edit)
    x = model.embed(tokens)
    mask = causal_mask(tokens.shape[1], device=tokens.device)
    used = []
    for index, block in enumerate(model.blocks):
        mha = block.self_attn
        if not isinstance(mha, MultiHeadAttention) or (
            mha.num_kv_heads != mha.num_heads
        ):
            raise ValueError(
                "language_model_forward reads multi-head attention blocks "
                "(num_kv_heads = num_heads, no latent)"
            )
        h = block.norm1(x)
        q, k, v = (split_heads(t, mha.num_heads) for t in mha.project(h, h, h))
        _, weights = attention(q, k, v, score=scaled_dot_score, mask=mask)
        if edit is not None:
            edited = edit(index, weights)
            require_tensor("edit's result", edited)
            if edited.shape != weights.shape:
                raise ValueError(
                    f"edit must return weights of shape "
                    f"{tuple(weights.shape)}, got {tuple(edited.shape)}"
                )
            weights = edited
        x = x + mha.out_proj(merge_heads(weights @ v))
        x = x + block.ffn(block.norm2(x))
        used.append(weights)
    return model.head(model.norm(x)), torch.stack(used)


def shuffle_keys(weights, generator: torch.Generator) -> torch.Tensor:
    """Causal weights (..., n, n) with each query's weights moved to a
    random permutation of the keys it may see (0 .. i for query i): the
    same numbers, on other keys, so each row still sums to 1.

    All draws come from ``generator``.
    """
    require_float("weights", weights)
    require_generator("generator", generator)
    if weights.dim() < 2 or weights.shape[-1] != weights.shape[-2]:
        raise ValueError(
            f"weights must have shape (..., n, n), got {tuple(weights.shape)}"
        )
    n = weights.shape[-1]
    draws = torch.rand(weights.shape, generator=generator)
    hidden = ~causal_mask(n)
    # hidden keys sort last, in their own order (stable): they stay put
    draws = draws.masked_fill(hidden, 2.0)
    order = draws.argsort(dim=-1, stable=True)
    return weights.gather(-1, order.to(weights.device))


def uniform_causal_weights(n: int) -> torch.Tensor:
    """(n, n): query i spreads its weight evenly over keys 0 .. i."""
    keep = causal_mask(n).float()
    return keep / keep.sum(dim=-1, keepdim=True)


def first_key_mass(weights) -> torch.Tensor:
    """The mean weight on key 0, over every query after the first: weights
    (..., n, n) -> (...). A head that ignores key 0 scores 0; a uniform
    causal head the mean of 1/(i + 1) over i = 1 .. n - 1."""
    require_float("weights", weights)
    if weights.dim() < 2 or weights.shape[-1] < 2:
        raise ValueError(
            "weights must have shape (..., n, n) with n >= 2, got "
            f"{tuple(weights.shape)}"
        )
    return weights[..., 1:, 0].mean(dim=-1)


@torch.no_grad()
def induction_model_scores(
    model, period: int = 16, batch_size: int = 64, seed: int = 0, ablate=()
):
    """Previous-token and induction scores (layers, heads) of an
    ``AttentionOnlyTransformer`` on ``batch_size`` random segments of
    ``period`` tokens repeated to fill its context (``repeated_batch`` with
    offset "fixed": the sequence repeats from its first token, as
    ``induction_score`` expects), drawn with a generator seeded ``seed``.
    ``ablate``: heads whose output is dropped, as in the model's forward.

    Returns (previous (layers, heads), induction (layers, heads)).
    """
    if not isinstance(model, AttentionOnlyTransformer):
        raise TypeError(
            "model must be an AttentionOnlyTransformer, got "
            f"{type(model).__name__}"
        )
    n = model.context_len
    require_int_in("period", period, 1, n // 2)
    require_int("seed", seed, minimum=0)
    generator = torch.Generator().manual_seed(seed)
    tokens, _ = repeated_batch(
        batch_size, period, n, model.vocab_size, generator, offset="fixed"
    )
    _, weights = model(tokens, return_weights=True, ablate=ablate)
    weights = weights.mean(dim=1)  # (layers, heads, n, n)
    return previous_token_score(weights), induction_score(weights, period)


def key_heads(model, **kwargs) -> tuple:
    """The (layer, head) of the best previous-token head of the first layer
    and of the best induction head of the last layer of a 2-layer
    ``AttentionOnlyTransformer``, by ``induction_model_scores(model,
    **kwargs)``."""
    if getattr(model, "num_layers", 2) < 2:
        raise ValueError(
            f"key_heads needs two layers or more, got {model.num_layers}"
        )
    previous, induction = induction_model_scores(model, **kwargs)
    last = model.num_layers - 1
    return (0, int(previous[0].argmax())), (
        last,
        int(induction[last].argmax()),
    )

"""Chapter 14: what a language model's head is worth, measured by replacing
its attention weights and counting the bits per character this adds.

Four replacements, each removing something different (Jain & Wallace 2019,
Wiegreffe & Pinter 2019, Wang et al. 2022):

- "zero": the head writes nothing (its weights all 0): removes the head;
- "uniform": each query spreads its weight evenly over the keys it may see
  (Wiegreffe & Pinter's baseline): removes *where* the head looks, keeps
  an average of the values;
- "mean": the head's own mean pattern over other windows: keeps where it
  looks *on average* (by position), removes only what depends on this
  input (a mean ablation);
- "shuffle": each query's weights moved to a random permutation of its keys
  (``shuffle_keys``): the same numbers, on the wrong keys.

``intervention_costs`` runs them on chapter 12's language model; the script
``python -m attnbook.train.head_interventions`` ships the result for 32
held-out windows in ``data/head_interventions.json`` (pinned by SHA-256),
which ``head_intervention_results()`` reads.
"""

import json
import math

import torch
import torch.nn.functional as F

from .._checks import (
    require_float,
    require_ids,
    require_int,
    require_int_in,
    require_same_device,
    require_tensor,
)
from .._weights import read_pinned
from ..nn.language_model import DecoderOnlyTransformer
from .head_circuits import (
    language_model_forward,
    shuffle_keys,
    uniform_causal_weights,
)

REPLACEMENTS = ("zero", "uniform", "mean", "shuffle")
HEAD_INTERVENTIONS_FILE = "head_interventions.json"
HEAD_INTERVENTIONS_SHA256 = (
    "d4715cd3b93bd8043cdf8b000a596a900d51b46bc311b3129f79df284d6d6738"
)
# the held-out windows: evaluation windows first, the mean pattern's after
WINDOWS = {"count": 32, "length": 128, "reference_count": 32}


def held_out_windows(held_out: torch.Tensor, count: int, length: int):
    """(evaluation, reference): two disjoint stacks of ``count`` windows of
    ``length + 1`` tokens cut one after the other from the start of
    ``held_out`` (1-D token ids): evaluation windows first, then the
    reference windows whose mean pattern the "mean" replacement uses."""
    require_tensor("held_out", held_out)
    require_int("count", count)
    require_int("length", length)
    size = count * (length + 1)
    if held_out.dim() != 1 or held_out.numel() < 2 * size:
        raise ValueError(
            f"held_out must be 1-D with at least {2 * size} tokens for "
            f"2 x {count} windows of {length + 1}, got shape "
            f"{tuple(held_out.shape)}"
        )
    evaluation = held_out[:size].view(count, length + 1)
    reference = held_out[size : 2 * size].view(count, length + 1)
    return evaluation, reference


def replaced(weights, head: int, how: str, mean_pattern=None, generator=None):
    """``weights`` (B, heads, n, n) of one layer with head ``head``'s weights
    replaced as ``how`` says (one of ``REPLACEMENTS``); a new tensor.

    mean_pattern: (heads, n, n), the layer's mean weights over other
        windows (needed for "mean"); generator: a torch.Generator (needed
        for "shuffle").
    """
    require_float("weights", weights)
    if weights.dim() != 4 or weights.shape[-1] != weights.shape[-2]:
        raise ValueError(
            "weights must have shape (B, heads, n, n), got "
            f"{tuple(weights.shape)}"
        )
    if how not in REPLACEMENTS:
        raise ValueError(f"how must be one of {REPLACEMENTS}, got {how!r}")
    require_int_in("head", head, 0, weights.shape[1] - 1)
    n = weights.shape[-1]
    if how == "mean" and (
        not isinstance(mean_pattern, torch.Tensor)
        or mean_pattern.shape != weights.shape[1:]
    ):
        raise ValueError(
            'how="mean" needs mean_pattern of shape (heads, n, n) = '
            f"{tuple(weights.shape[1:])}, got "
            f"{getattr(mean_pattern, 'shape', mean_pattern)}"
        )
    out = weights.clone()
    if how == "zero":
        out[:, head] = 0.0
    elif how == "uniform":
        out[:, head] = uniform_causal_weights(n).to(weights)
    elif how == "mean":
        out[:, head] = mean_pattern[head].to(weights)
    else:
        out[:, head] = shuffle_keys(weights[:, head], generator)
    return out


def bits_per_window(logits, targets) -> torch.Tensor:
    """Mean bits per character of each window: logits (B, n, V), targets
    (B, n) ids in [0, V) -> (B,)."""
    require_float("logits", logits)
    if logits.dim() != 3:
        raise ValueError(
            f"logits must have shape (B, n, V), got {tuple(logits.shape)}"
        )
    require_ids("targets", targets, logits.shape[-1], dims=2)
    if targets.dtype != torch.int64:
        raise TypeError(f"targets must be int64, got {targets.dtype}")
    if targets.shape != logits.shape[:2]:
        raise ValueError(
            f"targets must have shape (B, n) = {tuple(logits.shape[:2])}, "
            f"got {tuple(targets.shape)}"
        )
    require_same_device(logits=logits, targets=targets)
    nats = F.cross_entropy(logits.transpose(1, 2), targets, reduction="none")
    return nats.mean(dim=1) / math.log(2)


MAX_WINDOWS = 4096  # windows (and reference windows) per call


@torch.no_grad()
def intervention_costs(model, windows, reference, seed: int = 0) -> dict:
    """Bits per character added in each window by each replacement of each
    head, one head at a time, the rest of the model as trained.

    model: a ``DecoderOnlyTransformer``; windows, reference: (B, n + 1)
    token windows (inputs and next-character targets); the "mean"
    replacement uses each head's mean weights over ``reference``.
    Returns {"base": (B,) bits as trained, name: (layers, heads, B) bits
    added, for each name in ``REPLACEMENTS``}.
    """
    if not isinstance(model, DecoderOnlyTransformer):
        raise TypeError(
            "model must be a DecoderOnlyTransformer, got "
            f"{type(model).__name__}"
        )
    for name, tokens in (("windows", windows), ("reference", reference)):
        require_ids(name, tokens, getattr(model, "vocab_size", 0), dims=2)
        if tokens.dtype != torch.int64:
            raise TypeError(f"{name} must be int64, got {tokens.dtype}")
        if len(tokens) > MAX_WINDOWS:
            raise ValueError(
                f"{name} holds {len(tokens):,} windows, more than the "
                f"{MAX_WINDOWS:,} this experiment runs (each replacement of "
                "each head runs the model over all of them)"
            )
        if not 2 <= tokens.shape[1] <= getattr(model, "context_len", 0) + 1:
            raise ValueError(
                f"{name} must hold windows of 2 to context_len + 1 tokens, "
                f"got shape {tuple(tokens.shape)}"
            )
    if windows.shape[1] != reference.shape[1] or not len(reference):
        raise ValueError(
            "reference must hold at least one window as long as windows', "
            f"got {tuple(reference.shape)} for {tuple(windows.shape)}"
        )
    require_int("seed", seed, minimum=0)
    inputs, targets = windows[:, :-1], windows[:, 1:]
    logits, _ = language_model_forward(model, inputs)
    base = bits_per_window(logits, targets)
    _, ref_weights = language_model_forward(model, reference[:, :-1])
    means = ref_weights.mean(dim=1)  # (layers, heads, n, n)
    layers, heads = means.shape[:2]
    costs = {"base": base}
    for how in REPLACEMENTS:
        table = torch.empty(layers, heads, inputs.shape[0], dtype=base.dtype)
        for layer in range(layers):
            for head in range(heads):
                generator = torch.Generator().manual_seed(seed)

                def edit(index, weights):
                    if index != layer:
                        return weights
                    return replaced(
                        weights, head, how, means[layer], generator
                    )

                logits, _ = language_model_forward(model, inputs, edit)
                table[layer, head] = bits_per_window(logits, targets) - base
        costs[how] = table
    return costs


def results_json(costs: dict, recipe: dict) -> str:
    """The shipped file's text: the recipe and every per-window cost, in
    bits, rounded to 5 decimals: costs = {name: tensor}, recipe a dict."""
    if not isinstance(costs, dict) or not all(
        isinstance(value, torch.Tensor) for value in costs.values()
    ):
        raise TypeError(
            "costs must be a dict of tensors (intervention_costs' result), "
            f"got {type(costs).__name__}"
        )
    if not isinstance(recipe, dict):
        raise TypeError(f"recipe must be a dict, got {type(recipe).__name__}")
    return (
        json.dumps(
            {
                "recipe": recipe,
                **{
                    name: torch.round(value, decimals=5).tolist()
                    for name, value in costs.items()
                },
            },
            indent=1,
        )
        + "\n"
    )


def head_intervention_results() -> dict:
    """The shipped costs: {"recipe": ..., "base": (B,), name: (layers,
    heads, B) float64 tensors of bits per character added}."""
    data = json.loads(read_pinned(HEAD_INTERVENTIONS_FILE,
                                  HEAD_INTERVENTIONS_SHA256))  # fmt: skip
    return {
        key: value if key == "recipe" else torch.tensor(value).double()
        for key, value in data.items()
    }

"""Heads against head size at a fixed width (chapter 4): the card-lookup
layer trained with h = 1, 2, 4, ..., 32 heads at d_model = 32 (so each head
has d_k = 32 / h), several seeds each, every model measured whole and with
each of its heads removed.

Every run is ``train_card_lookup(h, seed=seed, **TRAINING_RECIPE)``
(float64, one thread): the same recipe as the chapter's shipped models, whose
seed-0 runs with 1, 2 and 4 heads it repeats. ``python -m
attnbook.train.card_heads`` runs the sweep and writes
``data/card_head_sweep.json``; ``head_sweep_results()`` reads it, checked
against its pinned SHA-256.
"""

import json

from .._checks import require_int
from .._weights import read_pinned, weights_digest
from ..tasks.card_lookup import (
    EMBED_DIM,
    TRAINING_RECIPE,
    lookup_report,
    train_card_lookup,
    without_heads,
)

HEAD_COUNTS = (1, 2, 4, 8, 16, 32)
SEEDS = (0, 1, 2, 3, 4)
HEAD_SWEEP_FILE = "card_head_sweep.json"
HEAD_SWEEP_SHA256 = (
    "e3d8f9399e5064faa9715972f630a0315a180f182a81c8431df86380031ca434"
)


def run_head_count(num_heads: int, seed: int) -> dict:
    """Train one card model with ``num_heads`` heads and measure it.

    Returns a dict: num_heads, seed, head_dim, the digit and colour accuracy
    on ``lookup_report``'s 2,000 held-out hands, the mean loss of the last 50
    steps, the weights' digest and ``ablated``: for each head, [digit, colour]
    accuracy of the model without that head (``without_heads``).
    """
    require_int("num_heads", num_heads)
    require_int("seed", seed, minimum=0)
    recipe = {k: v for k, v in TRAINING_RECIPE.items() if k != "seed"}
    model, losses = train_card_lookup(num_heads, seed=seed, **recipe)
    report = lookup_report(model)
    ablated = []
    for head in range(num_heads):
        without = lookup_report(without_heads(model, [head]))
        ablated.append([without["digit_accuracy"], without["colour_accuracy"]])
    return {
        "num_heads": num_heads,
        "seed": seed,
        "head_dim": EMBED_DIM // num_heads,
        "digit_accuracy": report["digit_accuracy"],
        "colour_accuracy": report["colour_accuracy"],
        "final_loss": sum(losses[-50:]) / 50,
        "weights_digest": weights_digest(model),
        "ablated": ablated,
    }


def sweep_json(records: list) -> str:
    """The file ``head_sweep_results`` reads, from ``run_head_count``
    records."""
    if not isinstance(records, list) or not all(
        isinstance(r, dict) and {"num_heads", "seed"} <= set(r)
        for r in records
    ):
        raise TypeError(
            "records must be a list of run_head_count's dicts, got "
            f"{type(records).__name__}"
        )
    return (
        json.dumps(
            {
                "recipe": TRAINING_RECIPE,
                "embed_dim": EMBED_DIM,
                "runs": records,
            },
            indent=1,
        )
        + "\n"
    )


def head_sweep_results() -> dict:
    """The shipped sweep: {"recipe", "embed_dim", "runs": [record, ...]},
    one record per (num_heads, seed) of HEAD_COUNTS x SEEDS."""
    return json.loads(read_pinned(HEAD_SWEEP_FILE, HEAD_SWEEP_SHA256))


def sweep_table(results: dict) -> dict:
    """num_heads -> list over seeds of (answers right, answers right without
    the head that matters most), from ``head_sweep_results()``.

    "Answers right" is the mean of the digit and the colour accuracy; the
    second number is its smallest value over the models with one head
    removed.
    """
    if not isinstance(results, dict) or "runs" not in results:
        raise TypeError(
            "results must be head_sweep_results()'s dict (with 'runs'), got "
            f"{type(results).__name__}"
        )
    table = {}
    for run in results["runs"]:
        whole = (run["digit_accuracy"] + run["colour_accuracy"]) / 2
        worst = min((digit + colour) / 2 for digit, colour in run["ablated"])
        table.setdefault(run["num_heads"], []).append((whole, worst))
    return table

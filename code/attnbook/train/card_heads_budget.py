"""Chapter 4's budget control for the head-count sweep: the card-lookup layer
with 1, 2 and 32 heads at d_model = 32, trained with every learning rate of
BUDGET_LRS for every step count of BUDGET_STEPS, seeds BUDGET_SEEDS.

    # the whole grid, write attnbook/data/card_heads_budget.json
    python -m attnbook.train.card_heads_budget
    # into another file (e.g. to compare digests)
    python -m attnbook.train.card_heads_budget --out /tmp/budget.json

The sweep (``python -m attnbook.train.card_heads``) gives every head count
the two-head recipe (600 steps at lr 3e-3). Here each head count also gets
four times the steps and a learning rate three times smaller or larger, so
the chapter can tell a budget effect from a capacity one. Each run is
``train_card_lookup`` (float64, one thread; the batch size of
TRAINING_RECIPE) measured by ``lookup_report`` on the sweep's 2,000 held-out
hands: 54 runs, about five minutes of CPU time (316 s here). Two runs on one
machine write the same file; ``budget_results()`` reads it, checked against its
pinned SHA-256.
"""

import json
import time

import torch

from .._checks import require_int, require_training
from .._weights import read_pinned, weights_digest
from ..tasks.card_lookup import (
    EMBED_DIM,
    TRAINING_RECIPE,
    lookup_report,
    train_card_lookup,
)
from ._results import results_parser, write_pinned

BUDGET_HEAD_COUNTS = (1, 2, 32)
BUDGET_LRS = (1e-3, 3e-3, 1e-2)
BUDGET_STEPS = (600, 2400)
BUDGET_SEEDS = (0, 1, 2)
BUDGET_FILE = "card_heads_budget.json"
CARD_HEADS_BUDGET_SHA256 = (
    "bee6d493b3d5cd89db9e509de890d670e7960bf6f0091d2555c718b57f7085a8"
)


def run_budget(num_heads: int, lr: float, steps: int, seed: int) -> dict:
    """Train one card model with ``num_heads`` heads for ``steps`` steps at
    learning rate ``lr`` (TRAINING_RECIPE's batch size) and measure it.

    Returns a dict: num_heads, lr, steps, seed, the digit and colour accuracy
    on ``lookup_report``'s 2,000 held-out hands (the sweep's), the mean loss
    of the last 50 steps and the weights' digest.
    """
    require_int("num_heads", num_heads)
    require_int("steps", steps)  # at least one: the loss of the last 50
    require_training(steps=steps, lr=lr, seed=seed)
    model, losses = train_card_lookup(
        num_heads,
        steps=steps,
        batch_size=TRAINING_RECIPE["batch_size"],
        lr=lr,
        seed=seed,
    )
    report = lookup_report(model)
    tail = losses[-50:]
    return {
        "num_heads": num_heads,
        "lr": lr,
        "steps": steps,
        "seed": seed,
        "digit_accuracy": report["digit_accuracy"],
        "colour_accuracy": report["colour_accuracy"],
        "final_loss": sum(tail) / len(tail),
        "weights_digest": weights_digest(model),
    }


def budget_json(records: list) -> str:
    """The file ``budget_results`` reads, from ``run_budget`` records."""
    keys = {"num_heads", "lr", "steps", "seed"}
    if not isinstance(records, list) or not all(
        isinstance(r, dict) and keys <= set(r) for r in records
    ):
        raise TypeError(
            "records must be a list of run_budget's dicts, got "
            f"{type(records).__name__}"
        )
    grid = {
        "head_counts": list(BUDGET_HEAD_COUNTS),
        "lrs": list(BUDGET_LRS),
        "steps": list(BUDGET_STEPS),
        "seeds": list(BUDGET_SEEDS),
    }
    return (
        json.dumps(
            {
                "command": "python -m attnbook.train.card_heads_budget",
                "grid": grid,
                "batch_size": TRAINING_RECIPE["batch_size"],
                "embed_dim": EMBED_DIM,
                "held_out": {"num_hands": 2000, "seed": 1},
                "runs": records,
            },
            indent=1,
        )
        + "\n"
    )


def budget_results() -> dict:
    """The shipped grid: {"command", "grid", "batch_size", "embed_dim",
    "held_out", "runs": [record, ...]}, one record per (num_heads, lr, steps,
    seed) of the grid."""
    return json.loads(read_pinned(BUDGET_FILE, CARD_HEADS_BUDGET_SHA256))


def best_budgets(results: dict) -> dict:
    """num_heads -> the grid cell (lr, steps) whose mean over seeds of the
    answers right (the mean of digit and colour accuracy) is highest, as a
    dict: lr, steps, digit and colour (means over seeds), worst (the lowest
    answers right of a seed in that cell).

    Ties go to the smaller budget (fewer steps, then the smaller lr).
    """
    if not isinstance(results, dict) or "runs" not in results:
        raise TypeError(
            "results must be budget_results()'s dict (with 'runs'), got "
            f"{type(results).__name__}"
        )
    cells = {}
    for run in results["runs"]:
        key = (run["num_heads"], run["steps"], run["lr"])
        cells.setdefault(key, []).append(run)
    best = {}
    for (num_heads, steps, lr), runs in sorted(cells.items()):
        digit = sum(r["digit_accuracy"] for r in runs) / len(runs)
        colour = sum(r["colour_accuracy"] for r in runs) / len(runs)
        worst = min(
            (r["digit_accuracy"] + r["colour_accuracy"]) / 2 for r in runs
        )
        cell = {
            "lr": lr,
            "steps": steps,
            "digit": digit,
            "colour": colour,
            "worst": worst,
        }
        held = best.get(num_heads)
        if held is None or (digit + colour) > (held["digit"] + held["colour"]):
            best[num_heads] = cell
    return best


def main(argv=None) -> None:
    parser = results_parser(__doc__.splitlines()[0], BUDGET_FILE)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    records = []
    start = time.process_time()
    for num_heads in BUDGET_HEAD_COUNTS:
        for steps in BUDGET_STEPS:
            for lr in BUDGET_LRS:
                for seed in BUDGET_SEEDS:
                    record = run_budget(num_heads, lr, steps, seed)
                    print(
                        f"h = {num_heads:2}, {steps:4} steps, lr {lr:g}, "
                        f"seed {seed}: digit "
                        f"{100 * record['digit_accuracy']:5.1f}%, colour "
                        f"{100 * record['colour_accuracy']:5.1f}%, loss "
                        f"{record['final_loss']:.3f} "
                        f"({time.process_time() - start:.0f} s CPU)",
                        flush=True,
                    )
                    records.append(record)
    write_pinned(
        args.out,
        budget_json(records),
        "CARD_HEADS_BUDGET_SHA256",
        "attnbook/train/card_heads_budget.py",
    )


if __name__ == "__main__":
    main()

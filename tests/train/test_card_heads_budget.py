"""Chapter 4's budget control for the head-count sweep
(train.card_heads_budget): the shipped grid is complete, measured on the
sweep's held-out hands, and one cell recomputes exactly."""

import hashlib
import inspect

import pytest

from attnbook.experiments.head_count import head_sweep_results
from attnbook.tasks.card_lookup import TRAINING_RECIPE, lookup_report
from attnbook.train import card_heads_budget
from attnbook.train._results import DATA
from attnbook.train.card_heads_budget import (
    BUDGET_FILE,
    BUDGET_HEAD_COUNTS,
    BUDGET_LRS,
    BUDGET_SEEDS,
    BUDGET_STEPS,
    CARD_HEADS_BUDGET_SHA256,
    best_budgets,
    budget_json,
    budget_results,
    run_budget,
)


def _runs():
    return {
        (r["num_heads"], r["lr"], r["steps"], r["seed"]): r
        for r in budget_results()["runs"]
    }


def test_the_shipped_file_matches_its_pinned_digest():
    data = (DATA / BUDGET_FILE).read_bytes()
    assert hashlib.sha256(data).hexdigest() == CARD_HEADS_BUDGET_SHA256


def test_the_shipped_grid_is_complete():
    results = budget_results()
    assert results["grid"] == {
        "head_counts": list(BUDGET_HEAD_COUNTS),
        "lrs": list(BUDGET_LRS),
        "steps": list(BUDGET_STEPS),
        "seeds": list(BUDGET_SEEDS),
    }
    assert results["batch_size"] == TRAINING_RECIPE["batch_size"]
    runs = _runs()
    assert len(runs) == len(results["runs"])  # no cell twice
    assert set(runs) == {
        (h, lr, steps, seed)
        for h in BUDGET_HEAD_COUNTS
        for lr in BUDGET_LRS
        for steps in BUDGET_STEPS
        for seed in BUDGET_SEEDS
    }
    for run in runs.values():
        for key in ("digit_accuracy", "colour_accuracy"):
            assert 0.0 <= run[key] <= 1.0
    # the sweep's own recipe is one cell of the grid
    assert TRAINING_RECIPE["lr"] in BUDGET_LRS
    assert TRAINING_RECIPE["steps"] in BUDGET_STEPS


def test_the_held_out_hands_are_the_sweeps():
    # lookup_report's defaults are the hands the sweep measured on ...
    defaults = inspect.signature(lookup_report).parameters
    held_out = budget_results()["held_out"]
    assert held_out == {
        "num_hands": defaults["num_hands"].default,
        "seed": defaults["seed"].default,
    }
    # ... and at the sweep's recipe the grid's runs get the sweep's
    # accuracies, to the last hand. (Not its weights bit for bit: retrained
    # here and now they differ in the last bits, the final loss by less than
    # 1e-9, giving the same answers.)
    sweep = {
        (r["num_heads"], r["seed"]): r for r in head_sweep_results()["runs"]
    }
    runs = _runs()
    recipe = TRAINING_RECIPE["lr"], TRAINING_RECIPE["steps"]
    for h in BUDGET_HEAD_COUNTS:
        for seed in BUDGET_SEEDS:
            ours, theirs = runs[(h, *recipe, seed)], sweep[(h, seed)]
            for key in ("digit_accuracy", "colour_accuracy"):
                assert ours[key] == theirs[key], (h, seed, key)
            assert ours["final_loss"] == pytest.approx(
                theirs["final_loss"], abs=1e-9
            )


def test_one_cell_recomputes_exactly():
    # two heads, the smallest budget: about two seconds (float64, one thread).
    # The accuracies are recomputed exactly; the loss to 1e-6 and not the
    # weights' digest, since make test-portable reruns this under other SIMD
    # levels, which round the 600 Adam steps differently.
    lr, steps, seed = min(BUDGET_LRS), min(BUDGET_STEPS), BUDGET_SEEDS[0]
    again = run_budget(2, lr, steps, seed)
    shipped = _runs()[(2, lr, steps, seed)]
    assert set(again) == set(shipped)
    for key in ("num_heads", "lr", "steps", "seed"):
        assert again[key] == shipped[key]
    for key in ("digit_accuracy", "colour_accuracy"):
        assert again[key] == shipped[key]
    assert again["final_loss"] == pytest.approx(
        shipped["final_loss"], rel=1e-6
    )


def test_best_budgets_takes_the_best_mean_cell_and_breaks_ties_small():
    def run(lr, steps, seed, digit, colour):
        return {
            "num_heads": 1,
            "lr": lr,
            "steps": steps,
            "seed": seed,
            "digit_accuracy": digit,
            "colour_accuracy": colour,
        }

    results = {
        "runs": [
            run(1e-3, 600, 0, 1.0, 0.5),
            run(1e-3, 600, 1, 0.5, 1.0),
            run(1e-2, 2400, 0, 1.0, 0.5),
            run(1e-2, 2400, 1, 1.0, 0.5),
            run(3e-3, 2400, 0, 0.9, 0.9),
            run(3e-3, 2400, 1, 0.9, 0.7),
        ]
    }
    best = best_budgets(results)[1]
    assert (best["lr"], best["steps"]) == (3e-3, 2400)
    assert best["digit"] == pytest.approx(0.9)
    assert best["colour"] == pytest.approx(0.8)
    assert best["worst"] == pytest.approx(0.8)
    # a tie goes to fewer steps
    tie = {"runs": results["runs"][:4]}
    assert (best_budgets(tie)[1]["steps"], best_budgets(tie)[1]["lr"]) == (
        600,
        1e-3,
    )
    with pytest.raises(TypeError, match="runs"):
        best_budgets([])


def test_budget_json_refuses_other_records():
    with pytest.raises(TypeError, match="run_budget"):
        budget_json([{"num_heads": 1}])
    text = budget_json([])
    assert text.endswith("\n")


def test_the_script_names_its_command():
    assert "python -m attnbook.train.card_heads_budget" in (
        card_heads_budget.__doc__
    )

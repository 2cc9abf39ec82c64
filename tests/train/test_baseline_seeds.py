"""Chapter 6's hardened baseline: ``python -m attnbook.train.baseline_seeds``
(three seeds of the baseline and of the pointer network, the baseline at a
third of the learning rate and given the position index) and its pinned
JSON."""

import pytest
import torch

from attnbook._weights import weights_digest
from attnbook.tasks import sorting
from attnbook.train.baseline_seeds import (
    BASELINE_LENGTHS,
    EXTRA_SEEDS,
    LR_FACTOR,
    POINTER_LENGTHS,
    IndexedPositionClassifier,
    lists_sorted,
    train_indexed,
)


def test_the_seeds_file_is_pinned(monkeypatch):
    monkeypatch.setattr(sorting, "BASELINE_SEEDS_SHA256", "0" * 64)
    with pytest.raises(ValueError, match="SHA-256"):
        sorting.load_baseline_seeds()


def test_the_seeds_file_holds_every_run_with_its_recipe():
    results = sorting.load_baseline_seeds()
    assert results["test_lists"] == sorting.SEEDS_TEST_LISTS
    runs = {(r["name"], r["seed"]): r for r in results["runs"]}
    seeds = (0, *EXTRA_SEEDS)
    expected = {("baseline", s) for s in seeds}
    expected |= {("pointer", s) for s in seeds}
    expected |= {("baseline lr/3", 0), ("baseline + index", 0)}
    assert set(runs) == expected and len(results["runs"]) == len(expected)
    for (name, seed), run in runs.items():
        shipped = name == "pointer" and sorting.TRAINING_RECIPE
        recipe = dict(shipped or sorting.BASELINE_RECIPE, seed=seed)
        if name == "baseline lr/3":
            recipe["lr"] = recipe["lr"] / LR_FACTOR
            recipe["final_lr"] = recipe["final_lr"] / LR_FACTOR
        # only the seed (or the rate, or the index) differs
        assert run["recipe"] == recipe
        assert run["shipped"] == (
            seed == 0 and name in ("baseline", "pointer")
        )
        lengths = POINTER_LENGTHS if name == "pointer" else BASELINE_LENGTHS
        assert list(run["sorted"]) == [str(n) for n in lengths]
        assert all(
            isinstance(k, int) and 0 <= k <= results["test_lists"]
            for k in run["sorted"].values()
        )
    # seed 0 is the shipped weights, not a retraining
    assert runs["baseline", 0]["digest"] == weights_digest(
        sorting.pretrained_position_classifier()
    )
    assert runs["pointer", 0]["digest"] == weights_digest(
        sorting.pretrained_sorter()
    )


def test_the_shipped_baseline_scores_as_pinned():
    # the chapter's test lists (seeded 500 + n); n = 5 recomputed here
    pinned = sorting.load_baseline_seeds()["runs"][0]
    assert pinned["name"] == "baseline" and pinned["seed"] == 0
    right = lists_sorted(sorting.pretrained_position_classifier(), (5,))
    assert right == {"5": pinned["sorted"]["5"]}


def test_the_indexed_classifier_adds_the_position_to_each_input():
    torch.manual_seed(0)
    model = IndexedPositionClassifier(8, 5).eval()
    x = torch.rand(2, 4, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        states, _ = model.encode(x)
        without, _ = model.encoder(model.embed(x.unsqueeze(-1)))
        assert not torch.allclose(states, without)
        # with the position embedding at 0 it is a plain PositionClassifier
        model.where.weight.zero_()
        assert torch.equal(model.encode(x)[0], without)
    with pytest.raises(ValueError, match="list of 6"):
        model.decode(torch.rand(1, 6))


def test_train_indexed_follows_the_recipe_and_refuses_other_keys():
    recipe = dict(sorting.BASELINE_RECIPE, hidden_dim=8, steps=3)
    recipe.update(batch_size=4)
    model, losses = train_indexed(recipe)
    again, _ = train_indexed(recipe)
    assert isinstance(model, IndexedPositionClassifier) and len(losses) == 3
    assert weights_digest(model) == weights_digest(again)
    with pytest.raises(ValueError, match="recipe"):
        train_indexed({"steps": 3})


def test_lists_sorted_refuses_lengths_beyond_the_classes():
    baseline = sorting.pretrained_position_classifier()
    with pytest.raises(ValueError, match=r"lengths\[0\]"):
        lists_sorted(baseline, (11,))
    with pytest.raises(TypeError, match="model"):
        lists_sorted("a model", (5,))

"""Chapter 5's bottleneck over three seeds
(attnbook.experiments.bottleneck_seeds), its shipped results and the
training function both scripts share."""

import pytest
import torch

from attnbook._weights import weights_digest
from attnbook.experiments import bottleneck_seeds
from attnbook.experiments.bottleneck_seeds import (
    CHAPTER_STRINGS,
    EVAL_SEED,
    EVAL_STRINGS,
    LONGER_STEPS,
    RUNS,
    SEED_LENGTHS,
    SEEDS,
    accuracy_curves,
    bottleneck_seed_results,
)
from attnbook.tasks import copying


@pytest.fixture(scope="module")
def results():
    return bottleneck_seed_results()


def test_the_shipped_results_are_pinned(monkeypatch):
    monkeypatch.setattr(bottleneck_seeds, "BOTTLENECK_SEEDS_SHA256", "0" * 64)
    with pytest.raises(ValueError, match="SHA-256"):
        bottleneck_seed_results()


def test_the_file_holds_every_run_as_stated(results):
    assert results["seeds"] == list(SEEDS) == [0, 1, 2]
    assert results["lengths"] == list(SEED_LENGTHS) == list(range(4, 31, 2))
    assert results["eval_strings"] == EVAL_STRINGS
    assert results["chapter_strings"] == CHAPTER_STRINGS
    assert results["eval_seed"] == EVAL_SEED
    assert results["longer_steps"] == LONGER_STEPS == 2400
    steps = copying.BOTTLENECK_RECIPE["steps"]
    assert results["recipe"]["steps"] == steps
    runs = results["runs"]
    assert [(r["model"], r["seed"], r["steps"]) for r in runs] == list(RUNS)
    for name in ("attention", "plain"):
        assert sorted(accuracy_curves(results, name, steps)) == [0, 1, 2]
    assert sorted(accuracy_curves(results, "plain", LONGER_STEPS)) == [0, 1, 2]
    for r in runs:
        shipped = r["seed"] == 0 and r["steps"] == steps
        assert r["weights"] == ("shipped" if shipped else "trained")
        assert (r["final_loss"] is None) == shipped
        assert len(r["copied"]) == len(r["copied_chapter"]) == 14
        assert all(0 <= c <= EVAL_STRINGS for c in r["copied"])
        assert all(0 <= c <= CHAPTER_STRINGS for c in r["copied_chapter"])
    # three different initialisations per model, none of them the same
    digests = [r["weights_digest"] for r in runs]
    assert len(set(digests)) == len(digests)


def test_seed_0_is_the_shipped_pair_as_the_chapter_scores_it(results):
    """The file's seed-0 runs are the shipped weights, and its counts on the
    first 200 strings are the chapter's copy_accuracies at n = 12."""
    models = copying.pretrained_bottleneck_models()
    steps = copying.BOTTLENECK_RECIPE["steps"]
    k = SEED_LENGTHS.index(12)
    chapter = copying.copy_accuracies(models, [12], num_sequences=200)
    for name, model in models.items():
        (record,) = [
            r
            for r in results["runs"]
            if (r["model"], r["seed"], r["steps"]) == (name, 0, steps)
        ]
        assert record["weights_digest"] == weights_digest(model)
        assert record["copied_chapter"][k] == round(200 * chapter[name][0])
    # and on all 1,000 strings, for the plain model
    hits = copying.copied_exactly(
        models["plain"], 12, EVAL_STRINGS, seed=EVAL_SEED + 12
    )
    assert int(hits.sum()) == record["copied"][k]


def test_the_attention_model_beats_the_plain_one_at_every_seed(results):
    steps = copying.BOTTLENECK_RECIPE["steps"]
    attention = accuracy_curves(results, "attention", steps)
    plain = accuracy_curves(results, "plain", steps)
    k = SEED_LENGTHS.index(16)
    for seed in SEEDS:
        assert min(attention[seed]) >= 0.9
        assert plain[seed][k] < 0.5
    with pytest.raises(ValueError, match="no run"):
        accuracy_curves(results, "plain", 7)


def test_train_bottleneck_model_is_seeded_and_leaves_the_global_rng():
    torch.manual_seed(123)
    before = torch.get_rng_state()
    model, losses = copying.train_bottleneck_model("plain", 1, steps=3)
    assert torch.equal(torch.get_rng_state(), before)
    assert len(losses) == 3 and not model.training
    again, _ = copying.train_bottleneck_model("plain", 1, steps=3)
    other, _ = copying.train_bottleneck_model("plain", 2, steps=3)
    assert weights_digest(again) == weights_digest(model)
    assert weights_digest(other) != weights_digest(model)
    with pytest.raises(ValueError, match="name must be"):
        copying.train_bottleneck_model("luong", 0)
    with pytest.raises(ValueError, match="seed"):
        copying.train_bottleneck_model("plain", -1)


def test_copied_exactly_is_what_copy_accuracy_averages():
    model = copying.pretrained_bottleneck_models()["plain"]
    hits = copying.copied_exactly(model, 12, 50, seed=7)
    assert hits.dtype == torch.bool and hits.shape == (50,)
    assert copying.copy_accuracy(model, 12, 50, seed=7) == pytest.approx(
        hits.float().mean().item()
    )

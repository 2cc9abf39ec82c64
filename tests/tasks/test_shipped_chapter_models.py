"""The models chapters 4 and 9 load instead of training: pinned, small, and what the chapters say.

They ship because their training amplifies rounding (another CPU ends a few percent away for the
one-head card model); these tests re-measure the shipped weights, which is what every reader sees.
"""

from importlib import resources

import pytest
import torch

from attnbook import _weights
from attnbook.tasks import card_lookup as lookup
from attnbook.tasks import order_classifier as classifier


@pytest.mark.parametrize(
    "filename, pinned",
    [
        (lookup.CARD_LOOKUP_FILE, lookup.CARD_LOOKUP_SHA256),
        (classifier.ORDER_CLASSIFIER_FILE, classifier.ORDER_CLASSIFIER_SHA256),
    ],
)
def test_the_files_are_small_and_pinned(filename, pinned):
    data = (resources.files("attnbook") / "data" / filename).read_bytes()
    assert len(data) <= 500_000
    assert len(pinned) == 64 and _weights.sha256_of(data) == pinned


def test_loading_leaves_the_global_rng_untouched():
    lookup._shipped_model.cache_clear()
    torch.manual_seed(7)
    state = torch.random.get_rng_state()
    lookup.trained_card_lookup(4)
    classifier.pretrained_order_classifier()
    assert torch.equal(state, torch.random.get_rng_state())


def test_every_shipped_card_run_loads_with_its_recipe():
    info = lookup.shipped_card_lookups()["info"]
    assert sorted(info) == sorted(
        lookup.run_name(*run) for run in lookup.SHIPPED_RUNS
    )
    for num_heads, steps, seed in lookup.SHIPPED_RUNS:
        model = lookup.trained_card_lookup(num_heads, steps, seed)
        entry = info[lookup.run_name(num_heads, steps, seed)]
        assert (entry["num_heads"], entry["steps"], entry["seed"]) == (
            num_heads,
            steps,
            seed,
        )
        assert (
            entry["batch_size"] == lookup.TRAINING_RECIPE["batch_size"]
            and entry["lr"] == lookup.TRAINING_RECIPE["lr"]
        )
        assert model.attention.num_heads == num_heads and not model.training
        assert next(model.parameters()).dtype == torch.float64


def test_the_card_models_show_what_chapter_4_says():
    # On hands no training batch drew (another seed than the recipe's and the report's).
    reports = {
        h: lookup.lookup_report(
            lookup.trained_card_lookup(h), num_hands=1000, seed=99
        )
        for h in (1, 2, 4)
    }
    assert reports[2]["digit_accuracy"] == reports[2]["colour_accuracy"] == 1.0
    assert reports[4]["digit_accuracy"] == reports[4]["colour_accuracy"] == 1.0
    assert reports[1]["digit_accuracy"] < 0.5 < reports[1]["colour_accuracy"]
    longer = lookup.lookup_report(
        lookup.trained_card_lookup(1, steps=2400), num_hands=1000, seed=99
    )
    assert reports[1]["digit_accuracy"] < longer["digit_accuracy"] < 0.8


def test_a_run_that_was_not_shipped_is_refused_naming_the_shipped_ones():
    with pytest.raises(
        ValueError, match=r"num_heads=3, steps=600, seed=0.*\(2, 600, 1\)"
    ):
        lookup.trained_card_lookup(3)
    with pytest.raises(ValueError, match="steps=601"):
        lookup.trained_card_lookup(2, steps=601)


def test_the_shipped_classifier_answers_fresh_sequences():
    model, history = classifier.pretrained_order_classifier()
    assert len(history["loss"]) == classifier.TRAINING_RECIPE["steps"]
    assert sum(history["loss"][-25:]) < 0.1 * sum(history["loss"][:25])
    tokens, lens, labels = classifier.order_batch(
        1000, generator=torch.Generator().manual_seed(2027)
    )
    assert classifier.accuracy(model, tokens, lens, labels) >= 0.98
    again, _ = classifier.pretrained_order_classifier()
    assert (
        again is not model
    )  # a fresh copy: a reader's ablation cannot leak into the next call


def test_a_damaged_file_is_refused(monkeypatch):
    monkeypatch.setattr(classifier, "ORDER_CLASSIFIER_SHA256", "0" * 64)
    with pytest.raises(
        ValueError, match="damaged or comes from another training run"
    ):
        classifier.pretrained_order_classifier()

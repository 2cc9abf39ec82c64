"""Chapter 10's model comparison over seeds and held-out draws: the exact
binomial intervals it prints, the shipped results (pinned, complete, and
consistent with themselves) and the held-out dates (disjoint from the
training streams of the pair of models they score)."""

import math

import pytest

from attnbook.experiments import date_comparison
from attnbook.experiments.date_comparison import (
    DRAW_SEEDS,
    DRAW_SIZE,
    MODELS,
    SEED_PAIRS,
    format_comparison,
    load_date_comparison,
    pooled_misses,
)
from attnbook.measure.binomial import clopper_pearson, equal_rates_p_value


def test_clopper_pearson_matches_closed_forms_and_a_table():
    # no events: the upper end solves (1 - p)^n = 0.025
    low, high = clopper_pearson(0, 2000)
    assert low == 0.0
    assert high == pytest.approx(1 - 0.025 ** (1 / 2000), rel=1e-9)
    # one event: the lower end solves 1 - (1 - p)^n = 0.025
    low, high = clopper_pearson(1, 2000)
    assert low == pytest.approx(1 - 0.975 ** (1 / 2000), rel=1e-9)
    assert high == pytest.approx(0.0027826, rel=1e-4)
    # 5 of 10: 0.1871 to 0.8129 (e.g. Clopper and Pearson's charts)
    low, high = clopper_pearson(5, 10)
    assert (round(low, 4), round(high, 4)) == (0.1871, 0.8129)
    # symmetric: k events is n - k non-events
    a, b = clopper_pearson(3, 50, level=0.9)
    c, d = clopper_pearson(47, 50, level=0.9)
    assert a == pytest.approx(1 - d, abs=1e-12)
    assert b == pytest.approx(1 - c, abs=1e-12)
    assert clopper_pearson(50, 50)[1] == 1.0


def test_clopper_pearson_refuses_impossible_counts():
    with pytest.raises(ValueError, match="k"):
        clopper_pearson(11, 10)
    with pytest.raises(ValueError, match="level"):
        clopper_pearson(1, 10, level=0.0)
    with pytest.raises(ValueError, match="n"):
        clopper_pearson(0, 10**6)


def test_equal_rates_p_value_is_the_conditional_binomial_test():
    assert equal_rates_p_value(0, 0) == 1.0
    assert equal_rates_p_value(1, 0) == 1.0
    assert equal_rates_p_value(5, 0) == pytest.approx(2 / 2**5)
    assert equal_rates_p_value(0, 6) == pytest.approx(2 / 2**6)
    # 2 vs 7: twice P(X <= 2), X ~ Binomial(9, 1/2)
    tail = sum(math.comb(9, i) for i in range(3)) / 2**9
    assert equal_rates_p_value(2, 7) == pytest.approx(2 * tail)


def test_loader_refuses_a_file_that_is_not_the_pinned_one(monkeypatch):
    results = load_date_comparison()
    assert results["command"] == "python -m attnbook.train.date_comparison"
    monkeypatch.setattr(date_comparison, "DATE_COMPARISON_SHA256", "0" * 64)
    with pytest.raises(ValueError, match="SHA-256"):
        load_date_comparison()


def test_shipped_results_hold_every_model_seed_and_draw_once():
    results = load_date_comparison()
    assert results["draw_seeds"] == list(DRAW_SEEDS)
    assert results["draw_size"] == DRAW_SIZE
    assert results["seed_pairs"] == [list(pair) for pair in SEED_PAIRS]
    expected = {
        (model, pair[i], draw)
        for i, model in enumerate(("transformer", "rnn"))
        for pair in SEED_PAIRS
        for draw in DRAW_SEEDS
    }
    found = [(r["model"], r["seed"], r["draw"]) for r in results["runs"]]
    assert sorted(found) == sorted(expected)
    for run in results["runs"]:
        shipped_seed = SEED_PAIRS[0][0 if run["model"] == "transformer" else 1]
        assert run["shipped"] == (run["seed"] == shipped_seed)
        assert run["dates"] == DRAW_SIZE
        assert run["exact"] == run["dates"] - len(run["misses"])
        indices = [miss[0] for miss in run["misses"]]
        assert indices == sorted(set(indices))
        assert all(0 <= i < DRAW_SIZE for i in indices)
        assert all(output != target for _, _, output, target in run["misses"])
    pooled = pooled_misses(results)
    assert set(pooled) == set(MODELS)
    for misses, dates in pooled.values():
        assert dates == len(SEED_PAIRS) * len(DRAW_SEEDS) * DRAW_SIZE
    table = format_comparison(results)
    assert all(len(line) <= 84 for line in table.splitlines())
    lines = table.splitlines()
    assert len(lines) == 2 + 2 * len(SEED_PAIRS) + 1 + len(MODELS)


def test_held_out_dates_of_a_pair_avoid_both_its_training_streams():
    from attnbook.experiments.luong_bahdanau import training_targets
    from attnbook.train.date_comparison import comparison_dates
    from attnbook.train.date_transformer import TRAINING_RECIPE
    from attnbook.train.date_translator import RECIPE as RNN_RECIPE

    pair, draw = SEED_PAIRS[1], DRAW_SEEDS[1]  # not the shipped models
    sources, targets = comparison_dates(draw, pair)
    assert len(targets) == DRAW_SIZE and len(set(sources)) > 1900
    for recipe, seed in zip((TRAINING_RECIPE, RNN_RECIPE), pair):
        seen = training_targets(seed, recipe["steps"], recipe["batch_size"])
        assert seen.isdisjoint(targets), seed
    # the stored misses are those dates, by index
    runs = [
        r
        for r in load_date_comparison()["runs"]
        if r["draw"] == draw and r["seed"] in pair
    ]
    assert len(runs) == 2
    for run in runs:
        for index, source, _, target in run["misses"]:
            assert (sources[index], targets[index]) == (source, target)


def test_held_out_helpers_refuse_bad_input_by_name():
    """Probe findings: a size no draw can reach is refused before the
    training streams are replayed; pairs and translators are checked."""
    import time

    from attnbook.train.date_transformer import (
        held_out_accuracy,
        held_out_date_pairs,
    )

    start = time.perf_counter()
    with pytest.raises(ValueError, match="size"):
        held_out_date_pairs(size=10**12)
    assert time.perf_counter() - start < 1.0
    with pytest.raises(TypeError, match="translator"):
        held_out_accuracy(None, (["a"], ["b"]))
    for pairs in (None, [], "abc", ([], [])):
        with pytest.raises((TypeError, ValueError), match="pairs"):
            held_out_accuracy(_Echo(), pairs)


class _Echo:
    def translate(self, sources):
        return list(sources)

"""Chapter 2's training with and without 1/sqrt(d)
(attnbook.experiments.scale_training) and its shipped sweep."""

import math

import pytest
import torch

from attnbook.experiments import scale_training
from attnbook.experiments.scale_training import (
    SCALE_RECIPE,
    TEST_SEED,
    VALIDATION_SEED,
    ProjectedDotScore,
    best_rows,
    noisy_copy_task,
    shipped_scale_sweep,
    train_retriever,
)


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def test_queries_are_noisy_copies_of_their_target_keys():
    queries, keys, targets = noisy_copy_task(3, 5, 7, 4, 1e-9, _gen(0))
    assert queries.shape == (3, 5, 4) and keys.shape == (3, 7, 4)
    assert targets.shape == (3, 5) and queries.dtype == torch.float64
    for s in range(3):
        for i in range(5):
            copy = keys[s, targets[s, i]]
            assert torch.allclose(queries[s, i], copy, atol=1e-6)
    noisy, _, _ = noisy_copy_task(2000, 1, 2, 8, 1.0, _gen(1))
    clean, keys, targets = noisy_copy_task(2000, 1, 2, 8, 1e-9, _gen(1))
    residual = noisy - clean  # the same draws but the noise's size
    assert abs(residual.var().item() - 1.0) < 0.05


def test_scores_are_the_projected_dot_products_and_differ_by_sqrt_d():
    dim = 6
    unscaled = ProjectedDotScore(dim, False, _gen(2))
    scaled = ProjectedDotScore(dim, True, _gen(2))
    assert torch.equal(unscaled.W_Q, scaled.W_Q)  # same start, both arms
    assert torch.equal(unscaled.W_K, scaled.W_K)
    queries, keys, _ = noisy_copy_task(2, 3, 5, dim, 1.0, _gen(3))
    q = queries @ unscaled.W_Q.T  # (2, 3, dim)
    k = keys @ unscaled.W_K.T  # (2, 5, dim)
    by_definition = torch.einsum("sid,sjd->sij", q, k)
    with torch.no_grad():
        assert torch.allclose(unscaled(queries, keys), by_definition)
        assert torch.allclose(
            scaled(queries, keys), by_definition / math.sqrt(dim)
        )


def test_xavier_start_gives_unit_variance_projections():
    model = ProjectedDotScore(256, True, _gen(4))
    x = torch.randn(4000, 256, generator=_gen(5), dtype=torch.float64)
    with torch.no_grad():
        assert abs((x @ model.W_Q.T).var().item() - 1) < 0.1


def test_training_is_repeatable_and_learns():
    run = train_retriever(True, 16, 8, 0.01, seed=0, steps=60, eval_every=30)
    again = train_retriever(True, 16, 8, 0.01, seed=0, steps=60, eval_every=30)
    assert run == again
    assert run["steps"] == [0, 30, 60]
    assert run["test_accuracy"][0] < 0.3 < 0.6 < run["test_accuracy"][-1]
    assert run["test_loss"][-1] < run["test_loss"][0]


def test_evaluation_sets_never_hold_a_training_key():
    recipe = SCALE_RECIPE["train"]
    assert max(SCALE_RECIPE["seeds"]) < min(VALIDATION_SEED, TEST_SEED)
    for dim in SCALE_RECIPE["dims"][:1]:
        task = {"n_keys": 16, "dim": dim, "noise": recipe["noise"]}
        held_out = set()
        for seed in (VALIDATION_SEED, TEST_SEED):
            _, keys, _ = noisy_copy_task(
                recipe["n_eval_sets"], 50, **task, generator=_gen(seed)
            )
            held_out |= {tuple(row.tolist()) for row in keys.flatten(0, 1)}
        for seed in SCALE_RECIPE["seeds"][:2]:
            generator = _gen(seed)
            ProjectedDotScore(dim, True, generator)  # the init draws first
            for _ in range(recipe["steps"]):
                _, keys, _ = noisy_copy_task(
                    1, recipe["batch_size"], **task, generator=generator
                )
                rows = {tuple(row.tolist()) for row in keys[0]}
                assert not rows & held_out


@pytest.mark.parametrize(
    "call, error",
    [
        (lambda: noisy_copy_task(2, 3, 1, 4), ValueError),
        (lambda: noisy_copy_task(2, 3, 4, 4, noise=-1.0), ValueError),
        (lambda: noisy_copy_task(2, 3, 4, 4, generator=3), TypeError),
        (lambda: ProjectedDotScore(0, True), ValueError),
        (lambda: train_retriever(True, 4, 4, lr=0.0, seed=0), ValueError),
        (lambda: train_retriever(True, 4, 4, 0.01, seed=-1), ValueError),
    ],
)
def test_bad_input_is_refused_clearly(call, error):
    with pytest.raises(error):
        call()


def test_the_shipped_sweep_is_pinned(monkeypatch):
    monkeypatch.setattr(scale_training, "SCALE_TRAINING_SHA256", "0" * 64)
    with pytest.raises(ValueError, match="SHA-256"):
        shipped_scale_sweep()


def test_the_shipped_sweep_matches_a_rerun_and_its_recipe():
    sweep = shipped_scale_sweep()
    assert sweep["recipe"] == SCALE_RECIPE
    grid = SCALE_RECIPE
    assert len(sweep["rows"]) == (
        len(grid["dims"]) * len(grid["n_keys"]) * 2 * len(grid["lrs"])
    )
    row = next(
        r
        for r in sweep["rows"]
        if (r["dim"], r["n_keys"], r["scaled"], r["lr"])
        == (32, 16, True, 0.01)
    )
    run = train_retriever(True, 32, 16, 0.01, seed=1, **grid["train"])
    # accuracies are counts over 1,000 test queries: equal but for a
    # near-tied argmax on another CPU
    gaps = [
        abs(a - b)
        for a, b in zip(run["test_accuracy"], row["test_accuracy"][1])
    ]
    assert max(gaps) <= 0.002
    best = best_rows(sweep)
    assert len(best) == len(grid["dims"]) * len(grid["n_keys"]) * 2
    for (dim, n_keys, scaled), chosen in best.items():
        rivals = [
            r for r in sweep["rows"]
            if (r["dim"], r["n_keys"], r["scaled"]) == (dim, n_keys, scaled)
        ]  # fmt: skip
        area = [sum(map(sum, r["val_accuracy"])) for r in rivals]
        assert sum(map(sum, chosen["val_accuracy"])) == max(area)


def test_scale_training_evaluate_and_best_rows_name_bad_arguments():
    from attnbook.experiments.scale_training import (
        ProjectedDotScore,
        best_rows,
        evaluate,
        noisy_copy_task,
    )

    data = noisy_copy_task(2, 3, 4, 5, generator=torch.Generator())
    model = ProjectedDotScore(5, True)
    accuracy, loss = evaluate(model, data)
    assert 0 <= accuracy <= 1 and loss > 0
    with pytest.raises(TypeError, match="model must be a ProjectedDotScore"):
        evaluate(torch.nn.Linear(2, 2), data)
    with pytest.raises(TypeError, match="data must be"):
        evaluate(model, data[:2])
    with pytest.raises(ValueError, match="targets"):
        evaluate(model, (data[0], data[1], data[2][:1]))
    with pytest.raises(TypeError, match="data's queries"):
        evaluate(model, ("queries", data[1], data[2]))
    with pytest.raises(TypeError, match="sweep must be"):
        best_rows({})

"""Chapter 3's training methods beyond tests/core/test_attention.py: the
selector's scores, REINFORCE from a log_softmax, straight-through
Gumbel-softmax, and the shipped sweep (attnbook.train.hard_selectors)."""

import math

import pytest
import torch

from attnbook.experiments import hard_training
from attnbook.experiments.hard_training import (
    METHODS,
    SWEEP_RECIPE,
    QuerySelector,
    choice_losses,
    gumbel_loss,
    leave_one_out_baseline,
    reinforce_loss,
    reinforce_surrogate,
    selection_task,
    selector_loss,
    shipped_selector_sweep,
    soft_loss,
    steps_to_accuracy,
    train_selector,
)

from _refusals import refused


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _example(batch=4, n=6, dim=3, seed=0):
    items, target = selection_task(batch, n, dim, _gen(seed))
    scores = torch.randn(batch, n, generator=_gen(seed + 1)).double()
    return scores.requires_grad_(True), items, target


def test_selector_scores_are_the_scaled_dot_product_and_forward_their_softmax():
    model = QuerySelector(4)
    with torch.no_grad():
        model.query.copy_(torch.tensor([0.5, -1.0, 2.0, 0.25]))
    items, _ = selection_task(3, 5, 4, _gen(1))
    scores = model.scores(items)
    torch.testing.assert_close(scores, items @ model.query / 2.0)
    torch.testing.assert_close(model(items), scores.softmax(dim=-1))


def test_gumbel_loss_forwards_the_sampled_item_and_backpropagates_the_relaxation():
    scores, items, target = _example()
    tau = 0.5
    loss = gumbel_loss(scores, items, target, _gen(7), tau=tau)
    (grad,) = torch.autograd.grad(loss, scores)
    # the same noise, written out
    u = torch.rand(scores.shape, generator=_gen(7), dtype=torch.float64)
    perturbed = scores.detach() - torch.log(-torch.log(u))
    z = perturbed.argmax(dim=-1)
    rows = torch.arange(len(z))
    losses = choice_losses(items, target)
    assert loss.item() == pytest.approx(losses[rows, z].mean().item())
    # d loss / d choice_n = 2 (x_z - t) . x_n / batch, then the softmax
    # Jacobian of the relaxed choice r = softmax(perturbed / tau)
    r = torch.softmax(perturbed / tau, dim=-1)
    right = items[rows, target]
    g_choice = 2 * ((items[rows, z] - right)[:, None, :] * items).sum(-1)
    g_choice = g_choice / len(z)
    expected = r * (g_choice - (r * g_choice).sum(-1, keepdim=True)) / tau
    torch.testing.assert_close(grad, expected)


def test_gumbel_max_draws_follow_the_softmax():
    # the forward choice of gumbel_loss is a draw from softmax(scores)
    n = 4
    scores = torch.tensor([[1.0, 0.0, -1.0, 0.5]], dtype=torch.float64)
    probs = scores.softmax(-1)[0]
    items = torch.eye(n, dtype=torch.float64)[None]  # item n = e_n
    target = torch.tensor([0])
    draws = 20_000
    loss = gumbel_loss(
        scores.expand(draws, n),
        items.expand(draws, n, n),
        target.expand(draws),
        _gen(3),
    )
    # loss = |e_z - e_0|^2 = 2 unless z = 0
    frequency = 1 - loss.item() / 2
    error = math.sqrt(probs[0] * (1 - probs[0]) / draws)
    assert abs(frequency - probs[0].item()) < 4 * error


def test_reinforce_loss_is_the_surrogate_of_a_log_softmax():
    scores, items, target = _example(seed=4)
    loss = reinforce_loss(scores, items, target, _gen(9))
    (grad,) = torch.autograd.grad(loss, scores)
    probs = scores.detach().softmax(-1)
    z = torch.multinomial(probs, 1, generator=_gen(9)).squeeze(-1)
    rows = torch.arange(len(z))
    losses = choice_losses(items, target)[rows, z]
    log_p = torch.log_softmax(scores, dim=-1)[rows, z]
    surrogate = reinforce_surrogate(
        log_p, losses, leave_one_out_baseline(losses)
    )
    (expected,) = torch.autograd.grad(surrogate, scores)
    assert loss.item() == pytest.approx(surrogate.item())
    torch.testing.assert_close(grad, expected)


def test_selector_loss_soft_and_expected_take_the_softmax_of_the_scores():
    scores, items, target = _example(seed=6)
    weights = scores.softmax(-1)
    assert selector_loss("soft", scores, items, target).item() == (
        pytest.approx(soft_loss(weights, items, target).item())
    )
    with pytest.raises(ValueError, match=r"scores must be \(batch, n_items\)"):
        selector_loss("soft", scores[:, :3], items, target)
    with pytest.raises(ValueError, match="the items' dtype"):
        selector_loss("soft", scores.float(), items, target)


@pytest.fixture(scope="module")
def sweep():
    return shipped_selector_sweep()


def test_the_shipped_sweep_has_every_method_rate_and_seed(sweep):
    assert sweep["recipe"] == SWEEP_RECIPE
    pairs = [(row["method"], row["lr"]) for row in sweep["rows"]]
    assert pairs == [
        (method, lr) for method in METHODS for lr in SWEEP_RECIPE["lrs"]
    ]
    assert [row["lr"] for row in sweep["no_baseline"]] == SWEEP_RECIPE["lrs"]
    for row in sweep["rows"] + sweep["no_baseline"]:
        assert len(row["accuracy"]) == len(SWEEP_RECIPE["seeds"])
        assert len(row["curves"][0]) == len(row["steps"]) == 31
        # every run learns: final accuracy far above chance (1/32)
        assert min(row["accuracy"]) > 0.3


def test_a_fresh_run_reproduces_the_shipped_one(sweep):
    row = next(
        r for r in sweep["rows"] if r["method"] == "gumbel" and r["lr"] == 0.1
    )
    run = train_selector("gumbel", lr=0.1, seed=1, **SWEEP_RECIPE["train"])
    assert run["steps"] == row["steps"]
    # accuracies are counts over 1000 test examples: equal but for a
    # near-tied argmax on another CPU
    assert (
        max(abs(a - b) for a, b in zip(run["accuracy"], row["curves"][1]))
        <= 0.002
    )
    assert steps_to_accuracy(run) == row["steps_to"][1]


def test_the_sweep_file_is_pinned(monkeypatch):
    monkeypatch.setattr(hard_training, "HARD_SELECTORS_SHA256", "0" * 64)
    with pytest.raises(ValueError, match="SHA-256"):
        shipped_selector_sweep()


def test_the_test_examples_are_never_training_examples():
    # train_selector draws its training batches with seed, its test set with
    # seed + 2 (both from selection_task): no test item set is a training one
    recipe = SWEEP_RECIPE["train"]
    size = (recipe["n_items"], recipe["dim"])
    for seed in (0, 9):
        data = _gen(seed)
        train = torch.cat(
            [
                selection_task(recipe["batch_size"], *size, data)[0]
                for _ in range(recipe["steps"])
            ]
        )
        test, _ = selection_task(1000, *size, _gen(seed + 2))
        train_rows = {tuple(x.tolist()) for x in train[:, 0]}
        assert not train_rows & {tuple(x.tolist()) for x in test[:, 0]}


@pytest.mark.parametrize("name", ["soft_loss", "expected_loss", "selector"])
def test_the_selection_losses_check_their_inputs(name):
    from attnbook.experiments import hard_training as h

    items = torch.randn(2, 4, 3, dtype=torch.float64)
    target = torch.tensor([0, 3])
    weights = torch.full((2, 4), 0.25, dtype=torch.float64)

    def call(w, x, t):
        if name == "selector":
            return h.selector_loss("soft", w, x, t)
        return getattr(h, name)(w, x, t)

    call(weights, items, target)  # the valid call
    with pytest.raises(ValueError, match="target"):
        call(weights, items, torch.tensor([0, 4]))
    with pytest.raises(TypeError, match="weights|scores"):
        call(weights.long(), items, target)
    with pytest.raises(ValueError, match="items"):
        call(weights, items[0], target)
    with pytest.raises(TypeError, match="target"):
        call(weights, items, target.float())


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(steps=2.5), "steps"),
        (dict(eval_every=0), "eval_every"),
        (dict(seed="3"), "seed"),
        (dict(batch_size=None), "batch_size"),
        (dict(n_test=0), "n_test"),
    ],
)
def test_train_selector_refuses_bad_settings(kwargs, match):
    from attnbook.experiments.hard_training import train_selector

    refused(lambda: train_selector("soft", **kwargs), ValueError, match)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(methods=None), "methods must be a non-empty"),
        (dict(seeds=[]), "seeds must be a non-empty"),
        (dict(lrs="abc"), "lrs must be a non-empty"),
        (dict(level=None), "level must be a finite number"),
    ],
)
def test_compare_selectors_checks_its_grid(kwargs, match):
    from attnbook.experiments.hard_training import compare_selectors

    refused(lambda: compare_selectors(**kwargs), ValueError, match)


@pytest.mark.parametrize(
    "args, error, match",
    [
        ((None, torch.randn(3)), TypeError, "log_probs must be a torch"),
        ((torch.randn(3), "abc"), TypeError, "losses must be a torch"),
        ((torch.randn(0), torch.randn(0)), ValueError, "batch >= 1"),
        ((torch.randn(3), torch.randn(4)), ValueError, "batch must match"),
        ((torch.randn(3), torch.randn(3) > 0), TypeError, "losses must be"),
    ],
)
def test_reinforce_surrogate_checks_its_tensors(args, error, match):
    from attnbook.experiments.hard_training import reinforce_surrogate

    refused(lambda: reinforce_surrogate(*args), error, match, *args)


@pytest.mark.parametrize("baseline", [1e300, 10**400, None, "1"])
def test_reinforce_surrogate_refuses_a_baseline_its_dtype_cannot_hold(
    baseline,
):
    from attnbook.experiments.hard_training import reinforce_surrogate

    log_p, losses = torch.randn(3), torch.rand(3)
    refused(
        lambda: reinforce_surrogate(log_p, losses, baseline),
        ValueError,
        "baseline",
        log_p,
        losses,
    )


@pytest.mark.parametrize("score", [float("nan"), float("inf")])
@pytest.mark.parametrize("name", ["reinforce_loss", "gumbel_loss"])
def test_sampling_losses_refuse_scores_they_cannot_sample(name, score):
    from attnbook.experiments import hard_training

    items, target = hard_training.selection_task(3, 5, 4, torch.Generator())
    w = torch.zeros((3, 5), dtype=torch.float64)
    w[0, 0] = score
    g = torch.Generator()
    state = g.get_state()
    loss = getattr(hard_training, name)
    refused(
        lambda: loss(w, items, target, g),
        ValueError,
        "scores must be finite",
        w,
    )
    assert torch.equal(g.get_state(), state)


def test_the_leave_one_out_baseline_refuses_a_huge_view_before_allocating():
    huge = torch.zeros(1).expand(10**9)
    with pytest.raises(ValueError, match=r"baselines of shape \(2, 10+\)"):
        leave_one_out_baseline(huge)


def test_run_sweep_checks_its_recipe():
    for recipe in (None, "x", {}, {"lrs": (0.1,)}):
        with pytest.raises(TypeError, match="recipe"):
            hard_training.run_sweep(recipe)

"""Soft and hard attention (chapter 3), REINFORCE training and the chapter's explorer."""

import math

import matplotlib

matplotlib.use("Agg")

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from attnbook import (
    AdditiveScore,
    attention,
    attention_weights,
    dot_score,
    hard_attention,
    masked_softmax,
    scaled_dot_score,
)
from attnbook.experiments.hard_training import (
    QuerySelector,
    choice_losses,
    compare_selectors,
    evaluate_selector,
    expected_loss,
    hidden_direction,
    leave_one_out_baseline,
    reinforce_surrogate,
    selection_task,
    soft_loss,
    steps_to_accuracy,
    train_selector,
)
from attnbook.widgets.soft_hard import (
    KEY_VALUES,
    circle_keys,
    plot_soft_hard,
    soft_hard_explorer,
    soft_hard_view,
    update_soft_hard_figure,
)

from _refusals import refused
from _tensors import qkv, seeded_randn


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _qkv(batch=(2,), n_q=3, n_k=5, d=4, d_v=6, seed=0, dtype=torch.float64):
    g = _gen(seed)
    return (
        torch.randn(*batch, n_q, d, generator=g, dtype=dtype),
        torch.randn(*batch, n_k, d, generator=g, dtype=dtype),
        torch.randn(*batch, n_k, d_v, generator=g, dtype=dtype),
    )


# --- soft attention ---------------------------------------------------------------------------


def test_attention_equals_torch_sdpa_without_mask():
    queries, keys, values = _qkv(batch=(2, 3))
    output, weights = attention(queries, keys, values)
    assert torch.allclose(
        output,
        F.scaled_dot_product_attention(queries, keys, values),
        atol=1e-12,
    )
    assert torch.allclose(
        weights.sum(dim=-1), torch.ones(2, 3, 3, dtype=torch.float64)
    )


def test_attention_equals_torch_sdpa_with_a_mask():
    queries, keys, values = _qkv(batch=(2,), n_q=4, n_k=7)
    mask = torch.rand(2, 4, 7, generator=_gen(1)) > 0.5
    mask[..., 3] = (
        True  # every query keeps a key: PyTorch's result is then defined
    )
    output, weights = attention(queries, keys, values, mask=mask)
    expected = F.scaled_dot_product_attention(
        queries, keys, values, attn_mask=mask
    )
    assert torch.allclose(output, expected, atol=1e-12)
    assert (weights[~mask] == 0).all()


def test_attention_with_a_broadcast_key_mask_equals_sdpa():
    queries, keys, values = _qkv(batch=(2,), n_q=4, n_k=7)
    mask = torch.tensor(
        [True] * 5 + [False] * 2
    )  # padding: the last two keys, for every query
    output, _ = attention(queries, keys, values, mask=mask)
    assert torch.allclose(
        output,
        F.scaled_dot_product_attention(queries, keys, values, attn_mask=mask),
        atol=1e-12,
    )


def test_attention_with_dot_score_is_the_direct_formula():
    queries, keys, values = _qkv()
    output, weights = attention(queries, keys, values, score=dot_score)
    expected = torch.softmax(queries @ keys.transpose(-2, -1), dim=-1)
    assert torch.allclose(weights, expected) and torch.allclose(
        output, expected @ values
    )


def test_attention_accepts_a_score_module():
    torch.manual_seed(0)
    score = AdditiveScore(query_dim=4, key_dim=4, hidden_dim=8).double()
    queries, keys, values = _qkv()
    output, weights = attention(queries, keys, values, score=score)
    assert torch.allclose(weights, torch.softmax(score(queries, keys), dim=-1))
    assert torch.allclose(output, weights @ values)
    assert torch.equal(attention_weights(queries, keys, score), weights)


def test_soft_attention_is_the_expectation_of_hard_samples():
    queries, keys, values = _qkv(batch=(), n_q=1, n_k=4, d_v=2)
    soft, _ = attention(queries, keys, values)
    many = queries.expand(40_000, 4)
    sampled, _ = hard_attention(
        many, keys, values, mode="sample", generator=_gen(5)
    )
    assert torch.allclose(sampled.mean(dim=0), soft[0], atol=0.05)


def test_fully_masked_query_gets_zero_output():
    queries, keys, values = _qkv(batch=(), n_q=2)
    mask = torch.tensor([[True, False, True, False, False], [False] * 5])
    output, weights = attention(queries, keys, values, mask=mask)
    assert (output[1] == 0).all() and (weights[1] == 0).all()
    assert weights[0].sum().item() == pytest.approx(1.0)


def test_attention_rejects_different_numbers_of_keys_and_values():
    queries, keys, _ = _qkv(n_k=5)
    with pytest.raises(ValueError, match=r"keys has 5, values has 4"):
        attention(queries, keys, torch.zeros(2, 4, 6, dtype=torch.float64))
    with pytest.raises(ValueError, match=r"keys has 5, values has 4"):
        hard_attention(
            queries, keys, torch.zeros(2, 4, 6, dtype=torch.float64)
        )


def test_attention_rejects_other_bad_input():
    queries, keys, values = _qkv()
    with pytest.raises(ValueError, match=r"queries has 4, keys has 3"):
        attention(queries, keys[..., :3], values)
    with pytest.raises(ValueError, match=r"keys need shape .*\(4,\)"):
        attention(queries, torch.zeros(4, dtype=torch.float64), values)
    with pytest.raises(
        ValueError,
        match=r"batch dimensions do not broadcast: keys \(2,\), values \(3,\)",
    ):
        attention(queries, keys, torch.zeros(3, 5, 6, dtype=torch.float64))
    with pytest.raises(
        TypeError, match="values must be a floating-point tensor"
    ):
        attention(queries, keys, torch.zeros(2, 5, 6, dtype=torch.long))
    with pytest.raises(ValueError, match=r"mask of shape \(2, 3, 4\)"):
        attention(
            queries, keys, values, mask=torch.ones(2, 3, 4, dtype=torch.bool)
        )


# --- properties (hypothesis) -----------------------------------------------------------------

_sizes = st.tuples(
    st.integers(1, 3),
    st.integers(1, 4),
    st.integers(1, 6),
    st.integers(1, 5),
    st.integers(0, 10_000),
)


@settings(max_examples=40, deadline=None)
@given(_sizes)
def test_weights_sum_to_one_over_kept_keys_and_masked_weights_are_zero(sizes):
    batch, n_q, n_k, d, seed = sizes
    queries, keys, values = _qkv(
        batch=(batch,), n_q=n_q, n_k=n_k, d=d, d_v=2, seed=seed
    )
    mask = torch.rand(batch, n_q, n_k, generator=_gen(seed + 1)) > 0.4
    _, weights = attention(queries, keys, values, mask=mask)
    assert (weights[~mask] == 0).all()
    kept = mask.any(dim=-1)
    sums = weights.sum(dim=-1)
    assert torch.allclose(sums[kept], torch.ones_like(sums[kept]))
    assert (sums[~kept] == 0).all()


@settings(max_examples=40, deadline=None)
@given(_sizes)
def test_permuting_key_value_pairs_together_leaves_the_output_unchanged(sizes):
    batch, n_q, n_k, d, seed = sizes
    queries, keys, values = _qkv(
        batch=(batch,), n_q=n_q, n_k=n_k, d=d, d_v=3, seed=seed
    )
    mask = torch.rand(n_q, n_k, generator=_gen(seed + 1)) > 0.3
    perm = torch.randperm(n_k, generator=_gen(seed + 2))
    output, weights = attention(queries, keys, values, mask=mask)
    permuted, permuted_weights = attention(
        queries, keys[:, perm], values[:, perm], mask=mask[:, perm]
    )
    assert torch.allclose(output, permuted, atol=1e-12)
    assert torch.allclose(weights[..., perm], permuted_weights, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(_sizes)
def test_argmax_hard_attention_picks_the_most_probable_unmasked_value(sizes):
    batch, n_q, n_k, d, seed = sizes
    queries, keys, values = _qkv(
        batch=(batch,), n_q=n_q, n_k=n_k, d=d, d_v=2, seed=seed
    )
    mask = torch.rand(batch, n_q, n_k, generator=_gen(seed + 1)) > 0.4
    mask[..., -1] = True
    output, index = hard_attention(queries, keys, values, mask=mask)
    weights = masked_softmax(scaled_dot_score(queries, keys), mask)
    assert torch.equal(index, weights.argmax(dim=-1))
    assert mask.gather(-1, index.unsqueeze(-1)).all()
    for b in range(batch):
        assert torch.equal(output[b], values[b, index[b]])


# --- hard attention ---------------------------------------------------------------------------


def test_hard_attention_shapes_and_broadcast_values():
    queries = torch.randn(2, 3, 4, generator=_gen(0))
    keys, values = (
        torch.randn(5, 4, generator=_gen(1)),
        torch.randn(5, 6, generator=_gen(2)),
    )
    for mode in ("argmax", "sample"):
        output, index = hard_attention(
            queries, keys, values, mode=mode, generator=_gen(3)
        )
        assert (
            output.shape == (2, 3, 6)
            and index.shape == (2, 3)
            and index.dtype == torch.int64
        )
        assert torch.equal(output, values[index])


def test_hard_attention_sample_frequencies_match_the_weights():
    query, keys, values = _qkv(batch=(), n_q=1, n_k=6, d=3, d_v=1, seed=7)
    weights = attention_weights(query, keys)[0]
    n = 50_000
    _, index = hard_attention(
        query.expand(n, 3), keys, values, mode="sample", generator=_gen(8)
    )
    frequencies = torch.bincount(index, minlength=6).double() / n
    # Each frequency is within 5 standard errors sqrt(p(1-p)/n) of its weight.
    tolerance = 5 * torch.sqrt(weights * (1 - weights) / n) + 1e-9
    assert ((frequencies - weights).abs() <= tolerance).all()
    # and a chi-square statistic far below its 0.999 quantile for 5 degrees of freedom (20.5)
    chi2 = (n * (frequencies - weights) ** 2 / weights).sum().item()
    assert chi2 < 20.5


def test_hard_attention_sampling_is_deterministic_with_a_seeded_generator():
    queries, keys, values = _qkv(n_q=50)
    first = hard_attention(
        queries, keys, values, mode="sample", generator=_gen(11)
    )
    second = hard_attention(
        queries, keys, values, mode="sample", generator=_gen(11)
    )
    other = hard_attention(
        queries, keys, values, mode="sample", generator=_gen(12)
    )
    assert torch.equal(first[1], second[1]) and torch.equal(
        first[0], second[0]
    )
    assert not torch.equal(first[1], other[1])


def test_hard_attention_never_samples_masked_keys():
    queries, keys, values = _qkv(n_q=200)
    mask = torch.tensor([True, False, True, False, True])
    _, index = hard_attention(
        queries, keys, values, mask=mask, mode="sample", generator=_gen(0)
    )
    assert mask[index].all()


def test_hard_attention_rejects_unknown_modes_and_fully_masked_queries():
    queries, keys, values = _qkv()
    with pytest.raises(
        ValueError,
        match=r"mode must be one of \('argmax', 'sample'\), got 'max'",
    ):
        hard_attention(queries, keys, values, mode="max")
    with pytest.raises(ValueError, match="at least one unmasked key"):
        hard_attention(
            queries, keys, values, mask=torch.zeros(5, dtype=torch.bool)
        )


def test_no_gradient_reaches_the_query_through_hard_attention():
    query = torch.tensor(
        [[0.3, -1.2, 0.5, 2.0]], dtype=torch.float64, requires_grad=True
    )
    _, keys, values = _qkv(batch=(), n_k=5)
    values.requires_grad_(True)
    for mode in ("argmax", "sample"):
        output, _ = hard_attention(
            query, keys, values, mode=mode, generator=_gen(0)
        )
        grad_query, grad_values = torch.autograd.grad(
            output.sum(), (query, values), allow_unused=True
        )
        assert (
            grad_query is None
        )  # the selected index is a constant for autograd
        assert (
            grad_values.abs().sum() > 0
        )  # the chosen value itself does get a gradient
    soft, _ = attention(query, keys, values)
    (grad_soft,) = torch.autograd.grad(soft.sum(), query)
    assert grad_soft.abs().sum() > 0


def test_argmax_output_is_a_step_function_of_the_query():
    keys, values = circle_keys()
    angles = torch.linspace(0, 2 * math.pi, 721, dtype=torch.float64)
    queries = 3 * torch.stack([angles.cos(), angles.sin()], dim=-1)
    hard, _ = hard_attention(queries, keys, values, score=dot_score)
    soft, _ = attention(queries, keys, values, score=dot_score)
    assert set(hard.squeeze(-1).tolist()) <= set(KEY_VALUES)
    jumps = (hard[1:] != hard[:-1]).sum().item()
    assert (
        0 < jumps <= len(KEY_VALUES)
    )  # piecewise constant: a handful of jumps
    assert (
        soft[1:] != soft[:-1]
    ).all()  # the soft output moves with every step of the angle


# --- REINFORCE vs soft training ---------------------------------------------------------------


def test_selection_task_targets_follow_the_hidden_direction():
    items, target = selection_task(20, n_items=6, dim=3, generator=_gen(0))
    direction = hidden_direction(3)
    assert direction.norm().item() == pytest.approx(1.0)
    for example in range(20):
        projections = [
            torch.dot(items[example, n], direction).item() for n in range(6)
        ]
        assert target[example].item() == max(
            range(6), key=projections.__getitem__
        )


def test_choice_and_soft_losses_match_direct_formulas():
    items, target = selection_task(4, n_items=5, dim=3, generator=_gen(1))
    weights = torch.softmax(
        torch.randn(4, 5, generator=_gen(2), dtype=torch.float64), dim=-1
    )
    losses = choice_losses(items, target)
    for b in range(4):
        for n in range(5):
            assert losses[b, n].item() == pytest.approx(
                ((items[b, n] - items[b, target[b]]) ** 2).sum().item()
            )
    expected_soft = (
        sum(
            ((weights[b] @ items[b] - items[b, target[b]]) ** 2).sum()
            for b in range(4)
        )
        / 4
    )
    assert soft_loss(weights, items, target).item() == pytest.approx(
        expected_soft.item()
    )


def test_leave_one_out_baseline():
    losses = torch.tensor([1.0, 2.0, 6.0])
    assert torch.allclose(
        leave_one_out_baseline(losses), torch.tensor([4.0, 3.5, 1.5])
    )
    with pytest.raises(ValueError, match="at least 2, got 1"):
        leave_one_out_baseline(torch.tensor([1.0]))


def test_reinforce_estimator_is_unbiased():
    # Mean of many score-function estimates = exact gradient of E_z[L(z)] = sum_n alpha_n L_n.
    items, target = selection_task(1, n_items=6, dim=3, generator=_gen(3))
    model = QuerySelector(3)
    with torch.no_grad():
        model.query.copy_(torch.tensor([0.5, -1.0, 2.0]))
    losses = choice_losses(items, target)[0]
    weights = model(items)[0]
    (exact,) = torch.autograd.grad((weights * losses).sum(), model.query)
    n = 200_000
    draws = torch.multinomial(
        weights.detach(), n, replacement=True, generator=_gen(4)
    )
    surrogate = reinforce_surrogate(
        model(items)[0][draws].log(), losses[draws]
    )
    (estimate,) = torch.autograd.grad(surrogate, model.query)
    assert torch.allclose(
        estimate, exact, atol=0.05 * exact.abs().max().item()
    )


def test_expected_loss_gradient_is_exact():
    # Autograd's gradient of sum_n alpha_n L_n (method "expected") against (a) the formula
    # sum_n L_n alpha_n (x_n - sum_j alpha_j x_j) / sqrt(d), written out item by item, and
    # (b) central finite differences of the expected loss.
    items, target = selection_task(3, n_items=7, dim=4, generator=_gen(5))
    model = QuerySelector(4)
    with torch.no_grad():
        model.query.copy_(
            torch.tensor([0.3, -1.2, 0.8, 2.0], dtype=torch.float64)
        )
    (autograd,) = torch.autograd.grad(
        expected_loss(model(items), items, target), model.query
    )
    query = model.query.detach().clone()
    formula = torch.zeros(4, dtype=torch.float64)
    for b in range(3):
        scores = [torch.dot(items[b, n], query).item() / 2.0 for n in range(7)]
        total = sum(math.exp(s) for s in scores)
        alpha = [math.exp(s) / total for s in scores]
        mean_item = sum(alpha[n] * items[b, n] for n in range(7))
        for n in range(7):
            loss = ((items[b, n] - items[b, target[b]]) ** 2).sum()
            formula += (
                loss * alpha[n] * (items[b, n] - mean_item) / 2.0 / 3
            )  # / sqrt(4), mean over 3 examples
    torch.testing.assert_close(autograd, formula, rtol=1e-10, atol=1e-12)

    def objective(q):
        with torch.no_grad():
            model.query.copy_(q)
            return expected_loss(model(items), items, target).item()

    step = 1e-6
    numeric = torch.tensor(
        [
            (objective(query + step * e) - objective(query - step * e))
            / (2 * step)
            for e in torch.eye(4, dtype=torch.float64)
        ],
        dtype=torch.float64,
    )
    torch.testing.assert_close(autograd, numeric, rtol=1e-6, atol=1e-8)


def test_expected_loss_is_the_mean_of_the_choice_losses():
    items, target = selection_task(2, n_items=5, dim=3, generator=_gen(6))
    weights = torch.softmax(
        torch.randn(2, 5, generator=_gen(7), dtype=torch.float64), dim=-1
    )
    losses = choice_losses(items, target)
    expected = (
        sum(
            (weights[b, n] * losses[b, n]).item()
            for b in range(2)
            for n in range(5)
        )
        / 2
    )
    assert expected_loss(weights, items, target).item() == pytest.approx(
        expected
    )


def test_evaluate_selector_reports_the_losses_with_or_without_precomputed_choice_losses():
    items, target = selection_task(50, n_items=6, dim=3, generator=_gen(8))
    model = QuerySelector(3)
    with torch.no_grad():
        model.query.copy_(torch.tensor([1.0, -0.5, 0.25], dtype=torch.float64))
    report = evaluate_selector(model, items, target)
    assert report == evaluate_selector(
        model, items, target, choice_losses(items, target)
    )
    weights = model(items).detach()
    assert report["hard_loss"] == pytest.approx(
        expected_loss(weights, items, target).item()
    )
    assert report["soft_loss"] == pytest.approx(
        soft_loss(weights, items, target).item()
    )
    assert report["accuracy"] == pytest.approx(
        (weights.argmax(dim=-1) == target).double().mean().item()
    )


def test_compare_selectors_runs_every_method_on_the_same_seeds():
    rows = compare_selectors(
        lrs=(0.1,), seeds=(0, 1), steps=20, eval_every=10, n_test=100
    )
    assert [row["method"] for row in rows] == [
        "soft",
        "reinforce",
        "expected",
        "gumbel",
    ]
    for row in rows:
        assert (
            row["steps"] == [0, 10, 20]
            and len(row["curves"]) == 2
            and len(row["accuracy"]) == 2
        )
    soft_again = train_selector(
        "soft", lr=0.1, seed=1, steps=20, eval_every=10, n_test=100
    )
    assert rows[0]["accuracy"][1] == soft_again["accuracy"][-1]
    assert (
        steps_to_accuracy({"steps": [0, 10, 20], "accuracy": [0.1, 0.85, 0.9]})
        == 10
    )
    assert (
        steps_to_accuracy({"steps": [0, 10], "accuracy": [0.1, 0.5]}) is None
    )


def test_query_selector_starts_uniform_and_checks_sizes():
    model = QuerySelector(4)
    items, _ = selection_task(3, n_items=5, dim=4, generator=_gen(0))
    assert torch.allclose(
        model(items), torch.full((3, 5), 0.2, dtype=torch.float64)
    )
    with pytest.raises(ValueError, match="items has 3, query has 4"):
        model(items[..., :3])


def test_training_is_seeded_and_learns():
    soft = train_selector("soft", steps=40, eval_every=20, n_test=200)
    again = train_selector("soft", steps=40, eval_every=20, n_test=200)
    hard = train_selector("reinforce", steps=40, eval_every=20, n_test=200)
    exact = train_selector("expected", steps=40, eval_every=20, n_test=200)
    gumbel = train_selector("gumbel", steps=40, eval_every=20, n_test=200)
    assert soft["steps"] == [0, 20, 40]
    assert (
        soft["accuracy"] == again["accuracy"]
        and soft["hard_loss"] == again["hard_loss"]
    )
    for history in (soft, hard, exact, gumbel):
        assert history["accuracy"][-1] > history["accuracy"][0] + 0.3
        assert history["hard_loss"][-1] < history["hard_loss"][0]
    with pytest.raises(ValueError, match="method must be one of"):
        train_selector("argmax")


# --- the explorer -----------------------------------------------------------------------------


def test_soft_hard_view_numbers():
    view = soft_hard_view(angle=100.0, length=3.0, n_samples=300, seed=1)
    keys, values = circle_keys()
    query = 3.0 * torch.tensor(
        [math.cos(math.radians(100)), math.sin(math.radians(100))],
        dtype=torch.float64,
    )
    weights = torch.softmax(keys @ query, dim=0)
    assert torch.allclose(view["query"], query)
    assert torch.allclose(view["weights"], weights)
    assert view["soft_output"] == pytest.approx((weights @ values).item())
    assert view["argmax_index"] == weights.argmax().item()
    assert view["argmax_output"] == KEY_VALUES[view["argmax_index"]]
    assert view["sample_counts"].sum().item() == 300
    assert (
        view["angles"].shape
        == view["soft_curve"].shape
        == view["argmax_curve"].shape
        == (361,)
    )


def test_soft_hard_view_argmax_points_at_the_nearest_key():
    for index, angle in enumerate((20.0, 95.0, 150.0, 230.0, 300.0)):
        assert soft_hard_view(angle=angle)["argmax_index"] == index


def _assert_soft_hard_figure_shows(figure, view):
    geo, curve, bars = figure.axes
    (key_dots,) = geo.collections
    assert key_dots.get_sizes().tolist() == pytest.approx(
        (300 * view["weights"] + 20).tolist()
    )
    (query_arrow,) = geo.patches
    tip = max(
        query_arrow.get_path().vertices.tolist(),
        key=lambda xy: math.hypot(*xy),
    )
    assert math.degrees(math.atan2(tip[1], tip[0])) % 360 == pytest.approx(
        view["angle"] % 360, abs=1e-6
    )
    assert geo.get_title() == f"query at {view['angle']:.0f}°"
    soft_line, argmax_line, current_angle = curve.lines
    assert soft_line.get_ydata().tolist() == pytest.approx(
        view["soft_curve"].tolist()
    )
    assert argmax_line.get_ydata().tolist() == pytest.approx(
        view["argmax_curve"].tolist()
    )
    assert list(current_angle.get_xdata()) == [view["angle"]] * 2
    assert (
        curve.get_title()
        == f"soft {view['soft_output']:.2f}, argmax {view['argmax_output']:.0f}"
    )
    weight_bars, sample_bars = bars.containers
    counts = view["sample_counts"]
    assert [bar.get_height() for bar in weight_bars] == pytest.approx(
        view["weights"].tolist()
    )
    assert [bar.get_height() for bar in sample_bars] == pytest.approx(
        (counts / counts.sum()).tolist()
    )
    assert (
        bars.get_legend().get_texts()[1].get_text()
        == f"{int(counts.sum())} samples"
    )


def test_soft_hard_plot_shows_the_view_with_fixed_limits():
    import matplotlib.pyplot as plt

    view = soft_hard_view(angle=140.0, length=1.5, n_samples=50)
    figure = plot_soft_hard(view)
    assert len(figure.axes) == 3
    _assert_soft_hard_figure_shows(figure, view)
    _, curve, bars = figure.axes
    low, high = curve.get_ylim()
    assert low < min(KEY_VALUES) and high > max(
        KEY_VALUES
    )  # every output lies between the smallest and largest value
    assert curve.get_xlim()[0] < 0 and curve.get_xlim()[1] > 360
    assert bars.get_ylim() == (0, 1)
    plt.close(figure)


def test_update_soft_hard_figure_changes_the_same_artists_every_time():
    import matplotlib.pyplot as plt

    figure = plot_soft_hard(soft_hard_view())
    limits = [(ax.get_xlim(), ax.get_ylim()) for ax in figure.axes]
    first = update_soft_hard_figure(
        figure, soft_hard_view(angle=0.0, length=0.5)
    )
    view = soft_hard_view(angle=300.0, length=10.0)
    second = update_soft_hard_figure(figure, view)
    assert [id(a) for a in first] == [id(a) for a in second]
    _assert_soft_hard_figure_shows(figure, view)
    assert [(ax.get_xlim(), ax.get_ylim()) for ax in figure.axes] == limits
    plt.close(figure)


def test_soft_hard_explorer_follows_each_control():
    box = soft_hard_explorer()
    assert len(box.children) == 2
    (angle, length), output = box.children[0].children, box.children[1]
    figure = box.live_figure.figure
    _assert_soft_hard_figure_shows(figure, soft_hard_view())
    before = output.outputs
    angle.value = 235
    _assert_soft_hard_figure_shows(figure, soft_hard_view(angle=235.0))
    assert output.outputs != before
    length.value = 8.5
    _assert_soft_hard_figure_shows(
        figure, soft_hard_view(angle=235.0, length=8.5)
    )


# ---------------------------------------------------------------------------
# attention's two paths: the plain one its listing shows, and the careful one.
# ---------------------------------------------------------------------------


def test_the_listing_of_attention_is_the_formula():
    """Chapter 1 prints ``attention``: its body scores, takes the masked
    softmax and averages the values in plain sight."""
    import inspect

    body = inspect.getsource(attention).split('"""')[-1]
    assert "masked_softmax(scores, mask)" in body
    assert "return weights @ values, weights" in body
    assert len([line for line in body.splitlines() if line.strip()]) <= 6


@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_the_plain_and_the_careful_path_give_the_same_numbers(masked, dtype):
    """With gradients the plain path runs, without them the careful one
    (which overwrites the scores): the outputs and weights are equal bit for
    bit, and a fully masked query gets zeros on both."""
    queries, keys, values = _qkv(batch=(2,), n_q=4, n_k=6, dtype=dtype)
    mask = None
    if masked:
        mask = torch.rand(2, 4, 6, generator=_gen(1)) > 0.4
        mask[0, 1] = False  # a query that keeps no key
    with torch.no_grad():
        careful = attention(queries, keys, values, mask=mask)
    grads = [x.clone().requires_grad_() for x in (queries, keys, values)]
    plain = attention(*grads, mask=mask)
    assert plain[0].requires_grad  # the plain path ran
    for a, b in zip(plain, careful):
        assert torch.equal(a.detach(), b)
    if masked:
        assert torch.equal(plain[1][0, 1], torch.zeros(6, dtype=dtype))


def test_a_wrapped_score_function_gives_the_same_numbers():
    """A lambda around ``scaled_dot_score`` is just another score function:
    the same output and weights, with and without gradients."""
    queries, keys, values = _qkv(n_q=5, n_k=7, dtype=torch.float32)
    mask = torch.rand(5, 7, generator=_gen(2)) > 0.3

    def wrapped(q, k):
        return scaled_dot_score(q, k)

    for grad in (False, True):
        inputs = [x.clone().requires_grad_(grad) for x in (queries, keys)]
        ours = attention(*inputs, values, wrapped, mask)
        plain = attention(*inputs, values, mask=mask)
        for a, b in zip(ours, plain):
            assert torch.equal(a, b)


def test_a_score_of_another_dtype_is_returned_in_the_inputs_dtype():
    """A custom score that returns float64 scores for float32 inputs: the
    plain path (gradients on) gives float32 weights and output."""
    queries, keys, values = (
        x.requires_grad_() for x in _qkv(dtype=torch.float32)
    )
    output, weights = attention(
        queries, keys, values, lambda q, k: dot_score(q, k).double()
    )
    assert output.dtype == weights.dtype == torch.float32
    expected, _ = attention(queries, keys, values, dot_score)
    assert torch.allclose(output, expected, atol=1e-6)


@pytest.mark.parametrize("mode", ["argmax", "sample"])
def test_hard_attention_refuses_nan_scores(mode):
    with pytest.raises(ValueError, match="NaN"):
        hard_attention(
            torch.tensor([[float("nan"), 0.0]]),
            seeded_randn(3, 2),
            seeded_randn(3, 1),
            mode=mode,
            generator=torch.Generator().manual_seed(0),
        )


# A NaN query whose every key is masked reaches no gradient.
def test_garbage_query_of_a_fully_masked_row_stays_out_of_gradients():
    q, k, v = qkv()
    q[1] = float("nan")
    q.requires_grad_()
    k.requires_grad_()
    keep = torch.ones(3, 5, dtype=torch.bool)
    keep[1] = False
    output, weights = attention(q, k, v, mask=keep)
    output.sum().backward()
    assert torch.isfinite(output).all() and (weights[1] == 0).all()
    assert torch.isfinite(k.grad).all() and torch.isfinite(q.grad).all()


@pytest.mark.parametrize("function", [attention, hard_attention])
@pytest.mark.parametrize("score", ["dot", 3])
def test_a_score_that_is_not_a_function_is_refused(function, score):
    q, k, v = qkv()
    with pytest.raises(TypeError, match="score must be a function"):
        function(q, k, v, score=score)
    with pytest.raises(TypeError, match="score must be a function"):
        attention_weights(q, k, score=score)


def test_hard_attention_refuses_a_generator_that_is_not_one():
    q, k, v = qkv()
    with pytest.raises(TypeError, match="generator"):
        hard_attention(q, k, v, mode="sample", generator="g")


def batched_qkv():
    g = torch.Generator().manual_seed(0)
    return (
        torch.randn(2, 3, 4, generator=g),
        torch.randn(2, 5, 4, generator=g),
        torch.randn(2, 5, 6, generator=g),
    )


@pytest.mark.parametrize(
    "call",
    [
        lambda q, k, v: attention(q, k, v, score=None),
        lambda q, k, v: attention_weights(q, k, score=None),
        lambda q, k, v: hard_attention(q, k, v, score=None),
    ],
    ids=["attention", "attention_weights", "hard_attention"],
)
def test_score_none_is_refused(call):
    q, k, v = batched_qkv()
    refused(lambda: call(q, k, v), TypeError, "score must be a function", q)


@pytest.mark.parametrize("function", [attention, hard_attention])
def test_values_none_is_refused(function):
    q, k, _ = batched_qkv()
    refused(lambda: function(q, k, None), TypeError, "values", q, k)


def test_a_decoding_step_takes_the_plain_path_even_without_gradients():
    """attention overwrites the scores with the weights (the careful path)
    only for score matrices of at least REUSE_SCORES bytes; a step of one
    query reading a few keys is all fixed costs, kept low."""
    from attnbook.core.attention import REUSE_SCORES, _needs_care

    step = torch.randn(1, 4, 1, 16), torch.randn(1, 4, 12, 16)
    n = 1024
    big = torch.randn(n, 16), torch.randn(n, 16)
    assert n * n * 4 >= REUSE_SCORES
    with torch.no_grad():
        assert not _needs_care(*step, step[1], None)
        assert _needs_care(*big, big[1], None)

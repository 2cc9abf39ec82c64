"""Scoring functions (chapter 2): each against PyTorch or a direct formula."""

import math

import matplotlib

matplotlib.use("Agg")

import pytest
import torch
import torch.nn.functional as F

from attnbook import AdditiveScore, BilinearScore, dot_score, scaled_dot_score
from attnbook.experiments.score_scaling import (
    SATURATION,
    gradient_statistics,
    keys_sharing,
    query_gradients,
    random_queries_and_keys,
    random_score_statistics,
    random_scores,
    softmax_jacobian,
    softmax_statistics,
)
from attnbook.widgets.scoring import (
    DIMS,
    FRAME_TEMPERATURES,
    TEMPERATURES,
    plot_scoring,
    scoring_explorer,
    scoring_view,
    update_scoring_figure,
)


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _pair(batch=(2,), n_q=3, n_k=5, d_q=4, d_k=4, seed=0):
    g = _gen(seed)
    queries = torch.randn(*batch, n_q, d_q, generator=g, dtype=torch.float64)
    keys = torch.randn(*batch, n_k, d_k, generator=g, dtype=torch.float64)
    return queries, keys


# --- dot and scaled dot product -------------------------------------------------------------


def test_dot_score_matches_a_loop_over_pairs():
    queries, keys = _pair()
    scores = dot_score(queries, keys)
    assert scores.shape == (2, 3, 5)
    for b in range(2):
        for i in range(3):
            for j in range(5):
                assert scores[b, i, j].item() == pytest.approx(
                    torch.dot(queries[b, i], keys[b, j]).item()
                )


def test_dot_score_matches_einsum_and_broadcasts_batches():
    g = _gen(1)
    queries = torch.randn(2, 1, 3, 6, generator=g)
    keys = torch.randn(
        4, 5, 6, generator=g
    )  # batch (4,) broadcasts against (2, 1)
    expected = torch.einsum("bhid,hjd->bhij", queries.expand(2, 4, 3, 6), keys)
    assert torch.allclose(dot_score(queries, keys), expected, atol=1e-6)


def test_scaled_dot_score_is_dot_over_sqrt_d():
    queries, keys = _pair(d_q=9, d_k=9)
    assert torch.allclose(
        scaled_dot_score(queries, keys), dot_score(queries, keys) / 3.0
    )


def test_softmax_of_scaled_scores_equals_torch_sdpa_weights():
    # With the identity matrix as values, PyTorch's attention returns its weights.
    queries, keys = _pair(n_q=4, n_k=6, d_q=8, d_k=8)
    eye = torch.eye(6, dtype=torch.float64).expand(2, 6, 6)
    torch_weights = F.scaled_dot_product_attention(queries, keys, eye)
    assert torch.allclose(
        torch.softmax(scaled_dot_score(queries, keys), dim=-1),
        torch_weights,
        atol=1e-12,
    )


@pytest.mark.parametrize("score", [dot_score, scaled_dot_score])
def test_dot_scores_reject_mismatched_feature_sizes(score):
    queries, keys = _pair(d_q=4, d_k=3)
    with pytest.raises(ValueError, match=r"queries has 4, keys has 3"):
        score(queries, keys)


@pytest.mark.parametrize("score", [dot_score, scaled_dot_score])
def test_dot_scores_reject_bad_shapes_and_dtypes(score):
    with pytest.raises(ValueError, match=r"\(4,\)"):
        score(torch.zeros(4), torch.zeros(3, 4))
    with pytest.raises(ValueError, match=r"\(2,\).*\(3,\)"):
        score(torch.zeros(2, 3, 4), torch.zeros(3, 5, 4))
    with pytest.raises(TypeError, match="int64"):
        score(torch.zeros(3, 4, dtype=torch.long), torch.zeros(5, 4))


# --- additive ---------------------------------------------------------------------------------


def test_additive_score_matches_the_formula_pair_by_pair():
    torch.manual_seed(0)
    score = AdditiveScore(query_dim=3, key_dim=5, hidden_dim=7).double()
    queries, keys = _pair(n_q=2, n_k=4, d_q=3, d_k=5, seed=2)
    W, U, v = (
        score.key_proj.weight,
        score.query_proj.weight,
        score.v.weight.squeeze(0),
    )
    out = score(queries, keys)
    assert out.shape == (2, 2, 4)
    for b in range(2):
        for i in range(2):
            for j in range(4):
                expected = v @ torch.tanh(W @ keys[b, j] + U @ queries[b, i])
                assert out[b, i, j].item() == pytest.approx(
                    expected.item(), abs=1e-12
                )


def test_additive_score_trains_all_its_parameters():
    torch.manual_seed(0)
    score = AdditiveScore(3, 5, 7)
    queries, keys = _pair(n_q=2, n_k=4, d_q=3, d_k=5)
    score(queries.float(), keys.float()).sum().backward()
    for name, parameter in score.named_parameters():
        assert parameter.grad is not None and parameter.grad.abs().sum() > 0, (
            name
        )


def test_additive_score_rejects_wrong_feature_sizes():
    score = AdditiveScore(query_dim=3, key_dim=5, hidden_dim=7)
    with pytest.raises(ValueError, match=r"queries has 4, query_dim has 3"):
        score(torch.zeros(2, 4), torch.zeros(6, 5))
    with pytest.raises(ValueError, match=r"keys has 4, key_dim has 5"):
        score(torch.zeros(2, 3), torch.zeros(6, 4))


# --- bilinear ---------------------------------------------------------------------------------


def test_bilinear_score_matches_torch_bilinear():
    torch.manual_seed(0)
    score = BilinearScore(query_dim=3, key_dim=5).double()
    queries, keys = _pair(batch=(), n_q=4, n_k=6, d_q=3, d_k=5)
    out = score(queries, keys)
    # F.bilinear(x1, x2, A) = x1^T A x2 for each row pair; here x1 = key, x2 = query.
    k = keys.unsqueeze(0).expand(4, 6, 5)
    q = queries.unsqueeze(1).expand(4, 6, 3)
    expected = F.bilinear(k, q, score.weight.unsqueeze(0)).squeeze(-1)
    assert torch.allclose(out, expected, atol=1e-12)


def test_bilinear_with_w_equal_ut_v_is_a_dot_product_of_projections():
    g = _gen(3)
    U = torch.randn(
        2, 5, generator=g, dtype=torch.float64
    )  # projects keys (5 -> 2)
    V = torch.randn(
        2, 3, generator=g, dtype=torch.float64
    )  # projects queries (3 -> 2)
    score = BilinearScore(query_dim=3, key_dim=5).double()
    with torch.no_grad():
        score.weight.copy_(U.T @ V)
    queries, keys = _pair(batch=(), n_q=4, n_k=6, d_q=3, d_k=5)
    assert torch.allclose(
        score(queries, keys), dot_score(queries @ V.T, keys @ U.T), atol=1e-12
    )


def test_bilinear_is_asymmetric_unless_w_is_symmetric():
    torch.manual_seed(0)
    score = BilinearScore(4, 4).double()
    a, b = _pair(batch=(), n_q=5, n_k=5, d_q=4, d_k=4)
    assert not torch.allclose(score(a, b), score(b, a).T)
    with torch.no_grad():
        score.weight.copy_(score.weight + score.weight.T)
    assert torch.allclose(score(a, b), score(b, a).T, atol=1e-12)
    assert torch.allclose(
        dot_score(a, b), dot_score(b, a).T
    )  # the dot product is symmetric


def test_bilinear_rejects_wrong_feature_sizes():
    score = BilinearScore(query_dim=3, key_dim=5)
    with pytest.raises(ValueError, match=r"queries has 2, query_dim has 3"):
        score(torch.zeros(4, 2), torch.zeros(6, 5))
    with pytest.raises(ValueError, match=r"keys has 3, key_dim has 5"):
        score(torch.zeros(4, 3), torch.zeros(6, 3))


# --- why scaling: statistics ------------------------------------------------------------------


def test_softmax_jacobian_matches_autograd():
    scores = torch.randn(6, generator=_gen(4), dtype=torch.float64)
    expected = torch.autograd.functional.jacobian(
        lambda s: torch.softmax(s, dim=-1), scores
    )
    assert torch.allclose(
        softmax_jacobian(torch.softmax(scores, dim=-1)), expected, atol=1e-12
    )


def test_random_scores_have_variance_d_unscaled_and_one_scaled():
    for dim in (4, 64, 1024):
        unscaled = random_scores(dim, scaled=False, n_trials=256)
        scaled = random_scores(dim, scaled=True, n_trials=256)
        assert torch.allclose(
            scaled, unscaled / math.sqrt(dim)
        )  # same draws, divided by sqrt(d)
        # 4096 scores; the sample variance of N(0, d) has a standard error of about d * sqrt(2 / 4096) = 0.022 d
        # (the 16 scores of a trial share a query, so allow a little more than 3 standard errors).
        assert unscaled.var().item() == pytest.approx(dim, rel=0.1)
        assert scaled.var().item() == pytest.approx(1.0, rel=0.1)


def test_score_variance_is_d_by_direct_sampling():
    # The derivation: q.k is a sum of d independent products of variance 1.
    g = _gen(7)
    for dim in (16, 256):
        q, k = (
            torch.randn(20000, dim, generator=g, dtype=torch.float64),
            torch.randn(20000, dim, generator=g, dtype=torch.float64),
        )
        dots = (q * k).sum(dim=-1)
        assert dots.var().item() == pytest.approx(
            dim, rel=0.05
        )  # standard error 1%
        assert (dots / math.sqrt(dim)).var().item() == pytest.approx(
            1.0, rel=0.05
        )


def test_softmax_statistics_of_uniform_scores():
    n = 8
    stats = softmax_statistics(torch.zeros(3, n, dtype=torch.float64))
    assert stats["max_weight"] == pytest.approx(1 / n)
    assert stats["entropy"] == pytest.approx(math.log(n))
    assert stats["median_max_jacobian"] == pytest.approx(
        (1 / n) * (1 - 1 / n)
    )  # the diagonal w(1 - w)
    assert stats["saturated"] == 0.0


def test_softmax_statistics_of_saturated_scores():
    scores = torch.tensor(
        [[100.0, 0.0, 0.0], [0.0, 0.0, 100.0], [0.0, 0.0, 0.0]],
        dtype=torch.float64,
    )
    stats = softmax_statistics(scores)
    assert SATURATION == 0.99  # the threshold the chapter states
    assert stats["saturated"] == pytest.approx(2 / 3)
    assert (
        stats["median_max_jacobian"] < 1e-40
    )  # two of three rows have a vanishing Jacobian


def test_temperature_divides_the_scores():
    scores = random_scores(16, scaled=False, n_trials=32)
    hot, divided = (
        softmax_statistics(scores, 4.0),
        softmax_statistics(scores / 4.0),
    )
    for name in ("max_weight", "entropy", "median_max_jacobian", "saturated"):
        assert hot[name] == pytest.approx(divided[name])


def test_saturation_grows_with_d_unscaled_and_stays_flat_scaled():
    dims = (4, 16, 64, 256, 1024)
    unscaled = [
        random_score_statistics(d, scaled=False)["saturated"] for d in dims
    ]
    scaled = [
        random_score_statistics(d, scaled=True)["saturated"] for d in dims
    ]
    assert unscaled[0] == 0.0 and unscaled[-1] > 0.5
    assert all(a <= b for a, b in zip(unscaled, unscaled[1:]))
    assert scaled == [0.0] * len(
        dims
    )  # 16 keys at score variance 1: a weight above 0.99 needs a gap of ~7 sd


def test_keys_sharing_counts_keys():
    rows = torch.tensor(
        [
            [1.0, 1.0, 1.0, 1.0],
            [0.0, 3.0, 0.0, 0.0],
            [0.5, -0.5, 0.0, 0.0],
            [0.0, 0.0, 0.0, 0.0],
        ]
    )
    assert keys_sharing(rows).tolist() == pytest.approx([4.0, 1.0, 2.0, 0.0])


def test_softmax_gradients_are_shared_by_at_least_two_keys():
    # A softmax row's gradient sums to zero over the keys, so one key can
    # never get all of it: keys_sharing is at least 2 for such rows. (A fully
    # saturated row's gradient is rounding noise, ~1e-16, whose sum is not
    # resolved: those rows are left out.)
    for dim, scaled in ((4, True), (1024, False)):
        gradients = query_gradients(dim, scaled=scaled)["dot_product"]
        assert gradients.sum(dim=-1).abs().max().item() < 1e-12
        resolved = gradients.abs().amax(dim=-1) > 1e-12
        assert resolved.sum() > 100
        assert keys_sharing(gradients[resolved]).min().item() >= 2.0 - 1e-6


def test_explorer_temperatures_reach_sqrt_of_the_largest_dim():
    # 32 = sqrt(1024) turns the unscaled d = 1024 scores into the scaled ones
    # (the chapter's suggested experiment), live and in the HTML book's frames.
    assert math.sqrt(max(DIMS)) in TEMPERATURES
    assert math.sqrt(max(DIMS)) in FRAME_TEMPERATURES
    assert set(FRAME_TEMPERATURES) <= set(TEMPERATURES)
    with pytest.raises(ValueError, match="temperature must be one of"):
        scoring_explorer(temperature=0.7)


def test_query_gradients_match_the_chain_rule():
    dim, n_keys = 9, 5
    gradients = query_gradients(
        dim, scaled=True, n_trials=4, n_keys=n_keys, seed=3
    )
    queries, keys = random_queries_and_keys(dim, 4, n_keys, seed=3)
    upstream = torch.randn(
        4, n_keys, generator=_gen(4), dtype=torch.float64
    )  # seed + 1, as documented
    weights = torch.softmax(
        random_scores(dim, True, 4, n_keys, seed=3), dim=-1
    )
    d_scores = (
        softmax_jacobian(weights).transpose(-1, -2) @ upstream.unsqueeze(-1)
    ).squeeze(-1)
    d_dot = d_scores / 3.0  # scores = q.k / sqrt(9)
    assert torch.allclose(gradients["dot_product"], d_dot, atol=1e-12)
    assert torch.allclose(
        gradients["query"],
        (d_dot.unsqueeze(-1) * keys).sum(dim=-2),
        atol=1e-12,
    )


def test_unscaled_gradients_concentrate_on_few_rows_and_two_keys():
    small, large, scaled = (
        gradient_statistics(4, False),
        gradient_statistics(1024, False),
        gradient_statistics(1024, True),
    )
    # Unscaled at d = 1024: the typical (median) row passes almost nothing back to q ...
    assert (
        large["median_query_gradient"] < 1e-2 < scaled["median_query_gradient"]
    )
    # ... although the mean is larger than the scaled one's: a few rows carry large gradients.
    assert large["mean_query_gradient"] > scaled["mean_query_gradient"]
    # And those gradients fall on about two keys (the winner and the runner-up), not on many.
    assert large["keys_sharing"] == pytest.approx(2.0, abs=0.1)
    assert scaled["keys_sharing"] > 5 and small["keys_sharing"] > 3


def test_statistics_reject_bad_input():
    with pytest.raises(ValueError, match="dim must be a positive int, got 0"):
        random_scores(0)
    with pytest.raises(ValueError, match="n_keys must be an int >= 2, got 1"):
        random_scores(4, n_keys=1)
    with pytest.raises(
        ValueError, match="temperature must be a positive finite number, got 0"
    ):
        softmax_statistics(torch.zeros(2, 3), temperature=0.0)


# --- the explorer -----------------------------------------------------------------------------


def test_scoring_view_numbers():
    view = scoring_view(dim=256, scaled=False, temperature=2.0)
    expected = softmax_statistics(
        random_scores(256, scaled=False, n_trials=256, n_keys=16, seed=0), 2.0
    )
    assert view["stats"] == pytest.approx(expected)
    assert view["sorted_weights"].sum().item() == pytest.approx(1.0)
    assert (view["sorted_weights"][:-1] >= view["sorted_weights"][1:]).all()
    assert view["sorted_weights"][0].item() == pytest.approx(
        expected["max_weight"]
    )
    assert len(view["curves"][True]) == len(view["curves"][False]) == len(DIMS)
    assert view["curves"][False][DIMS.index(256)] == pytest.approx(
        expected["saturated"]
    )


@pytest.mark.parametrize("temperature", [0.1, 1.0, 10.0])
def test_scoring_view_curves_equal_softmax_statistics_at_every_dim(
    temperature,
):
    curves = scoring_view(temperature=temperature)["curves"]
    for scaled in (True, False):
        expected = [
            softmax_statistics(
                random_scores(d, scaled, n_trials=256, n_keys=16, seed=0),
                temperature,
            )["saturated"]
            for d in DIMS
        ]
        assert curves[scaled] == pytest.approx(expected, rel=1e-9)


def test_scoring_view_fits_the_fixed_axes_at_the_extreme_controls():
    for temperature in (
        min(TEMPERATURES),
        max(TEMPERATURES),
    ):  # the ends of the explorer's temperature slider
        view = scoring_view(dim=DIMS[0], temperature=temperature)
        assert 0 <= min(view["curves"][True] + view["curves"][False])
        assert (
            max(view["curves"][True] + view["curves"][False]) <= 1
        )  # the right panel's y range


def _assert_scoring_figure_shows(figure, view):
    left, right = figure.axes
    heights = [bar.get_height() for bar in left.containers[0]]
    assert heights == pytest.approx(view["sorted_weights"].tolist())
    scaled_curve, unscaled_curve, current = right.lines
    assert list(scaled_curve.get_xdata()) == list(DIMS)
    assert list(scaled_curve.get_ydata()) == pytest.approx(
        view["curves"][True]
    )
    assert list(unscaled_curve.get_ydata()) == pytest.approx(
        view["curves"][False]
    )
    assert list(current.get_xdata()) == [view["dim"]]
    assert list(current.get_ydata()) == pytest.approx(
        [view["stats"]["saturated"]]
    )
    assert left.get_title().startswith(
        f"d={view['dim']}, {'scaled' if view['scaled'] else 'unscaled'}, "
    )
    assert right.get_title() == (
        f"mean largest weight {view['stats']['max_weight']:.2f}, entropy {view['stats']['entropy']:.2f} nats"
    )


def test_plot_scoring_shows_the_view_with_fixed_limits():
    import matplotlib.pyplot as plt

    view = scoring_view(dim=16, scaled=False, temperature=0.5)
    figure = plot_scoring(view)
    assert len(figure.axes) == 2
    _assert_scoring_figure_shows(figure, view)
    left, right = figure.axes
    assert left.get_ylim() == (0, 1) and right.get_ylim() == (-0.02, 1.02)
    assert right.get_xlim()[0] < DIMS[0] and right.get_xlim()[1] > DIMS[-1]
    plt.close(figure)


def test_update_scoring_figure_changes_the_same_artists_every_time():
    import matplotlib.pyplot as plt

    figure = plot_scoring(scoring_view())
    limits = [(ax.get_xlim(), ax.get_ylim()) for ax in figure.axes]
    first = update_scoring_figure(
        figure, scoring_view(dim=4, scaled=False, temperature=0.1)
    )
    view = scoring_view(dim=1024, scaled=True, temperature=10.0)
    second = update_scoring_figure(figure, view)
    assert [id(a) for a in first] == [id(a) for a in second]
    _assert_scoring_figure_shows(figure, view)
    assert [(ax.get_xlim(), ax.get_ylim()) for ax in figure.axes] == limits
    plt.close(figure)


def test_scoring_explorer_follows_each_control():
    box = scoring_explorer()
    assert len(box.children) == 2
    (dim, scaled, temperature), output = (
        box.children[0].children,
        box.children[1],
    )
    figure = box.live_figure.figure
    _assert_scoring_figure_shows(figure, scoring_view())
    before = output.outputs
    dim.value = 512
    _assert_scoring_figure_shows(figure, scoring_view(dim=512))
    assert output.outputs != before
    scaled.value = False
    _assert_scoring_figure_shows(figure, scoring_view(dim=512, scaled=False))
    temperature.value = 0.1
    _assert_scoring_figure_shows(
        figure, scoring_view(dim=512, scaled=False, temperature=0.1)
    )

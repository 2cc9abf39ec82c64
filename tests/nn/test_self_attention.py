"""SelfAttention against PyTorch and direct formulas, its errors and properties; the chapter-6 explorer."""

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

import attnbook
from attnbook import SelfAttention, lengths_to_mask, sinusoidal_encoding
from attnbook.widgets.self_attention import (
    plot_self_attention,
    self_attention_view,
    toy_self_attention,
    update_self_attention_figure,
    word_vector,
)

from _refusals import refused, wide


def make_layer(
    embed_dim=6, key_dim=None, value_dim=None, seed=0, dtype=torch.float64
):
    torch.manual_seed(seed)
    return SelfAttention(embed_dim, key_dim, value_dim).to(dtype)


def randn(*shape, seed=1, dtype=torch.float64):
    return torch.randn(
        *shape, generator=torch.Generator().manual_seed(seed), dtype=dtype
    )


def projections(layer, x):
    """Q = X W_q, K = X W_k, V = X W_v written out with the weight matrices."""
    w_q, w_k, w_v = (
        p.weight.T
        for p in (layer.query_proj, layer.key_proj, layer.value_proj)
    )
    return x @ w_q, x @ w_k, x @ w_v


# ---------------------------------------------------------------- construction


def test_dims_default_to_embed_dim_and_shapes_follow():
    layer = SelfAttention(8)
    assert (layer.embed_dim, layer.key_dim, layer.value_dim) == (8, 8, 8)
    layer = SelfAttention(8, key_dim=3, value_dim=5)
    assert layer.query_proj.weight.shape == (3, 8)
    assert layer.key_proj.weight.shape == (3, 8)
    assert layer.value_proj.weight.shape == (5, 8)
    assert all(
        p.bias is None
        for p in (layer.query_proj, layer.key_proj, layer.value_proj)
    )
    output, weights = layer(torch.randn(2, 7, 8))
    assert output.shape == (2, 7, 5) and weights.shape == (2, 7, 7)
    assert sum(p.numel() for p in layer.parameters()) == 8 * (3 + 3 + 5)


def test_repr_names_the_sizes():
    assert "embed_dim=4, key_dim=2, value_dim=3" in repr(
        SelfAttention(4, 2, 3)
    )


# ---------------------------------------------------------------- values


@pytest.mark.parametrize("key_dim, value_dim", [(None, None), (3, 5), (7, 2)])
def test_equals_torch_sdpa_on_projected_qkv(key_dim, value_dim):
    layer = make_layer(6, key_dim, value_dim)
    x = randn(2, 5, 6)
    output, weights = layer(x)
    q, k, v = projections(layer, x)
    assert torch.allclose(
        output, F.scaled_dot_product_attention(q, k, v), atol=1e-12
    )
    # The weights against the direct formula softmax(Q K^T / sqrt(d_k)), d_k = key size.
    d_k = layer.key_dim
    assert torch.allclose(
        weights,
        torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d_k), dim=-1),
        atol=1e-12,
    )


def test_equals_torch_sdpa_with_a_causal_mask_and_a_padding_mask():
    layer = make_layer(6)
    x = randn(3, 5, 6)
    q, k, v = projections(layer, x)
    causal = torch.ones(5, 5, dtype=torch.bool).tril()
    output, weights = layer(x, mask=causal)
    assert torch.allclose(
        output,
        F.scaled_dot_product_attention(q, k, v, attn_mask=causal),
        atol=1e-12,
    )
    assert torch.allclose(
        output,
        F.scaled_dot_product_attention(q, k, v, is_causal=True),
        atol=1e-12,
    )
    assert (weights.masked_select(~causal) == 0).all()
    padding = lengths_to_mask([5, 3, 1], 5)[
        :, None, :
    ]  # (B, 1, n): hide padded keys
    output, weights = layer(x, mask=padding)
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=padding)
    assert torch.allclose(output, expected, atol=1e-12)
    assert torch.allclose(weights[2, :, 0], torch.ones(5, dtype=torch.float64))


def test_each_output_is_the_weighted_sum_of_the_values_written_as_loops():
    layer = make_layer(4, key_dim=3, value_dim=2)
    x = randn(5, 4)  # unbatched
    with torch.no_grad():
        output, _ = layer(x)
        q, k, v = projections(layer, x)
    for i in range(5):
        scores = torch.tensor(
            [float(q[i] @ k[j]) / math.sqrt(3) for j in range(5)],
            dtype=torch.float64,
        )
        alpha = scores.exp() / scores.exp().sum()
        h_i = sum(alpha[j] * v[j] for j in range(5))
        assert torch.allclose(output[i], h_i, atol=1e-12)


def test_column_convention_formula_of_nndl_gives_the_same_output():
    """With tokens as columns, H = V softmax_col(K^T Q / sqrt(D_k)) is the transpose of our output."""
    layer = make_layer(4, key_dim=3, value_dim=5)
    x = randn(6, 4)
    Xc = x.T  # (D_x, N)
    Q, K, V = (
        p.weight @ Xc
        for p in (layer.query_proj, layer.key_proj, layer.value_proj)
    )
    H = V @ torch.softmax(K.T @ Q / math.sqrt(3), dim=0)
    assert torch.allclose(H, layer(x)[0].T, atol=1e-12)


def test_extra_leading_dimensions_and_broadcast_mask():
    layer = make_layer(4)
    x = randn(2, 3, 5, 4)
    mask = torch.ones(5, 5, dtype=torch.bool).tril()
    output, weights = layer(x, mask)
    for a in range(2):
        for b in range(3):
            out_ab, w_ab = layer(x[a, b], mask)
            assert torch.allclose(output[a, b], out_ab, atol=1e-12)
            assert torch.allclose(weights[a, b], w_ab, atol=1e-12)


def test_fully_masked_row_gives_zeros_not_nan():
    layer = make_layer(4)
    mask = torch.ones(4, 4, dtype=torch.bool)
    mask[2] = False
    output, weights = layer(randn(4, 4), mask)
    assert torch.isfinite(output).all()
    assert (weights[2] == 0).all() and (output[2] == 0).all()


def test_one_set_of_parameters_serves_every_length():
    layer = make_layer(4)
    for n in (1, 2, 9):
        output, weights = layer(randn(n, 4, seed=n))
        assert output.shape == (n, 4)
        assert torch.allclose(
            weights.sum(-1), torch.ones(n, dtype=torch.float64)
        )


def test_gradients_reach_all_three_projections():
    layer = make_layer(4)
    output, _ = layer(randn(3, 4))
    output.square().sum().backward()
    for proj in (layer.query_proj, layer.key_proj, layer.value_proj):
        assert (
            proj.weight.grad is not None and proj.weight.grad.abs().sum() > 0
        )


def test_float16_input_with_half_module_stays_finite():
    torch.manual_seed(0)
    layer = SelfAttention(8).half()
    mask = torch.zeros(4, 4, dtype=torch.bool)
    mask[:, 0] = True
    mask[3] = False
    output, weights = layer(torch.randn(4, 8).half(), mask)
    assert torch.isfinite(output).all() and (weights[3] == 0).all()


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "args", [(0,), (4.0,), (True,), (4, 0), (4, None, -1), (4, 2.5)]
)
def test_bad_sizes_raise(args):
    with pytest.raises(ValueError, match="must be a positive int"):
        SelfAttention(*args)


def test_bad_inputs_raise_clear_errors():
    layer = SelfAttention(4)
    with pytest.raises(ValueError, match="x has 5, embed_dim has 4"):
        layer(torch.zeros(2, 3, 5))
    with pytest.raises(
        ValueError, match=r"x needs shape \(\.\.\., n, embed_dim\), got \(4,\)"
    ):
        layer(torch.zeros(4))
    with pytest.raises(
        TypeError,
        match="x must be a floating-point tensor, got dtype torch.int64",
    ):
        layer(torch.zeros(3, 4, dtype=torch.long))
    with pytest.raises(TypeError, match="x must be a torch.Tensor, got list"):
        layer([[0.0] * 4])
    with pytest.raises(
        TypeError,
        match="x has dtype torch.float64 but the parameters have torch.float32",
    ):
        layer(torch.zeros(3, 4, dtype=torch.float64))


def test_bad_masks_raise_clear_errors():
    layer = SelfAttention(4)
    x = torch.zeros(2, 3, 4)
    with pytest.raises(TypeError, match="boolean"):
        layer(x, torch.ones(3, 3))
    with pytest.raises(
        ValueError,
        match=r"mask of shape \(4, 4\) does not broadcast to \(2, 3, 3\)",
    ):
        layer(x, torch.ones(4, 4, dtype=torch.bool))
    with pytest.raises(
        ValueError,
        match=r"mask of shape \(7, 2, 3, 3\) would enlarge the scores of shape \(2, 3, 3\)",
    ):
        layer(x, torch.ones(7, 2, 3, 3, dtype=torch.bool))


# ---------------------------------------------------------------- properties


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(1, 7),
    d=st.integers(1, 6),
    key_dim=st.integers(1, 5),
    seed=st.integers(0, 10_000),
)
def test_permutation_equivariance(n, d, key_dim, seed):
    """SA(P X) = P SA(X) and A(P X) = P A(X) P^T for every permutation P."""
    layer = make_layer(d, key_dim, seed=seed)
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=generator, dtype=torch.float64)
    perm = torch.randperm(n, generator=generator)
    output, weights = layer(x)
    output_p, weights_p = layer(x[perm])
    assert torch.allclose(output_p, output[perm], atol=1e-10)
    assert torch.allclose(weights_p, weights[perm][:, perm], atol=1e-10)


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(1, 7),
    d=st.integers(1, 6),
    seed=st.integers(0, 10_000),
    p_keep=st.floats(0.0, 1.0),
)
def test_rows_sum_to_one_or_are_all_masked(n, d, seed, p_keep):
    layer = make_layer(d, seed=seed)
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(2, n, d, generator=generator, dtype=torch.float64) * 10
    mask = torch.rand(2, n, n, generator=generator) < p_keep
    _, weights = layer(x, mask)
    sums = weights.sum(-1)
    kept_any = mask.any(-1)
    assert torch.allclose(sums[kept_any], torch.ones_like(sums[kept_any]))
    assert (sums[~kept_any] == 0).all()
    assert (weights >= 0).all() and (weights.masked_select(~mask) == 0).all()


@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 7), d=st.integers(2, 8), seed=st.integers(0, 10_000))
def test_positional_encoding_breaks_equivariance_for_a_repeated_token(
    n, d, seed
):
    """Two equal tokens: identical rows without positions; different rows with them."""
    layer = make_layer(d, seed=seed)
    x = torch.randn(
        n,
        d,
        generator=torch.Generator().manual_seed(seed),
        dtype=torch.float64,
    )
    x[-1] = x[0]
    _, weights = layer(x)
    assert torch.allclose(
        weights[0], weights[-1], atol=1e-12, rtol=0
    )  # equal up to rounding
    _, weights_pe = layer(x + sinusoidal_encoding(n, d).double())
    assert not torch.allclose(weights_pe[0], weights_pe[-1], atol=1e-9)


# ---------------------------------------------------------------- explorer


def test_word_vectors_are_fixed_per_word():
    assert torch.equal(word_vector("the"), word_vector("the"))
    assert not torch.allclose(word_vector("the"), word_vector("cat"))
    assert word_vector("cat", dim=5).shape == (5,)


def test_toy_layer_has_its_own_query_and_key_projections():
    layer = toy_self_attention(16, 0)
    assert not torch.allclose(layer.query_proj.weight, layer.key_proj.weight)


def test_view_without_positions_gives_repeated_words_identical_rows():
    view = self_attention_view(
        "the cat sat on the mat", token=4, positions=False
    )
    assert view["tokens"] == ["the", "cat", "sat", "on", "the", "mat"]
    assert view["copies"] == [0, 4] and view["copy_gap"] < 1e-6
    assert torch.allclose(
        view["weights"][0], view["weights"][4], atol=1e-6, rtol=0
    )
    assert torch.equal(view["row"], view["weights"][4])
    # Against the layer, computed directly from the word vectors.
    x = torch.stack([word_vector(w) for w in view["tokens"]])
    layer = toy_self_attention(16, 0)
    q, k = layer.query_proj(x).detach(), layer.key_proj(x).detach()
    expected = torch.softmax(q @ k.T / 4.0, dim=-1)
    assert torch.allclose(view["weights"], expected, atol=1e-6)
    assert torch.allclose(view["weights"].sum(-1), torch.ones(6))


def test_view_with_positions_separates_the_copies():
    view = self_attention_view(
        "the cat sat on the mat", token=0, positions=True
    )
    x = torch.stack(
        [word_vector(w) for w in view["tokens"]]
    ) + sinusoidal_encoding(6, 16)
    layer = toy_self_attention(16, 0)
    q, k = layer.query_proj(x).detach(), layer.key_proj(x).detach()
    assert torch.allclose(
        view["weights"], torch.softmax(q @ k.T / 4.0, dim=-1), atol=1e-6
    )
    gap = (view["weights"][0] - view["weights"][4]).abs().max().item()
    assert view["copy_gap"] == pytest.approx(gap) and gap > 0.01


def test_view_of_a_single_occurrence_has_no_gap():
    view = self_attention_view(
        "the cat sat on the mat", token=1, positions=True
    )
    assert view["copies"] == [1] and view["copy_gap"] == 0.0


def test_view_rejects_bad_tokens():
    with pytest.raises(
        ValueError, match=r"token must be an index in \[0, 5\], got 6"
    ):
        self_attention_view("the cat sat on the mat", token=6)
    with pytest.raises(ValueError, match="no words"):
        self_attention_view("   ")


def test_figure_updates_in_place_and_returns_the_same_artists():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plot_self_attention(self_attention_view(token=0))
    left, right = fig.axes
    first = update_self_attention_figure(fig, self_attention_view(token=0))
    assert first == [
        left.images[0],
        left.patches[0],
        left.title,
        *right.patches,
        right.title,
    ]
    view = self_attention_view(token=4, positions=True)
    changed = update_self_attention_figure(fig, view)
    assert [id(a) for a in changed] == [
        id(a) for a in first
    ]  # the same artists, in the same order
    heights = torch.tensor([bar.get_height() for bar in right.patches])
    assert torch.allclose(heights, view["row"])
    torch.testing.assert_close(
        torch.as_tensor(left.images[0].get_array()), view["weights"]
    )
    assert left.patches[0].get_y() == 3.5
    red = [
        j
        for j, bar in enumerate(right.patches)
        if bar.get_facecolor() == matplotlib.colors.to_rgba("tab:red")
    ]
    assert red == view["copies"] == [0, 4]
    assert left.get_title() == "attention matrix, with positions"
    assert (
        right.get_title()
        == f"attention row of 4:the; its copies' rows differ by {view['copy_gap']:.3f}"
    )
    with pytest.raises(
        ValueError, match="figure has 6 bars but the view has 3 tokens"
    ):
        update_self_attention_figure(
            fig, self_attention_view("a b c", token=0)
        )
    plt.close(fig)


def test_explorer_shows_the_figure_of_the_current_controls():
    from attnbook.widgets.self_attention import self_attention_explorer

    from _pixels import differing_pixels, drawn_in_full

    box = self_attention_explorer("the cat sat on the mat", token=0)
    token, positions = box.children[0].children
    token.value = 4
    positions.value = True
    expected = drawn_in_full(
        plot_self_attention, self_attention_view(token=4, positions=True)
    )
    other = drawn_in_full(
        plot_self_attention, self_attention_view(token=4, positions=False)
    )
    # The same pixels as a full draw of a fresh figure, and a test that could fail.
    assert (
        differing_pixels(box.children[1].outputs[0], expected)
        == 0
        < differing_pixels(other, expected)
    )


def test_garbage_padding_stays_out_of_self_attention_gradients():
    g = torch.Generator().manual_seed(0)
    with attnbook._random.keep_global_rng():
        layer = attnbook.SelfAttention(8, 4, 4)
    x = torch.randn(2, 5, 8, generator=g)
    x[1, 3:] = float("nan")
    keep = torch.ones(2, 5, dtype=torch.bool)
    keep[1, 3:] = False
    output, _ = layer(x, mask=keep[:, None, :])
    (output[0].sum() + output[1, :3].sum()).backward()  # real tokens only
    assert all(torch.isfinite(p.grad).all() for p in layer.parameters())


@pytest.mark.parametrize(
    "x, error, match",
    [
        (None, TypeError, "x must be a torch.Tensor"),
        (torch.tensor(1.0), ValueError, "x needs shape"),
        (torch.randn(80), ValueError, "x needs shape"),
        (torch.randn(2, 5, 0), ValueError, "feature size"),
        (torch.randn(2, 5, 8).double(), TypeError, "x has dtype"),
        (torch.randn(2, 5, 8).long(), TypeError, "x must be a floating"),
        (wide(torch.randn(2, 5, 8)), ValueError, "x, a broadcast view"),
    ],
)
def test_self_attention_project_checks_x(x, error, match):
    layer = SelfAttention(8)
    refused(lambda: layer.project(x), error, match, layer.state_dict())


def test_self_attention_checks_a_huge_mask_view_before_reading_it():
    layer, x = SelfAttention(8), torch.randn(2, 5, 8)
    mask = torch.ones(2, 1, 5, dtype=torch.bool).expand(2, 10**9, 5)
    refused(lambda: layer(x, mask), ValueError, "mask", x)

"""MultiHeadAttention, split_heads, merge_heads and the chapter-4 explorer.

Every numerical check compares with torch.nn.MultiheadAttention (batch_first=True,
per-head weights) or with a direct formula written out here.
"""

import math

import matplotlib
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from attnbook import MultiHeadAttention, merge_heads, split_heads

matplotlib.use("Agg")

ATOL = 1e-6


def make_pair(embed_dim=8, num_heads=2, bias=True, seed=0, dtype=torch.float64):
    """A torch module with random (non-zero) parameters and ours with the same parameters."""
    torch.manual_seed(seed)
    theirs = nn.MultiheadAttention(embed_dim, num_heads, bias=bias, batch_first=True).to(dtype)
    with torch.no_grad():  # torch zero-initialises the biases: make them count
        for parameter in theirs.parameters():
            parameter.normal_(0.0, 0.5)
    ours = MultiHeadAttention(embed_dim, num_heads, bias=bias).to(dtype).load_torch_weights(theirs)
    return theirs, ours


def randn(*shape, seed=1, dtype=torch.float64):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def random_keep(batch, n_k, seed=2):
    """Key-padding keep mask (True = keep) with at least one kept key per row."""
    keep = torch.rand(batch, n_k, generator=torch.Generator().manual_seed(seed)) > 0.4
    keep[:, 0] = True
    return keep


# ---------------------------------------------------------------- against PyTorch


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("padding", [False, True])
@pytest.mark.parametrize("kind", ["self", "cross", "shared_kv"])
def test_matches_torch_outputs_and_per_head_weights(bias, padding, kind):
    theirs, ours = make_pair(embed_dim=12, num_heads=3, bias=bias)
    batch, n_q, n_k = 3, 4, 6
    if kind == "self":
        query = key = value = randn(batch, n_q, 12)
        n_k = n_q
    elif kind == "cross":
        query, key, value = randn(batch, n_q, 12, seed=1), randn(batch, n_k, 12, seed=2), randn(batch, n_k, 12, seed=3)
    else:  # encoder-decoder attention: keys and values are one tensor
        query, key = randn(batch, n_q, 12, seed=1), randn(batch, n_k, 12, seed=2)
        value = key
    keep = random_keep(batch, n_k) if padding else None
    expected, expected_weights = theirs(
        query, key, value, key_padding_mask=None if keep is None else ~keep, average_attn_weights=False
    )
    output, weights = ours(query, key, value, mask=None if keep is None else keep[:, None, None, :])
    assert output.shape == (batch, n_q, 12) and weights.shape == (batch, 3, n_q, n_k)
    torch.testing.assert_close(output, expected, atol=ATOL, rtol=0)
    torch.testing.assert_close(weights, expected_weights, atol=ATOL, rtol=0)


def test_matches_torch_with_a_causal_attn_mask():
    theirs, ours = make_pair()
    x = randn(2, 5, 8)
    causal_keep = torch.ones(5, 5, dtype=torch.bool).tril()
    expected, expected_weights = theirs(x, x, x, attn_mask=~causal_keep, average_attn_weights=False)
    output, weights = ours(x, x, x, mask=causal_keep)
    torch.testing.assert_close(output, expected, atol=ATOL, rtol=0)
    torch.testing.assert_close(weights, expected_weights, atol=ATOL, rtol=0)
    assert (weights.masked_select(~causal_keep) == 0).all()


def test_matches_torch_unbatched_and_in_float32():
    theirs, ours = make_pair(embed_dim=16, num_heads=4, dtype=torch.float32)
    query, key = randn(3, 16, dtype=torch.float32), randn(7, 16, seed=5, dtype=torch.float32)
    expected, expected_weights = theirs(query, key, key, average_attn_weights=False)
    output, weights = ours(query, key, key)
    torch.testing.assert_close(output, expected, atol=1e-5, rtol=0)
    torch.testing.assert_close(weights, expected_weights, atol=1e-6, rtol=0)


@pytest.mark.parametrize("padding", [False, True])
def test_gradients_match_torch(padding):
    theirs, ours = make_pair(embed_dim=8, num_heads=2)
    inputs = [randn(2, 3, 8, seed=s).requires_grad_() for s in (1, 2, 3)]
    twins = [t.detach().clone().requires_grad_() for t in inputs]
    key_padding = torch.tensor([[False, False, True], [False, True, True]]) if padding else None
    upstream = randn(2, 3, 8, seed=9)
    out_theirs, w_theirs = theirs(*inputs, key_padding_mask=key_padding, average_attn_weights=False)
    keep = None if key_padding is None else ~key_padding[:, None, None, :]
    out_ours, w_ours = ours(*twins, mask=keep)
    ((out_theirs * upstream).sum() + w_theirs.square().sum()).backward()
    ((out_ours * upstream).sum() + w_ours.square().sum()).backward()
    for a, b in zip(inputs, twins):
        torch.testing.assert_close(b.grad, a.grad, atol=ATOL, rtol=0)
    torch.testing.assert_close(ours.in_proj_weight.grad, theirs.in_proj_weight.grad, atol=ATOL, rtol=0)
    torch.testing.assert_close(ours.in_proj_bias.grad, theirs.in_proj_bias.grad, atol=ATOL, rtol=0)
    torch.testing.assert_close(ours.out_proj.weight.grad, theirs.out_proj.weight.grad, atol=ATOL, rtol=0)
    torch.testing.assert_close(ours.out_proj.bias.grad, theirs.out_proj.bias.grad, atol=ATOL, rtol=0)


def test_load_torch_weights_copies_every_parameter():
    theirs, ours = make_pair(embed_dim=8, num_heads=4)
    torch.testing.assert_close(ours.in_proj_weight, theirs.in_proj_weight, atol=0, rtol=0)
    torch.testing.assert_close(ours.in_proj_bias, theirs.in_proj_bias, atol=0, rtol=0)
    torch.testing.assert_close(ours.out_proj.weight, theirs.out_proj.weight, atol=0, rtol=0)
    torch.testing.assert_close(ours.out_proj.bias, theirs.out_proj.bias, atol=0, rtol=0)
    assert sum(p.numel() for p in ours.parameters()) == sum(p.numel() for p in theirs.parameters())
    assert ours.head_dim == 2


def test_without_bias_has_no_bias_parameters():
    _, ours = make_pair(bias=False)
    assert ours.in_proj_bias is None and ours.out_proj.bias is None
    assert sum(p.numel() for p in ours.parameters()) == 4 * 8 * 8


def test_fully_masked_query_gets_zero_weights_not_nan():
    _, ours = make_pair()
    x = randn(2, 3, 8)
    keep = torch.tensor([[True, True, False], [False, False, False]])
    output, weights = ours(x, x, x, mask=keep[:, None, None, :])
    assert torch.isfinite(output).all()
    assert (weights[1] == 0).all()
    torch.testing.assert_close(output[1], ours.out_proj.bias.expand(3, 8), atol=0, rtol=0)


# ---------------------------------------------------------------- the steps, by formula


def test_split_and_merge_heads_by_formula():
    x = randn(2, 5, 12)
    heads = split_heads(x, 3)
    assert heads.shape == (2, 3, 5, 4)
    for h in range(3):  # head h holds feature columns 4h .. 4h+3
        torch.testing.assert_close(heads[:, h], x[..., 4 * h : 4 * h + 4], atol=0, rtol=0)
    torch.testing.assert_close(merge_heads(heads), x, atol=0, rtol=0)


def test_forward_equals_the_written_out_formula():
    """Concat_h softmax(Q_h K_h^T / sqrt(d_head)) V_h, then W_O: one loop per head, no attnbook code."""
    _, ours = make_pair(embed_dim=12, num_heads=3)
    query, key, value = randn(2, 4, 12, seed=1), randn(2, 6, 12, seed=2), randn(2, 6, 12, seed=3)
    w_q, w_k, w_v = ours.in_proj_weight.detach().chunk(3)
    b_q, b_k, b_v = ours.in_proj_bias.detach().chunk(3)
    q, k, v = query @ w_q.T + b_q, key @ w_k.T + b_k, value @ w_v.T + b_v
    heads, per_head_weights = [], []
    for h in range(3):
        cols = slice(4 * h, 4 * h + 4)
        alpha = torch.softmax(q[..., cols] @ k[..., cols].transpose(1, 2) / math.sqrt(4), dim=-1)
        heads.append(alpha @ v[..., cols])
        per_head_weights.append(alpha)
    expected = torch.cat(heads, dim=-1) @ ours.out_proj.weight.detach().T + ours.out_proj.bias.detach()
    output, weights = ours(query, key, value)
    torch.testing.assert_close(output, expected, atol=1e-12, rtol=0)
    torch.testing.assert_close(weights, torch.stack(per_head_weights, dim=1), atol=1e-12, rtol=0)


def test_raw_head_scores_sum_to_the_single_head_score():
    """Sum over heads of q_h . k_h = q . k: splitting regroups the same dot product."""
    q, k = randn(5, 12, seed=1), randn(6, 12, seed=2)
    per_head = split_heads(q, 4) @ split_heads(k, 4).transpose(-2, -1)
    torch.testing.assert_close(per_head.sum(dim=0), q @ k.T, atol=1e-12, rtol=0)


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize("embed_dim, num_heads", [(10, 3), (8, 0), (6, 4)])
def test_indivisible_embed_dim_names_both(embed_dim, num_heads):
    with pytest.raises(ValueError, match=rf"embed_dim \({embed_dim}\).*num_heads \({num_heads}\)"):
        MultiHeadAttention(embed_dim, num_heads)


def test_non_integer_sizes_are_type_errors():
    with pytest.raises(TypeError, match="num_heads must be an int, got 2.0"):
        MultiHeadAttention(8, 2.0)
    with pytest.raises(TypeError, match="embed_dim must be an int, got '8'"):
        MultiHeadAttention("8", 2)


def test_bad_inputs_raise_clear_errors():
    _, ours = make_pair(dtype=torch.float32)
    x = torch.zeros(2, 3, 8)
    with pytest.raises(ValueError, match="key feature size.*key has 6, embed_dim has 8"):
        ours(x, torch.zeros(2, 3, 6), x)
    with pytest.raises(ValueError, match="number of keys and values.*key has 3, value has 4"):
        ours(x, x, torch.zeros(2, 4, 8))
    with pytest.raises(ValueError, match=r"batch shapes must match: query \(2,\), key \(2,\), value \(3,\)"):
        ours(x, x, torch.zeros(3, 3, 8))
    with pytest.raises(ValueError, match=r"query needs shape .* got \(8,\)"):
        ours(torch.zeros(8), x, x)
    with pytest.raises(TypeError, match="query must be a floating-point tensor, got dtype torch.int64"):
        ours(torch.zeros(2, 3, 8, dtype=torch.long), x, x)
    with pytest.raises(TypeError, match="mask must be a boolean tensor"):
        ours(x, x, x, mask=torch.ones(2, 1, 1, 3))
    with pytest.raises(ValueError, match=r"mask of shape \(2, 4\) does not broadcast to \(2, 2, 3, 3\)"):
        ours(x, x, x, mask=torch.ones(2, 4, dtype=torch.bool))


def test_load_torch_weights_rejects_mismatches():
    ours = MultiHeadAttention(8, 2)
    with pytest.raises(TypeError, match="expected torch.nn.MultiheadAttention, got Linear"):
        ours.load_torch_weights(nn.Linear(8, 8))
    with pytest.raises(ValueError, match="embed_dim=8, num_heads=4.*embed_dim=8, num_heads=2"):
        ours.load_torch_weights(nn.MultiheadAttention(8, 4))
    with pytest.raises(ValueError, match="biases"):
        ours.load_torch_weights(nn.MultiheadAttention(8, 2, bias=False))
    with pytest.raises(ValueError, match="kdim/vdim"):
        ours.load_torch_weights(nn.MultiheadAttention(8, 2, kdim=4, vdim=4))


# ---------------------------------------------------------------- properties


@st.composite
def attention_case(draw):
    num_heads = draw(st.integers(1, 3))
    head_dim = draw(st.integers(1, 3))
    batch, n_q, n_k = draw(st.integers(1, 2)), draw(st.integers(1, 4)), draw(st.integers(1, 5))
    seed = draw(st.integers(0, 2**16))
    keep = torch.tensor(draw(st.lists(st.booleans(), min_size=batch * n_k, max_size=batch * n_k))).reshape(batch, n_k)
    return num_heads, head_dim, batch, n_q, n_k, seed, keep


def _run(case):
    num_heads, head_dim, batch, n_q, n_k, seed, keep = case
    embed_dim = num_heads * head_dim
    torch.manual_seed(seed)
    module = MultiHeadAttention(embed_dim, num_heads).double()
    query, key, value = randn(batch, n_q, embed_dim, seed=seed), randn(batch, n_k, embed_dim, seed=seed + 1), randn(
        batch, n_k, embed_dim, seed=seed + 2
    )
    return module, query, key, value, keep[:, None, None, :]


@settings(max_examples=40, deadline=None)
@given(attention_case())
def test_weights_sum_to_one_over_kept_keys_and_zero_elsewhere(case):
    module, query, key, value, mask = _run(case)
    _, weights = module(query, key, value, mask=mask)
    mask = mask.expand_as(weights)
    assert (weights.masked_select(~mask) == 0).all()
    assert (weights >= 0).all()
    sums = weights.sum(dim=-1)
    has_keys = mask.any(dim=-1)
    torch.testing.assert_close(sums[has_keys], torch.ones_like(sums[has_keys]), atol=1e-12, rtol=0)
    assert (sums[~has_keys] == 0).all()


@settings(max_examples=40, deadline=None)
@given(attention_case(), st.randoms(use_true_random=False))
def test_permuting_key_value_pairs_together_leaves_output_unchanged(case, rng):
    module, query, key, value, mask = _run(case)
    n_k = key.shape[1]
    order = list(range(n_k))
    rng.shuffle(order)
    perm = torch.tensor(order)
    output, weights = module(query, key, value, mask=mask)
    output_p, weights_p = module(query, key[:, perm], value[:, perm], mask=mask[..., perm])
    torch.testing.assert_close(output_p, output, atol=1e-12, rtol=0)
    torch.testing.assert_close(weights_p, weights[..., perm], atol=1e-12, rtol=0)


# ---------------------------------------------------------------- the explorer


def test_multihead_view_matches_a_direct_computation():
    from attnbook.widgets.multihead import EMBED_DIM, SENTENCE, multihead_view, sentence_embeddings

    view = multihead_view(num_heads=4, head=2, seed=0)
    n = len(SENTENCE)
    assert view["weights"].shape == (4, n, n) and view["head_dim"] == EMBED_DIM // 4
    torch.testing.assert_close(view["weights"].sum(dim=-1), torch.ones(4, n), atol=1e-6, rtol=0)
    torch.testing.assert_close(view["head_weights"], view["weights"][2], atol=0, rtol=0)
    torch.testing.assert_close(view["top_key"], view["weights"][2].argmax(dim=-1), atol=0, rtol=0)
    entropy = -(view["weights"] * view["weights"].log()).sum(-1).mean(-1)
    torch.testing.assert_close(view["entropy"], entropy, atol=1e-5, rtol=0)
    # The same projection parameters for every number of heads: one head = the full-width dot product.
    x = sentence_embeddings(0)
    one_head = multihead_view(num_heads=1, head=0)
    torch.manual_seed(0)
    reference = MultiHeadAttention(EMBED_DIM, 1)
    with torch.no_grad():
        w_q, w_k, _ = reference.in_proj_weight.chunk(3)
        expected = torch.softmax((x @ w_q.T) @ (x @ w_k.T).T / math.sqrt(EMBED_DIM), dim=-1)
    torch.testing.assert_close(one_head["weights"][0], expected, atol=1e-6, rtol=0)
    # A repeated word ("the" at positions 0 and 4) has the same embedding: identical columns.
    torch.testing.assert_close(view["weights"][..., 0], view["weights"][..., 4], atol=0, rtol=0)


def test_multihead_view_rejects_bad_controls():
    from attnbook.widgets.multihead import multihead_view

    with pytest.raises(ValueError, match="num_heads must divide the embedding size 24, got 5"):
        multihead_view(num_heads=5)
    with pytest.raises(ValueError, match=r"head must be in \[0, 3\] for 4 heads, got 4"):
        multihead_view(num_heads=4, head=4)


def test_plot_and_explorer_build_and_follow_the_controls():
    import matplotlib.pyplot as plt

    from attnbook.widgets.multihead import multihead_explorer, multihead_view, plot_multihead

    fig = plot_multihead(multihead_view(num_heads=8, head=7))
    assert len(fig.axes) == 3  # strip, chosen head, colour bar
    plt.close(fig)
    box = multihead_explorer(num_heads=8, head=6)
    heads, chosen = box.children[0].children
    heads.value = 2  # the head slider must shrink to the new number of heads
    assert (chosen.max, chosen.value) == (1, 1)
    heads.value = 6
    chosen.value = 5
    assert chosen.value == 5


def test_the_figure_updates_in_place_and_returns_the_same_artists():
    import matplotlib.pyplot as plt

    from attnbook.widgets.multihead import multihead_view, plot_multihead, update_multihead_figure

    fig = plot_multihead(multihead_view(num_heads=4, head=0))
    top, main, colour_axes = fig.axes
    first = update_multihead_figure(fig, multihead_view(num_heads=4, head=0))
    for num_heads, head in ((8, 5), (2, 1), (1, 0)):
        view = multihead_view(num_heads=num_heads, head=head)
        changed = update_multihead_figure(fig, view)
        assert [id(a) for a in changed] == [id(a) for a in first]  # same artists: only they are redrawn
        assert top not in changed and colour_axes not in changed  # fixed limits, ticks and colour bar
        assert top.get_xlim() == (0, 1) and main.images[0].get_clim() == (0, 1)
        torch.testing.assert_close(torch.as_tensor(main.images[0].get_array()), view["weights"][head])
        strip = torch.as_tensor(top.images[0].get_array().filled(float("nan")))
        assert strip.shape == (10, num_heads * 11 - 1)
        for h in range(num_heads):  # head h sits in columns 11h .. 11h+9
            torch.testing.assert_close(strip[:, 11 * h : 11 * h + 10], view["weights"][h])
        # The frame and the head names sit over their heads' columns, as fractions of the strip's width.
        width = num_heads * 11 - 1
        frame = top.patches[0]
        assert frame.get_x() == pytest.approx(11 * head / width) and frame.get_width() == pytest.approx(10 / width)
        names = [t for t in top.texts if t.get_visible()]
        assert [t.get_text() for t in names] == [f"head {h}" for h in range(num_heads)]
        assert [t.get_position()[0] for t in names] == pytest.approx([(11 * h + 5) / width for h in range(num_heads)])
        assert top.get_title().startswith(f"{num_heads} head") and main.get_title().startswith(f"head {head}:")
    plt.close(fig)


def test_the_explorer_shows_the_figure_of_the_current_controls():
    from _pixels import differing_pixels, drawn_in_full

    from attnbook.widgets.multihead import multihead_explorer, multihead_view, plot_multihead

    box = multihead_explorer(num_heads=8, head=0)
    heads, chosen = box.children[0].children
    chosen.value = 5
    heads.value = 3
    assert (heads.value, chosen.value) == (3, 2)
    expected = drawn_in_full(plot_multihead, multihead_view(num_heads=3, head=2))
    other = drawn_in_full(plot_multihead, multihead_view(num_heads=8, head=5))
    # The same pixels as a full draw of a fresh figure, and a test that could fail.
    assert differing_pixels(box.children[1].outputs[0], expected) == 0 < differing_pixels(other, expected)

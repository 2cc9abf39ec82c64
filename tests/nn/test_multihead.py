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

import attnbook
from attnbook import (
    MultiHeadAttention,
    TransformerEncoderBlock,
    attention,
    lengths_to_mask,
    merge_heads,
    split_heads,
)

from _tensors import seeded_randn

matplotlib.use("Agg")

ATOL = 1e-6


def make_pair(
    embed_dim=8, num_heads=2, bias=True, seed=0, dtype=torch.float64
):
    """A torch module with random (non-zero) parameters and ours with the same parameters."""
    torch.manual_seed(seed)
    theirs = nn.MultiheadAttention(
        embed_dim, num_heads, bias=bias, batch_first=True
    ).to(dtype)
    with torch.no_grad():  # torch zero-initialises the biases: make them count
        for parameter in theirs.parameters():
            parameter.normal_(0.0, 0.5)
    ours = (
        MultiHeadAttention(embed_dim, num_heads, bias=bias)
        .to(dtype)
        .load_torch_weights(theirs)
    )
    return theirs, ours


def randn(*shape, seed=1, dtype=torch.float64):
    return torch.randn(
        *shape, generator=torch.Generator().manual_seed(seed), dtype=dtype
    )


def random_keep(batch, n_k, seed=2):
    """Key-padding keep mask (True = keep) with at least one kept key per row."""
    keep = (
        torch.rand(batch, n_k, generator=torch.Generator().manual_seed(seed))
        > 0.4
    )
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
        query, key, value = (
            randn(batch, n_q, 12, seed=1),
            randn(batch, n_k, 12, seed=2),
            randn(batch, n_k, 12, seed=3),
        )
    else:  # encoder-decoder attention: keys and values are one tensor
        query, key = (
            randn(batch, n_q, 12, seed=1),
            randn(batch, n_k, 12, seed=2),
        )
        value = key
    keep = random_keep(batch, n_k) if padding else None
    expected, expected_weights = theirs(
        query,
        key,
        value,
        key_padding_mask=None if keep is None else ~keep,
        average_attn_weights=False,
    )
    output, weights = ours(
        query,
        key,
        value,
        mask=None if keep is None else keep[:, None, None, :],
    )
    assert output.shape == (batch, n_q, 12) and weights.shape == (
        batch,
        3,
        n_q,
        n_k,
    )
    torch.testing.assert_close(output, expected, atol=ATOL, rtol=0)
    torch.testing.assert_close(weights, expected_weights, atol=ATOL, rtol=0)


def test_matches_torch_with_a_causal_attn_mask():
    theirs, ours = make_pair()
    x = randn(2, 5, 8)
    causal_keep = torch.ones(5, 5, dtype=torch.bool).tril()
    expected, expected_weights = theirs(
        x, x, x, attn_mask=~causal_keep, average_attn_weights=False
    )
    output, weights = ours(x, x, x, mask=causal_keep)
    torch.testing.assert_close(output, expected, atol=ATOL, rtol=0)
    torch.testing.assert_close(weights, expected_weights, atol=ATOL, rtol=0)
    assert (weights.masked_select(~causal_keep) == 0).all()


def test_matches_torch_unbatched_and_in_float32():
    theirs, ours = make_pair(embed_dim=16, num_heads=4, dtype=torch.float32)
    query, key = (
        randn(3, 16, dtype=torch.float32),
        randn(7, 16, seed=5, dtype=torch.float32),
    )
    expected, expected_weights = theirs(
        query, key, key, average_attn_weights=False
    )
    output, weights = ours(query, key, key)
    torch.testing.assert_close(output, expected, atol=1e-5, rtol=0)
    torch.testing.assert_close(weights, expected_weights, atol=1e-6, rtol=0)


@pytest.mark.parametrize("padding", [False, True])
def test_gradients_match_torch(padding):
    theirs, ours = make_pair(embed_dim=8, num_heads=2)
    inputs = [randn(2, 3, 8, seed=s).requires_grad_() for s in (1, 2, 3)]
    twins = [t.detach().clone().requires_grad_() for t in inputs]
    key_padding = (
        torch.tensor([[False, False, True], [False, True, True]])
        if padding
        else None
    )
    upstream = randn(2, 3, 8, seed=9)
    out_theirs, w_theirs = theirs(
        *inputs, key_padding_mask=key_padding, average_attn_weights=False
    )
    keep = None if key_padding is None else ~key_padding[:, None, None, :]
    out_ours, w_ours = ours(*twins, mask=keep)
    ((out_theirs * upstream).sum() + w_theirs.square().sum()).backward()
    ((out_ours * upstream).sum() + w_ours.square().sum()).backward()
    for a, b in zip(inputs, twins):
        torch.testing.assert_close(b.grad, a.grad, atol=ATOL, rtol=0)
    torch.testing.assert_close(
        ours.in_proj_weight.grad, theirs.in_proj_weight.grad, atol=ATOL, rtol=0
    )
    torch.testing.assert_close(
        ours.in_proj_bias.grad, theirs.in_proj_bias.grad, atol=ATOL, rtol=0
    )
    torch.testing.assert_close(
        ours.out_proj.weight.grad,
        theirs.out_proj.weight.grad,
        atol=ATOL,
        rtol=0,
    )
    torch.testing.assert_close(
        ours.out_proj.bias.grad, theirs.out_proj.bias.grad, atol=ATOL, rtol=0
    )


def test_load_torch_weights_copies_every_parameter():
    theirs, ours = make_pair(embed_dim=8, num_heads=4)
    torch.testing.assert_close(
        ours.in_proj_weight, theirs.in_proj_weight, atol=0, rtol=0
    )
    torch.testing.assert_close(
        ours.in_proj_bias, theirs.in_proj_bias, atol=0, rtol=0
    )
    torch.testing.assert_close(
        ours.out_proj.weight, theirs.out_proj.weight, atol=0, rtol=0
    )
    torch.testing.assert_close(
        ours.out_proj.bias, theirs.out_proj.bias, atol=0, rtol=0
    )
    assert sum(p.numel() for p in ours.parameters()) == sum(
        p.numel() for p in theirs.parameters()
    )
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
    torch.testing.assert_close(
        output[1], ours.out_proj.bias.expand(3, 8), atol=0, rtol=0
    )


# ---------------------------------------------------------------- the steps, by formula


def test_split_and_merge_heads_by_formula():
    x = randn(2, 5, 12)
    heads = split_heads(x, 3)
    assert heads.shape == (2, 3, 5, 4)
    for h in range(3):  # head h holds feature columns 4h .. 4h+3
        torch.testing.assert_close(
            heads[:, h], x[..., 4 * h : 4 * h + 4], atol=0, rtol=0
        )
    torch.testing.assert_close(merge_heads(heads), x, atol=0, rtol=0)


def test_forward_equals_the_written_out_formula():
    """Concat_h softmax(Q_h K_h^T / sqrt(d_head)) V_h, then W_O: one loop per head, no attnbook code."""
    _, ours = make_pair(embed_dim=12, num_heads=3)
    query, key, value = (
        randn(2, 4, 12, seed=1),
        randn(2, 6, 12, seed=2),
        randn(2, 6, 12, seed=3),
    )
    w_q, w_k, w_v = ours.in_proj_weight.detach().chunk(3)
    b_q, b_k, b_v = ours.in_proj_bias.detach().chunk(3)
    q, k, v = query @ w_q.T + b_q, key @ w_k.T + b_k, value @ w_v.T + b_v
    heads, per_head_weights = [], []
    for h in range(3):
        cols = slice(4 * h, 4 * h + 4)
        alpha = torch.softmax(
            q[..., cols] @ k[..., cols].transpose(1, 2) / math.sqrt(4), dim=-1
        )
        heads.append(alpha @ v[..., cols])
        per_head_weights.append(alpha)
    expected = (
        torch.cat(heads, dim=-1) @ ours.out_proj.weight.detach().T
        + ours.out_proj.bias.detach()
    )
    output, weights = ours(query, key, value)
    torch.testing.assert_close(output, expected, atol=1e-12, rtol=0)
    torch.testing.assert_close(
        weights, torch.stack(per_head_weights, dim=1), atol=1e-12, rtol=0
    )


def test_raw_head_scores_sum_to_the_single_head_score():
    """Sum over heads of q_h . k_h = q . k: splitting regroups the same dot product."""
    q, k = randn(5, 12, seed=1), randn(6, 12, seed=2)
    per_head = split_heads(q, 4) @ split_heads(k, 4).transpose(-2, -1)
    torch.testing.assert_close(
        per_head.sum(dim=0), q @ k.T, atol=1e-12, rtol=0
    )


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize("embed_dim, num_heads", [(10, 3), (8, 0), (6, 4)])
def test_indivisible_embed_dim_names_both(embed_dim, num_heads):
    with pytest.raises(
        ValueError,
        match=rf"embed_dim \({embed_dim}\).*num_heads \({num_heads}\)",
    ):
        MultiHeadAttention(embed_dim, num_heads)


def test_non_integer_sizes_are_type_errors():
    with pytest.raises(TypeError, match="num_heads must be an int, got 2.0"):
        MultiHeadAttention(8, 2.0)
    with pytest.raises(TypeError, match="embed_dim must be an int, got '8'"):
        MultiHeadAttention("8", 2)


def test_bad_inputs_raise_clear_errors():
    _, ours = make_pair(dtype=torch.float32)
    x = torch.zeros(2, 3, 8)
    with pytest.raises(
        ValueError, match="key feature size.*key has 6, embed_dim has 8"
    ):
        ours(x, torch.zeros(2, 3, 6), x)
    with pytest.raises(
        ValueError, match="number of keys and values.*key has 3, value has 4"
    ):
        ours(x, x, torch.zeros(2, 4, 8))
    with pytest.raises(
        ValueError,
        match=r"batch shapes must match: query \(2,\), key \(2,\), value \(3,\)",
    ):
        ours(x, x, torch.zeros(3, 3, 8))
    with pytest.raises(ValueError, match=r"query needs shape .* got \(8,\)"):
        ours(torch.zeros(8), x, x)
    with pytest.raises(
        TypeError,
        match="query must be a floating-point tensor, got dtype torch.int64",
    ):
        ours(torch.zeros(2, 3, 8, dtype=torch.long), x, x)
    with pytest.raises(TypeError, match="mask must be a boolean tensor"):
        ours(x, x, x, mask=torch.ones(2, 1, 1, 3))
    with pytest.raises(
        ValueError,
        match=r"mask of shape \(2, 4\) is ambiguous or wrong for multi-head weights \(2, 2, 3, 3\)",
    ):
        ours(x, x, x, mask=torch.ones(2, 4, dtype=torch.bool))


def test_load_torch_weights_rejects_mismatches():
    ours = MultiHeadAttention(8, 2)
    with pytest.raises(
        TypeError, match="expected torch.nn.MultiheadAttention, got Linear"
    ):
        ours.load_torch_weights(nn.Linear(8, 8))
    with pytest.raises(
        ValueError, match="embed_dim=8, num_heads=4.*embed_dim=8, num_heads=2"
    ):
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
    batch, n_q, n_k = (
        draw(st.integers(1, 2)),
        draw(st.integers(1, 4)),
        draw(st.integers(1, 5)),
    )
    seed = draw(st.integers(0, 2**16))
    keep = torch.tensor(
        draw(
            st.lists(st.booleans(), min_size=batch * n_k, max_size=batch * n_k)
        )
    ).reshape(batch, n_k)
    return num_heads, head_dim, batch, n_q, n_k, seed, keep


def _run(case):
    num_heads, head_dim, batch, n_q, n_k, seed, keep = case
    embed_dim = num_heads * head_dim
    torch.manual_seed(seed)
    module = MultiHeadAttention(embed_dim, num_heads).double()
    query, key, value = (
        randn(batch, n_q, embed_dim, seed=seed),
        randn(batch, n_k, embed_dim, seed=seed + 1),
        randn(batch, n_k, embed_dim, seed=seed + 2),
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
    torch.testing.assert_close(
        sums[has_keys], torch.ones_like(sums[has_keys]), atol=1e-12, rtol=0
    )
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
    output_p, weights_p = module(
        query, key[:, perm], value[:, perm], mask=mask[..., perm]
    )
    torch.testing.assert_close(output_p, output, atol=1e-12, rtol=0)
    torch.testing.assert_close(
        weights_p, weights[..., perm], atol=1e-12, rtol=0
    )


# ---------------------------------------------------------------- the explorer


def test_multihead_view_matches_the_trained_model():
    from attnbook.tasks.card_lookup import trained_card_lookup
    from attnbook.widgets.multihead import (
        DIGIT_CARD,
        example_hand,
        multihead_view,
    )

    view = multihead_view(num_heads=4, head=3)
    assert view["weights"].shape == (4, 6, 6) and view["head_dim"] == 8
    torch.testing.assert_close(
        view["weights"].sum(dim=-1),
        torch.ones(4, 6, dtype=torch.float64),
        atol=1e-6,
        rtol=0,
    )
    torch.testing.assert_close(
        view["head_weights"], view["weights"][2], atol=0, rtol=0
    )  # head 3 = index 2
    torch.testing.assert_close(
        view["top_card"], view["weights"][2].argmax(dim=-1), atol=0, rtol=0
    )
    entropy = -(view["weights"] * view["weights"].log()).sum(-1).mean(-1)
    torch.testing.assert_close(view["entropy"], entropy, atol=1e-5, rtol=0)
    # The weights are those of the cached trained model on the example hand, recomputed by hand.
    hand = example_hand()
    model = trained_card_lookup(4)
    with torch.no_grad():
        cards = model.card_colour(hand["card_colours"]) + model.card_digit(
            hand["card_digits"]
        )
        questions = model.ask_colour(hand["ask_colour"]) + model.ask_digit(
            hand["ask_digit"]
        )
        w_q, w_k, _ = model.attention.in_proj_weight.chunk(3)
        b_q, b_k, _ = model.attention.in_proj_bias.chunk(3)
        q = (questions[0] @ w_q.T + b_q).view(6, 4, 8).transpose(0, 1)
        k = (cards[0] @ w_k.T + b_k).view(6, 4, 8).transpose(0, 1)
        expected = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(8), dim=-1)
    torch.testing.assert_close(view["weights"], expected, atol=1e-5, rtol=0)
    # Question i names card i by colour and card DIGIT_CARD[i] by digit: the labels say so.
    for i, question in enumerate(view["questions"]):
        colour, digit = question.split()
        assert view["cards"][i].startswith(colour[:-1] + " ") and view[
            "cards"
        ][DIGIT_CARD[i]].endswith(" " + digit[:-1])


def test_the_trained_two_head_model_answers_every_question_of_the_example():
    from attnbook.widgets.multihead import multihead_view

    assert multihead_view(num_heads=2)["right"] == 12
    assert multihead_view(num_heads=1)["right"] < 12


def test_multihead_view_rejects_bad_controls():
    from attnbook.widgets.multihead import multihead_view

    with pytest.raises(
        ValueError, match=r"num_heads must be one of \(1, 2, 4\), got 3"
    ):
        multihead_view(num_heads=3)
    with pytest.raises(
        ValueError, match=r"head must be in \[1, 4\] for 4 heads, got 0"
    ):
        multihead_view(num_heads=4, head=0)
    with pytest.raises(
        ValueError, match=r"head must be in \[1, 2\] for 2 heads, got 3"
    ):
        multihead_view(num_heads=2, head=3)


def test_plot_and_explorer_build_and_follow_the_controls():
    import matplotlib.pyplot as plt

    from attnbook.widgets.multihead import (
        multihead_explorer,
        multihead_view,
        plot_multihead,
    )

    fig = plot_multihead(multihead_view(num_heads=4, head=4))
    assert len(fig.axes) == 3  # strip, chosen head, colour bar
    plt.close(fig)
    box = multihead_explorer(num_heads=4, head=4)
    heads, chosen = box.children[0].children
    heads.value = 2  # the head slider must shrink to the new number of heads
    assert (chosen.min, chosen.max, chosen.value) == (1, 2, 2)
    heads.value = 4
    chosen.value = 3
    assert chosen.value == 3


def test_the_figure_updates_in_place_and_returns_the_same_artists():
    import matplotlib.pyplot as plt

    from attnbook.widgets.multihead import (
        multihead_view,
        plot_multihead,
        update_multihead_figure,
    )

    fig = plot_multihead(multihead_view(num_heads=2, head=1))
    top, main, colour_axes = fig.axes
    first = update_multihead_figure(fig, multihead_view(num_heads=2, head=1))
    for num_heads, head in ((4, 3), (2, 2), (1, 1)):
        view = multihead_view(num_heads=num_heads, head=head)
        changed = update_multihead_figure(fig, view)
        assert [id(a) for a in changed] == [
            id(a) for a in first
        ]  # same artists: only they are redrawn
        assert (
            top not in changed and colour_axes not in changed
        )  # fixed limits, ticks and colour bar
        assert top.get_xlim() == (0, 1) and main.images[0].get_clim() == (0, 1)
        torch.testing.assert_close(
            torch.as_tensor(main.images[0].get_array()),
            view["weights"][head - 1],
            check_dtype=False,
        )
        strip = torch.as_tensor(top.images[0].get_array().filled(float("nan")))
        assert strip.shape == (6, num_heads * 7 - 1)
        for h in range(num_heads):  # head h + 1 sits in columns 7h .. 7h+5
            torch.testing.assert_close(
                strip[:, 7 * h : 7 * h + 6],
                view["weights"][h],
                check_dtype=False,
            )
        # The frame and the head names sit over their heads' columns, as fractions of the strip's width.
        width = num_heads * 7 - 1
        frame = top.patches[0]
        assert frame.get_x() == pytest.approx(
            7 * (head - 1) / width
        ) and frame.get_width() == pytest.approx(6 / width)
        names = [t for t in top.texts if t.get_visible()]
        assert [t.get_text() for t in names] == [
            f"head {h + 1}" for h in range(num_heads)
        ]
        assert [t.get_position()[0] for t in names] == pytest.approx(
            [(7 * h + 3) / width for h in range(num_heads)]
        )
        assert top.get_title().startswith(
            f"model with {num_heads} head"
        ) and main.get_title().startswith(f"head {head}:")
    plt.close(fig)


def test_the_explorer_shows_the_figure_of_the_current_controls():
    from attnbook.widgets.multihead import (
        multihead_explorer,
        multihead_view,
        plot_multihead,
    )

    from _pixels import differing_pixels, drawn_in_full

    box = multihead_explorer(num_heads=4, head=1)
    heads, chosen = box.children[0].children
    chosen.value = 4
    heads.value = 2
    assert (heads.value, chosen.value) == (2, 2)
    expected = drawn_in_full(
        plot_multihead, multihead_view(num_heads=2, head=2)
    )
    other = drawn_in_full(plot_multihead, multihead_view(num_heads=4, head=4))
    # The same pixels as a full draw of a fresh figure, and a test that could fail.
    assert (
        differing_pixels(box.children[1].outputs[0], expected)
        == 0
        < differing_pixels(other, expected)
    )


# ---------------------------------------------------------------- the card-lookup task of the chapter


def test_lookup_batch_draws_distinct_cards_and_consistent_answers():
    from attnbook.tasks.card_lookup import (
        COLOURS,
        NUM_CARDS,
        NUM_DIGITS,
        lookup_batch,
    )

    batch = lookup_batch(
        500, num_queries=3, generator=torch.Generator().manual_seed(0)
    )
    colours, digits = batch["card_colours"], batch["card_digits"]
    assert colours.shape == digits.shape == (500, NUM_CARDS)
    assert all(
        len(set(row)) == NUM_CARDS
        for row in colours.tolist() + digits.tolist()
    )  # distinct in a hand
    assert (
        colours.max() < len(COLOURS)
        and digits.max() < NUM_DIGITS
        and min(colours.min(), digits.min()) >= 0
    )
    for b in range(500):
        for q in range(3):
            i, j = batch["colour_card"][b, q], batch["digit_card"][b, q]
            assert (
                batch["ask_colour"][b, q] == colours[b, i]
                and batch["digit_answer"][b, q] == digits[b, i]
            )
            assert (
                batch["ask_digit"][b, q] == digits[b, j]
                and batch["colour_answer"][b, q] == colours[b, j]
            )
    again = lookup_batch(
        500, num_queries=3, generator=torch.Generator().manual_seed(0)
    )
    assert all(torch.equal(batch[k], again[k]) for k in batch)


def test_card_lookup_training_is_reproducible_and_two_heads_solve_the_task():
    from attnbook.tasks.card_lookup import (
        lookup_report,
        train_card_lookup,
        trained_card_lookup,
    )

    a, losses_a = train_card_lookup(2, steps=5)
    b, losses_b = train_card_lookup(2, steps=5)
    assert losses_a == losses_b and all(
        torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters())
    )
    report = lookup_report(trained_card_lookup(2), num_hands=500, seed=5)
    assert report["digit_accuracy"] == report["colour_accuracy"] == 1.0
    # One head looks up by digit, the other by colour (which one is which is not fixed).
    assert (
        sorted(report["on_digit_card"].tolist())[1] > 0.9
        and sorted(report["on_colour_card"].tolist())[1] > 0.9
    )
    one = lookup_report(trained_card_lookup(1), num_hands=500, seed=5)
    assert min(one["digit_accuracy"], one["colour_accuracy"]) < 0.6


# ---------------------------------------------------------------------------
# num_kv_heads: grouped-query and multi-query attention (chapter 13)
# ---------------------------------------------------------------------------


def test_num_kv_heads_none_draws_the_same_weights_in_the_same_order():
    # the documented draws, written out: an empty stacked (3E, E) matrix,
    # zero biases, out_proj's nn.Linear, then Xavier on the stack; shipped
    # weight files and printed numbers depend on this order
    torch.manual_seed(3)
    stack = torch.empty(24, 8)
    out_proj = nn.Linear(8, 8)
    nn.init.xavier_uniform_(stack)
    after_reference = torch.rand(1)
    for num_kv_heads in (None, 2):  # 2 = num_heads: plain multi-head
        torch.manual_seed(3)
        module = MultiHeadAttention(8, 2, num_kv_heads=num_kv_heads)
        assert torch.rand(1) == after_reference  # as many draws
        assert torch.equal(module.in_proj_weight, stack)
        assert torch.equal(module.out_proj.weight, out_proj.weight)
        assert not module.in_proj_bias.any() and not module.out_proj.bias.any()
        assert [name for name, _ in module.named_parameters()] == [
            "in_proj_weight",
            "in_proj_bias",
            "out_proj.weight",
            "out_proj.bias",
        ]


@pytest.mark.parametrize("num_kv_heads", [1, 2, 4])
def test_grouped_module_has_the_documented_parameters(num_kv_heads):
    embed, heads, head_dim = 16, 4, 4
    module = MultiHeadAttention(embed, heads, num_kv_heads=num_kv_heads)
    kv = num_kv_heads * head_dim
    assert module.num_kv_heads == num_kv_heads
    assert module.in_proj_weight.shape == (embed + 2 * kv, embed)
    assert module.in_proj_bias.shape == (embed + 2 * kv,)
    count = sum(p.numel() for p in module.parameters())
    # W_q, W_k, W_v and their biases, then the output projection
    assert count == embed * embed + 2 * kv * embed + embed + 2 * kv + (
        embed * embed + embed
    )
    x = torch.randn(3, 5, embed)
    output, weights = module(x, x, x)
    assert output.shape == (3, 5, embed) and weights.shape == (3, heads, 5, 5)


def grouped_pair(num_kv_heads, embed=12, heads=6, seed=0):
    """A grouped module with random parameters (biases too), and a plain
    multi-head module whose key and value heads are copies of its shared
    ones: head i of the plain module gets key-value head i // (h / g)."""
    torch.manual_seed(seed)
    grouped = MultiHeadAttention(embed, heads, num_kv_heads=num_kv_heads)
    plain = MultiHeadAttention(embed, heads).double()
    grouped = grouped.double()
    with torch.no_grad():
        for parameter in grouped.parameters():
            parameter.normal_(0.0, 0.5)
        d = embed // heads
        kv = num_kv_heads * d
        w_q, w_k, w_v = grouped.in_proj_weight.split([embed, kv, kv])
        b_q, b_k, b_v = grouped.in_proj_bias.split([embed, kv, kv])

        def copies(t):  # (g * d, ...) -> (h * d, ...): each head h/g times
            return (
                t.unflatten(0, (num_kv_heads, d))
                .repeat_interleave(heads // num_kv_heads, dim=0)
                .flatten(0, 1)
            )

        plain.in_proj_weight.copy_(torch.cat([w_q, copies(w_k), copies(w_v)]))
        plain.in_proj_bias.copy_(torch.cat([b_q, copies(b_k), copies(b_v)]))
        plain.out_proj.load_state_dict(grouped.out_proj.state_dict())
    return grouped, plain


@pytest.mark.parametrize("num_kv_heads", [1, 2, 3, 6])
@pytest.mark.parametrize("kind", ["self", "cross", "key is value"])
def test_grouped_module_equals_multihead_with_copied_key_value_heads(
    num_kv_heads, kind
):
    grouped, plain = grouped_pair(num_kv_heads)
    gen = torch.Generator().manual_seed(1)
    x, memory = (
        torch.randn(2, 5, 12, generator=gen, dtype=torch.float64),
        torch.randn(2, 7, 12, generator=gen, dtype=torch.float64),
    )
    query, key, value = {
        "self": (x, x, x),
        "cross": (x, memory, memory.flip(1)),
        "key is value": (x, memory, memory),
    }[kind]
    keep = torch.rand(2, 6, 5, key.shape[1], generator=gen) < 0.7
    for mask in (None, keep):
        output, weights = grouped(query, key, value, mask=mask)
        expected, expected_weights = plain(query, key, value, mask=mask)
        assert (output - expected).abs().max() < 1e-12
        assert (weights - expected_weights).abs().max() < 1e-12


@pytest.mark.parametrize("num_kv_heads", [1, 2, 4])
def test_grouped_module_is_grouped_query_attention_on_its_projections(
    num_kv_heads,
):
    from attnbook.core.grouped_query import grouped_query_attention

    embed, heads = 16, 4
    torch.manual_seed(0)
    module = MultiHeadAttention(embed, heads, num_kv_heads=num_kv_heads)
    x = torch.randn(2, 5, embed)
    mask = torch.ones(5, 5, dtype=torch.bool).tril()
    kv = num_kv_heads * embed // heads
    w_q, w_k, w_v = module.in_proj_weight.split([embed, kv, kv])
    b_q, b_k, b_v = module.in_proj_bias.split([embed, kv, kv])
    q = (x @ w_q.T + b_q).unflatten(-1, (heads, -1)).transpose(1, 2)
    k = (x @ w_k.T + b_k).unflatten(-1, (num_kv_heads, -1)).transpose(1, 2)
    v = (x @ w_v.T + b_v).unflatten(-1, (num_kv_heads, -1)).transpose(1, 2)
    heads_out, expected_weights = grouped_query_attention(q, k, v, mask=mask)
    expected = module.out_proj(heads_out.transpose(1, 2).flatten(-2))
    output, weights = module(x, x, x, mask=mask)
    assert (output - expected).abs().max() < 1e-6
    assert (weights - expected_weights).abs().max() < 1e-6


@pytest.mark.parametrize(
    "num_kv_heads, error, match",
    [
        (3, ValueError, r"num_heads \(4\) must be divisible by num_kv_heads"),
        (0, ValueError, "num_kv_heads must be a positive int"),
        (8, ValueError, r"num_heads \(4\) must be divisible by num_kv_heads"),
        (2.0, ValueError, "num_kv_heads must be a positive int"),
        (True, ValueError, "num_kv_heads must be a positive int"),
    ],
)
def test_bad_num_kv_heads_is_refused_before_any_draw(
    num_kv_heads, error, match
):
    torch.manual_seed(0)
    state = torch.get_rng_state()
    with pytest.raises(error, match=match):
        MultiHeadAttention(16, 4, num_kv_heads=num_kv_heads)
    assert torch.equal(torch.get_rng_state(), state)


def test_grouped_module_refuses_torch_weights():
    module = MultiHeadAttention(8, 4, num_kv_heads=2)
    with pytest.raises(ValueError, match="num_kv_heads=2 key-value heads"):
        module.load_torch_weights(nn.MultiheadAttention(8, 4))
    # one key-value head per query head: the layout is torch's
    torch.manual_seed(0)
    theirs = nn.MultiheadAttention(8, 4, batch_first=True)
    ours = MultiHeadAttention(8, 4, num_kv_heads=4).load_torch_weights(theirs)
    x = torch.randn(2, 3, 8)
    expected = theirs(x, x, x, average_attn_weights=False)
    for a, b in zip(ours(x, x, x), expected):
        assert (a - b).abs().max() < 1e-6


def test_grouped_module_takes_unbatched_inputs_as_torch_does():
    grouped, _ = grouped_pair(2)
    x = torch.randn(2, 5, 12, dtype=torch.float64)
    keep = torch.rand(6, 5, 5, generator=torch.Generator().manual_seed(0))
    keep = (keep < 0.7) | torch.eye(5, dtype=torch.bool)
    batched, weights = grouped(x, x, x, mask=keep[None])
    single, single_weights = grouped(x[1], x[1], x[1], mask=keep)
    assert (single - batched[1]).abs().max() < 1e-12
    assert (single_weights - weights[1]).abs().max() < 1e-12


B, H, N, E = 2, 2, 4, 8


_KEEP = lengths_to_mask(torch.tensor([4, 2]), N)


GOOD_MASKS = {
    "(B, 1, 1, n)": _KEEP[:, None, None, :],
    "(n, n)": torch.ones(N, N, dtype=torch.bool).tril(),
    "(1, 1, n, n)": torch.ones(1, 1, N, N, dtype=torch.bool),
    "(B, h, n, n)": torch.ones(B, H, N, N, dtype=torch.bool),
    "(B, 1, n, n)": torch.ones(B, 1, N, N, dtype=torch.bool),
    "(1, h, 1, n)": torch.ones(1, H, 1, N, dtype=torch.bool),
}


BAD_MASKS = {
    "(B, 1, n)": _KEEP[:, None, :],
    "(B, n)": _KEEP,
    "(n,)": _KEEP[0],
    "(1, n)": _KEEP[:1],
    "(h, n, n)": torch.ones(H, N, N, dtype=torch.bool),
    "(B, 1, 1, 1)": torch.ones(B, 1, 1, 1, dtype=torch.bool),
    "5-d": torch.ones(1, B, 1, 1, N, dtype=torch.bool),
    "0-d": torch.tensor(True),
    "(B, 3, 1, n)": torch.ones(B, 3, 1, N, dtype=torch.bool),
    "(n, 1)": torch.ones(N, 1, dtype=torch.bool),
}


def _multihead_callers():
    torch.manual_seed(0)
    mha, block = MultiHeadAttention(E, H), TransformerEncoderBlock(E, H, 16)
    return {
        "MultiHeadAttention": lambda x, m: mha(x, x, x, mask=m)[0],
        "TransformerEncoderBlock": lambda x, m: block(x, m),
    }


@pytest.mark.parametrize(
    "caller", ["MultiHeadAttention", "TransformerEncoderBlock"]
)
@pytest.mark.parametrize("shape", list(BAD_MASKS))
def test_masks_that_could_be_misread_are_refused(caller, shape):
    call = _multihead_callers()[caller]
    with pytest.raises(ValueError, match=r"\(n_q, n_k\)|\(n, n\)"):
        call(seeded_randn(B, N, E), BAD_MASKS[shape])


@pytest.mark.parametrize(
    "caller", ["MultiHeadAttention", "TransformerEncoderBlock"]
)
@pytest.mark.parametrize("shape", list(GOOD_MASKS))
def test_unambiguous_masks_are_accepted(caller, shape):
    call = _multihead_callers()[caller]
    call(seeded_randn(B, N, E), GOOD_MASKS[shape])


def test_padding_of_sequence_j_never_lands_on_head_j():
    """B equals the number of heads: the (B, 1, n) mask would be accepted and misapplied; now it is refused."""
    torch.manual_seed(0)
    mha = MultiHeadAttention(E, H)
    x = seeded_randn(B, N, E)
    _, weights = mha(x, x, x, mask=_KEEP[:, None, None, :])
    assert (weights[1, :, :, 2:] == 0).all() and (weights[0] > 0).all()
    with pytest.raises(ValueError, match="keep\\[:, None, None, :\\]"):
        mha(x, x, x, mask=_KEEP[:, None, :])


def test_single_head_functions_still_broadcast():
    out, weights = attention(
        seeded_randn(B, 3, 4),
        seeded_randn(B, N, 4),
        seeded_randn(B, N, 2),
        mask=_KEEP[:, None, :],
    )
    assert (weights[1, :, 2:] == 0).all()


@pytest.mark.parametrize("option", ["add_bias_kv", "add_zero_attn"])
def test_load_torch_weights_refuses_what_it_cannot_represent(option):
    import attnbook

    theirs = torch.nn.MultiheadAttention(
        8, 2, batch_first=True, **{option: True}
    )
    ours = attnbook.MultiHeadAttention(8, 2)
    before = [p.clone() for p in ours.parameters()]
    with pytest.raises(
        ValueError, match="add_bias_kv=True or add_zero_attn=True"
    ):
        ours.load_torch_weights(theirs)
    assert all(torch.equal(a, b) for a, b in zip(before, ours.parameters()))


# Garbage in masked padding reaches no parameter's gradient.
def test_garbage_in_masked_memory_stays_out_of_multihead_gradients():
    g = torch.Generator().manual_seed(0)
    with attnbook._random.keep_global_rng():
        mha = attnbook.MultiHeadAttention(8, 2)
    memory = torch.randn(2, 5, 8, generator=g)
    memory[1, 3:] = float("nan")
    keep = torch.ones(2, 5, dtype=torch.bool)
    keep[1, 3:] = False
    query = torch.randn(2, 3, 8, generator=g)
    output = mha(query, memory, memory, mask=keep[:, None, None, :])[0]
    output.sum().backward()
    assert torch.isfinite(output).all()
    assert all(torch.isfinite(p.grad).all() for p in mha.parameters())


def test_a_projection_of_a_free_view_is_still_checked():
    with attnbook._random.keep_global_rng():
        mha = attnbook.MultiHeadAttention(8, 2)
    huge = torch.zeros(2, 1, 8).expand(2, 10**9, 8)
    with pytest.raises(ValueError, match="GiB"):
        mha.project(huge, huge, huge)


@pytest.mark.parametrize("num_kv_heads", [4, 2, 1])
def test_project_query_and_keys_values_are_the_slices_of_project(
    num_kv_heads,
):
    """A decoding step projects the new position's query (W_q alone) and
    the memory's keys and values (W_k, W_v alone) once: the same numbers
    as ``project``, split into heads."""
    from attnbook.nn.multihead import MultiHeadAttention, split_heads

    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 4, num_kv_heads=num_kv_heads).double()
    x = torch.randn(2, 5, 8, dtype=torch.float64)
    q, k, v = mha.project(x, x, x)
    same = dict(rtol=0, atol=1e-12)  # one product or a slice of it
    torch.testing.assert_close(mha.project_query(x), split_heads(q, 4), **same)
    keys, values = mha.project_keys_values(x)
    torch.testing.assert_close(keys, split_heads(k, num_kv_heads), **same)
    torch.testing.assert_close(values, split_heads(v, num_kv_heads), **same)
    with pytest.raises(ValueError, match="x feature size"):
        mha.project_query(torch.randn(2, 5, 7, dtype=torch.float64))
    with pytest.raises(TypeError, match="dtype"):
        mha.project_keys_values(x.float())

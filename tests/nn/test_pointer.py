"""Tests for attnbook.nn.pointer (pointer networks) and its explorer's pure view."""

import time

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

import attnbook
from attnbook import (
    AdditiveScore,
    PointerNetwork,
    _random,
    masked_softmax,
    pretrained_sorter,
    sorting_batch,
)
from attnbook.nn.pointer import not_chosen_mask
from attnbook.tasks.sorting import (
    load_sorter,
    save_sorter,
    scale_to_unit,
    sorting_accuracy,
    train_sorter,
)

from _refusals import refused, wide


def small_model(seed=0, hidden_dim=8):
    torch.manual_seed(seed)
    return PointerNetwork(hidden_dim=hidden_dim).eval()


def is_permutation(rows: torch.Tensor) -> bool:
    n = rows.shape[1]
    return torch.equal(
        rows.sort(dim=1).values, torch.arange(n).expand_as(rows)
    )


# ---------------------------------------------------------------- sorting_batch


def test_sorting_batch_target_is_descending_argsort():
    x, target = sorting_batch(50, 7, torch.Generator().manual_seed(3))
    assert x.shape == (50, 7) and x.dtype == torch.float32
    assert target.dtype == torch.int64
    assert torch.equal(target, torch.argsort(x, dim=1, descending=True))
    assert bool(((x >= 0) & (x < 1)).all())
    # Reading x in target order gives a non-increasing sequence.
    assert bool((x.gather(1, target).diff(dim=1) <= 0).all())


def test_sorting_batch_is_seeded():
    a = sorting_batch(4, 5, torch.Generator().manual_seed(11))
    b = sorting_batch(4, 5, torch.Generator().manual_seed(11))
    c = sorting_batch(4, 5, torch.Generator().manual_seed(12))
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert not torch.equal(a[0], c[0])
    # Same draw as torch.rand with that generator.
    assert torch.equal(
        a[0], torch.rand(4, 5, generator=torch.Generator().manual_seed(11))
    )


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"batch_size": 0, "n": 3}, "batch_size"),
        ({"batch_size": 2, "n": 0}, "n must"),
        ({"batch_size": 2, "n": 2.5}, "2.5"),
    ],
)
def test_sorting_batch_bad_sizes(kwargs, message):
    with pytest.raises(ValueError, match=message):
        sorting_batch(**kwargs, generator=torch.Generator())


# ---------------------------------------------------------------- decode


@settings(max_examples=40, deadline=None)
@given(
    batch=st.integers(1, 4), n=st.integers(1, 9), seed=st.integers(0, 10_000)
)
def test_decode_untrained_returns_permutations(batch, n, seed):
    model = small_model(seed % 7)
    x = (
        torch.randn(batch, n, generator=torch.Generator().manual_seed(seed))
        * 5
    )
    positions = model.decode(x)
    assert positions.shape == (batch, n) and positions.dtype == torch.int64
    assert is_permutation(positions)


def test_decode_n_equals_one():
    positions, weights = small_model().decode(
        torch.tensor([[0.3], [7.0]]), return_weights=True
    )
    assert torch.equal(positions, torch.zeros(2, 1, dtype=torch.int64))
    assert torch.equal(weights, torch.ones(2, 1, 1))


def test_decode_with_repeated_values_is_still_a_permutation():
    x = torch.full((3, 6), 0.5)
    assert is_permutation(small_model().decode(x))


def manual_decode(model, x):
    """Greedy decoding written out by hand: LSTM steps, s = v^T tanh(W e_n + U h_m), masked softmax."""
    W = model.pointer.key_proj.weight
    U = model.pointer.query_proj.weight
    v = model.pointer.v.weight.squeeze(0)
    embed = lambda values: (
        values.unsqueeze(-1) * model.embed.weight.squeeze(1) + model.embed.bias
    )
    enc, (h, c) = model.encoder(embed(x).unsqueeze(0))
    enc = enc[0]
    n = x.shape[0]
    chosen, rows = [], []
    fed = model.start
    for _ in range(n):
        out, (h, c) = model.decoder(fed.view(1, 1, -1), (h, c))
        h_m = out[0, 0]
        scores = torch.stack(
            [v @ torch.tanh(W @ enc[j] + U @ h_m) for j in range(n)]
        )
        scores[chosen] = -float("inf")
        weights = torch.softmax(scores, dim=0)
        choice = int(weights.argmax())
        chosen.append(choice)
        rows.append(weights)
        fed = embed(x[choice])
    return torch.tensor(chosen), torch.stack(rows)


def test_decode_matches_the_formula_step_by_step():
    model = small_model(5)
    x = torch.rand(6, generator=torch.Generator().manual_seed(8))
    with torch.no_grad():
        expected_positions, expected_weights = manual_decode(model, x)
    positions, weights = model.decode(x.unsqueeze(0), return_weights=True)
    assert torch.equal(positions[0], expected_positions)
    torch.testing.assert_close(
        weights[0], expected_weights, atol=1e-6, rtol=1e-5
    )


def test_decode_masks_already_chosen_positions():
    x = torch.rand(5, 8, generator=torch.Generator().manual_seed(2))
    positions, weights = small_model(1).decode(x, return_weights=True)
    for b in range(5):
        for m in range(8):
            earlier = positions[b, :m]
            assert bool((weights[b, m, earlier] == 0).all())
            torch.testing.assert_close(weights[b, m].sum(), torch.tensor(1.0))
            assert int(weights[b, m].argmax()) == int(positions[b, m])


# ---------------------------------------------------------------- scores and masking


def test_pointer_scores_equal_the_additive_formula():
    model = small_model(2, hidden_dim=6)
    assert isinstance(model.pointer, AdditiveScore)
    g = torch.Generator().manual_seed(4)
    dec, enc = (
        torch.randn(2, 3, 6, generator=g),
        torch.randn(2, 4, 6, generator=g),
    )
    W, U = model.pointer.key_proj.weight, model.pointer.query_proj.weight
    v = model.pointer.v.weight.squeeze(0)
    expected = torch.empty(2, 3, 4)
    for b in range(2):
        for m in range(3):
            for n in range(4):
                expected[b, m, n] = v @ torch.tanh(
                    W @ enc[b, n] + U @ dec[b, m]
                )
    with torch.no_grad():
        torch.testing.assert_close(model.pointer_scores(dec, enc), expected)


def test_not_chosen_mask_matches_a_loop():
    target = torch.stack(
        [
            torch.randperm(6, generator=torch.Generator().manual_seed(s))
            for s in range(4)
        ]
    )
    mask = not_chosen_mask(target)
    for b in range(4):
        for m in range(6):
            for j in range(6):
                assert bool(mask[b, m, j]) == (j not in target[b, :m].tolist())


def test_teacher_forcing_masks_and_normalises():
    model = small_model(3)
    x, target = sorting_batch(4, 6, torch.Generator().manual_seed(0))
    with torch.no_grad():
        weights = model(x, target)
    assert weights.shape == (4, 6, 6)
    assert bool((weights[~not_chosen_mask(target)] == 0).all())
    torch.testing.assert_close(weights.sum(-1), torch.ones(4, 6))
    # The last step has one position left: probability exactly 1 there.
    assert torch.equal(weights[:, -1].argmax(-1), target[:, -1])
    torch.testing.assert_close(weights[:, -1].max(-1).values, torch.ones(4))


def teacher_forced_scores(model, x, target):
    """The pointer scores (B, n, n) of a teacher-forced pass, assembled by hand from the model's parts.

    Step 1 is fed the start vector, step m + 1 the embedded value chosen at step m.
    """
    enc, final = model.encode(x)
    chosen = model.embed(x.gather(1, target[:, :-1]).unsqueeze(-1))
    dec, _ = model.decoder(
        torch.cat([model.start.expand(x.shape[0], 1, -1), chosen], 1), final
    )
    return model.pointer(dec, enc)


def test_teacher_forcing_uses_masked_softmax_on_the_scores():
    model = small_model(4)
    x, target = sorting_batch(3, 5, torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = masked_softmax(
            teacher_forced_scores(model, x, target), not_chosen_mask(target)
        )
        torch.testing.assert_close(model(x, target), expected)


def test_loss_equals_torch_cross_entropy():
    model = small_model(6)
    x, target = sorting_batch(5, 7, torch.Generator().manual_seed(9))
    with torch.no_grad():
        scores = teacher_forced_scores(model, x, target).masked_fill(
            ~not_chosen_mask(target), -float("inf")
        )
        expected = F.cross_entropy(scores.reshape(-1, 7), target.reshape(-1))
        torch.testing.assert_close(model.loss(x, target), expected)


def test_loss_keeps_a_gradient_when_the_true_probability_underflows():
    # Scores hundreds apart: softmax gives the true position exactly 0 in float32 for some steps.
    model = small_model(3)
    with torch.no_grad():
        model.pointer.v.weight.mul_(1e4)
    x, target = sorting_batch(4, 6, torch.Generator().manual_seed(3))
    with torch.no_grad():
        p_true = model(x, target).gather(2, target.unsqueeze(-1))
    assert (
        p_true == 0
    ).any()  # log(softmax) would be -inf there; clamping it would zero the gradient
    loss = model.loss(x, target)
    assert torch.isfinite(loss) and loss > 10
    loss.backward()
    assert (
        torch.isfinite(model.pointer.v.weight.grad).all()
        and model.pointer.v.weight.grad.abs().sum() > 0
    )


# ---------------------------------------------------------------- training, saving


def test_training_is_reproducible_bit_for_bit():
    a, losses_a = train_sorter(hidden_dim=8, steps=15, batch_size=16, seed=5)
    b, losses_b = train_sorter(hidden_dim=8, steps=15, batch_size=16, seed=5)
    assert losses_a == losses_b
    for (name, p), q in zip(a.state_dict().items(), b.state_dict().values()):
        assert torch.equal(p, q), name
    assert not a.training


def test_training_lowers_the_loss():
    x, target = sorting_batch(256, 6, torch.Generator().manual_seed(77))
    untrained, _ = train_sorter(hidden_dim=16, steps=0, seed=0)
    trained, losses = train_sorter(
        hidden_dim=16, steps=200, batch_size=64, seed=0
    )
    assert len(losses) == 200
    with torch.no_grad():
        assert trained.loss(x, target) < 0.7 * untrained.loss(x, target)


def test_save_and_load_round_trip(tmp_path):
    model = small_model(7)
    path = tmp_path / "m.pt"
    save_sorter(model, path, {"note": "test"})
    loaded, info = load_sorter(path)
    assert (
        info == {"note": "test"}
        and loaded.hidden_dim == 8
        and not loaded.training
    )
    x = torch.rand(3, 6, generator=torch.Generator().manual_seed(0))
    assert torch.equal(loaded.decode(x), model.decode(x))


# ---------------------------------------------------------------- the pretrained sorter


@pytest.fixture(scope="module")
def sorter():
    start = time.perf_counter()
    model, info = pretrained_sorter(return_info=True)
    return model, info, time.perf_counter() - start


def test_pretrained_loads_fast_in_eval_mode(sorter):
    model, info, seconds = sorter
    assert seconds < 10
    assert (
        isinstance(model, PointerNetwork)
        and not model.training
        and model.hidden_dim == 64
    )
    assert {"recipe", "accuracy"} <= set(
        info
    ) and "seconds" not in info  # no timing: the file must be reproducible
    from attnbook.tasks.sorting import TRAINING_RECIPE
    from attnbook.train.sorter import weights_digest

    # The shipped weights are the ones the training script reported (same digest, same recipe).
    assert info["recipe"] == TRAINING_RECIPE and info[
        "digest"
    ] == weights_digest(model)


def test_pretrained_sorts_the_source_example(sorter):
    model = sorter[0]
    x = scale_to_unit(torch.tensor([[20.0, 5.0, 10.0]]))
    assert (model.decode(x) + 1).tolist() == [[1, 3, 2]]


# Measured on 4,000 sequences: 99.92 %, 99.70 %, 98.75 % (python -m attnbook.train.sorter). Thresholds sit below
# those values by more than the sampling error of 1,000 sequences.
@pytest.mark.parametrize("n, threshold", [(5, 0.99), (10, 0.985), (15, 0.965)])
def test_pretrained_accuracy(sorter, n, threshold):
    assert (
        sorting_accuracy(sorter[0], n, num_sequences=1000, seed=2024 + n)
        >= threshold
    )


# ---------------------------------------------------------------- scale_to_unit


def test_scale_to_unit_keeps_order_and_range():
    x = torch.tensor([[20.0, 5.0, 10.0], [3.0, 3.0, 3.0], [-1.0, 1e6, 0.0]])
    scaled = scale_to_unit(x)
    torch.testing.assert_close(
        scaled[0], torch.tensor([0.9, 0.1, 0.1 + 0.8 * 5 / 15])
    )
    torch.testing.assert_close(scaled[1], torch.full((3,), 0.5))
    for row, original in zip(scaled, x):
        if original.unique().numel() == original.numel():
            assert torch.equal(torch.argsort(row), torch.argsort(original))


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "x, error, message",
    [
        (torch.rand(5), ValueError, r"1-D tensor of shape \(5,\)"),
        (torch.rand(2, 3, 1), ValueError, r"3-D tensor of shape \(2, 3, 1\)"),
        (torch.rand(2, 0), ValueError, r"at least one number.*\(2, 0\)"),
        (
            torch.tensor([[1.0, float("nan")]]),
            ValueError,
            r"\(1, 2\) contains NaN",
        ),
        (torch.tensor([[1, 2]]), TypeError, "int64"),
        ([[0.1, 0.2]], TypeError, "list"),
    ],
)
def test_decode_bad_input(x, error, message):
    with pytest.raises(error, match=message):
        small_model().decode(x)


def test_forward_bad_target():
    model = small_model()
    x = torch.rand(2, 4)
    with pytest.raises(ValueError, match=r"shape of x \(2, 4\), got \(2, 3\)"):
        model(x, torch.zeros(2, 3, dtype=torch.long))
    with pytest.raises(ValueError, match=r"permutation of 0..3"):
        model(x, torch.tensor([[0, 1, 2, 2], [3, 2, 1, 0]]))
    with pytest.raises(TypeError, match="float32"):
        model(x, torch.zeros(2, 4))


def test_bad_hidden_dim_and_training_lengths():
    with pytest.raises(ValueError, match="hidden_dim.*0"):
        PointerNetwork(hidden_dim=0)
    with pytest.raises(ValueError, match="min_len=6, max_len=3"):
        train_sorter(steps=1, min_len=6, max_len=3)


# ---------------------------------------------------------------- the explorer's pure view


def test_pointer_view_default_is_the_source_example():
    from attnbook.widgets.pointer import pointer_view

    view = pointer_view()
    assert view["numbers"] == [20.0, 5.0, 10.0]
    assert view["order"] == [1, 3, 2] and view["positions"] == [0, 2, 1]
    assert view["sorted_numbers"] == [20.0, 10.0, 5.0] and view["correct"]
    weights = view["weights"]
    assert weights.shape == (3, 3)
    torch.testing.assert_close(weights.sum(-1), torch.ones(3))
    assert weights[1, 0] == 0 and weights[2, 0] == 0 and weights[2, 2] == 0
    assert torch.equal(weights.argmax(-1), torch.tensor([0, 2, 1]))


def test_pointer_view_uses_the_given_model_and_is_fast():
    from attnbook.widgets.pointer import plot_pointer, pointer_view

    model = pretrained_sorter()
    pointer_view("1 2 3", model=model)  # warm-up
    start = time.perf_counter()
    view = pointer_view("0.3; 9, -2 4.5 7 1 0", model=model)
    figure = plot_pointer(view)
    assert (
        time.perf_counter() - start < 1.0
    )  # generous on a shared machine; ~20 ms alone
    assert view["sorted_numbers"] == sorted(view["numbers"], reverse=True)
    import matplotlib.pyplot as plt

    plt.close(figure)


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "at least one number"),
        ("1, two, 3", "'two' is not a number"),
        ("1, inf", "'inf' is not a finite"),
        (" ,".join(["1"] * 31), "at most 30"),
    ],
)
def test_pointer_view_bad_text(text, message):
    from attnbook.widgets.pointer import pointer_view

    with pytest.raises(ValueError, match=message):
        pointer_view(text, model=small_model())


def test_plot_marks_the_positions_the_mask_hides_at_a_step():
    import matplotlib.pyplot as plt

    from attnbook.widgets.pointer import plot_pointer, pointer_view

    view = pointer_view("20, 5, 10")
    fig = plot_pointer(view, step=2)
    ax = fig.axes[0]
    xs, ys = ax.lines[0].get_data()  # the crosses
    # Before step 3 the pointer has chosen 20 (position 0) and 10 (position 2): both hidden.
    assert sorted(zip(xs, ys)) == [(0, 2), (2, 2)]
    assert (
        ax.patches[0].get_visible() and ax.patches[0].get_y() == 1.5
    )  # the frame round step 3
    assert ax.get_title() == "step 3: points at 2; masked: 1, 3"
    assert fig.get_suptitle() == "output 1, 3, 2  (sorted)"
    # Columns (positions, with the values) then rows (steps, with where they point), as plain text.
    assert [t.get_text() for t in ax.texts] == [
        "1 (20)",
        "2 (5)",
        "3 (10)",
        "1 → 1",
        "2 → 3",
        "3 → 2",
    ]
    plt.close(fig)


def test_update_moves_the_step_markers_and_redraws_all_only_for_new_numbers():
    import matplotlib.pyplot as plt

    from attnbook.widgets.pointer import (
        plot_pointer,
        pointer_view,
        update_pointer_figure,
    )

    view = pointer_view("20, 5, 10")
    fig = plot_pointer(view)  # no step: nothing marked
    ax = fig.axes[0]
    assert (
        not ax.patches[0].get_visible()
        and len(ax.lines[0].get_xdata()) == 0
        and ax.get_title() == ""
    )
    changed = update_pointer_figure(fig, view, step=1)
    assert (
        update_pointer_figure(fig, pointer_view("20, 5, 10"), step=0)
        == changed
    )  # same input: same artists
    assert changed == [ax.patches[0], ax.lines[0], ax.title]
    size = tuple(fig.get_size_inches())

    longer = pointer_view("3 1 4 1 5 9 2 6 5 3 5 8 9 7")
    changed_again = update_pointer_figure(fig, longer, step=13)
    # New frame and crosses: a live figure sees other artists and draws the whole figure again.
    assert (
        changed_again[0] is not changed[0]
        and changed_again[1] is not changed[1]
    )
    assert changed_again == [ax.patches[0], ax.lines[0], ax.title]
    assert (
        tuple(fig.get_size_inches()) != size and fig.axes[0] is ax
    )  # resized, same axes
    assert ax.images[0].get_array().shape == (14, 14)
    columns = [t.get_text() for t in ax.texts[:14]]
    assert columns == [
        str(i) for i in range(1, 15)
    ]  # more than 12 numbers: the positions only
    assert [t.get_text() for t in ax.texts[14:]] == [
        f"{m + 1} → {p}" for m, p in enumerate(longer["order"])
    ]
    assert (
        fig.get_suptitle()
        == "output "
        + ", ".join(map(str, longer["order"][:12]))
        + ", …  (sorted)"
    )
    xs, ys = ax.lines[0].get_data()
    assert sorted(xs) == sorted(longer["positions"][:13]) and set(ys) == {13}
    hidden = ", ".join(map(str, longer["order"][:10]))
    assert (
        ax.get_title()
        == f"step 14: points at {longer['order'][13]}; masked: {hidden}, … (13 in all)"
    )
    assert (
        update_pointer_figure(fig, longer, step=40)[2]
        .get_text()
        .startswith("step 14:")
    )  # clamped
    plt.close(fig)


def test_explorer_step_slider_counts_from_one_like_the_figure():
    from attnbook.widgets.pointer import (
        plot_pointer,
        pointer_explorer,
        pointer_view,
    )

    from _pixels import differing_pixels, drawn_in_full

    box = pointer_explorer("20, 5, 10")
    text, step = box.children[0].children
    assert (step.min, step.value) == (1, 1)
    first = box.children[1].outputs
    step.value = 3
    assert box.children[1].outputs != first
    for numbers, at in (
        ("9 1 7 3 5 2 8 4", 5),
        ("20, 5, 10", 2),
    ):  # new numbers redraw all; a step only its markers
        text.value = numbers
        step.value = at
        expected = drawn_in_full(
            plot_pointer, pointer_view(numbers), step=at - 1
        )
        other = drawn_in_full(plot_pointer, pointer_view(numbers), step=at % 3)
        # The same pixels as a full draw of a fresh figure, and a test that could fail.
        assert (
            differing_pixels(box.children[1].outputs[0], expected)
            == 0
            < differing_pixels(other, expected)
        )


def test_explorer_shows_bad_numbers_as_a_message_and_recovers():
    from attnbook.widgets.pointer import pointer_explorer

    box = pointer_explorer("20, 5, 10")
    text, step = box.children[0].children
    good = box.children[1].outputs[0]["data"]["image/png"]
    text.value = "1, two"
    assert (
        box.children[1].outputs[0]["data"]["text/plain"]
        == "<Figure size 400x80 with 1 Axes>"
    )
    step.value = 2  # still the message: the view rejects the text
    assert (
        box.children[1].outputs[0]["data"]["text/plain"]
        == "<Figure size 400x80 with 1 Axes>"
    )
    text.value = "20, 5, 10"
    step.value = 1
    assert box.children[1].outputs[0]["data"]["image/png"] == good


def test_saved_bytes_do_not_depend_on_the_file_name_or_on_how_the_model_was_made(
    tmp_path,
):
    """save_sorter writes the same bytes for the same weights and facts, so a retrained file
    can be compared with the shipped one by its SHA-256."""
    import hashlib

    from attnbook.tasks.sorting import load_sorter, save_sorter

    with torch.random.fork_rng():
        torch.manual_seed(0)
        model = PointerNetwork().eval()
    save_sorter(model, tmp_path / "a.pt", {"recipe": "test"})
    reloaded, info = load_sorter(tmp_path / "a.pt")
    save_sorter(reloaded, tmp_path / "other_name.pt", info)
    digest = [
        hashlib.sha256((tmp_path / name).read_bytes()).hexdigest()
        for name in ("a.pt", "other_name.pt")
    ]
    assert digest[0] == digest[1]


def test_pointer_targets_must_be_int64_positions():
    model = attnbook.pretrained_sorter()
    x = torch.tensor([[0.3, 0.1, 0.2]])
    target = torch.tensor([[0, 2, 1]], dtype=torch.int32)
    with pytest.raises(TypeError, match="int64"):
        model.loss(x, target)


def pointer():
    with _random.seeded(0):
        model = PointerNetwork(hidden_dim=8)
    x = torch.randn(2, 5, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        encoder_states, state = model.encode(x)
    fed = model.start.expand(2, 1, -1).detach()
    available = torch.ones(2, 5, dtype=torch.bool)
    return model, x, (fed, state, encoder_states, available)


@pytest.mark.parametrize(
    "x, error, match",
    [
        (None, TypeError, "x must be a torch.Tensor"),
        (torch.tensor(1.0), ValueError, "x must have shape"),
        (torch.randn(1, 2, 5), ValueError, "x must have shape"),
        (torch.randn(2, 0), ValueError, "x must hold at least one"),
        (torch.randn(2, 5).double(), TypeError, "x has dtype"),
        (torch.randint(0, 3, (2, 5)), TypeError, "x must be a floating"),
        (wide(torch.randn(2, 5)), ValueError, "x, a broadcast view"),
    ],
)
def test_pointer_encode_checks_x(x, error, match):
    model, _, _ = pointer()
    refused(lambda: model.encode(x), error, match, model.state_dict())


@pytest.mark.parametrize(
    "method", ["teacher_forced_scores", "forward", "loss"]
)
def test_pointer_methods_need_a_target(method):
    model, x, _ = pointer()
    refused(
        lambda: getattr(model, method)(x, None),
        TypeError,
        "target must be a torch.Tensor",
        x,
    )


@pytest.mark.parametrize(
    "position, value, error, match",
    [
        (0, None, TypeError, "fed must be a torch.Tensor"),
        (0, torch.randn(16), ValueError, r"fed must have shape \(2, 1, 8\)"),
        (0, torch.randn(2, 1, 8).double(), TypeError, "fed has dtype"),
        (0, torch.zeros(2, 1, 8, dtype=torch.long), TypeError, "fed must"),
        (0, wide(torch.randn(2, 1, 8)), ValueError, "fed, a broadcast"),
        (1, [], TypeError, "state must be the decoder LSTM's pair"),
        (1, (None, None), TypeError, r"state\[0\] must be a torch.Tensor"),
        (2, None, TypeError, "encoder_states must be a torch.Tensor"),
        (2, torch.randn(2, 5, 3), ValueError, "encoder_states must have"),
        (3, None, TypeError, "available must be a torch.Tensor"),
        (3, torch.ones(2, 5), TypeError, "available must be a boolean"),
        (3, torch.ones(2), ValueError, r"available must have shape \(2, 5\)"),
        (3, torch.zeros(2, 5, dtype=torch.bool), ValueError, "at least one"),
    ],
)
def test_pointer_step_checks_every_argument(position, value, error, match):
    model, _, args = pointer()
    args = list(args)
    args[position] = value
    owned = [a for a in args if isinstance(a, torch.Tensor)]
    refused(lambda: model.pointer_step(*args), error, match, *owned)


def test_pointer_step_still_gives_the_same_answer():
    model, x, (fed, state, keys, available) = pointer()
    choice, weights, _ = model.pointer_step(fed, state, keys, available)
    decoder_state, _ = model.decoder(fed, state)
    scores = model.pointer_scores(decoder_state, keys)
    assert torch.equal(weights, scores.softmax(-1))
    assert torch.equal(choice, weights.squeeze(1).argmax(-1))


@pytest.mark.parametrize(
    "target, error, match",
    [
        (torch.randn(2, 5), TypeError, "target must hold int64"),
        (torch.zeros(2, 5, dtype=torch.bool), TypeError, "int64"),
        (torch.tensor([0, 1, 2]), ValueError, r"target must have \(B, n\)"),
        (torch.tensor([[0, 0, 1]]), ValueError, "permutation of 0..2"),
    ],
)
def test_not_chosen_mask_checks_the_target(target, error, match):
    refused(lambda: not_chosen_mask(target), error, match, target)


def _refused_fast(call, match):
    start = time.perf_counter()
    with pytest.raises(ValueError, match=match):
        call()
    assert time.perf_counter() - start < 5


def test_a_pointer_network_refuses_a_million_rows_before_decoding():
    torch.manual_seed(0)
    network = PointerNetwork(8)
    many = torch.rand(1, 5).expand(10**6, 5)
    _refused_fast(
        lambda: network.decode(many),
        r"x of shape \(1000000, 5\): a pointer network computes",
    )
    assert network.decode(torch.rand(3, 5)).shape == (3, 5)


@pytest.mark.parametrize(
    "module, input_dim, hidden_dim, match",
    [
        (None, 1, 8, "module must be a torch.nn.Module"),
        ("m", 2.5, 8, "input_dim must be a positive int"),
        ("m", 1, None, "hidden_dim must be a positive int"),
        ("m", 1, 10**12, "the weights of the pointer layers"),
    ],
)
def test_add_pointer_layers_names_bad_sizes(
    module, input_dim, hidden_dim, match
):
    from attnbook.nn.pointer import add_pointer_layers

    module = torch.nn.Module() if module == "m" else module
    state = torch.get_rng_state()
    with pytest.raises((TypeError, ValueError), match=match):
        add_pointer_layers(module, input_dim, hidden_dim)
    assert torch.equal(torch.get_rng_state(), state)


def test_the_checks_are_first_line_calls_not_a_decorator():
    # teacher_forced_scores and pointer_step are the plain methods the
    # chapter prints, each checking its inputs on its first line.
    import inspect

    for method in (
        PointerNetwork.teacher_forced_scores,
        PointerNetwork.pointer_step,
    ):
        assert not hasattr(method, "__wrapped__")
        body = inspect.getsource(method).split('"""')[2].strip()
        assert body.startswith("check_pointer_inputs(") or body.startswith(
            "_check_step("
        )
    model = PointerNetwork(hidden_dim=4)
    x = torch.rand(2, 3)
    with pytest.raises(ValueError, match="permutation"):
        model.teacher_forced_scores(x, torch.zeros(2, 3, dtype=torch.long))
    with pytest.raises(TypeError, match="available"):
        model.pointer_step(
            model.start.expand(2, 1, -1),
            (torch.zeros(1, 2, 4), torch.zeros(1, 2, 4)),
            torch.zeros(2, 3, 4),
            torch.ones(2, 3),
        )

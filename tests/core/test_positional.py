"""Tests for attnbook.core.positional and the chapter-8 explorer.

Every expected value comes from the formula itself, evaluated element by element
with math.sin / math.cos, never from the vectorised code under test.
"""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import attnbook
from attnbook.core.errata import (
    Source002PositionalEncoding,
    source_002_encoding,
)
from attnbook.core.positional import (
    LearnedPositionalEmbedding,
    PositionalEncoding,
    pair_frequencies,
    position_shift_matrix,
    sinusoidal_encoding,
)
from attnbook.widgets.positional import (
    plot_positional,
    positional_explorer,
    positional_view,
    update_positional_figure,
)

from _refusals import refused

FAST = settings(max_examples=40, deadline=None)


def direct_encoding(num_positions, dim, base=10000.0, first=0):
    """P[pos, 2i] = sin(pos / base^(2i/dim)), P[pos, 2i+1] = cos(pos / base^(2i/dim)), one entry at a time."""
    rows = []
    for pos in range(first, first + num_positions):
        row = []
        for column in range(dim):
            pair = column // 2
            angle = pos / base ** (2 * pair / dim)
            row.append(math.sin(angle) if column % 2 == 0 else math.cos(angle))
        rows.append(row)
    return torch.tensor(rows, dtype=torch.float64).reshape(num_positions, dim)


def direct_shift_matrix(delta, dim, base=10000.0):
    """The block-diagonal rotation [[cos dw, sin dw], [-sin dw, cos dw]] per column pair, entry by entry."""
    matrix = [[0.0] * dim for _ in range(dim)]
    for pair in range(dim // 2):
        angle = delta / base ** (2 * pair / dim)
        a, b = 2 * pair, 2 * pair + 1
        matrix[a][a], matrix[a][b] = math.cos(angle), math.sin(angle)
        matrix[b][a], matrix[b][b] = -math.sin(angle), math.cos(angle)
    return torch.tensor(matrix, dtype=torch.float64)


# ---------------------------------------------------------------- sinusoidal_encoding


@pytest.mark.parametrize(
    "num_positions, dim, base",
    [
        (3, 4, 10000.0),
        (50, 16, 10000.0),
        (20, 6, 100.0),
        (7, 5, 10000.0),
        (4, 1, 10.0),
    ],
)
def test_sinusoidal_encoding_matches_the_formula(num_positions, dim, base):
    encoding = sinusoidal_encoding(num_positions, dim, base)
    assert encoding.shape == (num_positions, dim)
    assert encoding.dtype == torch.float32
    torch.testing.assert_close(
        encoding.double(),
        direct_encoding(num_positions, dim, base),
        atol=1e-6,
        rtol=0,
    )


def test_worked_example_i_am_good():
    """'I am good.' with d = 4: the correct values of the book's list of worked examples (erratum 7)."""
    expected = torch.tensor(
        [
            [0, 1, 0, 1],
            [0.841, 0.540, 0.010, 1.000],
            [0.909, -0.416, 0.020, 1.000],
        ]
    )
    encoding = sinusoidal_encoding(3, 4)
    torch.testing.assert_close(encoding, expected, atol=5e-4, rtol=0)
    # cos(1/100) and cos(1/50) round to 1.000, not to the source's 0.99
    assert (
        round(encoding[1, 3].item(), 3) == 1.0
        and round(encoding[2, 3].item(), 3) == 1.0
    )


@FAST
@given(
    num_positions=st.integers(0, 30),
    dim=st.integers(1, 24),
    base=st.floats(2.0, 1e5),
)
def test_sinusoidal_encoding_any_dim_property(num_positions, dim, base):
    """Odd dims work too: even columns stay sin(pos / base^(2i/dim)), the last column of an odd dim is a sine."""
    encoding = sinusoidal_encoding(num_positions, dim, base)
    torch.testing.assert_close(
        encoding.double(),
        direct_encoding(num_positions, dim, base),
        atol=2e-6,
        rtol=0,
    )


def test_sinusoidal_encoding_zero_positions():
    assert sinusoidal_encoding(0, 8).shape == (0, 8)


def test_pair_frequencies_match_the_formula():
    for dim, base in ((8, 10000.0), (5, 10.0)):
        expected = torch.tensor(
            [base ** (-2 * i / dim) for i in range((dim + 1) // 2)],
            dtype=torch.float64,
        )
        torch.testing.assert_close(pair_frequencies(dim, base), expected)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (
            dict(num_positions=-1, dim=4),
            ValueError,
            "num_positions must be a non-negative int, got -1",
        ),
        (
            dict(num_positions=2.5, dim=4),
            ValueError,
            "num_positions .* got 2.5",
        ),
        (
            dict(num_positions=3, dim=0),
            ValueError,
            "dim must be a positive int, got 0",
        ),
        (
            dict(num_positions=3, dim=4.0),
            ValueError,
            "dim must be a positive int, got 4.0",
        ),
        (
            dict(num_positions=3, dim=4, base=0.0),
            ValueError,
            "base must be a positive finite number, got 0.0",
        ),
        (
            dict(num_positions=3, dim=4, base=-5.0),
            ValueError,
            "base .* got -5.0",
        ),
        (
            dict(num_positions=3, dim=4, base=float("inf")),
            ValueError,
            "base .* got inf",
        ),
        (
            dict(num_positions=3, dim=4, base="10000"),
            TypeError,
            "base must be a number, got str",
        ),
    ],
)
def test_sinusoidal_encoding_bad_input(kwargs, error, match):
    with pytest.raises(error, match=match):
        sinusoidal_encoding(**kwargs)


# ---------------------------------------------------------------- position_shift_matrix


@pytest.mark.parametrize(
    "delta, dim, base",
    [(1, 4, 10000.0), (5, 16, 10000.0), (-3, 8, 100.0), (2.5, 6, 10000.0)],
)
def test_position_shift_matrix_matches_the_formula(delta, dim, base):
    matrix = position_shift_matrix(delta, dim, base)
    assert matrix.shape == (dim, dim)
    torch.testing.assert_close(
        matrix.double(),
        direct_shift_matrix(delta, dim, base),
        atol=1e-7,
        rtol=0,
    )


@FAST
@given(
    position=st.integers(0, 500),
    delta=st.integers(-200, 200),
    half_dim=st.integers(1, 16),
    base=st.sampled_from([10.0, 100.0, 10000.0]),
)
def test_shift_matrix_maps_position_i_to_i_plus_delta(
    position, delta, half_dim, base
):
    """R(delta) @ P[i] = P[i + delta] for random i, delta and even dim, with P from the direct formula."""
    dim = 2 * half_dim
    matrix = position_shift_matrix(delta, dim, base)
    source = direct_encoding(1, dim, base, first=position)[0]
    target = direct_encoding(1, dim, base, first=position + delta)[0]
    torch.testing.assert_close(
        matrix.double() @ source, target, atol=1e-5, rtol=0
    )


def test_one_shift_matrix_serves_every_position():
    """The same R(delta) works for all i at once: R @ P[:n]^T = P[delta:delta+n]^T."""
    encoding = sinusoidal_encoding(120, 32)
    for delta in (1, 7, 19):
        shifted = encoding[:100] @ position_shift_matrix(delta, 32).T
        torch.testing.assert_close(
            shifted, encoding[delta : delta + 100], atol=1e-5, rtol=0
        )


@FAST
@given(
    a=st.integers(-50, 50), b=st.integers(-50, 50), half_dim=st.integers(1, 8)
)
def test_shift_matrices_compose_and_are_orthogonal(a, b, half_dim):
    dim = 2 * half_dim
    m_a, m_b = (
        position_shift_matrix(a, dim).double(),
        position_shift_matrix(b, dim).double(),
    )
    torch.testing.assert_close(
        m_a @ m_b,
        position_shift_matrix(a + b, dim).double(),
        atol=1e-6,
        rtol=0,
    )
    torch.testing.assert_close(
        m_a @ m_a.T, torch.eye(dim, dtype=torch.float64), atol=1e-6, rtol=0
    )


def test_position_shift_matrix_bad_input():
    with pytest.raises(ValueError, match="needs an even dim, got 5"):
        position_shift_matrix(1, 5)
    with pytest.raises(ValueError, match="dim must be a positive int, got 0"):
        position_shift_matrix(1, 0)
    with pytest.raises(TypeError, match="delta must be a number, got str"):
        position_shift_matrix("1", 4)
    with pytest.raises(
        ValueError, match="base must be a positive finite number, got -1"
    ):
        position_shift_matrix(1, 4, base=-1)


# ---------------------------------------------------------------- PositionalEncoding


@FAST
@given(
    batch=st.integers(1, 3),
    n=st.integers(1, 12),
    half_dim=st.integers(1, 6),
    seed=st.integers(0, 2**16),
)
def test_positional_encoding_adds_p_without_dropout(batch, n, half_dim, seed):
    dim = 2 * half_dim
    x = torch.randn(
        batch, n, dim, generator=torch.Generator().manual_seed(seed)
    )
    layer = PositionalEncoding(dim, max_len=16, dropout=0.0).train()
    expected = x.double() + direct_encoding(n, dim)
    torch.testing.assert_close(layer(x).double(), expected, atol=1e-6, rtol=0)


def test_positional_encoding_odd_dim_and_unbatched_input():
    x = torch.zeros(6, 7)
    torch.testing.assert_close(
        PositionalEncoding(7, max_len=10)(x).double(),
        direct_encoding(6, 7),
        atol=1e-6,
        rtol=0,
    )


def test_positional_encoding_has_no_parameters_and_follows_the_input_dtype():
    layer = PositionalEncoding(8, max_len=32)
    assert sum(p.numel() for p in layer.parameters()) == 0
    assert "encoding" not in layer.state_dict()
    out = layer(torch.zeros(2, 5, 8, dtype=torch.float64))
    assert out.dtype == torch.float64


@FAST
@given(p=st.sampled_from([0.1, 0.5, 0.9]), seed=st.integers(0, 2**16))
def test_positional_encoding_dropout_in_train_mode_only(p, seed):
    torch.manual_seed(seed)
    x = torch.randn(4, 16, 8, generator=torch.Generator().manual_seed(seed))
    layer = PositionalEncoding(8, max_len=16, dropout=p)
    clean = x + sinusoidal_encoding(16, 8)

    layer.eval()
    torch.testing.assert_close(layer(x), clean)

    layer.train()
    out = layer(x)
    dropped = out == 0
    assert (
        dropped.any() and not dropped.all()
    )  # 512 entries: all-or-nothing has probability < 1e-23
    # the survivors are scaled by 1 / (1 - p), as in nn.Dropout
    torch.testing.assert_close(out[~dropped], clean[~dropped] / (1 - p))


def test_positional_encoding_bad_input():
    layer = PositionalEncoding(8, max_len=10)
    with pytest.raises(
        ValueError, match="sequence length 11 exceeds max_len 10"
    ):
        layer(torch.zeros(2, 11, 8))
    with pytest.raises(ValueError, match="x has 6, dim has 8"):
        layer(torch.zeros(2, 5, 6))
    with pytest.raises(
        TypeError, match="floating-point tensor, got dtype torch.int64"
    ):
        layer(torch.zeros(2, 5, 8, dtype=torch.long))
    with pytest.raises(
        ValueError, match=r"shape \(\.\.\., n, dim\), got \(8,\)"
    ):
        layer(torch.zeros(8))
    with pytest.raises(
        ValueError, match="max_len must be a positive int, got 0"
    ):
        PositionalEncoding(8, max_len=0)


# ---------------------------------------------------------------- LearnedPositionalEmbedding


def test_learned_embedding_adds_its_rows_like_nn_embedding():
    torch.manual_seed(0)
    layer = LearnedPositionalEmbedding(max_len=12, dim=6)
    x = torch.randn(3, 9, 6, generator=torch.Generator().manual_seed(1))
    lookup = torch.nn.functional.embedding(
        torch.arange(9), layer.embedding.weight
    )
    torch.testing.assert_close(layer(x), x + lookup)
    assert (
        sum(p.numel() for p in layer.parameters() if p.requires_grad) == 12 * 6
    )


def test_learned_embedding_has_gradients_for_used_rows_only():
    layer = LearnedPositionalEmbedding(max_len=10, dim=4)
    x = torch.randn(
        3, 7, 4, generator=torch.Generator().manual_seed(2), requires_grad=True
    )
    layer(x).sum().backward()
    grad = layer.embedding.weight.grad
    # d(sum)/dE[pos] = batch size for every used position, 0 for positions never seen
    torch.testing.assert_close(grad[:7], torch.full((7, 4), 3.0))
    torch.testing.assert_close(grad[7:], torch.zeros(3, 4))
    torch.testing.assert_close(x.grad, torch.ones(3, 7, 4))


def test_learned_embedding_bad_input():
    layer = LearnedPositionalEmbedding(max_len=4, dim=3)
    with pytest.raises(
        ValueError, match="sequence length 5 exceeds max_len 4"
    ):
        layer(torch.zeros(1, 5, 3))
    with pytest.raises(ValueError, match="x has 2, dim has 3"):
        layer(torch.zeros(1, 4, 2))
    with pytest.raises(
        ValueError, match="max_len must be a positive int, got -2"
    ):
        LearnedPositionalEmbedding(-2, 3)
    with pytest.raises(ValueError, match="dim must be a positive int, got 0"):
        LearnedPositionalEmbedding(4, 0)


# ---------------------------------------------------------------- the explorer's pure view


def test_positional_view_numbers():
    view = positional_view(
        position=10, delta=5, dim=16, base=10000.0, num_positions=64
    )
    full = direct_encoding(64, 16)
    torch.testing.assert_close(
        view["encoding"].double(), full, atol=1e-6, rtol=0
    )
    torch.testing.assert_close(
        view["p_position"].double(), full[10], atol=1e-6, rtol=0
    )
    torch.testing.assert_close(
        view["p_target"].double(), full[15], atol=1e-6, rtol=0
    )
    torch.testing.assert_close(
        view["shift_matrix"].double(),
        direct_shift_matrix(5, 16),
        atol=1e-7,
        rtol=0,
    )
    torch.testing.assert_close(
        view["p_shifted"].double(), full[15], atol=1e-5, rtol=0
    )
    assert view["max_error"] < 1e-5


def test_positional_view_negative_delta_and_bad_positions():
    view = positional_view(position=20, delta=-20, dim=4, base=100.0)
    torch.testing.assert_close(
        view["p_target"].double(),
        direct_encoding(1, 4, 100.0)[0],
        atol=1e-6,
        rtol=0,
    )
    assert view["max_error"] < 1e-5
    with pytest.raises(
        ValueError, match=r"position \+ delta = -1 is outside 0 \.\. 63"
    ):
        positional_view(position=3, delta=-4)
    # Either wording names the value and the allowed range (the view's own check, or the shared range check).
    with pytest.raises(
        ValueError,
        match=r"position (= 64 is outside 0 \.\. 63|must be in \[0, 63\], got 64)",
    ):
        positional_view(position=64, delta=0)
    with pytest.raises(
        ValueError, match=r"(needs an even dim|dim must be even).*got 5"
    ):
        positional_view(dim=5)


def test_plot_positional_returns_a_figure():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plot_positional(positional_view())
    assert len(fig.axes) == 3
    plt.close(fig)


def _assert_figure_shows(fig, view):
    """Every part of a ``plot_positional`` figure that follows the controls shows ``view``."""
    left, middle, right = fig.axes
    dim, i, target = (
        view["dim"],
        view["position"],
        view["position"] + view["delta"],
    )
    heat_map = left.images[0]
    assert torch.equal(torch.as_tensor(heat_map.get_array()), view["encoding"])
    assert heat_map.get_extent() == [
        -0.5,
        dim - 0.5,
        63.5,
        -0.5,
    ]  # one cell per column, filling the panel
    for axes in (left, middle):
        assert axes.get_xlim() == (-0.5, dim - 0.5)
        assert list(axes.get_xticks()) == [0, dim - 1]
    assert [list(line.get_ydata()) for line in left.lines] == [
        [i, i],
        [target, target],
    ]
    for line, key in zip(
        middle.lines, ("p_position", "p_target", "p_shifted")
    ):
        assert list(line.get_xdata()) == list(range(dim))
        assert torch.equal(torch.as_tensor(line.get_ydata()), view[key])
    assert torch.equal(
        torch.as_tensor(right.images[0].get_array()), view["shift_matrix"]
    )
    assert left.get_title() == f"P  (d_model = {dim}, base = {view['base']:g})"
    assert middle.get_title().startswith(f"i = {i}, i + δ = {target}: ")
    assert right.get_title() == f"shift matrix R(δ = {view['delta']})"


def test_update_positional_figure_shows_the_new_view_on_the_same_artists():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plot_positional(positional_view(position=10, delta=5, dim=16))
    _assert_figure_shows(fig, positional_view(position=10, delta=5, dim=16))
    fixed = [
        fig.axes[0].get_ylim(),
        fig.axes[1].get_ylim(),
        fig.axes[2].get_xlim(),
        fig.axes[2].get_ylim(),
    ]
    view = positional_view(position=60, delta=-58, dim=4, base=10.0)
    changed = update_positional_figure(fig, view)
    _assert_figure_shows(fig, view)
    assert [
        fig.axes[0].get_ylim(),
        fig.axes[1].get_ylim(),
        fig.axes[2].get_xlim(),
        fig.axes[2].get_ylim(),
    ] == fixed
    again = update_positional_figure(
        fig, positional_view(position=0, delta=63, dim=64, base=1e5)
    )
    assert [id(artist) for artist in again] == [
        id(artist) for artist in changed
    ]  # same list: blitting stays on
    assert (
        fig.axes[0].xaxis in changed and fig.axes[1].xaxis in changed
    )  # d changes the column axes
    assert all(axes not in changed for axes in fig.axes)  # never a whole Axes
    plt.close(fig)


def test_explorer_keeps_the_offset_valid_before_redrawing():
    """Moving i narrows the offset slider first, so the figure never sees i + delta outside P."""
    box = positional_explorer(position=10, delta=5, dim=16, base=10000.0)
    position, delta, dim, base = box.children[0].children
    output = box.children[1]
    fig = box.live_figure.figure
    shown = []  # every output the explorer displays, also those replaced within one move
    output.observe(lambda change: shown.extend(change["new"]), names="outputs")
    position.value = 63
    assert (delta.min, delta.max, delta.value) == (-63, 0, 0)
    assert shown and all(
        out["data"]["text/plain"].endswith("with 3 Axes>") for out in shown
    )  # never an error message
    _assert_figure_shows(fig, positional_view(position=63, delta=0))
    dim.value, base.value, delta.value = 8, 100.0, -40
    _assert_figure_shows(
        fig, positional_view(position=63, delta=-40, dim=8, base=100.0)
    )
    position.value = 0
    assert (delta.min, delta.max, delta.value) == (0, 63, 0)
    _assert_figure_shows(
        fig, positional_view(position=0, delta=0, dim=8, base=100.0)
    )


def test_explorer_clamps_a_starting_offset_outside_the_heat_map():
    box = positional_explorer(position=60, delta=5)
    assert box.children[0].children[1].value == 3
    _assert_figure_shows(
        box.live_figure.figure, positional_view(position=60, delta=3)
    )


# ---------------------------------------------------------------- erratum 2: source 002's class, reproduced


def test_source_002_encoding_multiplies_the_position_and_unpairs_the_cosines():
    """Column 2i = sin(pos * 10000^(2i/d)), column 2i+1 = cos(pos * 10000^((2i+1)/d)), entry by entry."""
    for num_positions, dim in ((4, 4), (3, 8), (3, 5)):
        expected = torch.tensor(
            [
                [
                    math.sin(pos * 10000 ** (c / dim))
                    if c % 2 == 0
                    else math.cos(pos * 10000 ** (c / dim))
                    for c in range(dim)
                ]
                for pos in range(num_positions)
            ],
            dtype=torch.float64,
        )
        encoding = source_002_encoding(num_positions, dim)
        assert encoding.dtype == torch.float32
        # float32 angles up to 3 * 10000^(7/8): the source's own rounding, a few 1e-4 at most
        torch.testing.assert_close(
            encoding.double(), expected, atol=2e-3, rtol=0
        )
    # d = 4: the four columns turn at 1, 10, 100 and 1000 radians per position
    row = source_002_encoding(2, 4)[1].double()
    torch.testing.assert_close(
        row,
        torch.tensor(
            [math.sin(1), math.cos(10), math.sin(100), math.cos(1000)],
            dtype=torch.float64,
        ),
        atol=1e-4,
        rtol=0,
    )


def test_source_002_neighbours_are_not_alike():
    """p0 . p1 / (d/2) at d = 16: about 0.34 for the source's class, 0.94 for the correct encoding."""
    source, correct = source_002_encoding(2, 16), sinusoidal_encoding(2, 16)
    # p0 = (0, 1, 0, 1, ...) in both, so p0 . p1 is the sum of the cosine columns of p1
    source_expected = (
        sum(math.cos(10000 ** ((2 * i + 1) / 16)) for i in range(8)) / 8
    )
    assert (
        abs((source[0] @ source[1]).item() / 8 - source_expected) < 1e-3
        and abs(source_expected - 0.336) < 1e-3
    )
    expected = sum(math.cos(1 / 10000 ** (2 * i / 16)) for i in range(8)) / 8
    assert (
        abs((correct[0] @ correct[1]).item() / 8 - expected) < 1e-6
        and abs(expected - 0.9356) < 1e-4
    )


def test_source_002_module_never_applies_its_dropout_and_slices_by_the_first_axis():
    layer = Source002PositionalEncoding(8, dropout=0.5, max_len=16).train()
    x = torch.randn(
        5, 2, 8, generator=torch.Generator().manual_seed(0)
    )  # (seq, batch, dim), as the source expects
    torch.manual_seed(0)
    expected = x + source_002_encoding(5, 8)[:, None, :]
    assert torch.equal(
        layer(x), expected
    )  # train mode with p = 0.5, and not one entry dropped
    batch_first = torch.zeros(
        2, 5, 8
    )  # (batch, seq, dim): slices the encoding by the batch size
    out = layer(batch_first)
    assert torch.equal(out[1], source_002_encoding(2, 8)[1].expand(5, 8))


@pytest.mark.parametrize("seq_dim", [1.0, True, 5, 10**400, None])
def test_check_sequence_names_a_seq_dim_that_is_no_axis(seq_dim):
    from attnbook.core.positional import check_sequence

    with pytest.raises(ValueError, match="seq_dim must be an axis of x"):
        check_sequence(torch.randn(2, 5, 8), 8, 16, seq_dim)


@pytest.mark.parametrize("delta", [float("nan"), float("inf"), float("-inf")])
def test_position_shift_matrix_rejects_non_finite_delta(delta):
    with pytest.raises(ValueError, match="delta must be a finite number"):
        position_shift_matrix(delta, 4)


@pytest.mark.parametrize(
    "call",
    [
        lambda: attnbook.sinusoidal_encoding(10**9, 64),
        lambda: attnbook.PositionalEncoding(64, max_len=10**9),
        lambda: attnbook.position_shift_matrix(1, 10**6),
    ],
    ids=["sinusoidal", "PositionalEncoding", "shift_matrix"],
)
def test_position_tables_beyond_the_limit_are_refused(call):
    with pytest.raises(ValueError, match="GiB"):
        call()


def test_a_base_that_makes_nan_frequencies_is_refused():
    with pytest.raises(ValueError, match="base"):
        attnbook.sinusoidal_encoding(8, 64, base=5e-324)


def test_position_shift_matrix_refuses_a_delta_beyond_every_float():
    refused(lambda: position_shift_matrix(10**400, 8), ValueError, "delta", 0)


@pytest.mark.parametrize("sizes", [(10**12, 8), (8, 10**12)])
def test_learned_positions_too_large_are_refused_before_drawing(sizes):
    refused(
        lambda: LearnedPositionalEmbedding(*sizes),
        ValueError,
        "the weights of LearnedPositionalEmbedding",
    )

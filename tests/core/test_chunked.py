"""chunked_attention and StreamingAttention against attention, PyTorch's SDPA and direct formulas."""

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import attnbook
from attnbook import attention, chunked_attention  # noqa: E402
from attnbook.core.chunked import StreamingAttention  # noqa: E402
from attnbook.measure.memory import score_matrix_bytes  # noqa: E402
from attnbook.widgets.chunked import (  # noqa: E402
    CHUNK_SIZES,
    LENGTHS,
    chunked_explorer,
    chunked_view,
    plot_chunked,
    update_chunked_figure,
)

from _tensors import qkv, seeded_randn

TOLERANCE = {torch.float64: 1e-12, torch.float32: 1e-5}


def randn(*shape, seed=0, dtype=torch.float64, scale=1.0):
    return (
        torch.randn(
            *shape, generator=torch.Generator().manual_seed(seed), dtype=dtype
        )
        * scale
    )


def random_mask(*shape, seed=0, keep=0.6):
    return (
        torch.rand(*shape, generator=torch.Generator().manual_seed(seed))
        < keep
    )


def direct_attention(q, k, v, mask=None):
    """softmax(q k^T / sqrt(d)) v written out with exp and sums, in float64; zero rows where all is masked."""
    q, k, v = q.double(), k.double(), v.double()
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    keep = (
        torch.ones_like(scores, dtype=torch.bool)
        if mask is None
        else mask.expand_as(scores)
    )
    shifted = torch.where(keep, scores, torch.full_like(scores, -1e300))
    exps = torch.exp(shifted - shifted.amax(dim=-1, keepdim=True)) * keep
    totals = exps.sum(dim=-1, keepdim=True)
    return (
        exps / torch.where(totals > 0, totals, torch.ones_like(totals))
    ) @ v


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("chunk_size", [1, 3, 16, 64, 1000])
def test_equals_attention_with_random_shapes_and_masks(dtype, chunk_size):
    q, k, v = (
        randn(2, 3, 17, 8, seed=1, dtype=dtype),
        randn(2, 3, 45, 8, seed=2, dtype=dtype),
        randn(2, 3, 45, 5, seed=3, dtype=dtype),
    )
    mask = random_mask(2, 3, 17, 45, seed=4)
    expected = attention(q, k, v, mask=mask)[0]
    got = chunked_attention(q, k, v, mask=mask, chunk_size=chunk_size)
    assert got.shape == (2, 3, 17, 5) and got.dtype == dtype
    torch.testing.assert_close(got, expected, atol=TOLERANCE[dtype], rtol=0)
    torch.testing.assert_close(
        got.double(),
        direct_attention(q, k, v, mask),
        atol=TOLERANCE[dtype],
        rtol=0,
    )


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_fully_masked_rows_and_blocks(dtype):
    q, k, v = (
        randn(4, 12, 6, seed=5, dtype=dtype),
        randn(4, 40, 6, seed=6, dtype=dtype),
        randn(4, 40, 3, seed=7, dtype=dtype),
    )
    mask = random_mask(4, 12, 40, seed=8)
    mask[:, 2] = False  # a fully masked query row
    mask[..., 8:24] = (
        False  # two whole blocks of 8 keys masked for every query
    )
    mask[1, :, :8] = (
        False  # in batch 1 the *first* block is masked too: the max starts at `lowest`
    )
    got = chunked_attention(q, k, v, mask=mask, chunk_size=8)
    assert torch.equal(got[:, 2], torch.zeros(4, 3, dtype=dtype))
    torch.testing.assert_close(
        got, attention(q, k, v, mask=mask)[0], atol=TOLERANCE[dtype], rtol=0
    )
    everything_masked = torch.zeros(4, 12, 40, dtype=torch.bool)
    assert torch.equal(
        chunked_attention(q, k, v, mask=everything_masked, chunk_size=8),
        torch.zeros(4, 12, 3, dtype=dtype),
    )


def test_equals_torch_scaled_dot_product_attention():
    q, k, v = (
        randn(3, 2, 20, 16, seed=9),
        randn(3, 2, 50, 16, seed=10),
        randn(3, 2, 50, 7, seed=11),
    )
    mask = random_mask(3, 2, 20, 50, seed=12)
    mask[0, 1, 4] = (
        False  # a fully masked row: zeros from both (older torch releases gave NaN here)
    )
    torch.testing.assert_close(
        chunked_attention(q, k, v, mask=mask, chunk_size=12),
        F.scaled_dot_product_attention(q, k, v, attn_mask=mask),
    )
    torch.testing.assert_close(
        chunked_attention(q, k, v, chunk_size=7),
        F.scaled_dot_product_attention(q, k, v),
    )


def test_causal_mask_matches_sdpa_is_causal():
    q, k, v = (
        randn(2, 30, 8, seed=13),
        randn(2, 30, 8, seed=14),
        randn(2, 30, 8, seed=15),
    )
    causal = torch.ones(30, 30, dtype=torch.bool).tril()
    torch.testing.assert_close(
        chunked_attention(q, k, v, mask=causal, chunk_size=4),
        F.scaled_dot_product_attention(q, k, v, is_causal=True),
    )


def test_broadcast_masks_and_batches():
    q, k, v = (
        randn(5, 4, seed=16),
        randn(3, 9, 4, seed=17),
        randn(3, 9, 2, seed=18),
    )
    key_mask = random_mask(
        3, 1, 9, seed=19
    )  # a key-padding mask: one row per batch, broadcast over queries
    for mask in (None, key_mask, random_mask(9, seed=20), torch.tensor(True)):
        torch.testing.assert_close(
            chunked_attention(q, k, v, mask=mask, chunk_size=4),
            attention(q, k, v, mask=mask)[0],
        )


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_is_finite_and_close(dtype):
    q, k, v = (
        randn(2, 10, 8, seed=21, scale=4.0),
        randn(2, 64, 8, seed=22, scale=4.0),
        randn(2, 64, 4, seed=23),
    )
    mask = random_mask(2, 10, 64, seed=24)
    mask[0, 3] = False
    mask[..., :16] = (
        False  # the first block is masked everywhere: the running max stays at `lowest` for a while
    )
    got = chunked_attention(
        q.to(dtype), k.to(dtype), v.to(dtype), mask=mask, chunk_size=16
    )
    assert got.dtype == dtype and torch.isfinite(got).all()
    assert torch.equal(got[0, 3], torch.zeros(4, dtype=dtype))
    torch.testing.assert_close(
        got.double(), direct_attention(q, k, v, mask), atol=0.05, rtol=0.05
    )


def test_extreme_scores_do_not_overflow():
    q = torch.tensor([[1.0, 0.0]], dtype=torch.float16) * 200
    k = (
        torch.tensor(
            [[1.0, 0.0], [-1.0, 0.0], [0.5, 0.0]], dtype=torch.float16
        )
        * 200
    )
    v = torch.tensor([[1.0], [2.0], [3.0]], dtype=torch.float16)
    # Scores of +-28,284 in float16: exp() of them overflows, exp(score - max) does not.
    got = chunked_attention(q, k, v, chunk_size=1)
    assert got.item() == 1.0


def test_gradients_match_attention():
    q, k, v = (
        randn(2, n, 4, seed=s).requires_grad_()
        for n, s in ((5, 25), (9, 26), (9, 27))
    )
    mask = random_mask(2, 5, 9, seed=28)
    mask[0, 1] = False
    mask[..., 3:6] = False
    assert torch.autograd.gradcheck(
        lambda q, k, v: chunked_attention(q, k, v, mask=mask, chunk_size=3),
        (q, k, v),
    )
    ours = torch.autograd.grad(
        chunked_attention(q, k, v, mask=mask, chunk_size=3).square().sum(),
        (q, k, v),
    )
    theirs = torch.autograd.grad(
        attention(q, k, v, mask=mask)[0].square().sum(), (q, k, v)
    )
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a, b)


def test_no_keys_gives_zeros():
    assert torch.equal(
        chunked_attention(randn(3, 4), randn(0, 4), randn(0, 2)),
        torch.zeros(3, 2, dtype=torch.float64),
    )


def test_streaming_state_follows_the_definitions():
    """After each block: maximum = largest score so far, total = sum of exp(score - maximum)."""
    q, k, v = (
        randn(3, 4, seed=29),
        randn(10, 4, seed=30),
        randn(10, 2, seed=31),
    )
    scores = q @ k.T / 2.0  # sqrt(d) = 2
    state = StreamingAttention(q)
    for start, stop in ((0, 4), (4, 8), (8, 10)):
        state.update(k[start:stop], v[start:stop])
        seen = scores[:, :stop]
        maximum = seen.amax(dim=1, keepdim=True)
        torch.testing.assert_close(state.maximum, maximum)
        torch.testing.assert_close(
            state.total, torch.exp(seen - maximum).sum(dim=1, keepdim=True)
        )
        torch.testing.assert_close(
            state.output(), attention(q, k[:stop], v[:stop])[0]
        )
    assert state.blocks == 3


def test_streaming_output_before_any_block_is_an_error():
    with pytest.raises(ValueError, match="no key block"):
        StreamingAttention(randn(2, 3)).output()


@settings(max_examples=40, deadline=None)
@given(
    batch=st.integers(1, 3),
    n_q=st.integers(1, 9),
    n_k=st.integers(1, 30),
    d=st.integers(1, 6),
    d_v=st.integers(1, 5),
    chunk_size=st.integers(1, 35),
    keep=st.floats(0.0, 1.0),
    seed=st.integers(0, 10_000),
)
def test_property_equals_attention(
    batch, n_q, n_k, d, d_v, chunk_size, keep, seed
):
    q, k, v = (
        randn(batch, n_q, d, seed=seed),
        randn(batch, n_k, d, seed=seed + 1),
        randn(batch, n_k, d_v, seed=seed + 2),
    )
    mask = random_mask(batch, n_q, n_k, seed=seed + 3, keep=keep)
    got = chunked_attention(q, k, v, mask=mask, chunk_size=chunk_size)
    torch.testing.assert_close(
        got, attention(q, k, v, mask=mask)[0], atol=1e-12, rtol=0
    )
    # Invariants: rows with nothing kept are zero; the result does not depend on the chunk size.
    assert torch.equal(
        got[~mask.any(dim=-1)], torch.zeros_like(got[~mask.any(dim=-1)])
    )
    torch.testing.assert_close(
        got,
        chunked_attention(q, k, v, mask=mask, chunk_size=n_k),
        atol=1e-12,
        rtol=0,
    )


@settings(max_examples=40, deadline=None)
@given(
    n_k=st.integers(1, 40),
    chunk_size=st.integers(1, 12),
    shift=st.floats(-50, 50),
    seed=st.integers(0, 10_000),
)
def test_property_shifting_all_scores_changes_nothing(
    n_k, chunk_size, shift, seed
):
    """Adding a constant to every score of a query (here via an extra feature) leaves the output unchanged."""
    q, k, v = (
        randn(4, 3, seed=seed),
        randn(n_k, 3, seed=seed + 1),
        randn(n_k, 2, seed=seed + 2),
    )
    q_extra = torch.cat(
        [q, torch.full((4, 1), 2.0, dtype=q.dtype)], dim=1
    )  # sqrt(d) = 2 with d = 4
    k_extra = torch.cat([k, torch.full((n_k, 1), shift, dtype=k.dtype)], dim=1)
    q_plain = torch.cat([q, torch.zeros(4, 1, dtype=q.dtype)], dim=1)
    torch.testing.assert_close(
        chunked_attention(q_extra, k_extra, v, chunk_size=chunk_size),
        chunked_attention(q_plain, k_extra, v, chunk_size=chunk_size),
        atol=1e-10,
        rtol=0,
    )


@pytest.mark.parametrize(
    "call, error, match",
    [
        (
            lambda: chunked_attention(randn(3, 4), randn(5, 3), randn(5, 2)),
            ValueError,
            "queries has 4, keys has 3",
        ),
        (
            lambda: chunked_attention(randn(3, 4), randn(5, 4), randn(6, 2)),
            ValueError,
            "keys has 5, values has 6",
        ),
        (
            lambda: chunked_attention(
                randn(2, 3, 4), randn(4, 5, 4), randn(4, 5, 2)
            ),
            ValueError,
            r"do not broadcast: queries \(2,\), keys \(4,\), values \(4,\)",
        ),
        (
            lambda: chunked_attention(
                randn(3, 4), randn(5, 4), randn(5, 2), chunk_size=0
            ),
            ValueError,
            "chunk_size must be a positive finite number, got 0",
        ),
        (
            lambda: chunked_attention(
                randn(3, 4), randn(5, 4), randn(5, 2), chunk_size=2.5
            ),
            TypeError,
            "chunk_size must be an int, got float",
        ),
        (
            lambda: chunked_attention(
                randn(3, 4),
                randn(5, 4),
                randn(5, 2),
                mask=torch.ones(3, 6, dtype=torch.bool),
            ),
            ValueError,
            r"\(3, 6\) does not broadcast to \(3, 5\)",
        ),
        (
            lambda: chunked_attention(
                randn(3, 4), randn(5, 4), randn(5, 2), mask=torch.ones(3, 5)
            ),
            TypeError,
            "boolean",
        ),
        (
            lambda: chunked_attention(
                randn(3, 4), randn(5, 4).float(), randn(5, 2)
            ),
            TypeError,
            "torch.float64 and torch.float32",
        ),
        (
            lambda: chunked_attention(
                torch.ones(3, 4, dtype=torch.long), randn(5, 4), randn(5, 2)
            ),
            TypeError,
            "floating-point",
        ),
        (
            lambda: chunked_attention(randn(4), randn(5, 4), randn(5, 2)),
            ValueError,
            r"\(4,\)",
        ),
    ],
)
def test_bad_input_is_reported_clearly(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_view_numbers_follow_the_definitions():
    view = chunked_view(n=1000, chunk_size=128, d=16, seed=3)
    assert view["num_chunks"] == 8
    assert (
        view["full_bytes"] == 1000 * 1000 * 4
        and view["tile_bytes"] == 1000 * 128 * 4
    )
    assert view["ratio"] == pytest.approx(1000 / 128)
    # Recompute the running max and sum directly from the same random draws.
    generator = torch.Generator().manual_seed(3)
    query, keys = (
        torch.randn(1, 16, generator=generator),
        torch.randn(1000, 16, generator=generator),
    )
    scores = (query @ keys.T / 4.0)[0]
    for block, (maximum, total) in enumerate(
        zip(view["maximum"], view["total"])
    ):
        seen = scores[: (block + 1) * 128]
        assert maximum == pytest.approx(seen.max().item(), abs=1e-5)
        assert total == pytest.approx(
            torch.exp(seen - seen.max()).sum().item(), rel=1e-5
        )
    rises = [
        later > earlier
        for earlier, later in zip(view["maximum"], view["maximum"][1:])
    ]
    assert [
        r < 1 for r in view["rescale"][1:]
    ] == rises  # the old sums shrink exactly when the max rises
    assert view["max_error"] < 1e-5


def test_view_reacts_to_its_controls():
    assert chunked_view(n=4096, chunk_size=64)["num_chunks"] == 64
    assert chunked_view(n=4096, chunk_size=4096)["ratio"] == 1.0
    assert chunked_view(n=2048, chunk_size=256)["curve_full"][
        -1
    ] == score_matrix_bytes(16384, 16384)
    assert chunked_view(n=1000, chunk_size=128)["keys_seen"] == [
        128 * k for k in range(1, 8)
    ] + [1000]
    assert chunked_view(n=1000, chunk_size=4096)["lengths"] == sorted(
        [*LENGTHS, 1000]
    )  # n is on the curves


def _shown_data(fig) -> dict:
    """The data each changing line of a ``plot_chunked`` figure holds, and the two titles."""
    left, right, twin = fig.axes
    full, tile, at_n = left.lines
    return {
        "full": (list(full.get_xdata()), list(full.get_ydata())),
        "tile": list(tile.get_ydata()),
        "at_n": (list(at_n.get_xdata()), list(at_n.get_ydata())),
        "max": (
            list(right.lines[0].get_xdata()),
            list(right.lines[0].get_ydata()),
        ),
        "sum": (
            list(twin.lines[0].get_xdata()),
            list(twin.lines[0].get_ydata()),
        ),
        "titles": (left.get_title(), right.get_title()),
    }


def test_plot_shows_the_view():
    view = chunked_view(n=2048, chunk_size=256)
    fig = plot_chunked(view)
    shown = _shown_data(fig)
    assert shown["full"] == (
        view["lengths"],
        pytest.approx([b / 2**20 for b in view["curve_full"]]),
    )
    assert shown["tile"] == pytest.approx(
        [b / 2**20 for b in view["curve_tile"]]
    )
    assert shown["at_n"] == (
        [2048, 2048],
        pytest.approx([2048 * 256 * 4 / 2**20, 2048**2 * 4 / 2**20]),
    )
    # x: the fraction of the keys seen; both statistics after each block
    fractions = [k / 8 for k in range(9)]
    assert shown["max"] == (
        pytest.approx(fractions[1:]),
        pytest.approx(view["maximum"]),
    )
    assert shown["sum"] == (
        pytest.approx(fractions[1:]),
        pytest.approx(view["total"]),
    )
    error = f"{view['max_error']:.0e}"
    assert shown["titles"] == (
        "n = 2,048, chunk 256: 16 MiB vs 2 MiB",
        f"one query, 2,048 keys, 8 blocks: error vs attention {error}",
    )
    plt.close(fig)


def test_update_shows_the_new_view_on_the_same_artists_and_axes():
    fig = plot_chunked(chunked_view(n=4096, chunk_size=512))
    limits = [(axes.get_xlim(), axes.get_ylim()) for axes in fig.axes]
    view = chunked_view(n=256, chunk_size=32)
    changed = update_chunked_figure(fig, view)
    fresh = plot_chunked(view)
    assert _shown_data(fig) == _shown_data(fresh)
    assert [
        (axes.get_xlim(), axes.get_ylim()) for axes in fig.axes
    ] == limits  # fixed: the axes are never redrawn
    again = update_chunked_figure(fig, chunked_view(n=16384, chunk_size=4096))
    assert [id(artist) for artist in again] == [
        id(artist) for artist in changed
    ]  # same list: blitting stays on
    assert fig.axes[0].title in changed and fig.axes[1].title in changed
    assert (
        all(axes not in changed for axes in fig.axes)
        and fig.axes[0].get_legend() not in changed
    )
    assert _shown_data(fig)["titles"][1].startswith(
        "one query, 16,384 keys, 4 blocks:"
    )
    plt.close(fig)
    plt.close(fresh)


def test_fixed_axes_hold_every_setting_the_explorer_allows():
    """Every setting fits the axes of the default figure, and no line crosses its legend (never redrawn)."""
    fig = plot_chunked(chunked_view())
    left, right, twin = fig.axes
    fig.canvas.draw()
    legend_box = left.get_legend().get_window_extent()
    (x_low, x_high), (y_low, y_high) = left.get_xlim(), left.get_ylim()
    (m_low, m_high), (s_low, s_high) = right.get_ylim(), twin.get_ylim()
    for n in LENGTHS:
        for chunk_size in CHUNK_SIZES:
            view = chunked_view(n=n, chunk_size=chunk_size)
            memory = [
                b / 2**20
                for b in view["curve_full"]
                + view["curve_tile"]
                + [view["tile_bytes"]]
            ]
            assert (
                x_low < min(view["lengths"]) and max(view["lengths"]) < x_high
            )
            assert y_low < min(memory) and max(memory) < y_high
            assert (
                m_low < min(view["maximum"]) and max(view["maximum"]) < m_high
            ), (n, chunk_size)
            assert (
                s_low < min(view["total"]) and max(view["total"]) < s_high
            ), (n, chunk_size)
            update_chunked_figure(fig, view)
            for line in left.lines:
                path = line.get_transform().transform_path(line.get_path())
                assert not path.intersects_bbox(legend_box, filled=False), (
                    n,
                    chunk_size,
                )
    assert (
        right.get_xlim()[0] < 0 and right.get_xlim()[1] > 1
    )  # the fraction of keys seen, 0 .. 1
    plt.close(fig)


def test_builder_redraws_when_a_control_moves():
    box = chunked_explorer(n=1024, chunk_size=256)
    controls, output = box.children
    length, chunk = controls.children
    assert len(output.outputs) == 1
    first = output.outputs[0]["data"]["image/png"]
    chunk.value = 64
    assert output.outputs[0]["data"]["image/png"] != first
    length.value = 16384
    fig = box.live_figure.figure
    expected = chunked_view(n=16384, chunk_size=64)
    assert fig.axes[2].lines[0].get_ydata() == pytest.approx(expected["total"])
    assert (
        fig.axes[0].get_title() == "n = 16,384, chunk 64: 1,024 MiB vs 4 MiB"
    )
    assert (
        fig.axes[1]
        .get_title()
        .startswith("one query, 16,384 keys, 256 blocks:")
    )
    plt.close("all")


def _saved_storages(function):
    """{storage pointer: (shape, bytes)} of the tensors autograd saves for function()'s backward, each storage once."""
    storages = {}

    def pack(tensor):
        storage = tensor.untyped_storage()
        storages[storage.data_ptr()] = (tuple(tensor.shape), storage.nbytes())
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        function()
    return storages


def test_autograd_keeps_the_weights_of_plain_attention_once_and_not_the_scores():
    # Chapter 11: the softmax's backward needs only its output P, and P V needs the same P; S is not kept.
    n, d = 64, 8
    g = torch.Generator().manual_seed(0)
    q, k, v = (
        torch.randn(n, d, generator=g).requires_grad_() for _ in range(3)
    )
    saved = _saved_storages(lambda: attention(q, k, v)[0])
    shapes = [shape for shape, _ in saved.values()]
    assert shapes.count((n, n)) == 1
    # P, plus q / sqrt(d), k and v: n^2 + 3 n d float32 numbers.
    assert sum(nbytes for _, nbytes in saved.values()) == 4 * (
        n * n + 3 * n * d
    )


def test_online_softmax_through_autograd_keeps_every_block_of_weights():
    n, d, c = 64, 8, 16
    g = torch.Generator().manual_seed(1)
    q, k, v = (
        torch.randn(n, d, generator=g).requires_grad_() for _ in range(3)
    )

    def streamed():
        state = StreamingAttention(q)
        for start in range(0, n, c):
            state.update(k[start : start + c], v[start : start + c])
        return state.output()

    blocks = [
        nbytes
        for shape, nbytes in _saved_storages(streamed).values()
        if shape == (n, c)
    ]
    assert (
        sum(blocks) == 4 * n * n
    )  # the n / c blocks add up to the whole weight matrix


def test_streaming_float16_past_65504_keys():
    n_k = 70_000
    q, k, v = (
        torch.zeros(1, 8, dtype=torch.float16),
        torch.zeros(n_k, 8, dtype=torch.float16),
        torch.ones(n_k, 1, dtype=torch.float16),
    )
    out = chunked_attention(q, k, v, chunk_size=8192)
    assert out.dtype == torch.float16 and out.item() == 1.0


def test_bfloat16_chunked_error_matches_plain_attention():
    q, k, v = (seeded_randn(64, 32, seed=s) for s in range(3))
    exact = attention(q.double(), k.double(), v.double())[0]
    qb, kb, vb = (t.to(torch.bfloat16) for t in (q, k, v))
    plain = (attention(qb, kb, vb)[0].double() - exact).abs().max()
    chunked = (
        (chunked_attention(qb, kb, vb, chunk_size=8).double() - exact)
        .abs()
        .max()
    )
    assert chunked <= 1.5 * plain + 1e-3


# chunked_attention's backward pass.
def test_chunked_backward_allocates_for_the_keys_it_has():
    q = torch.randn(4, 8, requires_grad=True)
    out = attnbook.chunked_attention(
        q, torch.randn(16, 8), torch.randn(16, 8), chunk_size=10**9
    )
    out.sum().backward()  # a buffer of 4 x 16, not 4 x 10**9
    assert torch.isfinite(q.grad).all()


def test_chunked_attention_supports_create_graph():
    g = torch.Generator().manual_seed(0)
    q, k, v = (
        torch.randn(n, d, generator=g, dtype=torch.float64, requires_grad=True)
        for n, d in ((3, 4), (6, 4), (6, 2))
    )
    assert torch.autograd.gradgradcheck(
        lambda a, b, c: attnbook.chunked_attention(a, b, c, chunk_size=2),
        (q, k, v),
    )


def test_chunked_attention_over_no_keys_keeps_the_graph():
    q = torch.randn(4, 8, requires_grad=True)
    out = attnbook.chunked_attention(q, torch.randn(0, 8), torch.randn(0, 2))
    out.sum().backward()
    assert (out == 0).all() and (q.grad == 0).all()


# Infinite scores give attention's limit, or a clear error when streaming.
@pytest.mark.parametrize("value", [float("inf"), -float("inf")])
def test_chunked_attention_equals_attention_for_infinite_scores(value):
    q, k, v = qkv()
    k[0, 0] = value
    expected = attention(q, k, v)[0]
    assert torch.equal(attnbook.chunked_attention(q, k, v), expected)


def test_streaming_refuses_an_infinite_kept_score():
    from attnbook.core.chunked import StreamingAttention

    q, k, v = qkv()
    k[0, 0] = float("inf")
    with pytest.raises(ValueError, match=r"\+inf or NaN"):
        StreamingAttention(q).update(k, v)


def test_chunked_attention_refuses_a_mask_on_another_device():
    q, k, v = qkv()
    keep = torch.ones(3, 5, dtype=torch.bool).to("meta")
    with pytest.raises(ValueError, match="meta"):
        attnbook.chunked_attention(q, k, v, mask=keep)


def test_garbage_query_of_a_fully_masked_row_in_chunked_attention():
    q, k, v = qkv()
    q[1] = float("nan")
    q.requires_grad_()
    k.requires_grad_()
    keep = torch.ones(3, 5, dtype=torch.bool)
    keep[1] = False
    out = attnbook.chunked_attention(q, k, v, mask=keep)
    out.sum().backward()
    assert torch.isfinite(out).all() and torch.isfinite(k.grad).all()


def G():
    return torch.Generator().manual_seed(0)


def test_a_chunk_larger_than_the_keys_is_one_chunk():
    g = G()
    q, k, v = (torch.randn(2, 5, 8, generator=g) for _ in range(3))
    mask = attnbook.causal_mask(5)
    huge = attnbook.chunked_attention(q, k, v, mask=mask, chunk_size=10**12)
    whole = attnbook.chunked_attention(q, k, v, mask=mask, chunk_size=5)
    assert torch.equal(huge, whole)

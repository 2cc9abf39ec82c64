"""Issue 11: every public function gives a right answer or a clear ValueError/TypeError.

One test group per defect class: (1) the caller's tensors are never written to; (2) float16 and
bfloat16 inputs do not overflow; (3) NaN/inf under the mask reaches no output or gradient;
(4) no silent NaN; (5) one dtype check everywhere; (6) sizes and arguments; (7) matrices too
big for memory are refused before allocation; (8) tampered weight files are refused; (9) the
global random state is left as found; (10) multi-head masks that could be misread are refused;
(11) explorer arguments. Expected values come from direct formulas or float64 references,
never from the code under test.
"""

import math
import shutil
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import attnbook
from attnbook import (
    AdditiveScore,
    BilinearScore,
    LayerNorm,
    MultiHeadAttention,
    PointerNetwork,
    PositionWiseFFN,
    SelfAttention,
    TransformerEncoder,
    TransformerEncoderBlock,
    _weights,
    attention,
    attention_weights,
    chunked_attention,
    dot_score,
    hard_attention,
    lengths_to_mask,
    masked_softmax,
    merge_heads,
    nadaraya_watson,
    position_shift_matrix,
    scaled_dot_score,
    split_heads,
)
from attnbook.core.chunked import StreamingAttention
from attnbook.tasks import sorting as pointer

HALF = (torch.float16, torch.bfloat16)


def _randn(*shape, seed=0, dtype=torch.float32):
    return torch.randn(
        *shape, generator=torch.Generator().manual_seed(seed), dtype=dtype
    )


# ------------------------------------------------------------------ (1) the caller's tensors


def _caller_owned_scores(kind, queries, keys, owned):
    return {
        "precomputed": lambda q, k: owned,
        "view of queries": lambda q, k: q[..., : k.shape[-2]],
        "parameter": lambda q, k: owned,
        "transposed view": lambda q, k: owned.T.T,
    }[kind]


@settings(max_examples=30, deadline=None)
@given(
    kind=st.sampled_from(
        ["precomputed", "view of queries", "parameter", "transposed view"]
    ),
    function=st.sampled_from(
        ["attention", "attention_weights", "hard_attention"]
    ),
    no_grad=st.booleans(),
    with_mask=st.booleans(),
    seed=st.integers(0, 1000),
)
def test_scores_the_caller_owns_are_never_overwritten(
    kind, function, no_grad, with_mask, seed
):
    n_q, n_k = 3, 5
    queries, keys, values = (
        _randn(n_q, 6, seed=seed),
        _randn(n_k, 6, seed=seed + 1),
        _randn(n_k, 2, seed=seed + 2),
    )
    owned = _randn(n_q, n_k, seed=seed + 3)
    if kind == "parameter":
        owned = torch.nn.Parameter(owned)
    score = _caller_owned_scores(kind, queries, keys, owned)
    mask = (
        torch.tensor([True, False, True, True, False]) if with_mask else None
    )
    snapshot = [t.detach().clone() for t in (queries, keys, values, owned)]
    call = {
        "attention": lambda: attention(
            queries, keys, values, score=score, mask=mask
        )[1],
        "attention_weights": lambda: attention_weights(
            queries, keys, score=score, mask=mask
        ),
        "hard_attention": lambda: hard_attention(
            queries, keys, values, score=score, mask=mask
        )[1],
    }[function]
    with torch.set_grad_enabled(not no_grad):
        first = call().detach().clone()
        second = call().detach().clone()
    for before, tensor in zip(snapshot, (queries, keys, values, owned)):
        assert torch.equal(before, tensor.detach())
    assert torch.equal(first, second)


def test_fresh_scores_are_still_overwritten_in_place():
    """The memory saving stays: no second n_q x n_k buffer for the library's own scores."""
    q, k = _randn(4, 8), _randn(6, 8)
    with torch.no_grad():
        expected = torch.softmax(q @ k.T / math.sqrt(8), dim=-1)
        assert torch.allclose(attention_weights(q, k), expected, atol=1e-6)


# ------------------------------------------------------------------ (2) half precision


@pytest.mark.parametrize("dtype", HALF)
def test_half_attention_does_not_overflow(dtype):
    x = torch.full(
        (2, 64), 100.0, dtype=dtype
    )  # scores 100*100*64/8 = 80,000 > 65,504
    output, weights = attention(x, x, x)
    assert output.dtype == weights.dtype == dtype
    assert torch.equal(output.float(), torch.full((2, 64), 100.0))
    assert torch.allclose(weights.float(), torch.full((2, 2), 0.5))
    assert torch.equal(
        chunked_attention(x, x, x).float(), torch.full((2, 64), 100.0)
    )


@pytest.mark.parametrize("dtype", HALF)
def test_half_modules_match_a_float32_reference(dtype):
    torch.manual_seed(0)
    x = _randn(2, 5, 16) * 30
    for make in (
        lambda: MultiHeadAttention(16, 2),
        lambda: SelfAttention(16),
        lambda: TransformerEncoderBlock(16, 2, 32),
    ):
        torch.manual_seed(1)
        module = make().eval()
        with torch.no_grad():
            for p in module.parameters():
                p.mul_(4)  # large scores
        half = module.to(dtype)
        reference = make().eval()
        reference.load_state_dict(
            {k: v.float() for k, v in half.state_dict().items()}
        )
        xh = x.to(dtype)
        call = (
            (lambda m, t: m(t, t, t)[0])
            if isinstance(module, MultiHeadAttention)
            else (
                lambda m, t: m(t)[0] if isinstance(m, SelfAttention) else m(t)
            )
        )
        with torch.no_grad():
            got, want = call(half, xh), call(reference, xh.float())
        assert got.dtype == dtype
        assert torch.isfinite(got).all()
        scale = want.abs().max().item() + 1
        assert (got.float() - want).abs().max().item() / scale < (
            0.02 if dtype == torch.float16 else 0.1
        )


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
    q, k, v = (_randn(64, 32, seed=s) for s in range(3))
    exact = attention(q.double(), k.double(), v.double())[0]
    qb, kb, vb = (t.to(torch.bfloat16) for t in (q, k, v))
    plain = (attention(qb, kb, vb)[0].double() - exact).abs().max()
    chunked = (
        (chunked_attention(qb, kb, vb, chunk_size=8).double() - exact)
        .abs()
        .max()
    )
    assert chunked <= 1.5 * plain + 1e-3


# ------------------------------------------------------------------ (3) garbage under the mask


def _masked_run(function, where, garbage, seed):
    torch.manual_seed(seed)
    q = _randn(2, 3, 4, seed=seed).requires_grad_()
    k, v = _randn(2, 5, 4, seed=seed + 1), _randn(2, 5, 4, seed=seed + 2)
    if garbage is not None:
        (k if where == "keys" else v)[1, 3:] = garbage
    k.requires_grad_()
    v.requires_grad_()
    keep = lengths_to_mask(torch.tensor([5, 3]), 5)
    if function == "attention":
        out = attention(q, k, v, mask=keep[:, None, :])[0]
    elif function == "chunked":
        out = chunked_attention(q, k, v, mask=keep[:, None, :], chunk_size=2)
    elif function == "chunked-autograd":
        out = chunked_attention(
            q,
            k,
            v,
            mask=keep[:, None, :],
            chunk_size=2,
            recompute_backward=False,
        )
    else:
        torch.manual_seed(0)
        out = MultiHeadAttention(4, 2)(q, k, v, mask=keep[:, None, None, :])[0]
    out.backward(_randn(*out.shape, seed=99))
    return out.detach(), q.grad, k.grad[:, :3], v.grad[:, :3]


@settings(max_examples=40, deadline=None)
@given(
    function=st.sampled_from(
        ["attention", "chunked", "chunked-autograd", "mha"]
    ),
    where=st.sampled_from(["keys", "values"]),
    garbage=st.sampled_from([float("nan"), float("inf"), float("-inf"), 1e30]),
    seed=st.integers(0, 100),
)
def test_garbage_under_the_mask_reaches_no_output_or_gradient(
    function, where, garbage, seed
):
    clean = _masked_run(function, where, None, seed)
    dirty = _masked_run(function, where, garbage, seed)
    for a, b in zip(clean, dirty):
        assert torch.isfinite(b).all()
        assert torch.allclose(a, b, atol=1e-5)


def test_causal_mask_hides_a_nan_future_value():
    v = _randn(4, 2)
    v[3] = float("nan")
    causal = torch.ones(4, 4, dtype=torch.bool).tril()
    out = attention(_randn(4, 3), _randn(4, 3, seed=1), v, mask=causal)[0]
    assert (
        torch.isfinite(out[:3]).all() and torch.isnan(out[3]).all()
    )  # the query that keeps it sees NaN


@pytest.mark.parametrize(
    "garbage", [float("nan"), float("inf"), float("-inf")]
)
@pytest.mark.parametrize("where", ["keys", "values"])
@pytest.mark.parametrize(
    "score", ["scaled_dot_score", "dot_score", "chunked", "chunked-autograd"]
)
def test_causal_mask_hides_a_future_garbage_key_from_earlier_gradients(
    garbage, where, score
):
    """Key 4 is kept by query 4 only: queries 1-3 must get the outputs and gradients of a clean run.

    (Gradients of the keys are not compared: query 4 keeps the garbage, and autograd's
    0 * NaN carries it from query 4's row into every key's gradient, as in PyTorch itself.)
    """
    causal = torch.ones(4, 4, dtype=torch.bool).tril()

    def run(value):
        q = _randn(4, 3).requires_grad_()
        k, v = _randn(4, 3, seed=1), _randn(4, 2, seed=2)
        (k if where == "keys" else v)[3] = value
        k.requires_grad_()
        if score.startswith("chunked"):
            out = chunked_attention(
                q,
                k,
                v,
                mask=causal,
                chunk_size=2,
                recompute_backward=score == "chunked",
            )[:3]
        else:
            out = attention(
                q,
                k,
                v,
                score={
                    "scaled_dot_score": scaled_dot_score,
                    "dot_score": dot_score,
                }[score],
                mask=causal,
            )[0][:3]
        out.backward(_randn(3, 2, seed=3))
        return out.detach(), q.grad[:3]

    for clean, dirty in zip(run(0.5), run(garbage)):
        assert torch.isfinite(dirty).all()
        assert torch.allclose(clean, dirty, atol=1e-6)


# ------------------------------------------------------------------ (4) silent NaN


@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16]
)
def test_masked_softmax_limits(dtype):
    inf = float("inf")
    rows = torch.tensor(
        [
            [0.0, inf, 1.0],
            [inf, inf, 1.0],
            [-inf, -inf, -inf],
            [-inf, 0.0, 0.0],
        ],
        dtype=dtype,
    )
    expected = torch.tensor(
        [[0, 1, 0], [0.5, 0.5, 0], [0, 0, 0], [0, 0.5, 0.5]], dtype=dtype
    )
    assert torch.equal(masked_softmax(rows), expected)
    with torch.no_grad():
        copy = rows.clone()
        assert torch.equal(masked_softmax(copy, inplace=True), expected)


def test_masked_softmax_keeps_a_kept_nan_visible():
    weights = masked_softmax(torch.tensor([[0.0, float("nan"), 1.0]]))
    assert torch.isnan(weights).all()
    masked = masked_softmax(
        torch.tensor([[0.0, float("nan"), 0.0]]),
        torch.tensor([[True, False, True]]),
    )
    assert torch.equal(masked, torch.tensor([[0.5, 0.0, 0.5]]))


@pytest.mark.parametrize("bandwidth", [1e-25, 1e-30, 1e-45, 1e-200])
def test_nadaraya_watson_tiny_bandwidth_is_nearest_neighbour(bandwidth):
    predictions, weights = nadaraya_watson(
        torch.tensor([0.0, 1.0, 2.9]),
        torch.tensor([0.0, 1.0, 2.0, 3.0]),
        torch.tensor([1.0, 2.0, 3.0, 4.0]),
        bandwidth=bandwidth,
    )
    assert torch.equal(predictions, torch.tensor([1.0, 2.0, 4.0]))
    assert torch.equal(weights.sum(dim=1), torch.ones(3))


@pytest.mark.parametrize(
    "query, nearest",
    [(1e19, 3.0), (1e20, 3.0), (3e38, 3.0), (-1e25, 1.0), (-3e38, 1.0)],
)
def test_nadaraya_watson_far_query_gets_the_nearest_key(query, nearest):
    predictions, _ = nadaraya_watson(
        torch.tensor([query]),
        torch.tensor([0.0, 1.0, 2.0]),
        torch.tensor([1.0, 2.0, 3.0]),
    )
    assert predictions.item() == nearest


def test_nadaraya_watson_nan_query_stays_nan():
    predictions, _ = nadaraya_watson(
        torch.tensor([float("nan"), 1.0]),
        torch.tensor([0.0, 1.0]),
        torch.tensor([1.0, 2.0]),
    )
    assert torch.isnan(predictions[0]) and torch.isfinite(predictions[1])


@pytest.mark.parametrize("delta", [float("nan"), float("inf"), float("-inf")])
def test_position_shift_matrix_rejects_non_finite_delta(delta):
    with pytest.raises(ValueError, match="delta must be a finite number"):
        position_shift_matrix(delta, 4)


@pytest.mark.parametrize("mode", ["argmax", "sample"])
def test_hard_attention_refuses_nan_scores(mode):
    with pytest.raises(ValueError, match="NaN"):
        hard_attention(
            torch.tensor([[float("nan"), 0.0]]),
            _randn(3, 2),
            _randn(3, 1),
            mode=mode,
            generator=torch.Generator().manual_seed(0),
        )


# ------------------------------------------------------------------ (5) dtypes

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]


def _module_calls():
    d = 8
    return {
        "MultiHeadAttention": (
            lambda: MultiHeadAttention(d, 2),
            lambda m, x: m(x, x, x),
        ),
        "SelfAttention": (lambda: SelfAttention(d), lambda m, x: m(x)),
        "TransformerEncoderBlock": (
            lambda: TransformerEncoderBlock(d, 2, 16),
            lambda m, x: m(x),
        ),
        "PositionWiseFFN": (lambda: PositionWiseFFN(d, 16), lambda m, x: m(x)),
        "AdditiveScore": (
            lambda: AdditiveScore(d, d, 6),
            lambda m, x: m(x, x),
        ),
        "BilinearScore": (lambda: BilinearScore(d, d), lambda m, x: m(x, x)),
        "attention with AdditiveScore": (
            lambda: AdditiveScore(d, d, 6),
            lambda m, x: attention(x, x, x, score=m),
        ),
        "PointerNetwork.decode": (
            lambda: PointerNetwork(d),
            lambda m, x: m.decode(x[0]),
        ),
    }


@settings(max_examples=60, deadline=None)
@given(
    name=st.sampled_from(sorted(_module_calls())),
    module_dtype=st.sampled_from(DTYPES),
    input_dtype=st.sampled_from(DTYPES),
)
def test_every_module_names_a_dtype_mismatch(name, module_dtype, input_dtype):
    make, call = _module_calls()[name]
    torch.manual_seed(0)
    module = make().to(module_dtype)
    x = _randn(2, 5, 8).to(input_dtype)
    if module_dtype == input_dtype:
        if module_dtype in HALF and name == "PointerNetwork.decode":
            return  # LSTMs have no half-precision CPU kernels
        out = call(module, x)
        first = out[0] if isinstance(out, tuple) else out
        assert first.dtype == (
            torch.long if name == "PointerNetwork.decode" else input_dtype
        )
    else:
        with pytest.raises(
            TypeError,
            match=f"{input_dtype}.*{module_dtype}|{module_dtype}.*{input_dtype}",
        ):
            call(module, x)


@settings(max_examples=60, deadline=None)
@given(
    function=st.sampled_from(
        [
            "attention",
            "attention_weights",
            "hard_attention",
            "chunked_attention",
            "dot_score",
            "scaled_dot_score",
            "nadaraya_watson",
        ]
    ),
    position=st.integers(0, 2),
    first=st.sampled_from(DTYPES),
    other=st.sampled_from(DTYPES),
)
def test_every_tensor_function_names_a_dtype_mismatch(
    function, position, first, other
):
    args = [
        _randn(3, 4).to(first),
        _randn(5, 4, seed=1).to(first),
        _randn(5, 2, seed=2).to(first),
    ]
    if function == "nadaraya_watson":
        args = [
            _randn(3).to(first),
            _randn(5, seed=1).to(first),
            _randn(5, seed=2).to(first),
        ]
    args[position] = args[position].to(other)
    call = {
        "attention": lambda a: attention(*a),
        "attention_weights": lambda a: attention_weights(a[0], a[1]),
        "hard_attention": lambda a: hard_attention(*a),
        "chunked_attention": lambda a: chunked_attention(*a),
        "dot_score": lambda a: dot_score(a[0], a[1]),
        "scaled_dot_score": lambda a: scaled_dot_score(a[0], a[1]),
        "nadaraya_watson": lambda a: nadaraya_watson(*a),
    }[function]
    uses_third = function not in (
        "attention_weights",
        "dot_score",
        "scaled_dot_score",
    )
    if first == other or (position == 2 and not uses_third):
        call(args)
    else:
        with pytest.raises(TypeError, match="dtype"):
            call(args)


# ------------------------------------------------------------------ (6) sizes and arguments

BAD_SIZES = [0, -1, True, False, 2.5, None, "4"]


@pytest.mark.parametrize("value", BAD_SIZES)
@pytest.mark.parametrize(
    "build",
    [
        lambda a: AdditiveScore(a, 4, 8),
        lambda a: AdditiveScore(4, a, 8),
        lambda a: AdditiveScore(4, 4, a),
        lambda a: BilinearScore(a, 4),
        lambda a: BilinearScore(4, a),
        lambda a: MultiHeadAttention(a, 2),
        lambda a: MultiHeadAttention(8, a),
        lambda a: SelfAttention(a),
        lambda a: LayerNorm(a),
        lambda a: PositionWiseFFN(a, 8),
        lambda a: PositionWiseFFN(8, a),
        lambda a: TransformerEncoderBlock(8, 2, a),
        lambda a: TransformerEncoder(a, 8, 2, 8, 1),
        lambda a: PointerNetwork(a),
        lambda a: split_heads(_randn(2, 3, 8), a),
        lambda a: attnbook.PositionalEncoding(a),
        lambda a: attnbook.LearnedPositionalEmbedding(4, a),
    ],
    ids=lambda f: "",
)
def test_constructors_refuse_bad_sizes(build, value):
    with pytest.raises((ValueError, TypeError)):
        build(value)


@pytest.mark.parametrize(
    "dropout", [-0.1, 1.0, 2.0, float("nan"), float("inf"), "0.1", None, True]
)
@pytest.mark.parametrize(
    "build",
    [
        lambda p: attnbook.PositionalEncoding(4, dropout=p),
        lambda p: PositionWiseFFN(4, 8, dropout=p),
        lambda p: TransformerEncoderBlock(4, 2, 8, dropout=p),
        lambda p: TransformerEncoder(5, 4, 2, 8, 1, dropout=p),
    ],
    ids=[
        "PositionalEncoding",
        "PositionWiseFFN",
        "TransformerEncoderBlock",
        "TransformerEncoder",
    ],
)
def test_dropout_must_be_a_probability(build, dropout):
    with pytest.raises(
        ValueError, match=r"dropout must be a number in \[0, 1\)"
    ):
        build(dropout)


@pytest.mark.parametrize(
    "call, message",
    [
        (
            lambda: split_heads(_randn(2, 3, 8), 3),
            "not divisible by num_heads = 3",
        ),
        (lambda: split_heads(_randn(8), 2), "x needs shape"),
        (lambda: merge_heads(_randn(3, 4)), "x needs shape"),
        (lambda: lengths_to_mask(None, 5), "valid_lens must be"),
        (
            lambda: attnbook.padding_mask(torch.tensor(3), 5),
            "one length per sequence",
        ),
        (
            lambda: attention(
                _randn(2, 3, 4), _randn(3, 5, 4), _randn(3, 5, 2)
            ),
            "do not broadcast",
        ),
        (
            lambda: scaled_dot_score(_randn(3, 0), _randn(5, 0)),
            "feature size d >= 1",
        ),
        (
            lambda: chunked_attention(
                _randn(3, 0), _randn(5, 0), _randn(5, 2)
            ),
            "feature size d >= 1",
        ),
        (
            lambda: attention(
                _randn(3, 4),
                _randn(5, 4),
                _randn(5, 2),
                score=lambda q, k: torch.zeros(3, 4),
            ),
            "score returned shape",
        ),
        (
            lambda: (
                StreamingAttention(_randn(3, 4))
                .update(_randn(5, 4), _randn(5, 2))
                .update(_randn(5, 4), _randn(5, 3))
            ),
            "earlier blocks had 2",
        ),
    ],
)
def test_sizes_get_clear_errors(call, message):
    with pytest.raises((ValueError, TypeError), match=message):
        call()


@pytest.mark.parametrize(
    "dtype", [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]
)
def test_encoder_accepts_every_integer_token_dtype(dtype):
    torch.manual_seed(0)
    encoder = TransformerEncoder(10, 8, 2, 16, 1, max_len=16).eval()
    tokens = torch.tensor([[1, 2, 3, 9]])
    assert torch.equal(encoder(tokens.to(dtype)), encoder(tokens))


# ------------------------------------------------------------------ (7) memory


def test_too_big_a_score_matrix_is_refused_before_allocation():
    x = torch.zeros(1, 1).expand(200_000, 1)
    with pytest.raises(
        ValueError, match=r"\(200000, 200000\).*149\.0 GiB.*chunked_attention"
    ):
        attention(x, x, x)
    with pytest.raises(ValueError, match="chunked_attention"):
        MultiHeadAttention(8, 8)(*(torch.zeros(1, 100_000, 8),) * 3)
    with pytest.raises(ValueError, match="additive score's hidden tensor"):
        attention(
            torch.zeros(20_000, 4),
            torch.zeros(20_000, 4),
            torch.zeros(20_000, 1),
            score=AdditiveScore(4, 4, 512),
        )


def test_the_limit_can_be_changed():
    q = _randn(64, 4)
    previous = attnbook.set_matrix_memory_limit(1000)
    try:
        with pytest.raises(ValueError, match=r"\(64, 64\)"):
            attention(q, q, q)
        # blocks of 64 x 2 scores (512 bytes): never the whole matrix
        chunked_attention(q, q, q, chunk_size=2)
    finally:
        attnbook.set_matrix_memory_limit(previous)
    attention(q, q, q)


# ------------------------------------------------------------------ (8) pinned weights


@pytest.fixture
def shipped_copy(tmp_path, monkeypatch):
    """A copy of attnbook/data that the loader reads instead of the installed one."""
    data = tmp_path / "data"
    shutil.copytree(Path(attnbook.__file__).parent / "data", data)

    class Files:
        @staticmethod
        def files(_package):
            return tmp_path

    monkeypatch.setattr(_weights, "resources", Files)
    return data / pointer.PRETRAINED_FILE


def test_pinned_sorter_loads(shipped_copy):
    model = attnbook.pretrained_sorter()
    assert model.decode(torch.tensor([[0.2, 0.9, 0.5]])).tolist() == [
        [1, 2, 0]
    ]


@pytest.mark.parametrize("damage", ["flip a byte", "truncate", "append"])
def test_damaged_weights_are_refused(shipped_copy, damage):
    data = bytearray(shipped_copy.read_bytes())
    if damage == "flip a byte":
        data[len(data) // 2] ^= 0x01
    elif damage == "truncate":
        data = data[: len(data) // 2]
    else:
        data += b"\0"
    shipped_copy.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="SHA-256.*pins"):
        attnbook.pretrained_sorter()


def test_missing_weights_are_named(shipped_copy):
    shipped_copy.unlink()
    with pytest.raises(
        FileNotFoundError, match="pointer_sorter.pt is missing"
    ):
        attnbook.pretrained_sorter()


@pytest.mark.parametrize("damage", ["truncate", "garbage"])
def test_load_sorter_names_an_unreadable_file(tmp_path, damage):
    path = tmp_path / "sorter.pt"
    shipped = (
        Path(attnbook.__file__).parent / "data" / pointer.PRETRAINED_FILE
    ).read_bytes()
    path.write_bytes(
        shipped[: len(shipped) // 3]
        if damage == "truncate"
        else b"not a weight file"
    )
    with pytest.raises(
        ValueError, match="could not be read as a saved sorter"
    ):
        pointer.load_sorter(path)
    with pytest.raises(FileNotFoundError):
        pointer.load_sorter(tmp_path / "missing.pt")


def test_the_pin_is_a_constant_of_the_code():
    assert len(pointer.POINTER_SORTER_SHA256) == 64
    assert pointer.POINTER_SORTER_SHA256 == _weights.sha256_of(
        (
            Path(attnbook.__file__).parent / "data" / pointer.PRETRAINED_FILE
        ).read_bytes()
    )


# ------------------------------------------------------------------ (9) global random state


def _rng_untouched(call):
    torch.manual_seed(12345)
    state = torch.random.get_rng_state()
    call()
    return torch.equal(state, torch.random.get_rng_state())


def test_library_calls_leave_the_global_rng_as_found():
    from attnbook.experiments.complexity import (
        comparison_layers,
        conv_layers_to_connect,
    )
    from attnbook.tasks.order_classifier import train_order_classifier
    from attnbook.widgets import multihead as multihead_widget
    from attnbook.widgets import self_attention as self_attention_widget

    self_attention_widget.toy_self_attention.cache_clear()
    calls = {
        "pretrained_sorter": attnbook.pretrained_sorter,
        "self_attention_view": self_attention_widget.self_attention_view,
        "multihead_view": multihead_widget.multihead_view,
        "train_sorter": lambda: pointer.train_sorter(
            hidden_dim=4, steps=2, batch_size=4
        ),
        "train_order_classifier": lambda: train_order_classifier(
            steps=2, batch_size=4, progress=False
        ),
        "comparison_layers": lambda: comparison_layers(4),
        "conv_layers_to_connect": lambda: conv_layers_to_connect(3),
    }
    moved = [name for name, call in calls.items() if not _rng_untouched(call)]
    assert moved == []


def test_seeded_training_still_gives_the_same_model():
    a, _ = pointer.train_sorter(hidden_dim=4, steps=3, batch_size=4)
    torch.manual_seed(999)  # whatever the reader's stream holds
    b, _ = pointer.train_sorter(hidden_dim=4, steps=3, batch_size=4)
    assert all(
        torch.equal(p, q)
        for p, q in zip(a.state_dict().values(), b.state_dict().values())
    )


# ------------------------------------------------------------------ (10) multi-head masks

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
        call(_randn(B, N, E), BAD_MASKS[shape])


@pytest.mark.parametrize(
    "caller", ["MultiHeadAttention", "TransformerEncoderBlock"]
)
@pytest.mark.parametrize("shape", list(GOOD_MASKS))
def test_unambiguous_masks_are_accepted(caller, shape):
    call = _multihead_callers()[caller]
    call(_randn(B, N, E), GOOD_MASKS[shape])


def test_padding_of_sequence_j_never_lands_on_head_j():
    """B equals the number of heads: the (B, 1, n) mask would be accepted and misapplied; now it is refused."""
    torch.manual_seed(0)
    mha = MultiHeadAttention(E, H)
    x = _randn(B, N, E)
    _, weights = mha(x, x, x, mask=_KEEP[:, None, None, :])
    assert (weights[1, :, :, 2:] == 0).all() and (weights[0] > 0).all()
    with pytest.raises(ValueError, match="keep\\[:, None, None, :\\]"):
        mha(x, x, x, mask=_KEEP[:, None, :])


def test_single_head_functions_still_broadcast():
    out, weights = attention(
        _randn(B, 3, 4),
        _randn(B, N, 4),
        _randn(B, N, 2),
        mask=_KEEP[:, None, :],
    )
    assert (weights[1, :, 2:] == 0).all()


# ------------------------------------------------------------------ (11) explorers

pytest.importorskip("ipywidgets")

from attnbook.widgets import (  # noqa: E402
    basics,
    chunked,
    multihead,
    positional,
    scoring,
    self_attention,
    soft_hard,
)  # noqa: E402
from attnbook.widgets import (
    pointer as pointer_widget,
)

NOT_INTS = [True, False, 1.5, float("nan"), float("inf"), "3", None]
VIEW_ARGUMENTS = {
    "kernel_regression_view": (
        basics.kernel_regression_view,
        {
            "n_train": NOT_INTS + [0, -1],
            "seed": NOT_INTS + [-1],
            "bandwidth": [0.0, -1.0, float("nan"), float("inf"), True, None],
        },
    ),
    "chunked_view": (
        chunked.chunked_view,
        {
            "n": NOT_INTS + [0, 10**9],
            "chunk_size": NOT_INTS + [0],
            "d": NOT_INTS + [0, -1],
            "seed": NOT_INTS + [-1],
        },
    ),
    "multihead_view": (
        multihead.multihead_view,
        {"num_heads": NOT_INTS + [3, 0], "head": NOT_INTS + [0, 3]},
    ),
    "positional_view": (
        positional.positional_view,
        {
            "position": NOT_INTS + [-1, 64],
            "delta": NOT_INTS + [60],
            "dim": NOT_INTS + [0, 3],
            "base": [0.0, float("nan"), True, None],
            "num_positions": NOT_INTS + [0],
        },
    ),
    "scoring_view": (
        scoring.scoring_view,
        {
            "dim": NOT_INTS + [0],
            "scaled": [1, None, "yes"],
            "temperature": [0.0, -1.0, float("nan"), float("inf"), True],
        },
    ),
    "self_attention_view": (
        self_attention.self_attention_view,
        {
            "token": NOT_INTS + [-1, 6],
            "positions": [1, None, "yes"],
            "dim": NOT_INTS + [0],
            "seed": NOT_INTS + [-1],
            "sentence": [None, 3, ""],
        },
    ),
    "soft_hard_view": (
        soft_hard.soft_hard_view,
        {
            "angle": [float("nan"), float("inf"), True, None],
            "length": [0.0, -1.0, float("nan"), True],
            "n_samples": NOT_INTS + [0],
            "seed": NOT_INTS + [-1],
        },
    ),
    "pointer_view": (
        pointer_widget.pointer_view,
        {"text": [None, 3, "", "1e39, 2", "nan", "a, b"]},
    ),
}
VIEW_CASES = [
    (view, name, value)
    for view, (_, arguments) in VIEW_ARGUMENTS.items()
    for name, values in arguments.items()
    for value in values
]


@pytest.mark.parametrize(
    "view, name, value",
    VIEW_CASES,
    ids=[f"{v}-{n}-{x!r}" for v, n, x in VIEW_CASES],
)
def test_views_refuse_bad_arguments_with_a_value_error(view, name, value):
    function = VIEW_ARGUMENTS[view][0]
    with pytest.raises(ValueError):
        function(**{name: value})


def test_views_refuse_a_model_of_another_kind():
    from attnbook.widgets.transformer import cls_attention_view

    for bad in (None, object(), torch.nn.Linear(2, 2)):
        with pytest.raises(ValueError, match="model must be"):
            cls_attention_view(bad)
        with pytest.raises(ValueError, match="model must be"):
            pointer_widget.pointer_view(
                model=bad if bad is not None else object()
            )


def test_pointer_text_box_names_a_number_outside_float32():
    with pytest.raises(ValueError, match="1e39 is too large.*float32"):
        pointer_widget.parse_numbers("1e39, 2")
    assert pointer_widget.parse_numbers("3.4e38, -3.4e38") == [3.4e38, -3.4e38]
    view = pointer_widget.pointer_view("3.4e38, -3.4e38, 1")
    assert view["order"] == [1, 3, 2]


def test_live_explorer_shows_any_error_as_a_message():
    import ipywidgets as widgets
    import matplotlib.pyplot as plt

    from attnbook.widgets._explorer import live_explorer

    def view(x):
        if x == 2:
            raise RuntimeError("deep torch error")
        if x == 3:
            raise ValueError("x must not be 3")
        return x

    def plot(v):
        fig, ax = plt.subplots(figsize=(2, 1))
        ax.plot([0, 1], [0, v])
        return fig

    def update(fig, v):
        line = fig.axes[0].lines[0]
        line.set_ydata([0, v])
        return [line]

    slider = widgets.IntSlider(value=1, min=0, max=5)
    box = live_explorer({"x": slider}, view, plot, update)
    output = box.children[1]
    for value in (2, 3, 1):
        slider.value = value  # raises nothing
        assert output.outputs[0]["data"]["image/png"]
    slider.value = 2
    assert output.outputs[0]["data"]["text/plain"].startswith(
        "<Figure size 400x80"
    )  # the message figure (5 x 1 in)


@pytest.mark.parametrize(
    "limit, message",
    [
        (0, "limit_bytes must be a positive int, got 0"),
        (True, "limit_bytes must be a positive int, got True"),
        (2**63, r"limit_bytes = 9223372036854775808 is too large \(at most"),
    ],
)
def test_a_bad_memory_limit_is_refused_as_require_int_refuses_it(
    limit, message
):
    before = attnbook.matrix_memory_limit()
    with pytest.raises(ValueError, match=message):
        attnbook.set_matrix_memory_limit(limit)
    assert attnbook.matrix_memory_limit() == before

"""Every module and tensor function names a dtype mismatch between its
inputs, instead of failing deep inside PyTorch."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnbook import (
    AdditiveScore,
    BilinearScore,
    MultiHeadAttention,
    PointerNetwork,
    PositionWiseFFN,
    SelfAttention,
    TransformerEncoderBlock,
    attention,
    attention_weights,
    chunked_attention,
    dot_score,
    hard_attention,
    nadaraya_watson,
    scaled_dot_score,
)

from _tensors import seeded_randn

HALF = (torch.float16, torch.bfloat16)


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
    x = seeded_randn(2, 5, 8).to(input_dtype)
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
        seeded_randn(3, 4).to(first),
        seeded_randn(5, 4, seed=1).to(first),
        seeded_randn(5, 2, seed=2).to(first),
    ]
    if function == "nadaraya_watson":
        args = [
            seeded_randn(3).to(first),
            seeded_randn(5, seed=1).to(first),
            seeded_randn(5, seed=2).to(first),
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

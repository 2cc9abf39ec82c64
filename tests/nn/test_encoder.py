"""The Transformer encoder against PyTorch's own modules and direct formulas."""

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

import attnbook
from attnbook import (
    LayerNorm,
    MultiHeadAttention,
    PositionalEncoding,
    TransformerEncoder,
    TransformerEncoderBlock,
)
from attnbook.nn.encoder import PositionWiseFFN, padding_mask

from _refusals import refused


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _torch_layer(d=8, heads=2, ffn=16, seed=0, **kwargs):
    torch.manual_seed(seed)
    options = dict(
        batch_first=True, norm_first=False, activation="relu", dropout=0.0
    )
    options.update(kwargs)
    return nn.TransformerEncoderLayer(d, heads, ffn, **options).eval()


def _randomize(module, seed):
    """Give every parameter random values (LayerNorm weights 1 and biases 0 would hide bugs)."""
    g = _gen(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.5)
    return module


# ---------------------------------------------------------------- LayerNorm


def test_layer_norm_matches_torch_values_and_gradients():
    theirs = _randomize(nn.LayerNorm(6), 1)
    ours = LayerNorm(6)
    ours.load_state_dict(theirs.state_dict())
    x = torch.randn(3, 4, 6, generator=_gen(2), dtype=torch.float64) * 3 + 1
    x1, x2 = x.clone().requires_grad_(), x.clone().requires_grad_()
    theirs.double(), ours.double()
    y1, y2 = ours(x1), theirs(x2)
    torch.testing.assert_close(y1, y2)
    upstream = torch.randn(y1.shape, generator=_gen(3), dtype=torch.float64)
    (y1 * upstream).sum().backward()
    (y2 * upstream).sum().backward()
    torch.testing.assert_close(x1.grad, x2.grad)
    torch.testing.assert_close(ours.weight.grad, theirs.weight.grad)
    torch.testing.assert_close(ours.bias.grad, theirs.bias.grad)


def test_layer_norm_state_dict_names_match_torch():
    assert (
        set(LayerNorm(5).state_dict())
        == set(nn.LayerNorm(5).state_dict())
        == {"weight", "bias"}
    )
    theirs = _randomize(nn.LayerNorm(5, eps=1e-3), 4)
    ours = LayerNorm(5, eps=1e-3)
    ours.load_state_dict(theirs.state_dict())
    x = torch.randn(7, 5, generator=_gen(5))
    torch.testing.assert_close(ours(x), theirs(x))


def test_layer_norm_is_per_token_not_per_feature():
    # Changing one token must not change the normalization of another token.
    x = torch.randn(4, 6, generator=_gen(6))
    y = x.clone()
    y[0] = y[0] * 100 + 7
    torch.testing.assert_close(LayerNorm(6)(x)[1:], LayerNorm(6)(y)[1:])


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_layer_norm_half_precision_matches_torch(dtype):
    theirs = _randomize(nn.LayerNorm(8), 7).to(dtype)
    ours = LayerNorm(8).to(dtype)
    ours.load_state_dict(theirs.state_dict())
    x = (torch.randn(5, 8, generator=_gen(8)) * 50).to(dtype)
    y = ours(x)
    assert y.dtype == dtype
    torch.testing.assert_close(
        y.float(), theirs(x).float(), atol=2e-2, rtol=2e-2
    )


@settings(max_examples=40, deadline=None)
@given(
    rows=st.integers(1, 5),
    dim=st.integers(2, 12),
    scale=st.floats(0.1, 100.0),
    shift=st.floats(-50.0, 50.0),
    seed=st.integers(0, 10_000),
)
def test_layer_norm_gives_mean_zero_variance_one(
    rows, dim, scale, shift, seed
):
    x = (
        torch.randn(rows, dim, generator=_gen(seed), dtype=torch.float64)
        * scale
        + shift
    )
    x[:, 0] += 1.0  # never a constant row (its variance would be 0)
    y = LayerNorm(dim, eps=1e-12).double()(x)
    torch.testing.assert_close(
        y.mean(dim=-1),
        torch.zeros(rows, dtype=torch.float64),
        atol=1e-9,
        rtol=0,
    )
    torch.testing.assert_close(
        y.var(dim=-1, unbiased=False),
        torch.ones(rows, dtype=torch.float64),
        atol=1e-6,
        rtol=0,
    )


def test_layer_norm_bad_input():
    with pytest.raises(ValueError, match="x has 5, dim has 4"):
        LayerNorm(4)(torch.zeros(2, 5))
    with pytest.raises(TypeError, match="floating-point"):
        LayerNorm(4)(torch.zeros(2, 4, dtype=torch.long))
    with pytest.raises(ValueError, match="dim must be a positive int, got 0"):
        LayerNorm(0)
    with pytest.raises(
        ValueError, match="eps must be a positive finite number, got -1"
    ):
        LayerNorm(3, eps=-1)


# ---------------------------------------------------------------- feed-forward


def test_ffn_is_linear_relu_linear():
    torch.manual_seed(0)
    ffn = PositionWiseFFN(4, 10)
    x = torch.randn(2, 3, 4, generator=_gen(9))
    w1, b1, w2, b2 = (
        ffn.linear1.weight,
        ffn.linear1.bias,
        ffn.linear2.weight,
        ffn.linear2.bias,
    )
    torch.testing.assert_close(
        ffn(x), torch.clamp(x @ w1.T + b1, min=0) @ w2.T + b2
    )


def test_ffn_bad_input():
    with pytest.raises(ValueError, match="x has 3, embed_dim has 4"):
        PositionWiseFFN(4, 8)(torch.zeros(2, 3))


# ---------------------------------------------------------------- the block vs torch


def _pair(d=8, heads=2, ffn=16, seed=0):
    layer = _randomize(_torch_layer(d, heads, ffn, seed), seed + 100)
    block = (
        TransformerEncoderBlock(d, heads, ffn).load_torch_weights(layer).eval()
    )
    return block, layer


def test_block_matches_torch_without_mask():
    block, layer = _pair()
    x = torch.randn(3, 5, 8, generator=_gen(10))
    torch.testing.assert_close(block(x), layer(x))
    with torch.no_grad():  # torch's inference fast path
        torch.testing.assert_close(block(x), layer(x))


def test_block_matches_torch_with_padding_mask():
    block, layer = _pair(d=12, heads=3, ffn=20, seed=1)
    x = torch.randn(4, 6, 12, generator=_gen(11))
    lens = torch.tensor([6, 3, 1, 5])
    keep = padding_mask(lens, 6)
    theirs = layer(
        x, src_key_padding_mask=~keep[:, 0, 0]
    )  # torch: True = ignore
    torch.testing.assert_close(block(x, keep), theirs)
    with torch.no_grad():
        fast = layer(x, src_key_padding_mask=~keep[:, 0, 0])
        real = keep[:, 0, 0]
        torch.testing.assert_close(block(x, keep)[real], fast[real])


def test_block_matches_torch_with_square_mask_and_gradients():
    block, layer = _pair(seed=2)
    x = torch.randn(2, 5, 8, generator=_gen(12), requires_grad=True)
    causal = torch.ones(5, 5, dtype=torch.bool).tril()
    ours = block(x, causal)
    theirs = layer(x, src_mask=~causal)
    torch.testing.assert_close(ours, theirs)
    g1 = torch.autograd.grad(ours.sum(), x)[0]
    g2 = torch.autograd.grad(theirs.sum(), x)[0]
    torch.testing.assert_close(g1, g2)


def test_block_weights_rows_sum_to_one_over_kept_keys():
    block, _ = _pair(seed=3)
    x = torch.randn(3, 5, 8, generator=_gen(13))
    keep = padding_mask(torch.tensor([5, 2, 4]), 5)
    y, weights = block(x, keep, return_weights=True)
    assert weights.shape == (3, 2, 5, 5)
    torch.testing.assert_close(weights.sum(-1), torch.ones(3, 2, 5))
    assert (weights.masked_select(~keep.expand_as(weights)) == 0).all()
    torch.testing.assert_close(y, block(x, keep))


@settings(max_examples=40, deadline=None)
@given(
    lens=st.lists(st.integers(0, 5), min_size=1, max_size=4),
    dtype=st.sampled_from([torch.float16, torch.bfloat16, torch.float32]),
    seed=st.integers(0, 1000),
)
def test_block_padded_sequences_stay_finite_in_every_dtype(lens, dtype, seed):
    lens[0] = 0  # always include one fully padded sequence
    torch.manual_seed(seed)
    block = TransformerEncoderBlock(8, 2, 16).to(dtype).eval()
    x = torch.randn(len(lens), 5, 8, generator=_gen(seed)).to(dtype)
    keep = padding_mask(torch.tensor(lens), 5)
    y, weights = block(x, keep, return_weights=True)
    assert y.dtype == dtype
    assert torch.isfinite(y).all() and torch.isfinite(weights).all()
    assert (weights[0] == 0).all()  # no real key: no attention at all
    kept_rows = weights.float().sum(-1)[1:][torch.tensor(lens[1:]) > 0]
    torch.testing.assert_close(
        kept_rows, torch.ones_like(kept_rows), atol=1e-2, rtol=0
    )


def test_block_bad_input():
    block = TransformerEncoderBlock(8, 2, 16)
    with pytest.raises(
        ValueError,
        match=r"x must have shape \(B, n, embed_dim\), got \(5, 8\)",
    ):
        block(torch.zeros(5, 8))
    with pytest.raises(ValueError, match="x has 6, embed_dim has 8"):
        block(torch.zeros(2, 5, 6))
    with pytest.raises(
        ValueError, match=r"2-D mask must be \(n, n\) = \(5, 5\), got \(2, 5\)"
    ):
        block(torch.zeros(2, 5, 8), torch.ones(2, 5, dtype=torch.bool))
    with pytest.raises(TypeError, match="boolean"):
        block(torch.zeros(2, 5, 8), torch.ones(2, 1, 1, 5))
    with pytest.raises(
        ValueError,
        match=r"\(2, 1, 1, 4\) is ambiguous or wrong for multi-head weights \(2, 2, 5, 5\)",
    ):
        block(torch.zeros(2, 5, 8), torch.ones(2, 1, 1, 4, dtype=torch.bool))
    with pytest.raises(
        ValueError,
        match=r"embed_dim \(8\) must be divisible by num_heads \(3\)",
    ):
        TransformerEncoderBlock(8, 3, 16)
    with pytest.raises(ValueError, match="dropout must be a number in"):
        TransformerEncoderBlock(8, 2, 16, dropout=1.5)


def test_load_torch_weights_rejects_other_layers():
    block = TransformerEncoderBlock(8, 2, 16)
    with pytest.raises(TypeError, match="TransformerEncoderLayer, got Linear"):
        block.load_torch_weights(nn.Linear(8, 8))
    with pytest.raises(ValueError, match="pre-norm"):
        block.load_torch_weights(_torch_layer(norm_first=True))
    with pytest.raises(ValueError, match="ReLU"):
        block.load_torch_weights(_torch_layer(activation="gelu"))
    with pytest.raises(
        ValueError,
        match=r"torch layer has \(8, 2, 32\), this block \(8, 2, 16\)",
    ):
        block.load_torch_weights(_torch_layer(ffn=32))
    with pytest.raises(ValueError, match="eps differs"):
        block.load_torch_weights(_torch_layer(layer_norm_eps=1e-6))


def test_block_uses_the_books_multihead_attention():
    block = TransformerEncoderBlock(8, 2, 16)
    assert isinstance(block.self_attn, MultiHeadAttention)
    layer = _torch_layer()
    block.load_torch_weights(layer)
    torch.testing.assert_close(
        block.self_attn.in_proj_weight, layer.self_attn.in_proj_weight
    )


# ---------------------------------------------------------------- stacking


def _encoder(seed=0, **kwargs):
    torch.manual_seed(seed)
    options = dict(
        vocab_size=11,
        embed_dim=8,
        num_heads=2,
        ffn_dim=16,
        num_layers=3,
        max_len=20,
    )
    options.update(kwargs)
    return _randomize(TransformerEncoder(**options), seed + 50).eval()


def test_encoder_is_embedding_positions_then_blocks():
    encoder = _encoder()
    tokens = torch.randint(0, 11, (2, 7), generator=_gen(14))
    lens = torch.tensor([7, 4])
    x = (
        encoder.embedding.weight[tokens]
        + PositionalEncoding(8, 20).encoding[:7]
    )
    keep = padding_mask(lens, 7)
    expected_weights = []
    for block in encoder.blocks:
        x, w = block(x, keep, return_weights=True)
        expected_weights.append(w)
    hidden, weights = encoder(tokens, lens, return_weights=True)
    torch.testing.assert_close(hidden, x)
    torch.testing.assert_close(weights, torch.stack(expected_weights))
    assert weights.shape == (3, 2, 2, 7, 7)


def test_encoder_stack_matches_torch_encoder():
    encoder = _encoder(seed=1)
    layer = _torch_layer()
    stack = nn.TransformerEncoder(
        layer, num_layers=3, enable_nested_tensor=False
    ).eval()
    for i, (ours, theirs) in enumerate(zip(encoder.blocks, stack.layers)):
        _randomize(theirs, 200 + i)
        ours.load_torch_weights(theirs)
    tokens = torch.randint(0, 11, (3, 6), generator=_gen(15))
    lens = torch.tensor([6, 2, 5])
    x = encoder.embed(tokens)
    theirs = stack(x, src_key_padding_mask=~padding_mask(lens, 6)[:, 0, 0])
    torch.testing.assert_close(encoder(tokens, lens), theirs)


def test_encoder_padding_does_not_change_real_tokens():
    encoder = _encoder(seed=2)
    tokens = torch.randint(1, 11, (1, 4), generator=_gen(16))
    padded = torch.cat([tokens, torch.zeros(1, 3, dtype=torch.long)], dim=1)
    torch.testing.assert_close(
        encoder(padded, torch.tensor([4]))[:, :4], encoder(tokens)
    )


def test_encoder_bad_input():
    encoder = _encoder()
    with pytest.raises(ValueError, match=r"token id 11 is outside \[0, 11\)"):
        encoder(torch.tensor([[1, 11]]))
    with pytest.raises(TypeError, match="integer ids"):
        encoder(torch.zeros(1, 3))
    with pytest.raises(
        ValueError, match=r"tokens must have shape \(B, n\), got \(3,\)"
    ):
        encoder(torch.tensor([1, 2, 3]))
    with pytest.raises(
        ValueError,
        match=r"valid_lens of shape \(3,\) must give one length per sequence \(2\)",
    ):
        encoder(torch.ones(2, 3, dtype=torch.long), torch.tensor([1, 2, 3]))
    with pytest.raises(
        ValueError, match="sequence length 21 exceeds max_len 20"
    ):
        encoder(torch.ones(1, 21, dtype=torch.long))
    with pytest.raises(
        ValueError, match=r"valid length 4 is outside \[0, 3\]"
    ):
        encoder(torch.ones(1, 3, dtype=torch.long), [4])


def test_padding_mask_shape_and_values():
    keep = padding_mask([2, 0, 3], 3)
    assert keep.shape == (3, 1, 1, 3)
    assert keep[:, 0, 0].tolist() == [
        [True, True, False],
        [False, False, False],
        [True, True, True],
    ]


def test_erratum_scaling_by_hidden_size_does_not_match_torch():
    # Erratum 3: the source divides by sqrt(hidden size); torch (and the paper) by sqrt(d_head).
    mha = nn.MultiheadAttention(8, 4, batch_first=True).eval()
    x = torch.randn(1, 5, 8, generator=_gen(17))
    _, torch_weights = mha(x, x, x, average_attn_weights=False)
    q, k, _ = F.linear(x, mha.in_proj_weight, mha.in_proj_bias).chunk(
        3, dim=-1
    )
    q, k = (t.unflatten(-1, (4, 2)).transpose(1, 2) for t in (q, k))
    right = torch.softmax(q @ k.transpose(-2, -1) / 2**0.5, dim=-1)
    wrong = torch.softmax(q @ k.transpose(-2, -1) / 8**0.5, dim=-1)
    torch.testing.assert_close(right, torch_weights)
    assert not torch.allclose(wrong, torch_weights, atol=1e-3)


@pytest.mark.parametrize(
    "dtype", [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]
)
def test_encoder_accepts_every_integer_token_dtype(dtype):
    torch.manual_seed(0)
    encoder = TransformerEncoder(10, 8, 2, 16, 1, max_len=16).eval()
    tokens = torch.tensor([[1, 2, 3, 9]])
    assert torch.equal(encoder(tokens.to(dtype)), encoder(tokens))


def test_a_refused_encoder_leaves_the_rng():
    state = torch.get_rng_state()
    with pytest.raises(ValueError):
        attnbook.TransformerEncoder(10, 8, 3, 16, 1)  # 8 not divisible by 3
    assert torch.equal(state, torch.get_rng_state())


def test_layer_norm_refuses_an_eps_that_rounds_to_zero():
    with pytest.raises(ValueError, match="eps"):
        attnbook.LayerNorm(8, eps=1e-50)


def test_padding_mask_refuses_a_huge_lengths_view():
    lengths = torch.tensor([3]).expand(10**9)
    refused(lambda: padding_mask(lengths, 5), ValueError, "valid_lens")


@pytest.mark.parametrize(
    "module, x",
    [
        (LayerNorm(8), torch.randn(2, 5, 8)),
        (PositionWiseFFN(8, 16), torch.randn(2, 5, 8)),
    ],
    ids=["LayerNorm", "PositionWiseFFN"],
)
def test_position_wise_layers_refuse_a_huge_view(module, x):
    view = x[:, :1].expand(2, 10**9, 8)
    refused(lambda: module(view), ValueError, "x, a broadcast view", x)

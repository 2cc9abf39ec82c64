"""Half precision and bfloat16: attention and the modules built on it
neither overflow nor drift from a float32 reference."""

import pytest
import torch

from attnbook import (
    MultiHeadAttention,
    SelfAttention,
    TransformerEncoderBlock,
    attention,
    chunked_attention,
)

from _tensors import seeded_randn

HALF = (torch.float16, torch.bfloat16)


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
    x = seeded_randn(2, 5, 16) * 30
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

"""Chapter 12's model and mask against PyTorch's own: the decoder-only block
against ``nn.TransformerEncoderLayer(norm_first=True)`` under a causal mask,
and ``causal_mask(n_q, n_k)`` against ``causal_lower_right``."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.attention.bias import causal_lower_right

from attnbook import attention, causal_mask
from attnbook.nn.language_model import DecoderOnlyBlock


def block_from_torch(layer: nn.TransformerEncoderLayer) -> DecoderOnlyBlock:
    e = layer.self_attn.embed_dim
    block = DecoderOnlyBlock(
        e, layer.self_attn.num_heads, layer.linear1.out_features
    )
    block.self_attn.load_torch_weights(layer.self_attn)
    for ours, theirs in [
        (block.norm1, layer.norm1),
        (block.norm2, layer.norm2),
        (block.ffn.linear1, layer.linear1),
        (block.ffn.linear2, layer.linear2),
    ]:
        ours.load_state_dict(theirs.state_dict())
    return block.double().eval()


@pytest.mark.parametrize("e, h, ffn, n", [(16, 4, 32, 7), (24, 2, 48, 1)])
def test_block_equals_torch_pre_ln_encoder_layer_with_causal_mask(
    e, h, ffn, n
):
    with torch.random.fork_rng():
        torch.manual_seed(e + n)
        layer = (
            nn.TransformerEncoderLayer(
                e, h, ffn, dropout=0.0, batch_first=True, norm_first=True
            )
            .double()
            .eval()
        )
        x = torch.randn(3, n, e, dtype=torch.float64)
    block = block_from_torch(layer)
    torch_mask = nn.Transformer.generate_square_subsequent_mask(n).double()
    with torch.no_grad():
        expected = layer(x, src_mask=torch_mask, is_causal=True)
        torch.testing.assert_close(block(x), expected, rtol=0, atol=1e-12)
        # the mask matters: without it the outputs differ (when n > 1)
        if n > 1:
            assert not torch.allclose(block(x), layer(x), atol=1e-6)


@pytest.mark.parametrize("n_q, n_k", [(1, 1), (3, 3), (1, 9), (4, 9), (9, 9)])
def test_causal_mask_is_torchs_causal_lower_right(n_q, n_k):
    g = torch.Generator().manual_seed(n_q * 100 + n_k)
    q = torch.randn(2, 2, n_q, 8, generator=g, dtype=torch.float64)
    k = torch.randn(2, 2, n_k, 8, generator=g, dtype=torch.float64)
    v = torch.randn(2, 2, n_k, 8, generator=g, dtype=torch.float64)
    ours, _ = attention(q, k, v, mask=causal_mask(n_q, n_k))
    theirs = F.scaled_dot_product_attention(
        q, k, v, attn_mask=causal_lower_right(n_q, n_k)
    )
    torch.testing.assert_close(ours, theirs, rtol=0, atol=1e-12)

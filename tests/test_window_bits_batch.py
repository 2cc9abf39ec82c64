"""window_bits scores each window on its own: the batch size changes the
speed, not the bits."""

import pytest
import torch

from attnbook.nn.language_model import DecoderOnlyTransformer
from attnbook.tasks.language_model import window_bits


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_window_bits_do_not_depend_on_the_batch_size(dtype):
    torch.manual_seed(0)
    model = DecoderOnlyTransformer(
        11, context_len=16, embed_dim=16, num_heads=2, num_layers=2,
        ffn_dim=32,
    ).to(dtype)  # fmt: skip
    windows = torch.randint(0, 11, (70, 17))
    default = window_bits(model, windows)
    assert default.shape == (70, 16) and default.dtype == torch.float64
    tol = 1e-12 if dtype == torch.float64 else 1e-5
    for batch_size in (1, 7, 32, 64, 70, 128):
        bits = window_bits(model, windows, batch_size=batch_size)
        torch.testing.assert_close(bits, default, rtol=0, atol=tol)

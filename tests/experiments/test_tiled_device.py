"""Chapter 11's ``tiled_attention`` works on the device of its inputs.

Its buffers (output, log-sum-exp, running maximum, accumulator) are made
with ``q.new_*``, so a CUDA input stays on the GPU. Without a GPU the loop is
run on the meta device (shapes without data) with the checks switched off:
a buffer made on the CPU would fail there with torch's device error. Mixed
devices are refused with the book's message.
"""

import pytest
import torch

from attnbook.experiments import io_traffic
from attnbook.experiments.io_traffic import tiled_attention


def test_buffers_follow_the_inputs_device(monkeypatch):
    monkeypatch.setattr(io_traffic, "_check", lambda *args: None)
    q, k, v = (torch.empty(n, 8, device="meta") for n in (10, 13, 13))
    out, lse, memory = tiled_attention(q, k, v, 64)
    assert out.device.type == lse.device.type == "meta"
    assert out.shape == (10, 8) and lse.shape == (10,)
    assert memory.reads > 0


def test_the_meta_check_can_fail(monkeypatch):
    # A buffer made without a device meets the meta inputs in torch.maximum.
    monkeypatch.setattr(io_traffic, "_check", lambda *args: None)
    q = torch.empty(4, 8, device="meta")
    with pytest.raises(RuntimeError):
        torch.maximum(torch.full((4, 1), 0.0), q[:, :1])


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_cuda_inputs_give_a_cuda_output():
    q = torch.randn(37, 16, device="cuda")
    out, lse, _ = tiled_attention(q, q, q, 256)
    expected = torch.softmax(q @ q.T / 4, -1) @ q
    assert out.device.type == "cuda"
    assert torch.allclose(out, expected, atol=1e-5)


def test_mixed_devices_get_a_clear_error(monkeypatch):
    q = torch.randn(4, 8)
    other = torch.device("cuda" if torch.cuda.is_available() else "meta")
    if other.type == "meta":  # stand in for a second device
        monkeypatch.setattr(
            io_traffic, "require_float", lambda name, t: t, raising=True
        )
        monkeypatch.setattr(
            io_traffic, "require_same_dtype", lambda **t: torch.float32
        )
    k = torch.randn(4, 8).to(other)
    with pytest.raises(ValueError, match="share one device"):
        tiled_attention(q, k, q, 64)

"""The recomputing backward pass of chunked_attention: gradients equal plain attention's."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnbook import attention, chunked_attention


def _inputs(shape_q, shape_k, d_v, seed, dtype=torch.float32):
    generator = torch.Generator().manual_seed(seed)
    q = torch.randn(shape_q, generator=generator, dtype=dtype)
    k = torch.randn(shape_k, generator=generator, dtype=dtype)
    v = torch.randn((*shape_k[:-1], d_v), generator=generator, dtype=dtype)
    return [t.requires_grad_() for t in (q, k, v)]


def _grads(output, inputs, grad_output):
    return torch.autograd.grad(output, inputs, grad_output)


@settings(max_examples=40, deadline=None)
@given(
    n_q=st.integers(1, 12),
    n_k=st.integers(1, 40),
    d=st.integers(1, 9),
    d_v=st.integers(1, 6),
    chunk=st.integers(1, 16),
    masked=st.booleans(),
    seed=st.integers(0, 10_000),
)
def test_gradients_equal_plain_attention(
    n_q, n_k, d, d_v, chunk, masked, seed
):
    q, k, v = _inputs((2, n_q, d), (2, n_k, d), d_v, seed)
    generator = torch.Generator().manual_seed(seed + 1)
    mask = (
        torch.rand(2, n_q, n_k, generator=generator) > 0.3 if masked else None
    )
    grad_output = torch.randn(2, n_q, d_v, generator=generator)
    ours = _grads(
        chunked_attention(q, k, v, mask=mask, chunk_size=chunk),
        (q, k, v),
        grad_output,
    )
    plain = _grads(attention(q, k, v, mask=mask)[0], (q, k, v), grad_output)
    for mine, reference in zip(ours, plain):
        assert (mine - reference).abs().max().item() <= 1e-5


def test_gradcheck_in_float64_with_broadcast_batches_and_a_fully_masked_row():
    q, k, v = _inputs((3, 5, 4), (1, 9, 4), 3, seed=0, dtype=torch.float64)
    mask = (
        torch.rand(3, 5, 9, generator=torch.Generator().manual_seed(1)) > 0.4
    )
    mask[:, 0] = False  # query 0 keeps nothing
    assert torch.autograd.gradcheck(
        lambda q, k, v: chunked_attention(q, k, v, mask=mask, chunk_size=2),
        (q, k, v),
    )
    assert torch.autograd.gradcheck(
        lambda q, k, v: chunked_attention(q, k, v, chunk_size=4), (q, k, v)
    )


def test_fully_masked_rows_get_zero_output_and_zero_gradient():
    q, k, v = _inputs((4, 3), (6, 3), 2, seed=2)
    mask = torch.ones(4, 6, dtype=torch.bool)
    mask[1] = False
    out = chunked_attention(q, k, v, mask=mask, chunk_size=4)
    out.sum().backward()
    assert torch.equal(out[1], torch.zeros(2))
    assert torch.equal(q.grad[1], torch.zeros(3))


def test_garbage_in_masked_keys_and_values_reaches_no_gradient():
    q, k, v = _inputs((4, 3), (6, 3), 2, seed=3)
    with torch.no_grad():
        k[5] = float("nan")
        v[5] = float("inf")
    mask = torch.ones(4, 6, dtype=torch.bool)
    mask[:, 5] = False  # key 5 is padding: masked for every query
    out = chunked_attention(q, k, v, mask=mask, chunk_size=4)
    out.sum().backward()
    assert torch.isfinite(out).all()
    assert all(torch.isfinite(t.grad).all() for t in (q, k, v))
    # and the gradients of the real keys equal those of attention over the first five keys alone
    q2, k2, v2 = (
        t.detach().clone().requires_grad_() for t in (q, k[:5], v[:5])
    )
    attention(q2, k2, v2)[0].sum().backward()
    assert torch.allclose(q.grad, q2.grad, atol=1e-6) and torch.allclose(
        k.grad[:5], k2.grad, atol=1e-6
    )
    assert torch.equal(k.grad[5], torch.zeros(3)) and torch.equal(
        v.grad[5], torch.zeros(2)
    )


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_gradients_come_back_in_the_input_dtype_and_close_to_float32(
    dtype,
):
    q, k, v = _inputs((16, 8), (40, 8), 4, seed=4)
    half = [t.detach().to(dtype).requires_grad_() for t in (q, k, v)]
    chunked_attention(*half, chunk_size=16).sum().backward()
    chunked_attention(q, k, v, chunk_size=16).sum().backward()
    for low, full in zip(half, (q, k, v)):
        assert low.grad.dtype == dtype
        assert (low.grad.float() - full.grad).abs().max().item() < (
            2e-2 if dtype == torch.float16 else 1e-1
        )


def test_the_forward_saves_no_n_by_n_matrix():
    """What the autograd graph keeps: q, k, v, the output and one number per query."""
    q, k, v = _inputs((64, 8), (64, 8), 8, seed=5)
    saved = []
    with torch.autograd.graph.saved_tensors_hooks(
        lambda t: saved.append(t.numel()) or t, lambda t: t
    ):
        chunked_attention(q, k, v, chunk_size=16)
    assert max(saved) == 64 * 8 and sum(saved) == 4 * 64 * 8 + 64


def test_autograd_through_the_blocks_is_still_available_and_agrees():
    q, k, v = _inputs((10, 4), (30, 4), 3, seed=6)
    a = _grads(
        chunked_attention(q, k, v, chunk_size=7, recompute_backward=False),
        (q, k, v),
        torch.ones(10, 3),
    )
    b = _grads(
        chunked_attention(q, k, v, chunk_size=7), (q, k, v), torch.ones(10, 3)
    )
    assert all((x - y).abs().max().item() <= 1e-6 for x, y in zip(a, b))

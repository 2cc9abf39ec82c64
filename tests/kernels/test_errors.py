"""Bad input to the kernels gets the book's clear errors, before any work."""

import math

import pytest
import torch

from attnbook import flash_attention, flash_decoding, paged_decoding
from attnbook.kernels.api import paged_cache, triton_softmax


def qkv(n_q=8, n_k=8, d=16):
    return (torch.randn(1, 2, n, d) for n in (n_q, n_k, n_k))


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda q, k, v: flash_attention(q[0], k, v), ValueError, "heads, n"),
        (lambda q, k, v: flash_attention(q.double(), k, v), TypeError, "float32"),
        (lambda q, k, v: flash_attention(q.int(), k, v), TypeError, "floating"),
        (lambda q, k, v: flash_attention(q, k.half(), v), ValueError, "share a dtype"),
        (lambda q, k, v: flash_attention(q, k[..., :8], v), ValueError, "keys and values"),
        (lambda q, k, v: flash_attention(q[..., :8], k[..., :8], v[..., :8]), None, None),
        (lambda q, k, v: flash_attention(q, k, v[:, :1]), ValueError, "heads"),
        (lambda q, k, v: flash_attention(q, k, v, causal=1), TypeError, "causal"),
        (lambda q, k, v: flash_attention(q, k[:, :, :3], v[:, :, :3], causal=True), ValueError, "n_q <= n_k"),
        (lambda q, k, v: flash_attention(q * math.nan, k, v), ValueError, "NaN"),
        (lambda q, k, v: flash_attention(q, k * math.inf, v), ValueError, "infinite"),
        (lambda q, k, v: flash_attention(q[:, :, :0], k, v), ValueError, "none of them 0"),
        (lambda q, k, v: flash_attention(q.bfloat16(), k.bfloat16(), v.bfloat16()), TypeError, "11584"),
        (lambda q, k, v: flash_attention(q, k.to("meta"), v), ValueError, "meta"),
        (lambda q, k, v: flash_attention("q", k, v), TypeError, "torch.Tensor"),
        (lambda q, k, v: flash_decoding(q, k, v), ValueError, "one position"),
        (lambda q, k, v: flash_decoding(q[:, :, :1], k, v, split_size=0), ValueError, "split_size"),
        (lambda q, k, v: triton_softmax(torch.ones(3, 0)), ValueError, "n >= 1"),
    ],
)  # fmt: skip
def test_bad_input_is_refused_clearly(call, error, words):
    q, k, v = qkv()
    before = [t.clone() for t in (q, k, v)]
    if error is None:  # the control: a fitting call runs
        call(q, k, v)
        return
    with pytest.raises(error, match=words):
        call(q, k, v)
    assert all(torch.equal(a, b) for a, b in zip(before, (q, k, v)))


def test_head_size_above_128_is_refused():
    q, k, v = qkv(4, 4, 129)
    with pytest.raises(ValueError, match="d = 129 is above 128"):
        flash_attention(q, k, v)


def paged_inputs():
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 2, n, 8, generator=g) for n in (1, 20, 20))
    return (q, *paged_cache(k, v, 8, g))


@pytest.mark.parametrize(
    "change, error, words",
    [
        (lambda a: (a[0][:, :1], *a[1:]), ValueError, "query must have shape"),
        (lambda a: (a[0], a[1], a[2][:-1], *a[3:]), ValueError, "one shape"),
        (lambda a: (*a[:3], a[3].float(), a[4]), TypeError, "integers"),
        (lambda a: (*a[:3], a[3][:1], a[4]), ValueError, "block_table"),
        (lambda a: (*a[:3], a[3] + 100, a[4]), ValueError, "outside"),
        (lambda a: (*a[:4], a[4] * 0), ValueError, "lengths must be between 1 and 24"),
        (lambda a: (*a[:4], a[4][:1]), ValueError, "lengths must"),
    ],
)  # fmt: skip
def test_bad_paged_input_is_refused(change, error, words):
    args = change(paged_inputs())
    with pytest.raises(error, match=words):
        paged_decoding(*args)


def test_a_problem_too_big_for_the_interpreter_is_refused():
    if torch.cuda.is_available():
        pytest.skip("CPU tensors only")
    q = torch.zeros(1, 1, 1, 64).expand(1, 64, 2048, 64)
    with pytest.raises(ValueError, match="interpreter"):
        flash_attention(q, q, q)
    with pytest.raises(ValueError, match="interpreter"):
        triton_softmax(torch.zeros(1, 1).expand(2**20, 256))


def test_bad_key_pages_are_named():
    q, key_pages, value_pages, table, lengths = paged_inputs()
    bad = key_pages.clone()
    bad[-1, 0, 0, 0] = math.nan  # the last page: a full check finds it
    with pytest.raises(ValueError, match="key_pages holds NaN"):
        paged_decoding(q, bad, value_pages, table, lengths)
    with pytest.raises(ValueError, match="key_pages torch.float16"):
        paged_decoding(q, key_pages.half(), value_pages, table, lengths)

"""Flash-Decoding, the paged decoding kernel and the row softmax (chapter
16) against ``attention`` and ``torch.softmax``; the paged cache's pages
really are shuffled."""

import pytest
import torch

from attnbook import attention, flash_decoding, paged_decoding
from attnbook.kernels.api import paged_cache, triton_softmax

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def step(b, h, n, d, seed=0):
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(b, h, m, d, generator=g) for m in (1, n, n))
    return q.to(DEVICE), k.to(DEVICE), v.to(DEVICE)


@pytest.mark.parametrize("split_size", [7, 16, 50, 300])
def test_flash_decoding_equals_attention(split_size):
    q, k, v = step(2, 3, 77, 20)
    out = flash_decoding(q, k, v, split_size=split_size)
    assert out.shape == (2, 3, 1, 20)
    assert torch.allclose(out, attention(q, k, v)[0], atol=1e-6, rtol=0)


def test_flash_decoding_merges_by_log_sum_exp():
    # Each split's log-sum-exp, merged, is the log-sum-exp of all scores.
    from attnbook.kernels import flash_decoding as module

    q, k, v = step(1, 2, 45, 8)
    rows = [t.reshape(2, -1, 8).contiguous() for t in (q, k, v)]
    _, parts = module.flash_decode(rows[0][:, 0], rows[1], rows[2], 16)
    scores = (q @ k.transpose(-1, -2)).reshape(2, 45) / 8**0.5
    assert parts.shape == (2, 3)
    assert torch.allclose(parts.logsumexp(-1), scores.logsumexp(-1))
    first = scores[:, :16].logsumexp(-1)
    assert torch.allclose(parts[:, 0], first, atol=1e-6)


def test_paged_decoding_reads_through_the_block_table():
    q, k, v = step(2, 3, 70, 24)
    g = torch.Generator().manual_seed(3)
    key_pages, value_pages, table, lengths = paged_cache(k, v, 16, g)
    assert table.tolist() != sorted(table.flatten().tolist())  # shuffled
    out = paged_decoding(q, key_pages, value_pages, table, lengths)
    assert torch.allclose(out, attention(q, k, v)[0], atol=1e-6, rtol=0)
    # An identity block table reads the wrong pages: the check can fail.
    identity = torch.arange(table.numel()).view(table.shape).to(table)
    wrong = paged_decoding(q, key_pages, value_pages, identity, lengths)
    assert not torch.allclose(wrong, out, atol=1e-3)


def test_paged_decoding_with_ragged_lengths():
    q, k, v = step(2, 1, 40, 16)
    key_pages, value_pages, table, _ = paged_cache(k, v, 16)
    lengths = torch.tensor([40, 17], device=DEVICE)
    out = paged_decoding(q, key_pages, value_pages, table, lengths)
    short = attention(q[1:], k[1:, :, :17], v[1:, :, :17])[0]
    assert torch.allclose(out[1:], short, atol=1e-6, rtol=0)
    assert torch.allclose(out[:1], attention(q[:1], k[:1], v[:1])[0])


def test_paged_cache_leaves_the_global_random_state_alone():
    q, k, v = step(1, 1, 20, 8)
    before = torch.random.get_rng_state()
    paged_cache(k, v, 8, torch.Generator().manual_seed(0))
    assert torch.equal(before, torch.random.get_rng_state())


@pytest.mark.parametrize("shape", [(1, 1), (3, 7), (2, 5, 130)])
def test_triton_softmax_equals_torch(shape):
    x = torch.randn(shape, generator=torch.Generator().manual_seed(0))
    x = x.to(DEVICE)
    assert torch.allclose(triton_softmax(x), x.softmax(-1), atol=1e-7)


def test_paged_cache_of_a_long_cache_is_no_kernel_work():
    # paged_cache only rearranges: the interpreter's size limit is not its
    k = torch.zeros(1, 1, 1, 128).expand(2, 8, 300, 128)
    key_pages, _, table, _ = paged_cache(k, k, 16)
    assert key_pages.shape == (2 * 19, 8, 16, 128)
    assert table.shape == (2, 19)

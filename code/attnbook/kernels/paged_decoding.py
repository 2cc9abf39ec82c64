"""A decoding step over a paged key-value cache (Kwon et al., 2023, vLLM's
PagedAttention).

A serving system does not keep each sequence's keys in one contiguous
tensor: it hands out fixed-size pages from a shared pool as sequences grow,
and a block table lists, for each sequence, which physical page holds its
logical page 0, 1, 2, ... The kernel is the decoding kernel with one change:
before loading a page of keys and values it reads the page's number from
the block table. One program per (sequence, head).
"""

import torch

from ._launch import launch, tl, triton


@triton.jit
def paged_kernel(
    Q, K_pages, V_pages, Table, Lengths, Out, heads, d, scale, table_width,
    PAGE: tl.constexpr, BLOCK_D: tl.constexpr,
):  # fmt: skip
    seq, head = tl.program_id(0), tl.program_id(1)
    dims, slots = tl.arange(0, BLOCK_D), tl.arange(0, PAGE)
    bh = seq * heads + head
    q = tl.load(Q + bh * d + dims, mask=dims < d, other=0.0).to(tl.float32)
    length = tl.load(Lengths + seq)
    m = tl.full([], float("-inf"), tl.float32)  # running maximum
    total = tl.zeros([], tl.float32)  # running sum
    acc = tl.zeros([BLOCK_D], tl.float32)
    for page in range(0, tl.cdiv(length, PAGE)):
        physical = tl.load(Table + seq * table_width + page)  # the lookup
        positions = page * PAGE + slots
        ok = (positions[:, None] < length) & (dims[None, :] < d)
        at = ((physical * heads + head) * PAGE + slots)[:, None] * d
        k = tl.load(K_pages + at + dims[None, :], mask=ok, other=0.0)
        v = tl.load(V_pages + at + dims[None, :], mask=ok, other=0.0)
        s = tl.sum(q[None, :] * k.to(tl.float32), 1) * scale
        s = tl.where(positions < length, s, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, 0))
        p = tl.exp(s - m_new)
        alpha = tl.exp(m - m_new)
        total = total * alpha + tl.sum(p, 0)
        acc = acc * alpha + tl.sum(p[:, None] * v.to(tl.float32), 0)
        m = m_new
    tl.store(Out + bh * d + dims, (acc / total).to(Out.dtype.element_ty),
             mask=dims < d)  # fmt: skip


def paged_decode(q, key_pages, value_pages, block_table, lengths):
    """q (B, H, d); key_pages, value_pages (pages, H, page_size, d);
    block_table (B, table_width) int32; lengths (B,) int32. Returns the
    output (B, H, d)."""
    (batch, heads, d), page = q.shape, key_pages.shape[2]
    out = torch.empty_like(q)
    args = (q, key_pages, value_pages, block_table, lengths, out, heads, d,
            d**-0.5, block_table.shape[1])  # fmt: skip
    meta = dict(PAGE=page, BLOCK_D=max(16, triton.next_power_of_2(d)))
    launch(
        paged_kernel,
        lambda b: (batch, heads),
        args,
        meta,
        {},
        [((), 4, 2)],
    )
    return out

"""Flash-Decoding (Dao, Haziza, Massa and Sizov, 2023): one query against a
long cache, the keys split across programs.

At a decoding step each head has one query, so FlashAttention's grid (one
program per query block and head) would start only batch x heads programs
and leave most of the GPU idle. Flash-Decoding also splits the keys: program
(s, bh) runs the online softmax over split s alone and writes its partial
output and log-sum-exp; ``merge_kernel`` then combines the splits, each
weighted by exp(its log-sum-exp - the total's), chapter 11's merge of two
streaming states.
"""

import torch

from ._launch import launch, tl, triton


@triton.jit
def split_kernel(
    Q, K, V, O_part, LSE_part, n_k, d, scale, split_size, n_splits,
    BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
):  # fmt: skip
    split, bh = tl.program_id(0), tl.program_id(1)
    dims = tl.arange(0, BLOCK_D)
    q = tl.load(Q + bh * d + dims, mask=dims < d, other=0.0).to(tl.float32)
    lo = split * split_size
    hi = tl.minimum(lo + split_size, n_k)
    m = tl.full([], float("-inf"), tl.float32)  # running maximum
    total = tl.zeros([], tl.float32)  # running sum
    acc = tl.zeros([BLOCK_D], tl.float32)
    for j in range(lo, hi, BLOCK_N):
        keys = j + tl.arange(0, BLOCK_N)
        kv_ok = (keys[:, None] < hi) & (dims[None, :] < d)
        kv_at = bh * n_k * d + keys[:, None] * d + dims[None, :]
        k = tl.load(K + kv_at, mask=kv_ok, other=0.0).to(tl.float32)
        v = tl.load(V + kv_at, mask=kv_ok, other=0.0).to(tl.float32)
        s = tl.sum(q[None, :] * k, 1) * scale  # one query: no tl.dot
        s = tl.where(keys < hi, s, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, 0))
        p = tl.exp(s - m_new)
        alpha = tl.exp(m - m_new)
        total = total * alpha + tl.sum(p, 0)
        acc = acc * alpha + tl.sum(p[:, None] * v, 0)
        m = m_new
    part = bh * n_splits + split
    tl.store(O_part + part * d + dims, acc / total, mask=dims < d)
    tl.store(LSE_part + part, m + tl.log(total))


@triton.jit
def merge_kernel(
    O_part, LSE_part, Out, d, n_splits,
    BLOCK_S: tl.constexpr, BLOCK_D: tl.constexpr,
):  # fmt: skip
    bh = tl.program_id(0)
    splits, dims = tl.arange(0, BLOCK_S), tl.arange(0, BLOCK_D)
    at = bh * n_splits + splits
    lse = tl.load(LSE_part + at, mask=splits < n_splits, other=float("-inf"))
    ok = (splits[:, None] < n_splits) & (dims[None, :] < d)
    parts = tl.load(O_part + at[:, None] * d + dims[None, :], mask=ok, other=0)
    weight = tl.exp(lse - tl.max(lse, 0))  # each split's share of the sum
    out = tl.sum(weight[:, None] * parts, 0) / tl.sum(weight, 0)
    tl.store(Out + bh * d + dims, out.to(Out.dtype.element_ty), mask=dims < d)


def flash_decode(q, k, v, split_size: int, blocks=None):
    """Attention of one query per batch-head, q (BH, d), over contiguous k
    and v (BH, n_k, d), the keys split into parts of ``split_size``.
    Returns the output (BH, d) and the partial log-sum-exps (BH, splits)."""
    (bh, n_k, d), n_splits = k.shape, triton.cdiv(k.shape[1], split_size)
    o_part = torch.empty(bh, n_splits, d, device=q.device)
    lse_part = torch.empty(bh, n_splits, device=q.device)
    block_d = max(16, triton.next_power_of_2(d))
    args = (q, k, v, o_part, lse_part, n_k, d, d**-0.5, split_size, n_splits)
    launch(
        split_kernel,
        lambda b: (n_splits, bh),
        args,
        dict(BLOCK_D=block_d),
        blocks,
        [((64,), 4, 2), ((128,), 4, 2), ((32,), 2, 2)],
    )
    out = torch.empty_like(q)
    block_s = max(2, triton.next_power_of_2(n_splits))
    merge_kernel[(bh,)](o_part, lse_part, out, d, n_splits,
                        BLOCK_S=block_s, BLOCK_D=block_d)  # fmt: skip
    return out, lse_part

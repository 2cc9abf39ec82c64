"""FlashAttention-2's backward pass as two Triton kernels (Dao 2023,
Algorithm 2).

Nothing of size n_q x n_k was stored: each kernel recomputes the scores and
P = exp(S - L) from the saved log-sum-exp L. With D = rowsum(dO * O), the
gradient of the scores is dS = P * (dP - D), where dP = dO V^T (chapter 11).
``dkdv_kernel``: one program per (block of keys, batch-head) holds dK and dV
in registers and loops over the query blocks that see its keys;
``dq_kernel``: one program per (block of queries, batch-head) holds dQ and
loops over the key blocks its queries see. Two kernels, so that no program
ever adds into another's output (no atomic additions). With ``CAUSAL`` both
loops skip the blocks the mask removes.
"""

import torch

from ._launch import launch, tl, triton

LOG2_E = 1.4426950408889634


@triton.jit
def dkdv_kernel(
    Q, K, V, dO, LSE, Delta, dK, dV, n_q, n_k, d, scale,
    CAUSAL: tl.constexpr, PRECISION: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
):  # fmt: skip
    start, bh = tl.program_id(0) * BLOCK_N, tl.program_id(1)
    keys, dims = start + tl.arange(0, BLOCK_N), tl.arange(0, BLOCK_D)
    kv_ok = (keys[:, None] < n_k) & (dims[None, :] < d)
    kv_at = bh * n_k * d + keys[:, None] * d + dims[None, :]
    k = tl.load(K + kv_at, mask=kv_ok, other=0.0)
    v = tl.load(V + kv_at, mask=kv_ok, other=0.0)
    dk = tl.zeros([BLOCK_N, BLOCK_D], tl.float32)
    dv = tl.zeros([BLOCK_N, BLOCK_D], tl.float32)
    offset, first = n_k - n_q, 0  # query i sits at position i + offset
    if CAUSAL:  # skip the query blocks that end before these keys
        first = tl.maximum(start - offset, 0) // BLOCK_M * BLOCK_M
    for i in range(first, n_q, BLOCK_M):
        rows = i + tl.arange(0, BLOCK_M)
        q_ok = (rows[:, None] < n_q) & (dims[None, :] < d)
        q_at = bh * n_q * d + rows[:, None] * d + dims[None, :]
        q = tl.load(Q + q_at, mask=q_ok, other=0.0)
        do = tl.load(dO + q_at, mask=q_ok, other=0.0)
        lse = tl.load(LSE + bh * n_q + rows, mask=rows < n_q, other=0.0)
        delta = tl.load(Delta + bh * n_q + rows, mask=rows < n_q, other=0.0)
        s = tl.dot(q, tl.trans(k), input_precision=PRECISION) * scale
        keep = (rows[:, None] < n_q) & (keys[None, :] < n_k)
        if CAUSAL:
            keep = keep & (keys[None, :] <= rows[:, None] + offset)
        p = tl.where(keep, tl.exp2(s - lse[:, None] * 1.4426950408889634), 0)
        dv += tl.dot(tl.trans(p.to(do.dtype)), do, input_precision=PRECISION)
        dp = tl.dot(do, tl.trans(v), input_precision=PRECISION)
        ds = p * (dp - delta[:, None])  # dS = P * (dP - D)
        dk += tl.dot(tl.trans(ds.to(q.dtype)), q, input_precision=PRECISION)
    dk = dk * scale / 1.4426950408889634  # d(scale * q.k)/dk, base e
    tl.store(dK + kv_at, dk.to(dK.dtype.element_ty), mask=kv_ok)
    tl.store(dV + kv_at, dv.to(dV.dtype.element_ty), mask=kv_ok)


@triton.jit
def dq_kernel(
    Q, K, V, dO, LSE, Delta, dQ, n_q, n_k, d, scale,
    CAUSAL: tl.constexpr, PRECISION: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
):  # fmt: skip
    start, bh = tl.program_id(0) * BLOCK_M, tl.program_id(1)
    rows, dims = start + tl.arange(0, BLOCK_M), tl.arange(0, BLOCK_D)
    q_ok = (rows[:, None] < n_q) & (dims[None, :] < d)
    q_at = bh * n_q * d + rows[:, None] * d + dims[None, :]
    q = tl.load(Q + q_at, mask=q_ok, other=0.0)
    do = tl.load(dO + q_at, mask=q_ok, other=0.0)
    lse = tl.load(LSE + bh * n_q + rows, mask=rows < n_q, other=0.0)
    delta = tl.load(Delta + bh * n_q + rows, mask=rows < n_q, other=0.0)
    dq = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
    offset, end = n_k - n_q, n_k
    if CAUSAL:  # stop at the diagonal
        end = tl.minimum(n_k, start + BLOCK_M + offset)
    for j in range(0, end, BLOCK_N):
        keys = j + tl.arange(0, BLOCK_N)
        kv_ok = (keys[:, None] < n_k) & (dims[None, :] < d)
        kv_at = bh * n_k * d + keys[:, None] * d + dims[None, :]
        k = tl.load(K + kv_at, mask=kv_ok, other=0.0)
        v = tl.load(V + kv_at, mask=kv_ok, other=0.0)
        s = tl.dot(q, tl.trans(k), input_precision=PRECISION) * scale
        keep = (rows[:, None] < n_q) & (keys[None, :] < n_k)
        if CAUSAL:
            keep = keep & (keys[None, :] <= rows[:, None] + offset)
        p = tl.where(keep, tl.exp2(s - lse[:, None] * 1.4426950408889634), 0)
        dp = tl.dot(do, tl.trans(v), input_precision=PRECISION)
        ds = p * (dp - delta[:, None])
        dq += tl.dot(ds.to(k.dtype), k, input_precision=PRECISION)
    dq = dq * scale / 1.4426950408889634
    tl.store(dQ + q_at, dq.to(dQ.dtype.element_ty), mask=q_ok)


DKDV_GPU_BLOCKS = [  # (BLOCK_M, BLOCK_N), num_warps, num_stages: autotuned
    ((32, 128), 4, 3), ((64, 64), 4, 3),
]  # fmt: skip
DQ_GPU_BLOCKS = [((128, 32), 4, 3), ((64, 64), 4, 3)]


def flash_backward(q, k, v, out, lse, grad_out, causal: bool, blocks=None):
    """(dq, dk, dv) of contiguous q (BH, n_q, d), k, v (BH, n_k, d), given
    the forward's output and log-sum-exp (BH, n_q) and the output's
    gradient (BH, n_q, d)."""
    (bh, n_q, d), n_k = q.shape, k.shape[1]
    delta = (grad_out.float() * out.float()).sum(-1)  # D = rowsum(dO * O)
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    meta = dict(
        CAUSAL=causal,
        PRECISION="ieee" if q.dtype == torch.float32 else "tf32",
        BLOCK_D=max(16, triton.next_power_of_2(d)),
    )
    shared = (q, k, v, grad_out, lse, delta)
    sizes = (n_q, n_k, d, d**-0.5 * LOG2_E)
    launch(
        dkdv_kernel,
        lambda b: (triton.cdiv(n_k, b["BLOCK_N"]), bh),
        (*shared, dk, dv, *sizes),
        meta,
        blocks,
        DKDV_GPU_BLOCKS,
    )
    launch(
        dq_kernel,
        lambda b: (triton.cdiv(n_q, b["BLOCK_M"]), bh),
        (*shared, dq, *sizes),
        meta,
        blocks,
        DQ_GPU_BLOCKS,
    )
    return dq, dk, dv

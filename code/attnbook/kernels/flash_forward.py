"""FlashAttention-2's forward pass as a Triton kernel (Dao 2023, Algorithm 1).

One program per (block of BLOCK_M queries, batch-head). It keeps its
queries, the running maximum m, the running sum of exponentials (ℓ in
chapter 11) and the output accumulator in registers while blocks of BLOCK_N
keys and values stream past (chapter 11's online softmax), and writes the
output and the log-sum-exp L = m + log ℓ, all the backward pass needs.
With ``CAUSAL`` the loop stops at the diagonal: blocks above it are never
loaded (block skipping), and only the blocks that straddle the diagonal or
the end of the keys are masked.
Scores are kept in base 2 (exp2 is the GPU's native exponential):
2^(s log2 e) = e^s.
"""

import torch

from ._launch import launch, tl, triton

LOG2_E = 1.4426950408889634


@triton.jit
def flash_forward_kernel(
    Q, K, V, Out, LSE, n_q, n_k, d, scale,
    CAUSAL: tl.constexpr, PRECISION: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
):  # fmt: skip
    start, bh = tl.program_id(0) * BLOCK_M, tl.program_id(1)
    rows = start + tl.arange(0, BLOCK_M)  # this program's queries
    dims = tl.arange(0, BLOCK_D)  # head dimensions, padded to a power of 2
    Q, K, V = Q + bh * n_q * d, K + bh * n_k * d, V + bh * n_k * d
    q_ok = (rows[:, None] < n_q) & (dims[None, :] < d)
    q = tl.load(Q + rows[:, None] * d + dims[None, :], mask=q_ok, other=0.0)
    m = tl.full([BLOCK_M], float("-inf"), tl.float32)  # running maximum
    total = tl.zeros([BLOCK_M], tl.float32)  # running sum of exponentials
    acc = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)  # running sum of p v
    offset = n_k - n_q  # query i sits at position i + offset (bottom right)
    end, unmasked = n_k, n_k // BLOCK_N * BLOCK_N
    if CAUSAL:  # skip the blocks above the diagonal; mask those on it
        end = tl.minimum(n_k, start + BLOCK_M + offset)
        unmasked = (start + offset + 1) // BLOCK_N * BLOCK_N
    for j in range(0, end, BLOCK_N):
        keys = j + tl.arange(0, BLOCK_N)
        kv_ok = (keys[:, None] < n_k) & (dims[None, :] < d)
        kv_at = keys[:, None] * d + dims[None, :]
        k = tl.load(K + kv_at, mask=kv_ok, other=0.0)
        v = tl.load(V + kv_at, mask=kv_ok, other=0.0)
        s = tl.dot(q, tl.trans(k), input_precision=PRECISION) * scale
        if j >= unmasked:  # a block on the diagonal or past the last key
            keep = keys[None, :] < n_k
            if CAUSAL:
                keep = keep & (keys[None, :] <= rows[:, None] + offset)
            s = tl.where(keep, s, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, 1))
        p = tl.exp2(s - m_new[:, None])
        alpha = tl.exp2(m - m_new)  # rescales what was summed so far
        total = total * alpha + tl.sum(p, 1)
        pv = tl.dot(p.to(v.dtype), v, input_precision=PRECISION)
        acc = acc * alpha[:, None] + pv
        m = m_new
    out = acc / total[:, None]
    tl.store(Out + bh * n_q * d + rows[:, None] * d + dims[None, :],
             out.to(Out.dtype.element_ty), mask=q_ok)  # fmt: skip
    lse = (m + tl.log2(total)) / 1.4426950408889634  # back to base e
    tl.store(LSE + bh * n_q + rows, lse, mask=rows < n_q)


GPU_BLOCKS = [  # (BLOCK_M, BLOCK_N), num_warps, num_stages: autotuned
    ((128, 64), 4, 3), ((128, 64), 8, 3), ((64, 64), 4, 4),
]  # fmt: skip


def flash_forward(q, k, v, causal: bool, blocks=None):
    """Output (BH, n_q, d) and log-sum-exp (BH, n_q), float32, of contiguous
    q (BH, n_q, d), k and v (BH, n_k, d). ``blocks``: e.g. ``{"BLOCK_M": 16,
    "BLOCK_N": 16}``; by default tuned (``_launch.launch``)."""
    (bh, n_q, d), n_k = q.shape, k.shape[1]
    out = torch.empty_like(q)
    lse = torch.empty(bh, n_q, device=q.device, dtype=torch.float32)
    args = (q, k, v, out, lse, n_q, n_k, d, d**-0.5 * LOG2_E)
    meta = dict(
        CAUSAL=causal,
        PRECISION="ieee" if q.dtype == torch.float32 else "tf32",
        BLOCK_D=max(16, triton.next_power_of_2(d)),
    )

    def grid(blocks):
        return (triton.cdiv(n_q, blocks["BLOCK_M"]), bh)

    launch(flash_forward_kernel, grid, args, meta, blocks, GPU_BLOCKS)
    return out, lse

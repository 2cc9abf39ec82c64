"""Attention at scale: chunked attention with an online softmax, and tools to
measure it.

Plain attention builds the whole score matrix, (..., n_q, n_k) numbers, before
its softmax. ``chunked_attention`` feeds the keys and values in blocks of
``chunk_size`` to a ``StreamingAttention``, which keeps three running
quantities per query: the largest score seen so far, the sum of exponentials
relative to it, and the matching weighted sum of values. When a new block
raises the maximum, the old sums are rescaled by exp(old max - new max). The
result equals the softmax exactly (up to float rounding) while only one score
block of (..., n_q, chunk_size) numbers exists at a time.

Masks follow the book (True = keep). Masked scores are set to the dtype's most
negative finite number, never -inf, so no step computes inf - inf = NaN, in any
dtype; a query with every key masked gets a zero output, as in ``attention``.

Skipping. A block the mask drops entirely adds nothing: its exp() are all 0,
and the running sums are multiplied by exp(m - m) = 1. So when the mask drops
whole tiles of (QUERY_BLOCK * chunk_size queries) x (chunk_size keys), e.g.
the far past under a sliding window or the future under a causal mask, the
queries are taken in blocks too and each block meets only the key blocks it
keeps something of: with a window of w keys the work grows like n * w, not
n^2.

Training: ``RecomputingChunkedAttention`` gives chunked attention a backward
pass that keeps only the output and one log-sum-exp per query and rebuilds each
block's weights (FlashAttention-2's backward). Measuring what all this costs
lives in ``attnbook.measure.timing``.
"""

import math

import torch
import torch.nn.functional as F

from .._checks import (
    all_finite,
    broadcast_shapes,
    compute_dtype,
    require_bool_mask,
    require_float,
    require_positive,
    require_qkv,
)
from ._nonfinite import (
    drop_masked_garbage,
    scores_surely_finite,
    scores_with_partly_masked_garbage,
    weighted_values,
)
from .attention import attention
from .scoring import dot_score, scaled_dot_score

DEFAULT_CHUNK_SIZE = 128
# Queries are skipped in blocks of QUERY_BLOCK * chunk_size rows: every tile
# costs a fixed overhead (checks, a dozen small operations), so taller tiles
# pay it less often. At n = 8,192 (one thread) 4 takes a causal mask from 713
# to 366 ms and a window of 256 from 92 to 109 ms (1: one chunk of rows).
QUERY_BLOCK = 4


def _lowest(dtype: torch.dtype) -> float:
    """The most negative finite number of ``dtype``: exp(lowest - m) is 0,
    and never NaN."""
    return torch.finfo(dtype).min


class StreamingAttention:
    """Scaled dot-product attention for fixed queries, fed the keys one block
    at a time.

    queries: (..., n_q, d). Call ``update(keys, values, mask)`` with blocks
    keys (..., c, d), values (..., c, d_v) and an optional boolean mask
    broadcastable to (..., n_q, c), True = keep; then ``output()`` returns
    (..., n_q, d_v), equal to ``attention`` over all the blocks together.
    The state, per query: ``maximum`` (..., n_q, 1), the largest kept score so
    far (the dtype's lowest finite number while nothing is kept); ``total``
    (..., n_q, 1), the sum of exp(score - maximum); ``weighted`` (..., n_q,
    d_v), the sum of exp(score - maximum) * value (0 before the first block).
    Memory: O(n_q * (c + d_v)), whatever the number of keys. A masked score is
    set to ``lowest`` and a row that has kept nothing yet is shifted by 0, not
    by its maximum, so its exp() gives 0, never exp(0) = 1.
    """

    def __init__(self, queries: torch.Tensor):
        require_float("queries", queries)
        if queries.dim() < 2:
            raise ValueError(
                f"queries need shape (..., n_q, d), got {tuple(queries.shape)}"
            )
        if queries.shape[-1] == 0:
            raise ValueError(
                "queries need a feature size d >= 1 (scores divide by "
                f"sqrt(d)), got {tuple(queries.shape)}"
            )
        self.queries, self.dtype = queries, queries.dtype
        # The running state is kept in float32 for float16/bfloat16 inputs (as
        # FlashAttention does): in float16 the running sum overflows past
        # 65,504 keys. output() returns the input dtype.
        work = compute_dtype(queries.dtype)
        # The scaling of scaled_dot_score, applied once: dot_score(q / sqrt(d),
        # k) per block.
        self.scaled_queries = queries.to(work) * (
            1.0 / math.sqrt(queries.shape[-1])
        )
        self.lowest = _lowest(work)
        self.maximum = torch.full(
            (*queries.shape[:-1], 1),
            self.lowest,
            dtype=work,
            device=queries.device,
        )
        self.total = torch.zeros_like(self.maximum)
        self.weighted = 0.0  # the empty sum, until the first block
        self.blocks = 0

    def update(self, keys, values, mask=None) -> "StreamingAttention":
        """Fold one block of keys (..., c, d) and values (..., c, d_v) in."""
        keys, values = self._checked_block(keys, values, mask)
        scores = self._block_scores(keys, mask)  # (..., n_q, c)
        block_max = scores.detach().amax(dim=-1, keepdim=True)  # no gradient
        m_new = torch.maximum(self.maximum, block_max)
        shift = m_new.masked_fill(m_new == self.lowest, 0.0)  # kept nothing: 0
        rescale = torch.exp(self.maximum - shift)  # <= 1: the old sums shrink
        weights = scores.sub_(shift).exp_()  # in place: no second buffer
        self.total = self.total * rescale + weights.sum(dim=-1, keepdim=True)
        block = weighted_values(weights, values, mask is not None)
        self.weighted = self.weighted * rescale + block
        self.maximum, self.blocks = m_new, self.blocks + 1
        return self

    def _checked_block(self, keys, values, mask):
        """The block's keys and values, checked, with NaN/inf stored in masked
        keys dropped, in the working dtype (float32 for half inputs)."""
        require_qkv(self.queries, keys, values)
        if self.blocks and values.shape[-1] != self.weighted.shape[-1]:
            raise ValueError(
                f"values of this block have {values.shape[-1]} features, "
                f"earlier blocks had {self.weighted.shape[-1]}"
            )
        keys = drop_masked_garbage(keys, mask)
        work = self.scaled_queries.dtype
        if keys.dtype != work:  # float16/bfloat16 blocks, scored in float32
            keys, values = keys.to(work), values.to(work)
        return keys, values

    def _block_scores(self, keys, mask):
        """The block's scaled scores (..., n_q, c), the only n_q x c buffer,
        set to ``lowest`` where masked."""
        if mask is not None and not all_finite(keys):
            # garbage that some queries keep and others mask
            scores = scores_with_partly_masked_garbage(
                self.scaled_queries, keys, dot_score, mask
            )
        else:
            scores = dot_score(self.scaled_queries, keys)
        if mask is not None:
            require_bool_mask(mask, scores.shape, device=scores.device)
            scores.masked_fill_(~mask, self.lowest)
        top = scores.detach().amax(dim=-1)
        if torch.isnan(top).any() or torch.isposinf(top).any():
            raise ValueError(
                "a kept score is +inf or NaN: the online softmax has no "
                "finite running maximum (attnbook.attention gives the limit)"
            )
        return scores

    def output(self) -> torch.Tensor:
        """The attention output (..., n_q, d_v): weighted / total, and 0
        where nothing was kept."""
        if self.blocks == 0:
            raise ValueError(
                "no key block yet: call update(keys, values) at least once"
            )
        total = self.total
        return (
            self.weighted
            / torch.where(total > 0, total, torch.ones_like(total))
        ).to(self.dtype)

    def log_sum_exp(self) -> torch.Tensor:
        """Per query, log of the softmax's denominator: maximum + log(total),
        shape (..., n_q, 1).

        It is all the backward pass needs to rebuild any block's weights
        exactly: weight = exp(score - log_sum_exp). A query with nothing kept
        gets +inf (weights 0).
        """
        if self.blocks == 0:
            raise ValueError(
                "no key block yet: call update(keys, values) at least once"
            )
        kept = self.total > 0
        return torch.where(
            kept,
            self.maximum
            + torch.log(
                torch.where(kept, self.total, torch.ones_like(self.total))
            ),
            torch.full_like(self.total, float("inf")),
        )


def _mask_block(
    mask: torch.Tensor | None, start: int, stop: int
) -> torch.Tensor | None:
    """Columns start:stop of a mask broadcastable to (..., n_q, n_k) (a
    size-1 last axis is kept)."""
    if mask is None or mask.dim() == 0 or mask.shape[-1] == 1:
        return mask
    return mask[..., start:stop]


def chunked_attention(
    queries,
    keys,
    values,
    mask=None,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    recompute_backward: bool = True,
) -> torch.Tensor:
    """Scaled dot-product attention computed over blocks of ``chunk_size`` keys
    (online softmax).

    queries: (..., n_q, d), keys: (..., n_k, d), values: (..., n_k, d_v), one
    float dtype.
    mask: boolean, True = keep, broadcastable to the scores (..., n_q, n_k).
    Returns the output (..., n_q, d_v), equal to
    ``attention(queries, keys, values, mask=mask)[0]`` (scores scaled by
    1/sqrt(d)) up to float rounding; a query whose keys are all masked gets
    zeros. Only one (..., n_q, chunk_size) score block is alive at a time, so
    the extra memory is O(n_q * chunk_size), not O(n_q * n_k). The weights are
    never formed as a whole, so unlike ``attention`` none are returned.
    Gradients: with ``recompute_backward=True`` (the default) the backward pass
    keeps only the output and one log-sum-exp per query and recomputes each
    block's weights (FlashAttention's backward), so training needs O(n_q *
    chunk_size) extra memory too; ``False`` lets autograd differentiate through
    the blocks, storing every block's weights.
    """
    require_float("queries", queries)
    if queries.dim() < 2:
        raise ValueError(
            f"queries need shape (..., n_q, d), got {tuple(queries.shape)}"
        )
    require_qkv(queries, keys, values)
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int):
        raise TypeError(
            f"chunk_size must be an int, got {type(chunk_size).__name__}"
        )
    require_positive("chunk_size", chunk_size)
    batch = broadcast_shapes(
        queries.shape[:-2], keys.shape[:-2], values.shape[:-2]
    )
    n_q, n_k = queries.shape[-2], keys.shape[-2]
    # a block never needs more keys than there are (nor masks padded beyond)
    chunk_size = min(chunk_size, max(n_k, 1))
    if mask is not None:
        # as in attention: the mask may not enlarge the scores (..., n_q, n_k)
        scores_batch = broadcast_shapes(queries.shape[:-2], keys.shape[:-2])
        shape = torch.Size((*scores_batch, n_q, n_k))
        require_bool_mask(mask, shape, device=queries.device)
    if n_k == 0 or not scores_surely_finite(
        queries,
        drop_masked_garbage(keys, mask),
        scaled_dot_score,
        torch.float32,
    ):
        # No keys, or inputs whose scores may be inf or NaN (the rare case):
        # plain attention gives the limits (an empty sum, +inf splitting its
        # weight) and keeps the graph.
        return attention(queries, keys, values, mask=mask)[0]
    needs_grad = torch.is_grad_enabled() and any(
        t.requires_grad for t in (queries, keys, values)
    )
    if recompute_backward and needs_grad:
        output = RecomputingChunkedAttention.apply(
            queries, keys, values, mask, chunk_size
        )
    else:
        output = _attend(queries, keys, values, mask, chunk_size, False)[0]
    return (
        output.expand(*batch, n_q, values.shape[-1])
        if output.shape[:-2] != batch
        else output
    )


def _stream(
    queries, keys, values, mask, chunk_size: int, starts=None
) -> StreamingAttention:
    """Feed keys and values to a StreamingAttention in blocks of
    ``chunk_size`` (only those starting at ``starts``, if given); return its
    state."""
    state = StreamingAttention(queries)
    n_k = keys.shape[-2]
    for start in range(0, n_k, chunk_size) if starts is None else starts:
        stop = min(start + chunk_size, n_k)
        state.update(
            keys[..., start:stop, :],
            values[..., start:stop, :],
            _mask_block(mask, start, stop),
        )
    return state


def _attend(queries, keys, values, mask, chunk_size: int, lse: bool = True):
    """(output, log_sum_exp or None if not ``lse``) of the online softmax,
    skipping the tiles the mask drops (``_kept_blocks``); one pass over all
    queries when it drops none."""
    plan = _kept_blocks(mask, queries.shape[-2], keys.shape[-2], chunk_size)
    if plan is None:
        states = [_stream(queries, keys, values, mask, chunk_size)]
    else:
        # queries broadcast to the scores' batch, as one pass would: the
        # same products, row for row
        batch = broadcast_shapes(queries.shape[:-2], keys.shape[:-2])
        queries = queries.expand(*batch, *queries.shape[-2:])
        states = [
            _stream(
                queries[..., rows, :],
                keys,
                values,
                rows_mask,
                chunk_size,
                starts,
            )
            for rows, rows_mask, starts in plan
        ]
    output = _cat_rows([state.output() for state in states])
    if not lse:
        return output, None
    return output, _cat_rows([state.log_sum_exp() for state in states])


def _cat_rows(blocks: list) -> torch.Tensor:
    """Blocks of query rows (..., r, m) joined along the rows, their batch
    dimensions broadcast to a common shape first (one block: itself)."""
    if len(blocks) == 1:
        return blocks[0]
    batch = broadcast_shapes(*(block.shape[:-2] for block in blocks))
    return torch.cat(
        [block.expand(*batch, *block.shape[-2:]) for block in blocks], dim=-2
    )


def _kept_blocks(mask, n_q: int, n_k: int, chunk_size: int):
    """[(rows, mask of those rows, starts)]: for each block of QUERY_BLOCK *
    chunk_size queries (all of them if the mask has no query axis), the start
    of every key block where the mask keeps something (at least one block, so
    a query that keeps nothing still gets its zero output); None when no tile
    can be skipped."""
    if mask is None or mask.dim() < 2 or mask.shape[-1] == 1 or n_q == 0:
        return None
    step = QUERY_BLOCK * chunk_size if mask.shape[-2] > 1 else n_q
    pad = -n_k % chunk_size
    plan, skipped = [], False
    for first in range(0, n_q, step):
        rows = slice(first, min(first + step, n_q))
        tile = mask[..., rows, :] if mask.shape[-2] > 1 else mask
        keys_kept = _any(tile, tuple(range(tile.dim() - 1)))  # (n_k,)
        blocks = _any(F.pad(keys_kept, (0, pad)).view(-1, chunk_size), -1)
        starts = (blocks.nonzero().flatten() * chunk_size).tolist() or [0]
        skipped |= len(starts) < len(blocks)
        plan.append((rows, tile, starts))
    return plan if skipped else None


def _sum_to_shape(grad: torch.Tensor, shape: torch.Size) -> torch.Tensor:
    """Sum a gradient over the batch dimensions that broadcasting added or
    expanded, back to ``shape``."""
    grad = (
        grad.sum(dim=tuple(range(grad.dim() - len(shape))))
        if grad.dim() > len(shape)
        else grad
    )
    expanded = tuple(
        i for i, size in enumerate(shape) if size == 1 and grad.shape[i] != 1
    )
    return grad.sum(dim=expanded, keepdim=True) if expanded else grad


class RecomputingChunkedAttention(torch.autograd.Function):
    """Chunked attention whose backward pass recomputes each block's weights
    (FlashAttention-2's backward).

    Forward: the online softmax of ``StreamingAttention``; it saves q, k, v,
    the output O and one log-sum-exp per query, L = m + log(total): O(n)
    numbers, no n_q x n_k matrix. Backward, with dO the gradient of the output
    and S = q k^T / sqrt(d), block by block:
        P  = exp(S - L)                  (the block's weights, rebuilt exactly)
        dV = P^T dO                      dP = dO V^T
        dS = P * (dP - D),  D = rowsum(dO * O)
                                 (the softmax's backward; D replaces
                                 P's row sums)
        dQ += dS K / sqrt(d)             dK = dS^T Q / sqrt(d)
    Masked entries get P = 0 and dS = 0, so nothing a masked key holds reaches
    a gradient.
    """

    @staticmethod
    def forward(ctx, queries, keys, values, mask, chunk_size):
        output, log_sum_exp = _attend(queries, keys, values, mask, chunk_size)
        ctx.save_for_backward(queries, keys, values, output, log_sum_exp, mask)
        ctx.chunk_size = chunk_size
        return output

    @staticmethod
    def backward(ctx, grad_output):
        if torch.is_grad_enabled():  # create_graph=True: a graph of the grads
            return _differentiable_backward(ctx, grad_output)
        queries, keys, values, output, log_sum_exp, mask = ctx.saved_tensors
        scale = 1.0 / math.sqrt(queries.shape[-1])
        work = (
            log_sum_exp.dtype
        )  # float32 for half inputs, as in the forward pass
        q, do = queries.to(work), grad_output.to(work)
        delta = (do * output.to(work)).sum(
            dim=-1, keepdim=True
        )  # D = rowsum(dO * O)
        grad_q = torch.zeros(
            broadcast_shapes(q.shape, do.shape[:-1] + q.shape[-1:]),
            dtype=work,
            device=q.device,
        )
        grad_k, grad_v = [], []
        # Two n_q x chunk buffers, reused by every block: the only large
        # temporaries of the backward pass.
        block_shape = (
            *broadcast_shapes(q.shape[:-2], keys.shape[:-2], do.shape[:-2]),
            q.shape[-2],
        )
        weights_buffer = torch.empty(
            math.prod(block_shape) * min(ctx.chunk_size, keys.shape[-2]),
            dtype=work,
            device=q.device,
        )
        grad_buffer = torch.empty_like(weights_buffer)
        for start in range(0, keys.shape[-2], ctx.chunk_size):
            stop = min(start + ctx.chunk_size, keys.shape[-2])
            k, v = (
                keys[..., start:stop, :].to(work),
                values[..., start:stop, :].to(work),
            )
            block_mask = _mask_block(mask, start, stop)
            rows = _kept_rows(block_mask)  # the queries that keep a key here
            if rows is None:  # the mask drops the whole block: no gradient
                grad_k.append(k.new_zeros(*block_shape[:-1], *k.shape[-2:]))
                grad_v.append(v.new_zeros(*block_shape[:-1], *v.shape[-2:]))
                continue
            # Masked keys may hold garbage (NaN, inf): keep it out of every
            # product (as the forward pass does).
            k, v = (
                drop_masked_garbage(k, block_mask),
                drop_masked_garbage(v, block_mask),
            )
            if rows != slice(None):  # e.g. a sliding window: fewer queries
                block_mask = block_mask[..., rows, :]
            q_r, do_r, lse_r, delta_r = (
                t[..., rows, :] for t in (q, do, log_sum_exp, delta)
            )
            shape = (*block_shape[:-1], q_r.shape[-2], stop - start)
            weights = weights_buffer[: math.prod(shape)].view(shape)
            grad_scores = grad_buffer[: math.prod(shape)].view(shape)
            torch.matmul(q_r, k.transpose(-2, -1), out=weights)
            weights.mul_(scale).sub_(
                lse_r
            ).exp_()  # P = exp(S - L), the block's weights
            torch.matmul(
                do_r, v.transpose(-2, -1), out=grad_scores
            )  # dP = dO V^T
            grad_scores.sub_(delta_r).mul_(weights)  # dS = P * (dP - D)
            if block_mask is not None:
                weights.masked_fill_(~block_mask, 0.0)
                grad_scores.masked_fill_(~block_mask, 0.0)
            grad_v.append(weights.transpose(-2, -1) @ do_r)
            grad_k.append(grad_scores.transpose(-2, -1) @ q_r * scale)
            # dS is 0 where the mask drops a key: a NaN/inf key some other
            # query keeps must not turn it into NaN.
            grad_q[..., rows, :].add_(
                weighted_values(grad_scores, k, block_mask is not None),
                alpha=scale,
            )
        grad_k, grad_v = torch.cat(grad_k, dim=-2), torch.cat(grad_v, dim=-2)
        return (
            _sum_to_shape(grad_q, queries.shape).to(queries.dtype),
            _sum_to_shape(grad_k, keys.shape).to(keys.dtype),
            _sum_to_shape(grad_v, values.shape).to(values.dtype),
            None,
            None,
        )


def _any(mask: torch.Tensor, dim) -> torch.Tensor:
    """``mask.any(dim)``, read as bytes: torch's maximum over uint8 is about
    five times faster on CPU than its ``any`` over bool."""
    return mask.view(torch.uint8).amax(dim=dim) > 0


def _kept_rows(block_mask):
    """The rows (a slice) from the first to the last query that keeps a key
    of the block; slice(None) for all of them, or when the mask has no query
    axis; None if the block's mask keeps nothing."""
    if block_mask is None:
        return slice(None)
    if block_mask.dim() < 2 or block_mask.shape[-2] == 1:
        return slice(None) if bool(block_mask.any()) else None
    dims = tuple(
        d for d in range(block_mask.dim()) if d != block_mask.dim() - 2
    )
    kept = _any(block_mask, dims).nonzero().flatten()
    if kept.numel() == 0:
        return None
    first, last = int(kept[0]), int(kept[-1]) + 1
    return (
        slice(None)
        if (first, last) == (0, block_mask.shape[-2])
        else slice(first, last)
    )


def _differentiable_backward(ctx, grad_output):
    """The backward pass for ``create_graph=True`` (a gradient penalty, a
    Hessian-vector product): autograd through a recomputed forward pass, so
    the gradients themselves can be differentiated."""
    queries, keys, values, _, _, mask = ctx.saved_tensors
    inputs = [t for t in (queries, keys, values) if t.requires_grad]
    output = _attend(queries, keys, values, mask, ctx.chunk_size, False)[0]
    grads = iter(
        torch.autograd.grad(output, inputs, grad_output, create_graph=True)
    )
    return (
        *(
            next(grads) if t.requires_grad else None
            for t in (queries, keys, values)
        ),
        None,
        None,
    )

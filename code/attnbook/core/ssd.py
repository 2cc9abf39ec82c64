"""Mamba-2's state-space duality (Dao and Gu 2024): a recurrence with a
decaying state is also attention, with a decay mask in place of the softmax.

The recurrence (``gated_linear_attention`` with one gate per token):
S_t = g_t S_{t-1} + v_t k_t^T, o_t = S_t q_t. Unrolled,
o_i = sum_{j<=i} (g_{j+1} ... g_i) (q_i . k_j) v_j: the scores q_i . k_j of
attention (``dot_score``), multiplied by a causal mask L whose entry (i, j)
is the product of the gates between j and i (``decay_mask``), times V. In
Mamba-2's names: C -> queries, B (times Delta) -> keys, x -> values,
exp(Delta_t A) -> gate.
"""

import torch

from .._checks import require_float
from ._state_checks import check_per_token, check_qkv, finite_output
from .masking import causal_mask
from .scoring import dot_score


def decay_mask(gate: torch.Tensor) -> torch.Tensor:
    """L (..., n, n): L_ij = g_{j+1} g_{j+2} ... g_i for j <= i (1 on the
    diagonal), 0 above it.

    gate: (..., n), values in (0, 1]. Computed as exp of differences of
    cumulative log gates (Mamba-2's "segsum"), so no product underflows
    before it must.
    """
    require_float("gate", gate)
    if gate.dim() < 1:
        raise ValueError(
            f"gate must have shape (..., n), got {tuple(gate.shape)}"
        )
    n = gate.shape[-1]
    # check_per_token wants keys to compare with: a stand-in of n positions
    stand_in = gate.new_zeros(n, 1)
    check_per_token("gate", gate, stand_in, gate.shape[:-1], 0.0, 1.0, False)
    cumulative = gate.log().cumsum(dim=-1)
    difference = cumulative[..., :, None] - cumulative[..., None, :]
    keep = causal_mask(n, device=gate.device)
    return difference.masked_fill(~keep, float("-inf")).exp()


def ssd_attention(queries, keys, values, gate):
    """The attention (quadratic) form of a per-head gated recurrence:
    (dot_score(Q, K) * decay_mask(gate)) V.

    queries, keys (..., n, d_k), values (..., n, d_v), one float dtype;
    gate (..., n) in (0, 1]. Equal to ``gated_linear_attention(queries,
    keys, values, gate)``. Returns (..., n, d_v).
    """
    batch = check_qkv(queries, keys, values, same_length=True)
    check_per_token("gate", gate, keys, batch, 0.0, 1.0, False)
    weights = dot_score(queries, keys) * decay_mask(gate)
    return finite_output("ssd_attention", weights @ values)

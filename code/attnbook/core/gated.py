"""Gated linear attention: a state that decays by a data-dependent gate
before each write, so old associations fade instead of piling up.

    S_t = S_{t-1} diag(g_t) + v_t k_t^T,  o_t = S_t q_t

with g_t in (0, 1]: one number per token and head (Mamba-2's scalar decay
exp(Delta_t A)), or one per key channel (GLA, Yang et al. 2024: g_t a vector
of d_k gates). No normaliser: the gate, not a division, keeps the state's
size bounded. This module is the definition, token by token;
``attnbook.core.ssd`` computes the per-head case as attention with a decay
mask, and ``delta_rule`` with ``gate`` adds the delta rule's correction.
"""

import torch

from .._checks import broadcast_shapes, compute_dtype, require_flag
from ._state_checks import (
    check_per_token,
    check_qkv,
    finite_output,
    is_per_channel,
)


def gated_linear_attention(queries, keys, values, gate, return_state=False):
    """S_t = S_{t-1} diag(g_t) + v_t k_t^T, o_t = S_t q_t, from S_0 = 0,
    one token at a time.

    queries, keys (..., n, d_k), values (..., n, d_v), one float dtype;
    gate in (0, 1]: (..., n), one decay per token (Mamba-2), or (..., n, d_k),
    one per key channel (GLA; a gate of that shape is always read per
    channel). Returns (..., n, d_v), and with
    return_state=True also the final state (..., d_v, d_k), in the dtype of
    the values.
    """
    batch = check_qkv(queries, keys, values, same_length=True)
    d_k = keys.shape[-1]
    check_per_token("gate", gate, keys, batch, 0.0, 1.0, False, channels=d_k)
    require_flag("return_state", return_state)
    work = compute_dtype(values.dtype)
    q, k, v = (x.to(work) for x in (queries, keys, values))
    per_channel = is_per_channel(gate, keys.shape[-2], d_k)
    g = gate.to(work) if per_channel else gate.to(work)[..., None]
    batch = broadcast_shapes(batch, g.shape[:-2])
    state = k.new_zeros(*batch, v.shape[-1], d_k)
    outputs = []
    for t in range(k.shape[-2]):
        decay = g[..., t, None, :]  # (..., 1, d_k) or (..., 1, 1)
        state = state * decay + v[..., t, :, None] * k[..., t, None, :]
        outputs.append((state @ q[..., t, :, None])[..., 0])
    output = (
        torch.stack(outputs, dim=-2)
        if outputs
        else v.new_zeros(*batch, 0, v.shape[-1])
    )
    output = finite_output("gated_linear_attention", output.to(values.dtype))
    state = finite_output("the state", state.to(values.dtype))
    return (output, state) if return_state else output

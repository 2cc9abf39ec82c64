"""The delta rule (Schlag et al. 2021; DeltaNet, Yang et al. 2024) and its
gated form (Gated DeltaNet, Yang et al. 2025): a d_v x d_k state S that maps
keys to values, corrected at every token instead of only added to.

    S_t = g_t S_{t-1} (I - beta_t k_t k_t^T) + beta_t v_t k_t^T,  o_t = S_t q_t

Read as S_t = S' + beta_t (v_t - S' k_t) k_t^T with S' = g_t S_{t-1}: one
gradient step of the squared error |S k_t - v_t|^2 / 2 with step size beta_t
(Widrow and Hoff's LMS rule): the state first decays by g_t, then moves its
answer for k_t towards v_t. Linear attention only adds v_t k_t^T.

Two forms, equal up to rounding:

- ``chunk_size=None``: the definition, one token at a time;
- ``chunk_size=c``: the chunked form (DeltaNet's WY/UT form). Inside a chunk
  that starts from state S_0, the state is S_t = gamma_t S_0 + sum_{i<=t}
  (gamma_t / gamma_i) u_i k_i^T, with gamma_t the product of the gates since
  the chunk began, and the new values u_t solve the unit lower-triangular
  system (I + tril(diag(beta) (Gamma * K K^T), -1)) U = diag(beta) (V -
  diag(gamma) K S_0^T): one triangular solve per chunk, the rest matrix
  products.
"""

import torch
import torch.nn.functional as F

from .._checks import broadcast_shapes, compute_dtype, require_flag
from ._state_checks import (
    check_chunk_size,
    check_per_token,
    check_qkv,
    finite_output,
)
from .masking import causal_mask

BETA_RANGE = (0.0, 2.0)  # I - beta k k^T keeps |eigenvalues| <= 1 for |k| = 1


def delta_rule(
    queries,
    keys,
    values,
    beta,
    gate=None,
    chunk_size=None,
    return_state=False,
):
    """The (gated) delta rule: S_t = g_t S_{t-1} (I - beta_t k_t k_t^T) +
    beta_t v_t k_t^T, o_t = S_t q_t, from S_0 = 0.

    queries, keys (..., n, d_k), values (..., n, d_v), one float dtype; keys
    are used as given (normalise them first if the model does). beta (..., n)
    in [0, 2]; gate (..., n) in (0, 1], None for no decay (g_t = 1).
    chunk_size: None runs the token loop; an int runs the chunked WY/UT form
    with chunks of that many tokens (same result). Returns the outputs
    (..., n, d_v), and with return_state=True also the final state
    (..., d_v, d_k), in the dtype of the values.
    """
    q, k, v, beta, log_gate, out_dtype = _checked(
        queries, keys, values, beta, gate
    )
    require_flag("return_state", return_state)
    chunk_size = check_chunk_size(chunk_size, k.shape[-2])
    if chunk_size is None:
        output, state = _token_loop(q, k, v, beta, log_gate)
    else:
        output, state = _chunked(q, k, v, beta, log_gate, chunk_size)
    output = finite_output("delta_rule", output.to(out_dtype))
    state = finite_output("the delta rule's state", state.to(out_dtype))
    return (output, state) if return_state else output


def _token_loop(q, k, v, beta, log_gate):
    """The definition, token by token: decay, then correct the answer for
    k_t towards v_t, then read with q_t."""
    state = k.new_zeros(*k.shape[:-2], v.shape[-1], k.shape[-1])
    outputs = []
    for t in range(k.shape[-2]):
        if log_gate is not None:
            state = state * log_gate[..., t, None, None].exp()
        k_t, v_t = k[..., t, :], v[..., t, :]
        error = v_t - (state @ k_t[..., None])[..., 0]  # v_t - S k_t
        state = state + beta[..., t, None, None] * (
            error[..., :, None] * k_t[..., None, :]
        )
        outputs.append((state @ q[..., t, :, None])[..., 0])
    if not outputs:
        return v.new_zeros(v.shape), state
    return torch.stack(outputs, dim=-2), state


def _chunked(q, k, v, beta, log_gate, chunk_size: int):
    """The WY/UT form: per chunk a triangular solve for the new values U,
    then S_0 carried from chunk to chunk."""
    n = k.shape[-2]
    if log_gate is None:
        log_gate = torch.zeros_like(beta)
    q, k, v = (_in_chunks(x, chunk_size) for x in (q, k, v))  # (.., N, c, d)
    beta, log_gate = (
        _in_chunks(x[..., None], chunk_size)[..., 0] for x in (beta, log_gate)
    )  # (..., N, c); padding: beta 0, gate 1 (the state does not change)
    log_gamma = log_gate.cumsum(dim=-1)  # gamma_t: gates since chunk start
    decay = _decay_within(log_gamma)  # (..., N, c, c): gamma_t / gamma_i
    # A = I + strictly lower part of diag(beta) (Gamma * K K^T)
    keys_kk = (k @ k.transpose(-1, -2)) * decay
    lower = torch.tril(beta[..., :, None] * keys_kk, diagonal=-1)
    eye = torch.eye(chunk_size, dtype=k.dtype, device=k.device)
    a = eye + lower
    # U = U_values - W S_0^T with A U_values = diag(beta) V and
    # A W = diag(beta gamma) K: both solves for every chunk at once
    u_values = _solve_lower(a, beta[..., None] * v)
    w = _solve_lower(a, (beta * log_gamma.exp())[..., None] * k)
    scores = (q @ k.transpose(-1, -2)) * decay  # causal, incl. diagonal
    gamma = log_gamma.exp()[..., None]  # (..., N, c, 1)
    log_last = log_gamma[..., -1:]  # (..., N, 1): gamma at the chunk's end
    to_end = (log_last - log_gamma).exp()[..., None]  # gamma_c / gamma_i
    last = log_last.exp()[..., None]  # (..., N, 1, 1)
    state = k.new_zeros(*k.shape[:-3], v.shape[-1], k.shape[-1])
    outputs = []
    for c in range(k.shape[-3]):
        s0_t = state.transpose(-1, -2)  # (..., d_k, d_v)
        u = u_values[..., c, :, :] - w[..., c, :, :] @ s0_t
        outputs.append(
            gamma[..., c, :, :] * (q[..., c, :, :] @ s0_t)
            + scores[..., c, :, :] @ u
        )
        state = last[..., c, :, :] * state + (
            (to_end[..., c, :, :] * u).transpose(-1, -2) @ k[..., c, :, :]
        )
    if not outputs:
        return v.new_zeros(*v.shape[:-3], 0, v.shape[-1]), state
    output = torch.cat(outputs, dim=-2)  # (..., N * c, d_v)
    return output[..., :n, :], state


def _decay_within(log_gamma: torch.Tensor) -> torch.Tensor:
    """(..., c) cumulative log gates -> (..., c, c): gamma_t / gamma_i for
    t >= i (a product of gates, <= 1), 0 above the diagonal."""
    c = log_gamma.shape[-1]
    keep = causal_mask(c, device=log_gamma.device)
    difference = log_gamma[..., :, None] - log_gamma[..., None, :]
    # -inf above the diagonal before exp(): exp of a positive difference
    # there could overflow, and inf * 0 is NaN
    return difference.masked_fill(~keep, float("-inf")).exp()


def _solve_lower(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """X with a X = b, a unit lower triangular (..., c, c)."""
    return torch.linalg.solve_triangular(a, b, upper=False, unitriangular=True)


def _in_chunks(x: torch.Tensor, chunk_size: int) -> torch.Tensor:
    """(..., n, d) -> (..., ceil(n / c), c, d), zero-padded at the end."""
    pad = -x.shape[-2] % chunk_size
    if pad:
        x = F.pad(x, (0, 0, 0, pad))
    chunks = x.shape[-2] // chunk_size
    return x.reshape(*x.shape[:-2], chunks, chunk_size, x.shape[-1])


def _checked(queries, keys, values, beta, gate):
    """The inputs checked, broadcast to one batch shape, in the compute
    dtype (float32 for half inputs); the log of the gate (None without);
    the dtype to return."""
    batch = check_qkv(queries, keys, values, same_length=True)
    check_per_token("beta", beta, keys, batch, *BETA_RANGE, include_low=True)
    if gate is not None:
        check_per_token("gate", gate, keys, batch, 0.0, 1.0, False)
    n, work = keys.shape[-2], compute_dtype(values.dtype)
    batch = broadcast_shapes(
        batch, beta.shape[:-1], *(() if gate is None else (gate.shape[:-1],))
    )

    def expand(x, *tail):
        return x.to(work).expand(*batch, *tail)

    q = expand(queries, n, queries.shape[-1])
    k = expand(keys, n, keys.shape[-1])
    v = expand(values, n, values.shape[-1])
    log_gate = None if gate is None else expand(gate, n).log()
    return q, k, v, expand(beta, n), log_gate, values.dtype

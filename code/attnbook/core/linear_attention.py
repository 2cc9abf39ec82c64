"""Linear attention (Katharopoulos et al. 2020): softmax attention with the
exponential replaced by a feature map, o_i = sum_j (phi(q_i) . phi(k_j)) v_j
/ sum_j phi(q_i) . phi(k_j).

Because phi(q_i) . phi(k_j) is a dot product, the sum regroups:
sum_j v_j phi(k_j)^T phi(q_i) = S phi(q_i) with S = sum_j v_j phi(k_j)^T, a
d_v x m matrix whatever the number of keys. Three forms of one computation:

- parallel: the n x n weights phi(Q) phi(K)^T, masked by ``causal_mask``,
  times V (attention without the softmax);
- recurrent (``linear_attention_recurrent``): S_t = S_{t-1} + v_t phi(k_t)^T,
  z_t = z_{t-1} + phi(k_t), o_t = S_t phi(q_t) / (z_t . phi(q_t)), one token
  at a time with a d_v x m state (an RNN);
- chunked: the parallel form inside each chunk of ``chunk_size`` tokens, the
  state of all earlier chunks between them (chapter 11's blocks).

The state S is d_v x m as in the delta rule (``delta_rule``): S maps a key to
a value, o = S phi(q).
"""

import torch
import torch.nn.functional as F

from .._checks import (
    all_finite,
    broadcast_shapes,
    compute_dtype,
    require_callable,
    require_flag,
)
from ._state_checks import check_chunk_size, check_qkv, finite_output
from .feature_maps import elu_feature_map
from .masking import causal_mask


def linear_attention(
    queries,
    keys,
    values,
    causal=True,
    feature_map=None,
    normalize=True,
    chunk_size=None,
):
    """Linear attention: sum_j (phi(q_i) . phi(k_j)) v_j over the kept keys,
    divided by sum_j phi(q_i) . phi(k_j) if ``normalize``.

    queries (..., n_q, d_k), keys (..., n, d_k), values (..., n, d_v), one
    float dtype; causal=True needs n_q == n (query i keeps keys 0..i).
    feature_map: phi, a function (..., d_k) -> (..., m), applied to queries
    and keys; None is elu(x) + 1. With normalize=True its features must be
    >= 0 and no query's normalizer may be 0. chunk_size: None computes the
    parallel form (the n_q x n weights); an int computes chunks of that many
    tokens with a state between them (same result). Returns (..., n_q, d_v)
    in the dtype of the values.
    """
    phi_q, phi_k, values, out_dtype = _checked_features(
        queries, keys, values, causal, feature_map, normalize
    )
    chunk_size = check_chunk_size(chunk_size, phi_k.shape[-2])
    if chunk_size is None:
        output, normalizer = _parallel(phi_q, phi_k, values, causal)
    elif causal:
        output, normalizer = _chunked(phi_q, phi_k, values, chunk_size)
    else:
        output, normalizer = _global_state(phi_q, phi_k, values, chunk_size)
    if normalize:
        output = output / _checked_normalizer(normalizer)
    return finite_output("linear_attention", output.to(out_dtype))


def linear_attention_recurrent(
    queries, keys, values, feature_map=None, normalize=True
):
    """Causal linear attention one token at a time (the RNN form).

    S_t = S_{t-1} + v_t phi(k_t)^T (d_v x m), z_t = z_{t-1} + phi(k_t) (m),
    o_t = S_t phi(q_t), divided by z_t . phi(q_t) if ``normalize``.
    queries, keys (..., n, d_k), values (..., n, d_v). Returns (..., n, d_v),
    equal to ``linear_attention(..., causal=True)``.
    """
    phi_q, phi_k, values, out_dtype = _checked_features(
        queries, keys, values, True, feature_map, normalize
    )
    batch = broadcast_shapes(
        phi_q.shape[:-2], phi_k.shape[:-2], values.shape[:-2]
    )
    m, d_v = phi_k.shape[-1], values.shape[-1]
    state = phi_k.new_zeros(*batch, d_v, m)
    normalizer = phi_k.new_zeros(*batch, m)
    outputs, totals = [], []
    for t in range(phi_k.shape[-2]):
        state = state + values[..., t, :, None] * phi_k[..., t, None, :]
        normalizer = normalizer + phi_k[..., t, :]
        q = phi_q[..., t, :]
        outputs.append((state @ q[..., None])[..., 0])
        totals.append((normalizer * q).sum(dim=-1, keepdim=True))
    output = _stack(outputs, batch, d_v, phi_k)
    if normalize:
        output = output / _checked_normalizer(_stack(totals, batch, 1, phi_k))
    return finite_output("linear_attention_recurrent", output.to(out_dtype))


def _stack(rows: list, batch, width: int, like) -> torch.Tensor:
    """The per-token rows stacked along the sequence: (..., n, width)."""
    if not rows:
        return like.new_zeros(*batch, 0, width)
    return torch.stack(rows, dim=-2)


def _parallel(phi_q, phi_k, values, causal: bool):
    """The n_q x n weights phi(Q) phi(K)^T (causally masked), times V; and
    the normalizer, their row sums."""
    weights = phi_q @ phi_k.transpose(-1, -2)
    if causal:
        keep = causal_mask(phi_q.shape[-2], device=phi_q.device)
        weights = weights.masked_fill(~keep, 0.0)
    return weights @ values, weights.sum(dim=-1, keepdim=True)


def _chunked(phi_q, phi_k, values, chunk_size: int):
    """Causal: inside each chunk the masked parallel form, plus what the
    chunks before it left in the state S = sum v phi(k)^T and z = sum phi(k).
    """
    n = phi_k.shape[-2]
    q, k, v = (_in_chunks(x, chunk_size) for x in (phi_q, phi_k, values))
    # (..., chunks, c, c): weights within each chunk, causal
    inside = q @ k.transpose(-1, -2)
    keep = causal_mask(chunk_size, device=q.device)
    inside = inside.masked_fill(~keep, 0.0)
    # the state of each chunk alone, then of all chunks before each chunk
    chunk_states = v.transpose(-1, -2) @ k  # (..., chunks, d_v, m)
    chunk_sums = k.sum(dim=-2)  # (..., chunks, m)
    before = _exclusive_cumsum(chunk_states, dim=-3)
    sums_before = _exclusive_cumsum(chunk_sums, dim=-2)
    output = inside @ v + q @ before.transpose(-1, -2)
    normalizer = inside.sum(dim=-1, keepdim=True) + (
        q @ sums_before[..., None]
    )
    return _from_chunks(output, n), _from_chunks(normalizer, n)


def _global_state(phi_q, phi_k, values, chunk_size: int):
    """Not causal: every query reads the state of all keys, summed chunk by
    chunk: S = sum v phi(k)^T, z = sum phi(k)."""
    k, v = _in_chunks(phi_k, chunk_size), _in_chunks(values, chunk_size)
    state = (v.transpose(-1, -2) @ k).sum(dim=-3)  # (..., d_v, m)
    total = k.sum(dim=(-3, -2))  # (..., m)
    output = phi_q @ state.transpose(-1, -2)
    return output, (phi_q * total[..., None, :]).sum(dim=-1, keepdim=True)


def _in_chunks(x: torch.Tensor, chunk_size: int) -> torch.Tensor:
    """(..., n, d) -> (..., ceil(n / c), c, d), zero-padded at the end (a
    zero key adds nothing to a state)."""
    n = x.shape[-2]
    pad = -n % chunk_size
    if pad:
        x = F.pad(x, (0, 0, 0, pad))
    chunks = x.shape[-2] // chunk_size
    return x.reshape(*x.shape[:-2], chunks, chunk_size, x.shape[-1])


def _from_chunks(x: torch.Tensor, n: int) -> torch.Tensor:
    """(..., chunks, c, d) -> (..., n, d), the padding dropped."""
    rows = x.shape[-3] * x.shape[-2]
    return x.reshape(*x.shape[:-3], rows, x.shape[-1])[..., :n, :]


def _exclusive_cumsum(x: torch.Tensor, dim: int) -> torch.Tensor:
    """Along the chunk axis ``dim``: the sum over the chunks before each
    one (0 for the first)."""
    total = x.cumsum(dim=dim)
    return total - x


def _checked_features(queries, keys, values, causal, feature_map, normalize):
    """phi(queries), phi(keys) and the values, checked, in the compute dtype
    (float32 for half inputs); and the dtype to return."""
    require_flag("causal", causal)
    require_flag("normalize", normalize)
    phi = elu_feature_map if feature_map is None else feature_map
    require_callable(feature_map=phi)
    check_qkv(queries, keys, values, same_length=causal)
    work = compute_dtype(values.dtype)
    phi_q = _features(phi, queries.to(work), "queries")
    phi_k = _features(phi, keys.to(work), "keys")
    if phi_q.shape[-1] != phi_k.shape[-1]:
        raise ValueError(
            f"feature_map gave {phi_q.shape[-1]} features for the queries "
            f"and {phi_k.shape[-1]} for the keys"
        )
    if normalize and (bool((phi_q < 0).any()) or bool((phi_k < 0).any())):
        raise ValueError(
            "normalize=True divides by phi(q) . sum phi(k), a sum of "
            "weights: feature_map must give features >= 0 (e.g. elu + 1); "
            "pass normalize=False for a signed feature map"
        )
    return phi_q, phi_k, values.to(work), values.dtype


def _features(phi, x: torch.Tensor, name: str) -> torch.Tensor:
    """phi(x): a float tensor (..., n, m) of x's dtype, finite."""
    features = phi(x)
    if not isinstance(features, torch.Tensor) or not (
        features.is_floating_point()
    ):
        raise TypeError(
            f"feature_map must return a float tensor, got "
            f"{type(features).__name__} for the {name}"
        )
    if features.dtype != x.dtype:
        raise TypeError(
            f"feature_map returned dtype {features.dtype} for {name} of "
            f"dtype {x.dtype}"
        )
    if features.dim() != x.dim() or features.shape[:-1] != x.shape[:-1]:
        raise ValueError(
            f"feature_map must map {name} {tuple(x.shape)} to (..., n, m) "
            f"with the same leading dimensions, got {tuple(features.shape)}"
        )
    if not all_finite(features):
        raise ValueError(f"feature_map gave NaN or inf for the {name}")
    return features


def _checked_normalizer(normalizer: torch.Tensor) -> torch.Tensor:
    """The normalizer phi(q) . sum phi(k) of every query, refused if one is
    0 (nothing to divide by: all its features vanished)."""
    if bool((normalizer <= 0).any()):
        raise ValueError(
            "a query's normalizer phi(q) . sum phi(k) is 0 (its features or "
            "those of its keys all vanished, e.g. elu + 1 of inputs below "
            "-700): scale the inputs or pass normalize=False"
        )
    return normalizer

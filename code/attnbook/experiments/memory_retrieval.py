"""What a fixed-size memory recalls (chapter 17): write P key-value pairs
into a d_v x d_k state, read each key back, and measure how far the answer
is from its value.

Four memories on one axis (the "test-time regression" view): softmax
attention keeps every pair (a kernel regression over all of them, chapter
1); a sum of outer products S = sum v k^T (linear attention); the delta rule
(one Widrow-Hoff step per pair, beta = 1 by default); and the least-squares
state S = V^T (K^T)^+ that the steps aim at. Keys are random unit vectors,
values random unit vectors, float64, drawn from seeded generators (torch's
global random state does not move).

Also Performer's error: how far phi(Q) phi(K)^T is from exp(Q K^T /
sqrt(d)) as the number of random features grows.
"""

import math

import torch

from .._checks import (
    all_finite,
    require_finite_number,
    require_float,
    require_int,
    require_same_dtype,
    require_same_size,
    require_shape,
)
from .._memory import require_matrix_fits
from .._random import seeded_generator
from ..core.attention import attention
from ..core.delta_rule import delta_rule
from ..core.feature_maps import positive_random_features, random_projection

MEMORIES = ("softmax", "linear", "delta", "least squares")
SHARPNESS = 50.0  # softmax's inverse temperature on unit keys: near-exact


def random_pairs(num_pairs: int, key_dim: int, value_dim: int, seed: int = 0):
    """(keys (P, d_k), values (P, d_v)): random unit vectors, float64, from
    a generator seeded ``seed``."""
    require_int("num_pairs", num_pairs)
    require_int("key_dim", key_dim)
    require_int("value_dim", value_dim)
    require_matrix_fits(
        "the pairs (num_pairs, key_dim + value_dim)",
        (num_pairs, key_dim + value_dim),
        torch.float64,
    )
    generator = seeded_generator(seed)
    keys = torch.randn(num_pairs, key_dim, generator=generator).double()
    values = torch.randn(num_pairs, value_dim, generator=generator).double()
    return _unit(keys), _unit(values)


def _unit(x: torch.Tensor) -> torch.Tensor:
    return x / x.norm(dim=-1, keepdim=True)


def recall(memory: str, keys, values, beta: float = 1.0, gate=None):
    """Every stored key read back from ``memory`` after all the pairs were
    written: (P, d_v).

    memory: "softmax" (attention over all pairs, inverse temperature
    ``SHARPNESS``), "linear" (S = sum_i v_i k_i^T), "delta" (the delta
    rule with ``beta``) or "least squares" (the state minimising
    sum_i |S k_i - v_i|^2, smallest norm). gate: None, or a decay per write
    (P,) in (0, 1] for "linear" and "delta".
    """
    if memory not in MEMORIES:
        raise ValueError(f"memory must be one of {MEMORIES}, got {memory!r}")
    require_finite_number("beta", beta, low=0.0, high=2.0)
    _check_pairs(keys, values, gate)
    if memory == "softmax":
        output, _ = attention(
            keys * SHARPNESS * math.sqrt(keys.shape[-1]), keys, values
        )
        return output
    if memory == "least squares":
        state = torch.linalg.lstsq(keys, values).solution.T  # (d_v, d_k)
        if keys.shape[0] < keys.shape[1]:  # underdetermined: min-norm
            state = values.T @ torch.linalg.pinv(keys.T)
        return keys @ state.T
    state = _written_state(memory, keys, values, beta, gate)
    return keys @ state.T


def _check_pairs(keys, values, gate) -> None:
    """keys (P, d_k) and values (P, d_v), float64 and finite; gate None or
    (P,) in (0, 1]."""
    require_shape("keys", keys, (None, None))
    require_shape("values", values, (None, None))
    if keys.shape[0] == 0:
        raise ValueError("keys must hold at least one pair, got 0 rows")
    require_same_size(
        "number of keys and values",
        "keys",
        keys.shape[0],
        "values",
        values.shape[0],
    )
    require_float("keys", keys)
    require_same_dtype(keys=keys, values=values)
    if not (all_finite(keys) and all_finite(values)):
        raise ValueError("keys and values must be finite (no NaN or inf)")
    if gate is not None:
        require_shape("gate", gate, (keys.shape[0],))
        require_same_dtype(keys=keys, gate=gate)
        if not bool(((gate > 0) & (gate <= 1)).all()):
            raise ValueError("gate must hold values in (0, 1]")


def _written_state(memory, keys, values, beta, gate) -> torch.Tensor:
    """The d_v x d_k state after writing every pair (no query is needed:
    the state is returned)."""
    n = keys.shape[0]
    if memory == "linear":
        # S = sum_i (g_{i+1} ... g_P) v_i k_i^T: each write, decayed by the
        # gates that came after it (all 1 without a gate)
        weights = torch.ones(n, dtype=keys.dtype)
        if gate is not None:
            after = torch.cat([gate[1:], gate.new_ones(1)])
            weights = after.flip(0).cumprod(0).flip(0)
        return (values * weights[:, None]).T @ keys
    full = torch.full((n,), float(beta), dtype=keys.dtype)
    _, state = delta_rule(
        keys, keys, values, full, gate, chunk_size=64, return_state=True
    )
    return state


def retrieval_errors(memory: str, keys, values, **options) -> torch.Tensor:
    """|recalled - value|^2 for each pair (P,): 0 is perfect, 1 is as bad as
    answering 0 (values are unit vectors)."""
    recalled = recall(memory, keys, values, **options)
    return (recalled - values).pow(2).sum(dim=-1)


def _counts(name: str, values, minimum: int = 1) -> list:
    """A non-empty list (or tuple, range) of ints >= ``minimum``."""
    if not isinstance(values, (list, tuple, range)) or not len(values):
        raise ValueError(
            f"{name} must be a non-empty list of ints, got {values!r:.40}"
        )
    for value in values:
        require_int(f"each of {name}", value, minimum=minimum)
    return list(values)


def retrieval_curve(
    memory: str, key_dim: int, pair_counts, seeds=(0, 1, 2), **options
) -> torch.Tensor:
    """Mean retrieval error over the pairs, (len(seeds), len(pair_counts)):
    one row per seed, values of dimension ``key_dim``."""
    pair_counts = _counts("pair_counts", pair_counts)
    seeds = _counts("seeds", seeds, minimum=0)
    require_int("key_dim", key_dim)
    rows = []
    for seed in seeds:
        row = []
        for count in pair_counts:
            keys, values = random_pairs(count, key_dim, key_dim, seed)
            errors = retrieval_errors(memory, keys, values, **options)
            row.append(float(errors.mean()))
        rows.append(row)
    return torch.tensor(rows, dtype=torch.float64)


def performer_errors(
    feature_counts, seeds=(0, 1, 2, 3, 4), n: int = 64, dim: int = 16
) -> torch.Tensor:
    """Relative error |phi(Q) phi(K)^T - exp(Q K^T / sqrt(d))| / |exp(...)|
    (Frobenius norms) of Performer's orthogonal positive random features,
    (len(seeds), len(feature_counts)); queries and keys of n random vectors
    with entries N(0, 1) / 2, float64. The inputs are drawn once (seed 100);
    each seed draws the features."""
    feature_counts = _counts("feature_counts", feature_counts)
    seeds = _counts("seeds", seeds, minimum=0)
    require_int("n", n, minimum=1)
    require_int("dim", dim, minimum=1)
    require_matrix_fits(
        "the queries and keys (2 n, dim)", (2 * n, dim), torch.float64
    )
    require_matrix_fits("the kernel matrix", (n, n), torch.float64)
    generator = seeded_generator(100)
    queries = torch.randn(n, dim, generator=generator).double() / 2
    keys = torch.randn(n, dim, generator=generator).double() / 2
    scaled_q, scaled_k = queries / dim**0.25, keys / dim**0.25
    exact = torch.exp(queries @ keys.T / math.sqrt(dim))
    rows = []
    for seed in seeds:
        row = []
        for count in feature_counts:
            w = random_projection(count, dim, seed=seed)
            approx = positive_random_features(scaled_q, w) @ (
                positive_random_features(scaled_k, w).T
            )
            row.append(float((approx - exact).norm() / exact.norm()))
        rows.append(row)
    return torch.tensor(rows, dtype=torch.float64)

"""Feature maps phi for linear attention: phi(q) . phi(k) stands in for the
similarity exp(q . k) of softmax attention.

``elu_feature_map``: elu(x) + 1, positive everywhere (Katharopoulos et al.
2020), the default of ``linear_attention``. It is not an approximation of
anything: it defines a different attention.

``positive_random_features``: Performer's positive random features (FAVOR+,
Choromanski et al. 2021), phi(x) = exp(W x - |x|^2 / 2) / sqrt(m) with the m
rows of W drawn from N(0, I): E[phi(q) . phi(k)] = exp(q . k) exactly, so
phi(q) . phi(k) approximates softmax's similarity, better with more features.
``random_projection`` draws W from its own seeded generator (torch's global
random state does not move); orthogonal=True makes the rows orthogonal in
blocks of d, with norms drawn from the chi distribution of a Gaussian row, as
the Performer paper does (its "orthogonal random features").
"""

import math

import torch
import torch.nn.functional as F

from .._checks import (
    all_finite,
    require_flag,
    require_float,
    require_float_dtype,
    require_int,
    require_same_dtype,
)
from .._memory import require_matrix_fits
from .._random import seeded_generator
from ._state_checks import require_finite


def elu_feature_map(x: torch.Tensor) -> torch.Tensor:
    """phi(x) = elu(x) + 1, elementwise: x for x > 0 (plus 1), exp(x) below.

    x: (..., d). Returns (..., d), every entry > 0 (for finite x not below
    the dtype's exp range).
    """
    require_float("x", x)
    return F.elu(x) + 1.0


def random_projection(
    num_features: int,
    dim: int,
    seed: int = 0,
    orthogonal: bool = True,
    dtype: torch.dtype = torch.float64,
) -> torch.Tensor:
    """The random matrix W (num_features, dim) of Performer's features.

    orthogonal=False: i.i.d. N(0, 1) entries. orthogonal=True: blocks of
    ``dim`` orthogonal rows (a QR of a Gaussian block), each row rescaled to
    the norm of an independent Gaussian row. Drawn from a generator seeded
    ``seed``; torch's global random state is left as it was.
    """
    require_int("num_features", num_features)
    require_int("dim", dim)
    require_flag("orthogonal", orthogonal)
    require_float_dtype("dtype", dtype)
    require_matrix_fits(
        "the projection (num_features, dim)",
        (num_features, dim),
        torch.float64,
    )
    generator = seeded_generator(seed)
    gaussian = torch.randn(
        num_features, dim, generator=generator, dtype=torch.float64
    )
    if not orthogonal:
        return gaussian.to(dtype)
    blocks = []
    for start in range(0, num_features, dim):
        square = torch.randn(
            dim, dim, generator=generator, dtype=torch.float64
        )
        q, r = torch.linalg.qr(square)
        # signs of R's diagonal moved into Q: a uniformly random rotation
        # (without it every row leans to one side, and the estimate is biased)
        q = q * torch.sign(torch.diagonal(r))
        blocks.append(q.T[: num_features - start])
    rows = torch.cat(blocks)  # orthonormal within each block
    norms = gaussian.norm(dim=-1, keepdim=True)  # chi-distributed lengths
    return (rows * norms).to(dtype)


def positive_random_features(
    x: torch.Tensor, projection: torch.Tensor
) -> torch.Tensor:
    """Performer's positive random features phi(x) = exp(W x - |x|^2 / 2) /
    sqrt(m).

    x: (..., d); projection W: (m, d) (``random_projection``), the dtype of
    x. Returns (..., m), positive. For softmax's exp(q . k / sqrt(d)) pass
    x / d**0.25 for both queries and keys. Large |x| makes every feature
    underflow to 0 (exp of about -|x|^2 / 2): keep the inputs of order 1.
    """
    require_float("x", x)
    require_float("projection", projection)
    require_same_dtype(x=x, projection=projection)
    if projection.dim() != 2 or x.dim() < 1:
        raise ValueError(
            "projection must have shape (m, d) and x (..., d), got "
            f"{tuple(projection.shape)} and {tuple(x.shape)}"
        )
    if projection.shape[1] != x.shape[-1]:
        raise ValueError(
            f"projection has {projection.shape[1]} columns but x has "
            f"{x.shape[-1]} features"
        )
    require_matrix_fits(
        "the features", (*x.shape[:-1], projection.shape[0]), x.dtype
    )
    require_finite(x=x, projection=projection)
    exponent = x @ projection.T - 0.5 * (x * x).sum(dim=-1, keepdim=True)
    features = torch.exp(exponent) / math.sqrt(projection.shape[0])
    if not all_finite(features):
        raise ValueError(
            "positive_random_features overflowed (exp of W x - |x|^2 / 2): "
            "x or the projection is too large; scale x down (x / d**0.25 "
            "for softmax's scaled scores)"
        )
    return features

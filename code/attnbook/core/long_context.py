"""Positions for long context: ALiBi's linear biases and RoPE scaling.

ALiBi (Press, Smith and Lewis 2022, "Train Short, Test Long", arXiv
2108.12409) gives the tokens no position at all: head h adds -m_h * distance
to the score of a query and a key, a fixed slope m_h per head.

RoPE scaling changes the rotation frequencies of ``attnbook.core.rotary`` so
that a model trained on L positions reads s * L of them (s = ``factor``):
position interpolation (Chen et al. 2023, arXiv 2306.15595) divides every
frequency by s; NTK-aware scaling raises the base; YaRN (Peng et al. 2023,
arXiv 2309.00071) interpolates only the slow pairs, which turn less than
once over the L positions, keeps the fast ones and ramps in between, and
sharpens the softmax (``yarn_attention_scale``).
"""

import math

import torch

from .._checks import (
    require_finite_number,
    require_float_dtype,
    require_int,
    require_tensor,
)
from .._memory import require_matrix_fits
from .masking import causal_mask
from .positional import pair_frequencies

SCALINGS = (None, "linear", "ntk", "yarn")
YARN_ALPHA = 1.0  # YaRN paper, section 3.2: the values for LLaMA models
YARN_BETA = 32.0


def alibi_slopes(num_heads: int) -> torch.Tensor:
    """ALiBi's slope m_h of every head, float64, shape (num_heads,).

    h = num_heads a power of two: m_i = 2^(-8i/h), i = 1 .. h, a geometric
    sequence from 2^(-8/h) down to 2^(-8) (8 heads: 1/2, 1/4, ..., 1/256).
    Any other h, by the rule of the paper's code (``get_slopes`` in
    github.com/ofirpress/attention_with_linear_biases, file
    fairseq/models/transformer.py): the slopes of n = 2^floor(log2 h)
    heads, then every other slope of 2n heads, 2^(-8i/(2n)) for
    i = 1, 3, 5, ..., the first h - n of them.
    """
    require_int("num_heads", num_heads)
    require_matrix_fits(
        "the slopes", (num_heads,), torch.float64, hint="use fewer heads, or"
    )
    n = 2 ** (num_heads.bit_length() - 1)  # the power of two <= num_heads
    i = torch.arange(1, num_heads + 1, dtype=torch.float64)
    first = 2.0 ** (-8.0 * i[:n] / n)
    odd = 2 * i[: num_heads - n] - 1  # 1, 3, 5, ...
    return torch.cat((first, 2.0 ** (-8.0 * odd / (2 * n))))


def alibi_bias(
    num_heads: int,
    n_q: int,
    n_k: int | None = None,
    *,
    dtype: torch.dtype = torch.float32,
    device=None,
) -> torch.Tensor:
    """ALiBi's biases, shape (num_heads, n_q, n_k), to add to the scores
    (num_heads, n_q, n_k) of num_heads heads before the softmax.

    Bottom-right aligned like ``causal_mask``: query i sits at position
    p = n_k - n_q + i. bias[h, i, j] = -m_h * (p - j) for the keys j <= p
    it may see (0 on its own position) and -inf for the keys after it, so
    the bias holds the causal mask too. m_h: ``alibi_slopes(num_heads)``;
    n_k = n_q if not given. Computed in float64, cast to dtype.
    """
    require_int("num_heads", num_heads)
    require_float_dtype("dtype", dtype)
    keep = causal_mask(n_q, n_k, device=device)  # checks n_q, n_k, device
    n_k, device = keep.shape[1], keep.device
    require_matrix_fits(
        "the biases",
        (num_heads, n_q, n_k),
        torch.float64,
        hint="use fewer heads or positions, or",
    )
    _require_representable(n_k, dtype)
    slopes = alibi_slopes(num_heads).to(device)
    keys = torch.arange(n_k, dtype=torch.float64, device=device)
    offset = keys - keys[n_k - n_q :, None]  # j - p, (n_q, n_k)
    bias = slopes[:, None, None] * offset  # (num_heads, n_q, n_k)
    return bias.masked_fill(~keep, float("-inf")).to(dtype)


def _require_representable(n_k: int, dtype: torch.dtype) -> None:
    """The largest bias, 1/2 * (n_k - 1), finite in dtype (float16 ends
    at 65504): a bias turned -inf would hide a key silently."""
    largest = 0.5 * max(n_k - 1, 0)
    if largest > torch.finfo(dtype).max:
        raise ValueError(
            f"ALiBi's biases reach -{largest:g} for n_k = {n_k}, beyond "
            f"{dtype} (largest {torch.finfo(dtype).max:g}): use float32"
        )


def rope_frequencies(
    head_dim: int,
    base: float = 10000.0,
    scaling: str | None = None,
    factor: float = 1.0,
    *,
    original_context: int | None = None,
    alpha: float = YARN_ALPHA,
    beta: float = YARN_BETA,
) -> torch.Tensor:
    """RoPE's head_dim/2 rotation frequencies, float64, shape (head_dim/2,).

    With d = head_dim and s = factor (the new context over the old, >= 1):

    - None: theta_j = base^(-2j/d), j = 0 .. d/2 - 1, the frequencies of
      ``apply_rotary`` (factor must be 1).
    - "linear", position interpolation (Chen et al. 2023: position m read
      as m L / L' = m / s), as a frequency: theta_j / s.
    - "ntk", NTK-aware (YaRN paper, arXiv v3, section 3.1): theta_j with
      the base b' = base * s^(d/(d-2)). The fastest pair keeps theta_0 = 1,
      the slowest is divided by s exactly; d >= 4.
    - "yarn", NTK-by-parts (YaRN paper, v3, section 3.2, Definition 1; the
      frequencies of YaRN, section 3.3). r_j = L / lambda_j = L theta_j /
      (2 pi), the turns pair j makes over the original context
      L = original_context (an int, needed here only); the ramp gamma(r) =
      0 below alpha, 1 above beta, (r - alpha) / (beta - alpha) between;
      h_j = (1 - gamma(r_j)) theta_j / s + gamma(r_j) theta_j. Pairs turning
      more than beta times keep theta_j, pairs turning less than alpha
      times get theta_j / s. alpha = 1, beta = 32: the paper's values for
      LLaMA. YaRN also sharpens the softmax: ``yarn_attention_scale``.

    The paper's ramp is linear in r. Its code (github.com/jquesnelle/yarn)
    and Hugging Face's ``_compute_yarn_parameters`` ramp linearly in the
    pair index j between the (rounded) pairs where r = beta and r = alpha:
    the same frequencies outside the ramp, slightly different inside it.
    """
    _check_head_dim(head_dim, scaling)
    factor = _check_scaling(scaling, factor, original_context, alpha, beta)
    theta = pair_frequencies(head_dim, base)
    if scaling == "linear":
        return theta / factor
    if scaling == "ntk":
        return pair_frequencies(head_dim, _ntk_base(base, factor, head_dim))
    if scaling == "yarn":
        return ntk_by_parts(theta, factor, original_context, alpha, beta)
    return theta


def yarn_attention_scale(factor: float) -> float:
    """YaRN's logit scale sqrt(1/t) = 0.1 ln(s) + 1, s = factor >= 1.

    YaRN (Peng et al. 2023, arXiv v3, section 3.3, fitted on LLaMA)
    divides the logits by a temperature t: softmax(q.k / (t sqrt(d))).
    Multiplying the query and the key (or RoPE's cos and sin) by this
    number does it without touching the attention code: their product
    grows by 1/t. (Eq. 27 of the first preprint, v1, printed sqrt(t); the
    authors' Errata.md in github.com/jquesnelle/yarn corrects it to
    sqrt(1/t).)
    """
    require_finite_number("factor", factor, low=1.0)
    return 0.1 * math.log(factor) + 1.0


def _check_head_dim(head_dim, scaling) -> None:
    """An even head_dim >= 2 (pairs of features), >= 4 for "ntk"."""
    require_int("head_dim", head_dim, minimum=2)
    if head_dim % 2:
        raise ValueError(
            f"head_dim must be even (RoPE turns pairs), got {head_dim}"
        )
    if scaling == "ntk" and head_dim < 4:
        raise ValueError(
            "scaling='ntk' needs head_dim >= 4 (its exponent d/(d-2)), got "
            f"{head_dim}"
        )


def _check_scaling(scaling, factor, original_context, alpha, beta) -> float:
    """A known scaling, a factor >= 1 (exactly 1 without scaling) and the
    yarn-only arguments only with "yarn"; returns factor as a float."""
    if scaling is not None and (
        not isinstance(scaling, str) or scaling not in SCALINGS[1:]
    ):
        raise ValueError(
            f"scaling must be one of {SCALINGS}, got {scaling!r:.40}"
        )
    require_finite_number("factor", factor, low=1.0)
    if scaling is None and factor != 1:
        raise ValueError(
            f"factor = {factor} needs a scaling ('linear', 'ntk' or 'yarn')"
        )
    if scaling == "yarn":
        require_int("original_context", original_context)
        require_finite_number("alpha", alpha, low=0.0, include_low=False)
        require_finite_number("beta", beta, low=alpha, include_low=False)
    elif original_context is not None or (alpha, beta) != (
        YARN_ALPHA,
        YARN_BETA,
    ):
        raise ValueError(
            "original_context, alpha and beta belong to scaling='yarn', "
            f"got scaling={scaling!r}"
        )
    return float(factor)


def _ntk_base(base: float, factor: float, head_dim: int) -> float:
    """b' = b * s^(d/(d-2)), or a ValueError if it is no finite float."""
    try:
        new_base = base * factor ** (head_dim / (head_dim - 2))
    except (OverflowError, TypeError):
        new_base = float("inf")
    if not math.isfinite(new_base):
        raise ValueError(
            f"scaling='ntk' with factor = {factor} and base = {base:.6g} "
            "gives a base beyond every float: use a smaller factor"
        )
    return new_base


def ntk_by_parts(theta, factor, original_context, alpha, beta):
    """h_j = (1 - gamma(r_j)) theta_j / s + gamma(r_j) theta_j."""
    turns = original_context * theta / (2 * math.pi)  # r = L / lambda
    ramp = ((turns - alpha) / (beta - alpha)).clamp(0.0, 1.0)
    return (1 - ramp) * theta / factor + ramp * theta


def rope_score_by_distance(
    frequencies: torch.Tensor, distances: torch.Tensor
) -> torch.Tensor:
    """The RoPE score between two copies of one vector at each distance,
    relative to distance 0: mean_j cos(distance * frequencies[j]).

    It is exact for a vector whose d/2 feature pairs have equal lengths,
    and the expected value for a random vector with independent, identically
    distributed features. frequencies: (d/2,); distances: (m,). Returns
    (m,) float64, 1 at distance 0.
    """
    for name, value in (
        ("frequencies", frequencies),
        ("distances", distances),
    ):
        require_tensor(name, value)
        if value.dim() != 1 or value.is_complex() or value.dtype == torch.bool:
            raise ValueError(
                f"{name} must be a 1-d real tensor, got {value.dtype} of "
                f"shape {tuple(value.shape)}"
            )
    if len(frequencies) == 0:
        raise ValueError(
            "frequencies must hold at least one frequency (the mean over "
            "none is undefined), got shape (0,)"
        )
    require_matrix_fits(
        "the angles",
        (len(distances), len(frequencies)),
        torch.float64,
        hint="use fewer distances, or",
    )
    angle = distances.to(torch.float64)[:, None] * frequencies.to(
        torch.float64
    )
    return angle.cos().mean(dim=-1)


def t5_buckets(
    distances: torch.Tensor, num_buckets: int = 32, max_distance: int = 128
) -> torch.Tensor:
    """T5's relative-position bucket of each query-key distance, causal
    (one direction) version: every (query, key) pair at distance d >= 0
    shares the learned bias of bucket b(d) (Raffel et al. 2020, section
    2.1; the rule of ``_relative_position_bucket`` in the T5 code, with
    ``bidirectional=False``).

    With e = num_buckets // 2 exact buckets: b(d) = d for d < e, then
    b(d) = min(num_buckets - 1, e + floor(ln(d / e) / ln(max_distance / e)
    * (num_buckets - e))): logarithmically wider buckets up to
    max_distance, and every longer distance in the last bucket.
    distances: integer tensor of distances >= 0. Returns int64 buckets of
    the same shape.
    """
    require_int("num_buckets", num_buckets, minimum=2)
    require_int("max_distance", max_distance, minimum=num_buckets // 2 + 1)
    require_tensor("distances", distances)
    if (
        distances.is_floating_point()
        or distances.is_complex()
        or distances.dtype == torch.bool
        or (distances < 0).any()
    ):
        raise ValueError("distances must be integers >= 0")
    exact = num_buckets // 2
    d = distances.to(torch.int64)
    ratio = d.clamp(min=1).to(torch.float64) / exact
    log_part = torch.log(ratio) / math.log(max_distance / exact)
    large = exact + (log_part * (num_buckets - exact)).to(torch.int64)
    large = large.clamp(max=num_buckets - 1)
    return torch.where(d < exact, d, large)

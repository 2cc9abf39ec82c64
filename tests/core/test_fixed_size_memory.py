"""Chapter 17's mechanisms against their token-by-token definitions, in
float64: linear attention (parallel, recurrent, chunked), Performer's
features, the (gated) delta rule (token loop and chunked WY/UT form), gated
linear attention and Mamba-2's state-space duality; and their errors for bad
input."""

import math

import pytest
import torch
import torch.nn.functional as F

import attnbook
from attnbook import (
    decay_mask,
    delta_rule,
    elu_feature_map,
    gated_linear_attention,
    linear_attention,
    linear_attention_recurrent,
    positive_random_features,
    random_projection,
    ssd_attention,
)

TOL = 1e-12


def _inputs(n=37, d_k=6, d_v=5, batch=(2, 3), seed=0):
    g = torch.Generator().manual_seed(seed)

    def draw(*shape):
        return torch.randn(*shape, generator=g, dtype=torch.float64)

    q, k, v = draw(*batch, n, d_k), draw(*batch, n, d_k), draw(*batch, n, d_v)
    k = F.normalize(k, dim=-1)
    beta = torch.rand(*batch, n, generator=g, dtype=torch.float64)
    gate = 0.5 + 0.5 * torch.rand(*batch, n, generator=g, dtype=torch.float64)
    return q, k, v, beta, gate


# --- definitions written out, one position at a time ----------------------


def linear_definition(q, k, v, causal=True, phi=elu_feature_map, norm=True):
    """o_i = sum_j phi(q_i).phi(k_j) v_j / sum_j phi(q_i).phi(k_j), j <= i
    when causal: a double loop over positions."""
    fq, fk = phi(q), phi(k)
    out = torch.zeros(*q.shape[:-1], v.shape[-1], dtype=v.dtype)
    for i in range(q.shape[-2]):
        last = i + 1 if causal else k.shape[-2]
        num, den = 0.0, 0.0
        for j in range(last):
            w = (fq[..., i, :] * fk[..., j, :]).sum(-1, keepdim=True)
            num, den = num + w * v[..., j, :], den + w
        out[..., i, :] = num / den if norm else num
    return out


def delta_definition(q, k, v, beta, gate=None):
    """S_t = g_t S_{t-1} (I - beta_t k_t k_t^T) + beta_t v_t k_t^T, o_t =
    S_t q_t, with explicit matrices."""
    d_k, d_v = k.shape[-1], v.shape[-1]
    state = torch.zeros(*k.shape[:-2], d_v, d_k, dtype=k.dtype)
    eye = torch.eye(d_k, dtype=k.dtype)
    out = []
    for t in range(k.shape[-2]):
        kt, vt, b = k[..., t, :], v[..., t, :], beta[..., t, None, None]
        g = 1.0 if gate is None else gate[..., t, None, None]
        outer_kk = kt[..., :, None] * kt[..., None, :]
        state = g * state @ (eye - b * outer_kk) + b * (
            vt[..., :, None] * kt[..., None, :]
        )
        out.append(torch.einsum("...vk,...k->...v", state, q[..., t, :]))
    return torch.stack(out, dim=-2), state


def gated_definition(q, k, v, gate):
    """o_i = sum_{j<=i} (prod_{t=j+1..i} g_t) (q_i . k_j) v_j, gates per
    token (..., n) or per key channel (..., n, d_k)."""
    per_channel = gate.shape[-1] == k.shape[-1] and gate.dim() == k.dim()
    out = torch.zeros(*q.shape[:-1], v.shape[-1], dtype=v.dtype)
    for i in range(q.shape[-2]):
        for j in range(i + 1):
            if per_channel:
                decay = gate[..., j + 1 : i + 1, :].prod(dim=-2)
                w = (q[..., i, :] * decay * k[..., j, :]).sum(-1)
            else:
                decay = gate[..., j + 1 : i + 1].prod(dim=-1)
                w = decay * (q[..., i, :] * k[..., j, :]).sum(-1)
            out[..., i, :] += w[..., None] * v[..., j, :]
    return out


# --- linear attention -------------------------------------------------------


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("normalize", [True, False])
def test_linear_attention_parallel_and_chunked_equal_definition(
    causal, normalize
):
    q, k, v, _, _ = _inputs(n=13)
    expected = linear_definition(q, k, v, causal, norm=normalize)
    for chunk in (None, 1, 4, 13, 20):
        got = linear_attention(
            q, k, v, causal=causal, normalize=normalize, chunk_size=chunk
        )
        assert (got - expected).abs().max() < TOL, chunk


def test_linear_attention_recurrent_equals_parallel():
    q, k, v, _, _ = _inputs(n=37)
    for normalize in (True, False):
        rec = linear_attention_recurrent(q, k, v, normalize=normalize)
        par = linear_attention(q, k, v, normalize=normalize)
        assert (rec - par).abs().max() < TOL


def test_linear_attention_non_causal_more_queries_than_keys():
    q, k, v, _, _ = _inputs(n=7)
    q2 = torch.cat([q, q], dim=-2)  # 14 queries, 7 keys
    expected = linear_definition(q2, k, v, causal=False)
    got = linear_attention(q2, k, v, causal=False, chunk_size=3)
    assert (got - expected).abs().max() < TOL
    with pytest.raises(ValueError, match="queries and keys"):
        linear_attention(q2, k, v, causal=True)


def test_linear_attention_with_performer_features():
    q, k, v, _, _ = _inputs(n=11)
    w = random_projection(16, q.shape[-1], seed=3)

    def phi(x):
        return positive_random_features(x, w)

    expected = linear_definition(q, k, v, True, phi=phi)
    got = linear_attention(q, k, v, feature_map=phi, chunk_size=4)
    assert (got - expected).abs().max() < TOL


def test_linear_attention_is_softmax_attention_for_the_exp_kernel():
    # with exact features of exp(q.k) (an outer-product basis would be
    # infinite), check the regrouping on a kernel with finite features:
    # phi(x) = [1, x, x (x) x / sqrt 2] gives 1 + q.k + (q.k)^2 / 2
    q, k, v, _, _ = _inputs(n=9, d_k=3)

    def phi(x):
        outer = (x[..., :, None] * x[..., None, :]).flatten(-2)
        ones = torch.ones_like(x[..., :1])
        return torch.cat([ones, x, outer / math.sqrt(2)], dim=-1)

    weights = 1 + q @ k.mT + (q @ k.mT) ** 2 / 2
    mask = attnbook.causal_mask(9)
    weights = weights.masked_fill(~mask, 0.0)
    expected = (weights / weights.sum(-1, keepdim=True)) @ v
    # the features are signed: normalize=True would refuse them; divide here
    got = linear_attention(q, k, v, feature_map=phi, normalize=False)
    assert (got / weights.sum(-1, keepdim=True) - expected).abs().max() < TOL


def test_linear_attention_half_precision_and_gradients():
    q, k, v, _, _ = _inputs(n=10)
    out = linear_attention(q.half(), k.half(), v.half(), chunk_size=4)
    assert out.dtype == torch.float16
    assert (out.double() - linear_attention(q, k, v)).abs().max() < 1e-2
    qg = q.clone().requires_grad_()
    linear_attention(qg, k, v, chunk_size=3).sum().backward()
    grad_chunked = qg.grad.clone()
    qg.grad = None
    linear_attention(qg, k, v).sum().backward()
    assert (qg.grad - grad_chunked).abs().max() < TOL


# --- Performer's features ---------------------------------------------------


def test_random_features_are_unbiased_and_improve_with_more_features():
    q, k, _, _, _ = _inputs(n=20, d_k=8, batch=())
    q, k = q * 0.4, k * 0.4
    exact = torch.exp(q @ k.T)
    errors = []
    for m in (16, 256, 4096):
        rel = []
        for seed in range(4):
            w = random_projection(m, 8, seed=seed)
            approx = (
                positive_random_features(q, w)
                @ positive_random_features(k, w).T
            )
            rel.append(((approx - exact).norm() / exact.norm()).item())
        errors.append(sum(rel) / len(rel))
    assert errors[0] > errors[1] > errors[2]
    assert errors[2] < 0.15


@pytest.mark.parametrize("orthogonal", [False, True])
def test_random_features_are_unbiased(orthogonal):
    # the mean of phi(q).phi(k) over 500 draws of 8 features is exp(q.k)
    q, k, _, _, _ = _inputs(n=3, d_k=8, batch=())
    q, k = q * 0.5, k * 0.5
    total = 0.0
    for seed in range(500):
        w = random_projection(8, 8, seed=seed, orthogonal=orthogonal)
        total = total + (
            positive_random_features(q, w) @ positive_random_features(k, w).T
        )
    ratio = total / 500 / torch.exp(q @ k.T)
    assert (ratio - 1).abs().max() < 0.1


def test_random_projection_seeded_orthogonal_and_rng_untouched():
    before = torch.get_rng_state()
    w1 = random_projection(20, 8, seed=5)
    w2 = random_projection(20, 8, seed=5)
    assert torch.equal(before, torch.get_rng_state())
    assert torch.equal(w1, w2)
    block = w1[:8] / w1[:8].norm(dim=-1, keepdim=True)
    assert (block @ block.T - torch.eye(8, dtype=w1.dtype)).abs().max() < TOL
    assert w1.shape == (20, 8)
    assert random_projection(3, 8, orthogonal=False, seed=1).shape == (3, 8)


def test_random_features_overflow_is_refused():
    w = random_projection(4, 2)
    with pytest.raises(ValueError, match="x holds NaN"):
        positive_random_features(torch.full((1, 2), math.inf).double(), w)
    with pytest.raises(ValueError, match="overflow"):
        positive_random_features(torch.ones(1, 2).double(), w * 1e300)


# --- the delta rule ---------------------------------------------------------


@pytest.mark.parametrize("gated", [False, True])
def test_delta_rule_loop_equals_definition(gated):
    q, k, v, beta, gate = _inputs(n=23)
    gate = gate if gated else None
    expected, state = delta_definition(q, k, v, beta * 1.5, gate)
    out, got_state = delta_rule(q, k, v, beta * 1.5, gate, return_state=True)
    assert (out - expected).abs().max() < TOL
    assert (got_state - state).abs().max() < TOL
    assert got_state.shape == (2, 3, v.shape[-1], k.shape[-1])


@pytest.mark.parametrize("gated", [False, True])
@pytest.mark.parametrize("chunk", [1, 4, 8, 37, 64])
def test_chunked_delta_rule_equals_token_loop(gated, chunk):
    q, k, v, beta, gate = _inputs(n=37)  # 37: no chunk size divides it
    gate = gate if gated else None
    loop, loop_state = delta_rule(q, k, v, beta, gate, return_state=True)
    out, state = delta_rule(
        q, k, v, beta, gate, chunk_size=chunk, return_state=True
    )
    assert (out - loop).abs().max() < TOL
    assert (state - loop_state).abs().max() < TOL


def test_chunked_delta_rule_unnormalised_keys_and_small_gates():
    q, k, v, beta, gate = _inputs(n=30)
    k = k * 0.8  # not unit length: used as given
    gate = gate**20  # down to ~1e-6: products across a chunk underflow-safe
    loop = delta_rule(q, k, v, beta, gate)
    assert (loop - delta_definition(q, k, v, beta, gate)[0]).abs().max() < TOL
    assert (
        delta_rule(q, k, v, beta, gate, chunk_size=16) - loop
    ).abs().max() < TOL


def test_delta_rule_recalls_orthonormal_keys_exactly():
    # beta = 1, orthonormal keys: the state stores every pair exactly, even
    # after overwriting a key with a new value
    d = 8
    keys = torch.eye(d, dtype=torch.float64)[[0, 1, 2, 1]]
    values = torch.randn(4, 3, dtype=torch.float64)
    _, state = delta_rule(
        keys,
        keys,
        values,
        torch.ones(4, dtype=torch.float64),
        return_state=True,
    )
    assert (state @ keys[0] - values[0]).abs().max() < TOL
    assert (state @ keys[1] - values[3]).abs().max() < TOL  # overwritten
    assert (state @ keys[2] - values[2]).abs().max() < TOL


def test_delta_rule_broadcasts_beta_and_gradients_match():
    q, k, v, beta, gate = _inputs(n=12)
    shared = beta[0, 0]  # (n,): one beta for every head and sequence
    assert torch.equal(
        delta_rule(q, k, v, shared),
        delta_rule(q, k, v, shared.expand(2, 3, 12)),
    )
    grads = []
    for chunk in (None, 5):
        kg = k.clone().requires_grad_()
        bg = beta.clone().requires_grad_()
        delta_rule(q, kg, v, bg, gate, chunk_size=chunk).pow(
            2
        ).sum().backward()
        grads.append((kg.grad, bg.grad))
    assert (grads[0][0] - grads[1][0]).abs().max() < 1e-10
    assert (grads[0][1] - grads[1][1]).abs().max() < 1e-10


def test_delta_rule_half_precision_runs_in_float32():
    q, k, v, beta, gate = _inputs(n=9)
    out = delta_rule(
        *(x.bfloat16() for x in (q, k, v, beta, gate)), chunk_size=4
    )
    assert out.dtype == torch.bfloat16
    assert (out.double() - delta_rule(q, k, v, beta, gate)).abs().max() < 0.1


def test_empty_sequence():
    q, k, v, beta, gate = _inputs(n=0)
    for chunk in (None, 4):
        out, state = delta_rule(q, k, v, beta, gate, chunk, return_state=True)
        assert out.shape == (2, 3, 0, 5) and not state.any()
    assert linear_attention_recurrent(q, k, v).shape == (2, 3, 0, 5)


# --- gates and state-space duality ------------------------------------------


def test_gated_linear_attention_and_ssd_equal_definition():
    q, k, v, _, gate = _inputs(n=11)
    expected = gated_definition(q, k, v, gate)
    assert (gated_linear_attention(q, k, v, gate) - expected).abs().max() < TOL
    assert (ssd_attention(q, k, v, gate) - expected).abs().max() < TOL
    per_channel = 0.3 + 0.7 * torch.rand(2, 3, 11, 6, dtype=torch.float64)
    expected = gated_definition(q, k, v, per_channel)
    got = gated_linear_attention(q, k, v, per_channel)
    assert (got - expected).abs().max() < TOL


def test_gate_one_is_linear_attention_and_delta_state_is_gated_state():
    q, k, v, _, gate = _inputs(n=10)
    ones = torch.ones(2, 3, 10, dtype=torch.float64)
    plain = linear_attention(q, k, v, feature_map=lambda x: x, normalize=False)
    assert (gated_linear_attention(q, k, v, ones) - plain).abs().max() < TOL
    assert (ssd_attention(q, k, v, ones) - plain).abs().max() < TOL


def test_decay_mask():
    gate = torch.tensor([0.5, 0.5, 0.25], dtype=torch.float64)
    expected = torch.tensor(
        [[1, 0, 0], [0.5, 1, 0], [0.125, 0.25, 1]], dtype=torch.float64
    )
    assert (decay_mask(gate) - expected).abs().max() < TOL
    tiny = torch.full((400,), 0.01, dtype=torch.float64)  # 0.01**399 = 0
    assert torch.isfinite(decay_mask(tiny)).all()


# --- bad input --------------------------------------------------------------


def test_bad_inputs_get_clear_errors():
    q, k, v, beta, gate = _inputs(n=5)
    with pytest.raises(ValueError, match="beta"):
        delta_rule(q, k, v, beta[..., :4])
    with pytest.raises(ValueError, match="beta"):
        delta_rule(q, k, v, beta + 2.5)
    with pytest.raises(ValueError, match="beta"):
        delta_rule(q, k, v, -beta)
    with pytest.raises(ValueError, match="gate"):
        delta_rule(q, k, v, beta, torch.zeros_like(gate))
    with pytest.raises(ValueError, match="gate"):
        delta_rule(q, k, v, beta, gate + 1.0)
    with pytest.raises(ValueError, match="gate"):
        gated_linear_attention(q, k, v, gate[..., None].expand(2, 3, 5, 2))
    with pytest.raises(TypeError, match="dtype"):
        delta_rule(q, k, v, beta.float())
    with pytest.raises(TypeError, match="dtype"):
        linear_attention(q, k.float(), v)
    with pytest.raises(TypeError, match="floating"):
        delta_rule(q, k, v.long(), beta)
    with pytest.raises(ValueError, match="feature sizes"):
        delta_rule(q[..., :3], k, v, beta)
    with pytest.raises(ValueError, match="keys and values"):
        linear_attention(q, k, v[..., :4, :])
    with pytest.raises(ValueError, match="chunk_size"):
        delta_rule(q, k, v, beta, chunk_size=0)
    with pytest.raises(ValueError, match="chunk_size"):
        linear_attention(q, k, v, chunk_size=True)
    nan_keys = k.clone()
    nan_keys[0, 0, 2, 1] = float("nan")
    with pytest.raises(ValueError, match="keys"):
        delta_rule(q, nan_keys, v, beta)
    with pytest.raises(ValueError, match="beta"):
        delta_rule(q, k, v, beta.masked_fill(beta > 0.5, float("nan")))
    with pytest.raises(ValueError, match="normalize"):
        linear_attention(q, k, v, feature_map=lambda x: x)
    with pytest.raises(ValueError, match="normalizer"):
        linear_attention(q - 1e4, k - 1e4, v)
    with pytest.raises(TypeError, match="feature_map"):
        linear_attention(q, k, v, feature_map=3)
    with pytest.raises(ValueError, match="feature_map"):
        linear_attention(q, k, v, feature_map=lambda x: x[..., :1, :])
    with pytest.raises(ValueError, match="return_state"):
        delta_rule(q, k, v, beta, return_state=1)


def test_no_rng_move_and_no_mutation():
    q, k, v, beta, gate = _inputs(n=9)
    copies = [x.clone() for x in (q, k, v, beta, gate)]
    state = torch.get_rng_state()
    delta_rule(q, k, v, beta, gate, chunk_size=4)
    linear_attention(q, k, v, chunk_size=4)
    gated_linear_attention(q, k, v, gate)
    ssd_attention(q, k, v, gate)
    assert torch.equal(state, torch.get_rng_state())
    for x, c in zip((q, k, v, beta, gate), copies):
        assert torch.equal(x, c)

"""MultiHeadLatentAttention (DeepSeek-V2's MLA): the explicit form against the
paper's equations written out head by head, the absorbed form against the
explicit one, and the cache of latents against a full pass."""

import math

import pytest
import torch

from attnbook import agreement, apply_rotary, causal_mask
from attnbook.nn.latent_attention import MultiHeadLatentAttention

E, HEADS, LATENT, ROPE = 16, 4, 6, 4


def module(rope_dim=ROPE, head_dim=None, seed=0, dtype=torch.float64):
    torch.manual_seed(seed)
    return MultiHeadLatentAttention(
        E, HEADS, LATENT, head_dim=head_dim, rope_dim=rope_dim
    ).to(dtype)


def inputs(batch=2, n=7, seed=1, dtype=torch.float64):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(batch, n, E, generator=gen, dtype=dtype)


def by_the_equations(mla, x, keep):
    """Equations (9)-(11) and (14)-(19) of arXiv 2405.04434, one head and
    one query at a time, with plain loops and an explicit softmax."""
    n, h, d = x.shape[1], mla.num_heads, mla.head_dim
    positions = torch.arange(n)
    c = x @ mla.kv_down.weight.T  # (9)
    k_c = (c @ mla.key_up.weight.T).unflatten(-1, (h, d))  # (10)
    v_c = (c @ mla.value_up.weight.T).unflatten(-1, (h, d))  # (11)
    q_c = (x @ mla.q_proj.weight.T).unflatten(-1, (h, d))
    if mla.rope_dim:
        q_r = (x @ mla.q_rope.weight.T).unflatten(-1, (h, mla.rope_dim))
        q_r = apply_rotary(q_r.transpose(1, 2), positions).transpose(1, 2)
        k_r = apply_rotary(x @ mla.k_rope.weight.T, positions)  # (15)
    out = torch.zeros(x.shape[0], n, h, d, dtype=x.dtype)
    for b in range(x.shape[0]):
        for t in range(n):
            for i in range(h):
                scores = torch.full((n,), -math.inf, dtype=x.dtype)
                for j in range(n):
                    if keep[t, j]:
                        s = q_c[b, t, i] @ k_c[b, j, i]  # (16), (17)
                        if mla.rope_dim:
                            s = s + q_r[b, t, i] @ k_r[b, j]
                        scores[j] = s / math.sqrt(d + mla.rope_dim)  # (18)
                weights = torch.softmax(scores, dim=0)
                out[b, t, i] = weights @ v_c[b, :, i]
    return out.flatten(-2) @ mla.out_proj.weight.T  # (19)


@pytest.mark.parametrize("rope_dim", [0, 4])
@pytest.mark.parametrize("absorbed", [False, True])
def test_both_forms_follow_the_papers_equations(rope_dim, absorbed):
    mla, x = module(rope_dim=rope_dim), inputs(n=5)
    keep = causal_mask(5)
    output, _ = mla(x, mask=keep, absorbed=absorbed)
    expected = by_the_equations(mla, x, keep)
    assert agreement(output, expected, 1e-12) == "equal within 1e-12"


@pytest.mark.parametrize("rope_dim, head_dim", [(0, None), (4, None), (2, 3)])
@pytest.mark.parametrize("mask_kind", ["none", "causal", "padding"])
def test_absorbed_equals_explicit(rope_dim, head_dim, mask_kind):
    mla, x = module(rope_dim=rope_dim, head_dim=head_dim), inputs()
    keep = torch.ones(2, 1, 1, 7, dtype=torch.bool)
    keep[1, ..., 5:] = False
    mask = {"none": None, "causal": causal_mask(7), "padding": keep}
    explicit, cache = mla(x, mask=mask[mask_kind])
    absorbed, cache_absorbed = mla(x, mask=mask[mask_kind], absorbed=True)
    assert agreement(absorbed, explicit, 1e-12) == "equal within 1e-12"
    assert all(torch.equal(a, b) for a, b in zip(cache, cache_absorbed))


def test_absorbed_equals_explicit_in_float32():
    mla, x = module(dtype=torch.float32), inputs(dtype=torch.float32)
    explicit, _ = mla(x, mask=causal_mask(7))
    absorbed, _ = mla(x, mask=causal_mask(7), absorbed=True)
    assert agreement(absorbed, explicit, 1e-5) == "equal within 1e-05"


def test_the_comparison_can_fail():
    # a wrong scale in the absorbed form (sqrt(d_c + d_R), what attention
    # over the latents would use unprompted) is caught at 1e-12
    mla, x = module(), inputs()
    explicit, _ = mla(x)
    mla.head_dim = LATENT  # the absorbed form now rescales by 1
    wrong, _ = mla(x, absorbed=True)
    assert agreement(wrong, explicit, 1e-12).startswith("differ")


@pytest.mark.parametrize("absorbed", [False, True])
def test_decoding_with_the_cache_equals_the_full_pass(absorbed):
    mla, x = module(), inputs(n=6)
    full, (latent, rope_keys) = mla(x, mask=causal_mask(6))
    # prefill 3 positions, then one position at a time
    out, cache = mla(x[:, :3], mask=causal_mask(3), absorbed=absorbed)
    steps = [out]
    for t in range(3, 6):
        out, cache = mla(
            x[:, t : t + 1],
            mask=causal_mask(1, t + 1),
            cache=cache,
            absorbed=absorbed,
        )
        steps.append(out)
    assert agreement(torch.cat(steps, 1), full, 1e-12) == "equal within 1e-12"
    assert agreement(cache[0], latent, 1e-12) == "equal within 1e-12"
    assert agreement(cache[1], rope_keys, 1e-12) == "equal within 1e-12"


def test_the_cache_holds_a_latent_and_one_rotary_key_per_position():
    mla, x = module(), inputs()
    _, (latent, rope_keys) = mla(x)
    assert latent.shape == (2, 7, LATENT) and rope_keys.shape == (2, 7, ROPE)
    assert torch.equal(latent, x @ mla.kv_down.weight.T)  # (9)
    compressed = mla.compress(x[:, 4:], start=4)
    assert agreement(compressed[0], latent[:, 4:], 1e-12).startswith("eq")
    assert agreement(compressed[1], rope_keys[:, 4:], 1e-12).startswith("eq")


def test_rotary_part_carries_position_and_latent_part_does_not():
    # without RoPE, moving a key to another position changes nothing for a
    # query that sees every key; with the decoupled RoPE part it does
    x = inputs(batch=1)
    shuffled = x[:, [0, 1, 2, 3, 5, 4, 6]]  # swap keys 4 and 5
    for rope_dim, moves in ((0, False), (ROPE, True)):
        mla = module(rope_dim=rope_dim)
        last, _ = mla(x)
        last_shuffled, _ = mla(shuffled)
        gap = (last[:, -1] - last_shuffled[:, -1]).abs().max().item()
        assert (gap > 1e-9) == moves


def test_parameters_and_their_count():
    mla = module()
    inner, rope = HEADS * (E // HEADS), HEADS * ROPE
    shapes = {n: tuple(p.shape) for n, p in mla.named_parameters()}
    assert shapes == {
        "q_proj.weight": (inner, E),
        "kv_down.weight": (LATENT, E),
        "key_up.weight": (inner, LATENT),
        "value_up.weight": (inner, LATENT),
        "out_proj.weight": (E, inner),
        "q_rope.weight": (rope, E),
        "k_rope.weight": (ROPE, E),
    }
    assert "q_rope.weight" not in dict(module(rope_dim=0).named_parameters())


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"rope_dim": 3}, "rope_dim must be even"),
        ({"rope_dim": -2}, "rope_dim must be a non-negative int"),
        ({"latent_dim": 0}, "latent_dim must be a positive int"),
        ({"num_heads": 3}, r"embed_dim \(16\) must be divisible by num_heads"),
        ({"head_dim": 0}, "head_dim must be a positive int"),
    ],
)
def test_bad_sizes_are_refused_before_any_draw(kwargs, match):
    sizes = {"embed_dim": E, "num_heads": HEADS, "latent_dim": LATENT}
    state = torch.get_rng_state()
    with pytest.raises(ValueError, match=match):
        MultiHeadLatentAttention(**{**sizes, **kwargs})
    assert torch.equal(torch.get_rng_state(), state)


def test_bad_inputs_are_named():
    mla, x = module(), inputs()
    _, cache = mla(x)
    with pytest.raises(ValueError, match=r"x needs shape \(B, n, embed_dim\)"):
        mla(x[0])
    with pytest.raises(ValueError, match="x feature size must match"):
        mla(x[..., :8])
    with pytest.raises(TypeError, match="x has dtype torch.float32"):
        mla(x.float())
    with pytest.raises(ValueError, match="cache's latent must have shape"):
        mla(x, cache=(cache[0][:1], cache[1]))
    with pytest.raises(ValueError, match="cached positions must match"):
        mla(x, cache=(cache[0], cache[1][:, :3]))
    with pytest.raises(TypeError, match="cache must be the pair"):
        mla(x, cache=[cache[0], cache[1]])
    with pytest.raises(ValueError, match="ambiguous or wrong"):
        mla(x, mask=causal_mask(7), cache=cache)  # the cache makes n_k 14
    # ... while the cache itself is untouched by the refused calls
    assert cache[0].shape == (2, 7, LATENT)


def test_garbage_the_mask_never_uses_reaches_no_gradient():
    # NaN in a padding token, or in a cached latent that
    # every query masks, used to reach every projection's gradient (0 * NaN)
    from attnbook import MultiHeadLatentAttention, causal_mask

    torch.manual_seed(0)
    for absorbed in (False, True):
        model = MultiHeadLatentAttention(8, 2, 4, rope_dim=2)
        x = torch.randn(2, 3, 8)
        x[1, 2] = float("nan")
        keep = causal_mask(3).expand(2, 1, 3, 3).clone()
        keep[1, :, :, 2] = False
        keep[1, :, 2, :] = False
        before = x.clone()
        out, _ = model(x, mask=keep, absorbed=absorbed)
        out[:, :2].sum().backward()
        for name, parameter in model.named_parameters():
            assert torch.isfinite(parameter.grad).all(), name
        assert torch.equal(x.isnan(), before.isnan())  # x not changed

        model.zero_grad()
        cache = (torch.randn(2, 3, 4), torch.randn(2, 3, 2))
        cache[0][0, 1] = float("nan")
        keep = torch.ones(2, 1, 1, 4, dtype=torch.bool)
        keep[0, ..., 1] = False
        out, _ = model(torch.randn(2, 1, 8), mask=keep, cache=cache)
        assert torch.isfinite(out).all()
        out.sum().backward()
        for name, parameter in model.named_parameters():
            assert torch.isfinite(parameter.grad).all(), name

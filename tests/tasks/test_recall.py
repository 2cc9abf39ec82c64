"""Chapter 18's recall lab: the MQAR task, the models' token mixers against
their references, the held-out data disjoint from training, the shipped
results."""

import math

import pytest
import torch
import torch.nn.functional as F

from attnbook.nn.recall_model import MIXERS, RecallModel, TokenMixer
from attnbook.tasks.recall import (
    KEY_DIMS,
    MODELS,
    PAIRS,
    SEEDS,
    TASK,
    TRAINING_RECIPE,
    build_model,
    pretrained_results,
    recall_accuracy,
    recall_batch,
    recall_loss,
    shipped_runs,
    train_recall,
)
from attnbook.tasks.recall import evaluation_batch as held_out


def test_a_batch_is_pairs_then_every_key_again_with_its_value_as_target():
    tokens, targets = recall_batch(5, 6, torch.Generator().manual_seed(0))
    assert tokens.shape == targets.shape == (5, 18)
    for row, target in zip(tokens.tolist(), targets.tolist()):
        keys, values, queries = row[0:12:2], row[1:12:2], row[12:]
        assert len(set(keys)) == 6 and max(keys) < TASK["num_keys"]
        assert min(values) >= TASK["num_keys"]
        assert sorted(queries) == sorted(keys)
        lookup = dict(zip(keys, values))
        assert target[:12] == [-1] * 12
        assert target[12:] == [lookup[q] for q in queries]


def test_the_query_order_is_shuffled():
    tokens, _ = recall_batch(64, 8, torch.Generator().manual_seed(1))
    same = [row[0:16:2] == row[16:] for row in tokens.tolist()]
    assert sum(same) < 4  # 1 in 8! rows would keep the order by chance


def test_bad_batches_are_refused():
    generator = torch.Generator().manual_seed(0)
    with pytest.raises(ValueError, match="num_keys"):
        recall_batch(2, TASK["num_keys"] + 1, generator)
    with pytest.raises((TypeError, ValueError), match="pairs"):
        recall_batch(2, 0, generator)
    with pytest.raises((TypeError, ValueError), match="generator"):
        recall_batch(2, 4, None)


def test_the_loss_counts_only_the_answers():
    tokens, targets = recall_batch(3, 4, torch.Generator().manual_seed(0))
    logits = torch.zeros(3, 12, 128)
    logits[targets >= 0, targets[targets >= 0]] = 50.0  # right answers
    logits[targets < 0, 0] = -50.0  # garbage elsewhere does not count
    assert recall_loss(logits, targets) < 1e-6


def test_evaluation_sequences_are_never_training_sequences():
    held = {p: set(map(tuple, held_out(p)[0].tolist())) for p in PAIRS}
    for seed in SEEDS:
        generator = torch.Generator().manual_seed(seed + 1)
        for step in range(TRAINING_RECIPE["steps"]):
            pairs = PAIRS[step % len(PAIRS)]
            tokens, _ = recall_batch(
                TRAINING_RECIPE["batch_size"], pairs, generator
            )
            assert held[pairs].isdisjoint(map(tuple, tokens.tolist()))


# --- each mixer against its reference, float64 -----------------------------


def mixer_inputs(kind, n=7, dim=8, heads=2, seed=0):
    torch.manual_seed(seed)
    mixer = TokenMixer(kind, dim, heads, window=3, chunk_size=4).double()
    x = torch.randn(2, n, dim, dtype=torch.float64)
    q, k = mixer.qk(x).chunk(2, dim=-1)
    q, k, v = (
        t.unflatten(-1, (heads, dim // heads)).transpose(1, 2)
        for t in (q, k, mixer.v(x))
    )
    return mixer, x, q, k, v


def test_softmax_mixer_is_pytorch_causal_sdpa():
    mixer, x, q, k, v = mixer_inputs("softmax")
    expected = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert torch.allclose(mixer.mix(x, q, k, v), expected, atol=1e-12)


def test_sliding_window_mixer_is_sdpa_with_a_band_mask():
    mixer, x, q, k, v = mixer_inputs("sliding_window")
    i = torch.arange(7)
    band = (i[:, None] >= i[None, :]) & (i[:, None] - i[None, :] < 3)
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=band)
    assert torch.allclose(mixer.mix(x, q, k, v), expected, atol=1e-12)


def test_linear_mixer_is_the_normalised_state_recurrence():
    mixer, x, q, k, v = mixer_inputs("linear")
    phi_q, phi_k = F.elu(q) + 1, F.elu(k) + 1
    state = torch.zeros(2, 2, 4, 4, dtype=torch.float64)  # (d_v, d_k)
    normaliser = torch.zeros(2, 2, 4, dtype=torch.float64)
    outputs = []
    for t in range(7):
        state = state + v[..., t, :, None] * phi_k[..., t, None, :]
        normaliser = normaliser + phi_k[..., t, :]
        numerator = (state @ phi_q[..., t, :, None])[..., 0]
        denominator = (normaliser * phi_q[..., t, :]).sum(-1, keepdim=True)
        outputs.append(numerator / denominator)
    expected = torch.stack(outputs, dim=-2)
    assert torch.allclose(mixer.mix(x, q, k, v), expected, atol=1e-12)


@pytest.mark.parametrize("kind", ["deltanet", "gated_deltanet"])
def test_delta_mixers_are_the_token_by_token_delta_rule(kind):
    mixer, x, raw_q, raw_k, v = mixer_inputs(kind)
    q, k = F.normalize(raw_q, dim=-1), F.normalize(raw_k, dim=-1)
    beta = torch.sigmoid(mixer.beta(x)).transpose(1, 2)
    gate = torch.ones_like(beta)
    if kind == "gated_deltanet":
        gate = torch.sigmoid(mixer.gate(x)).transpose(1, 2)
    state = torch.zeros(2, 2, 4, 4, dtype=torch.float64)
    outputs = []
    for t in range(7):
        k_t, v_t, b_t = k[..., t, :], v[..., t, :], beta[..., t, None, None]
        forget = torch.eye(4, dtype=torch.float64) - b_t * (
            k_t[..., :, None] * k_t[..., None, :]
        )
        state = gate[..., t, None, None] * state @ forget + b_t * (
            v_t[..., :, None] * k_t[..., None, :]
        )
        outputs.append((state @ q[..., t, :, None])[..., 0])
    expected = torch.stack(outputs, dim=-2)
    got = mixer.mix(x, raw_q, raw_k, v)
    assert torch.allclose(got, expected, atol=1e-12)


@pytest.mark.parametrize("name", list(MODELS))
def test_every_model_is_causal(name):
    torch.manual_seed(0)
    model = RecallModel(MODELS[name], 128, 8, 2, window=3, chunk_size=4)
    model = model.double()
    tokens = torch.randint(128, (2, 9))
    changed = tokens.clone()
    changed[:, 6:] = (changed[:, 6:] + 1) % 128
    before, after = model(tokens), model(changed)
    assert torch.allclose(before[:, :6], after[:, :6], atol=1e-12)
    assert not torch.allclose(before[:, 6:], after[:, 6:])


def test_state_sizes():
    model = RecallModel(("softmax", "linear"), 128, 16, 2, window=4)
    # softmax: 2 n dim cached numbers; linear: 2 heads of 8 x 8
    assert model.state_numbers(10) == 2 * 10 * 16 + 2 * 8 * 8
    window = RecallModel(("sliding_window",), 128, 16, 2, window=4)
    assert window.state_numbers(3) == 2 * 3 * 16
    assert window.state_numbers(100) == 2 * 4 * 16
    # 3 key features per head: 2 heads of 3 x 8; the cache keeps 2 x 3 + 16
    small = RecallModel(("deltanet", "softmax"), 128, 16, 2, key_dim=3)
    assert small.state_numbers(10) == 2 * 3 * 8 + 10 * (2 * 3 + 16)
    tokens = torch.randint(128, (2, 9))
    assert small(tokens).shape == (2, 9, 128)


def test_bad_models_are_refused():
    with pytest.raises(ValueError, match="mixer must be one of"):
        RecallModel(("softmax", "lstm"), 128, 8)
    with pytest.raises(TypeError, match="mixers"):
        RecallModel("softmax", 128, 8)
    with pytest.raises(ValueError, match="multiple of num_heads"):
        RecallModel(("softmax",), 128, 9, 2)
    assert set(MIXERS) >= {m for mixers in MODELS.values() for m in mixers}


def test_a_short_training_run_learns_something_and_keeps_the_rng():
    before = torch.get_rng_state()
    model, losses, curve = train_recall(
        "softmax", seed=0, steps=8, batch_size=8, curve_every=4,
        config={"dim": 16},
    )  # fmt: skip
    assert torch.equal(before, torch.get_rng_state())
    assert len(losses) == 8 and all(math.isfinite(x) for x in losses)
    assert [step for step, _ in curve] == [4, 8]
    assert 0.0 <= recall_accuracy(model, 4, sequences=16) <= 1.0


# --- the shipped results ----------------------------------------------------


def test_the_shipped_results_cover_the_grid_with_several_seeds():
    results = pretrained_results()  # checks the pinned SHA-256
    assert len(results["seeds"]) >= 3
    grid = [(r["model"], r["key_dim"], r["seed"]) for r in results["runs"]]
    assert sorted(grid) == sorted(shipped_runs())
    assert {k for _, k, _ in grid} == set(KEY_DIMS)
    for run in results["runs"]:
        assert set(run["accuracy"]) == {str(p) for p in PAIRS}
        assert all(0 <= a <= 1 for a in run["accuracy"].values())
    assert results["recipe"] == TRAINING_RECIPE


def test_the_chapters_small_task_evaluates_on_unseen_sequences():
    # chapter 18's live run: 16 keys and values, 150 steps of 16 at P = 8
    small = {"num_keys": 16, "num_values": 16}
    generator = torch.Generator().manual_seed(0 + 1)
    seen = set()
    for _ in range(150):
        tokens, _ = recall_batch(16, 8, generator, 16, 16)
        seen |= set(map(tuple, tokens.tolist()))
    held = held_out(8, 64, small)[0]
    assert seen.isdisjoint(map(tuple, held.tolist()))
    assert held.max() < 32


def test_models_can_be_built_from_mixers_and_for_another_vocabulary():
    model = build_model(("linear",), 2, {"dim": 8}, {"num_keys": 4})
    assert model.mixers == ("linear",)
    assert model.unembed.out_features == 4 + TASK["num_values"]
    with pytest.raises(ValueError, match="task may set only"):
        build_model("softmax", task={"keys": 4})
    with pytest.raises(ValueError, match="name must be one of"):
        build_model("lstm")


def test_recall_model_sizes_and_dtype_are_checked_by_name():
    """Probe findings: sizes of 10**12 reached the allocator, no position
    at all reached a convolution's error, dtype='float32' a device
    parser's error."""
    from attnbook.nn.recall_model import ShortConv
    from attnbook.tasks.recall import build_model, train_recall

    with pytest.raises(ValueError, match="dim"):
        ShortConv(10**12)
    with pytest.raises(ValueError, match="vocab_size"):
        RecallModel(("softmax",), 10**12, 8)
    with pytest.raises(ValueError, match="key_dim"):
        build_model("hybrid", 10**12, {"dim": 8})
    model = RecallModel(("softmax",), 16, 8)
    with pytest.raises(ValueError, match="tokens"):
        model(torch.zeros(2, 0, dtype=torch.int64))
    for dtype in ("float32", torch.int64):
        with pytest.raises(TypeError, match="dtype"):
            train_recall("deltanet", steps=1, batch_size=2, dtype=dtype)

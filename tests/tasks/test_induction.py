"""Chapter 14's induction task, the attention-only model and the shipped
models (attnbook.nn.attention_only, attnbook.tasks.induction)."""

import hashlib
import math

import pytest
import torch

import attnbook
from attnbook import (
    AttentionOnlyTransformer,
    induction_score,
    pretrained_induction_models,
    previous_token_score,
)
from attnbook._weights import read_pinned
from attnbook.tasks import induction
from attnbook.tasks.induction import (
    CHECKPOINTS,
    evaluate,
    predictable_loss,
    repeated_batch,
    train_induction,
)


@pytest.fixture(scope="module")
def shipped():
    return pretrained_induction_models()


def _batch(offset="random", period=(8, 24), seed=0, batch_size=64):
    generator = torch.Generator().manual_seed(seed)
    return repeated_batch(batch_size, period, 64, 64, generator, offset)


def _starts_and_periods(tokens, predictable):
    """The first marked position is start + P + 1."""
    return predictable.float().argmax(dim=1)


@pytest.mark.parametrize("offset", ["random", "fixed"])
def test_the_marked_tokens_repeat_with_one_period(offset):
    for period in (16, (8, 24)):
        tokens, predictable = _batch(offset, period)
        assert tokens.dtype == torch.int64 and tokens.shape == (64, 64)
        assert predictable.dtype == torch.bool
        assert tokens.min() >= 0 and tokens.max() < 64
        for row, keep in zip(tokens, predictable):
            first = int(keep.float().argmax())
            assert keep[first:].all() and not keep[:first].any()
            # some P in range makes token i = token i - P from first - 1 on
            found = [
                p
                for p in range(8, 25)
                if torch.equal(row[first - 1 :], row[first - 1 - p : -p])
            ]
            assert found, "no period repeats the marked part"
            p = found[0]
            if period == 16:
                assert p == 16
            start = first - 1 - p
            assert start >= 0
            if offset == "fixed":
                assert start == 0
            assert 64 - first >= p - 1  # at least one full repeat


def test_the_mask_marks_exactly_the_tokens_induction_can_predict():
    """Token i is marked iff i >= start + P + 1: token i - 1 occurred
    before, so the token after that occurrence says what comes next."""
    generator = torch.Generator().manual_seed(1)
    tokens, predictable = repeated_batch(
        2000, 12, 40, 1000, generator, "random"
    )
    for row, keep in zip(tokens, predictable):
        # with 1000 symbols a chance repeat of a whole segment is impossible
        for i in range(1, 40):
            seen_before = bool((row[: i - 1] == row[i - 1]).any())
            earlier = (row[: i - 1] == row[i - 1]).nonzero()
            follows = seen_before and bool(
                (row[earlier[:, 0] + 1] == row[i]).any()
            )
            if keep[i]:
                assert follows and row[i] == row[i - 12]
        first = int(keep.float().argmax())
        # the first repeated token (start + P) is not marked
        assert not keep[first - 1] and row[first - 1] == row[first - 13]


def test_the_offset_is_random_or_fixed():
    firsts = _starts_and_periods(*_batch("random", 16, batch_size=512))
    assert firsts.unique().numel() > 20  # starts 0 .. 32 all occur
    assert firsts.min() == 17 and firsts.max() == 49
    fixed = _starts_and_periods(*_batch("fixed", 16, batch_size=64))
    assert (fixed == 17).all()


def test_the_batch_is_drawn_from_the_generator_only():
    state = torch.get_rng_state()
    a = _batch(seed=3)
    b = _batch(seed=3)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert torch.equal(state, torch.get_rng_state())


def _model(layers=2, seed=0):
    torch.manual_seed(seed)
    return AttentionOnlyTransformer(32, 16, 16, 2, layers)


def test_the_model_is_causal():
    model = _model()
    tokens = torch.randint(32, (3, 16))
    changed = tokens.clone()
    changed[:, 9] = (changed[:, 9] + 1) % 32
    with torch.no_grad():
        a, b = model(tokens), model(changed)
    assert a.shape == (3, 16, 32)
    assert torch.equal(a[:, :9], b[:, :9])
    assert not torch.allclose(a[:, 9:], b[:, 9:])


def test_return_weights_are_causal_distributions():
    model = _model(layers=3)
    tokens = torch.randint(32, (4, 10))
    with torch.no_grad():
        logits, weights = model(tokens, return_weights=True)
    assert torch.equal(logits, model(tokens).detach())
    assert weights.shape == (3, 4, 2, 10, 10)
    torch.testing.assert_close(
        weights.sum(-1), torch.ones(3, 4, 2, 10), atol=1e-6, rtol=0
    )
    above = ~attnbook.causal_mask(10)
    assert (weights[..., above] == 0).all()


def test_ablating_every_head_leaves_the_direct_path():
    model = _model()
    tokens = torch.randint(32, (2, 12))
    every = {(layer, head) for layer in range(2) for head in range(2)}
    with torch.no_grad():
        logits = model(tokens, ablate=every)
        direct = model.unembed(
            model.token_embedding(tokens)
            + model.position_embedding(torch.arange(12))
        )
        torch.testing.assert_close(logits, direct)
        # ablating one head changes the output; ablating none does not
        assert torch.equal(model(tokens, ablate=()), model(tokens))
        assert not torch.allclose(model(tokens, ablate={(1, 0)}), direct)
        assert not torch.allclose(
            model(tokens, ablate={(1, 0)}), model(tokens)
        )


def test_the_model_refuses_bad_arguments():
    with pytest.raises(ValueError, match="num_layers"):
        AttentionOnlyTransformer(32, 16, 16, 2, 0)
    with pytest.raises(ValueError, match="divisible"):
        AttentionOnlyTransformer(32, 16, 15, 2, 1)
    with pytest.raises(ValueError, match="vocab_size"):
        AttentionOnlyTransformer(True, 16, 16, 2, 1)
    model = _model()
    with pytest.raises(ValueError, match="context_len"):
        model(torch.zeros(1, 17, dtype=torch.int64))
    with pytest.raises(ValueError, match="tokens"):
        model(torch.full((1, 4), 32))
    with pytest.raises(TypeError, match="tokens"):
        model(torch.zeros(1, 4))
    with pytest.raises(TypeError, match="return_weights"):
        model(torch.zeros(1, 4, dtype=torch.int64), return_weights=1)
    with pytest.raises(ValueError, match="layer"):
        model(torch.zeros(1, 4, dtype=torch.int64), ablate={(2, 0)})
    with pytest.raises(ValueError, match="head"):
        model(torch.zeros(1, 4, dtype=torch.int64), ablate={(0, -1)})
    with pytest.raises(ValueError, match="pairs"):
        model(torch.zeros(1, 4, dtype=torch.int64), ablate=[0])
    with pytest.raises(TypeError, match="ablate"):
        model(torch.zeros(1, 4, dtype=torch.int64), ablate=None)


def test_a_refused_model_leaves_the_global_rng_alone():
    state = torch.get_rng_state()
    with pytest.raises(ValueError):
        AttentionOnlyTransformer(32, 16, 15, 2, 1)
    assert torch.equal(state, torch.get_rng_state())


def test_the_task_refuses_bad_arguments():
    generator = torch.Generator().manual_seed(0)
    with pytest.raises(ValueError, match="seq_len"):
        repeated_batch(2, 16, 31, 64, generator)
    with pytest.raises(ValueError, match="offset"):
        repeated_batch(2, 16, 64, 64, generator, offset="middle")
    with pytest.raises(ValueError, match="period"):
        repeated_batch(2, 0, 64, 64, generator)
    with pytest.raises(ValueError, match="period"):
        repeated_batch(2, (24, 8), 64, 64, generator)
    with pytest.raises(ValueError, match="period"):
        repeated_batch(2, (8, 16, 24), 64, 64, generator)
    with pytest.raises(ValueError, match="batch_size"):
        repeated_batch(0, 16, 64, 64, generator)
    with pytest.raises(TypeError, match="generator"):
        repeated_batch(2, 16, 64, 64, None)
    with pytest.raises(ValueError, match="steps"):
        train_induction(steps=-1)
    with pytest.raises(ValueError, match="lr"):
        train_induction(lr=0.0)
    with pytest.raises(ValueError, match="checkpoint"):
        train_induction(steps=5, checkpoints=(6,))
    with pytest.raises(ValueError, match="offset"):
        train_induction(steps=5, offset="middle")
    tokens, predictable = _batch()
    with pytest.raises(ValueError, match="predictable"):
        predictable_loss(torch.zeros(64, 64, 64), tokens, predictable.int())
    with pytest.raises(ValueError, match="logits"):
        predictable_loss(torch.zeros(64, 63, 64), tokens, predictable)


def test_training_is_seeded_and_leaves_the_global_rng_alone():
    state = torch.get_rng_state()
    small = {"seq_len": 16, "period": (3, 6), "vocab_size": 8}
    config = {"embed_dim": 16, "num_heads": 2}
    runs = [
        train_induction(
            1,
            steps=4,
            seed=5,
            checkpoints=(0, 2, 4),
            task=small,
            config=config,
        )
        for _ in range(2)
    ]
    assert torch.equal(state, torch.get_rng_state())
    (model, history, kept), (_, history2, _) = runs
    assert history["loss"] == history2["loss"] and len(history["loss"]) == 4
    assert history["loss"][0] == pytest.approx(math.log(8), abs=0.3)
    assert sorted(kept) == [0, 2, 4] and not model.training
    assert all(
        torch.equal(kept[4][name], tensor)
        for name, tensor in model.state_dict().items()
    )
    assert not torch.equal(
        kept[0]["unembed.weight"], kept[4]["unembed.weight"]
    )


def test_the_shipped_file_is_pinned(monkeypatch):
    data = read_pinned(induction.INDUCTION_FILE, induction.INDUCTION_SHA256)
    assert hashlib.sha256(data).hexdigest() == induction.INDUCTION_SHA256
    assert len(data) < 2 * 2**20
    monkeypatch.setattr(induction, "INDUCTION_SHA256", "0" * 64)
    with pytest.raises(ValueError, match="SHA-256"):
        pretrained_induction_models()


def test_loading_leaves_the_global_rng_alone():
    state = torch.get_rng_state()
    pretrained_induction_models()
    assert torch.equal(state, torch.get_rng_state())


def test_the_shipped_models_and_history(shipped):
    models, history = shipped
    assert tuple(models["two_layer"]) == CHECKPOINTS
    for model in [*models["two_layer"].values(), models["one_layer"]]:
        assert isinstance(model, AttentionOnlyTransformer)
        assert not model.training
    steps = history["recipe"]["steps"]
    assert len(history["two_layer"]) == len(history["one_layer"]) == steps
    chance = math.log(64)
    # near chance at the start; the phase change; the control stays high
    assert history["two_layer"][0] == pytest.approx(chance, abs=0.1)
    assert sum(history["two_layer"][-100:]) / 100 < 0.3
    assert sum(history["one_layer"][-100:]) / 100 > 2.5


def test_two_layers_solve_the_task_and_one_does_not(shipped):
    models, _ = shipped
    final = models["two_layer"][CHECKPOINTS[-1]]
    assert evaluate(final) < 0.5  # measured 0.080
    assert evaluate(models["one_layer"]) > 2.0  # measured 3.13
    assert evaluate(models["two_layer"][0]) > 4.0  # the initial weights


def test_the_shipped_model_has_previous_token_and_induction_heads(shipped):
    models, _ = shipped
    final = models["two_layer"][CHECKPOINTS[-1]]
    tokens, _ = _batch("fixed", 16, seed=7)
    with torch.no_grad():
        _, weights = final(tokens, return_weights=True)
    weights = weights.mean(dim=1)  # (layers, heads, n, n)
    # measured: layer 0 up to 0.98, layer 1 all about 0.83
    assert previous_token_score(weights[0]).max() > 0.5
    assert induction_score(weights[1], 16).max() > 0.5
    # without layer 0's heads the induction heads cannot find the repeat
    every_first = {(0, head) for head in range(final.num_heads)}
    generator = torch.Generator().manual_seed(3)
    tokens, predictable = repeated_batch(256, (8, 24), 64, 64, generator)
    with torch.no_grad():
        ablated = predictable_loss(
            final(tokens, ablate=every_first), tokens, predictable
        )
    assert ablated > 2.0  # measured 3.95


def test_the_four_more_seeds_are_pinned_and_learn_the_task():
    """Review F: the phase change and the circuit are no seed's accident."""
    data = read_pinned(
        induction.INDUCTION_SEEDS_FILE, induction.INDUCTION_SEEDS_SHA256
    )
    assert hashlib.sha256(data).hexdigest() == induction.INDUCTION_SEEDS_SHA256
    runs = induction.pretrained_induction_seeds()
    assert sorted(runs) == list(induction.SEEDS) and 0 not in runs
    tokens, predictable = _batch("random", (8, 24), seed=11)
    for seed, run in runs.items():
        losses = run["losses"]["two_layer"]
        assert len(losses) == induction.TRAINING_RECIPE["steps"]
        # near chance for 400 steps, then the drop
        assert sum(losses[300:400]) / 100 > 3.5
        with torch.no_grad():
            two = predictable_loss(
                run["two_layer"](tokens), tokens, predictable
            )
            one = predictable_loss(
                run["one_layer"](tokens), tokens, predictable
            )
        assert two < 0.5 and one > 2.5, seed


@pytest.mark.parametrize(
    "logits, tokens, match",
    [
        (torch.randn(2, 8), None, "logits must have shape"),
        (torch.randn(2, 8, 0), None, "vocab >= 1"),
        (torch.randn(2, 8, 5).long(), None, "logits must be a floating"),
        (None, torch.randint(0, 5, (2, 8)).int(), "tokens must be int64"),
        (None, torch.randint(0, 5, (2, 8)).float(), "tokens must hold"),
        (None, torch.full((2, 8), 7), r"tokens holds id 7, outside \[0, 5\)"),
        (torch.randn(1, 2, 8, 5), None, "logits must have shape"),
    ],
)
def test_predictable_loss_names_bad_logits_and_tokens(logits, tokens, match):
    from attnbook.tasks.induction import predictable_loss

    logits = torch.randn(2, 8, 5) if logits is None else logits
    tokens = torch.randint(0, 5, (2, 8)) if tokens is None else tokens
    predictable = torch.ones(2, 8, dtype=torch.bool)
    with pytest.raises((TypeError, ValueError), match=match):
        predictable_loss(logits, tokens, predictable)


def test_build_model_and_checkpoints_are_checked_by_name():
    """Probe findings: a task or config that is no dict (or lacks a size),
    and checkpoints=None, reached deep errors."""
    config = {"embed_dim": 8, "num_heads": 2}
    for task, name in ((None, "task"), ("x", "task"), ({}, "task")):
        with pytest.raises(TypeError, match=name):
            induction.build_model(1, task, config)
    with pytest.raises(TypeError, match="config"):
        induction.build_model(1, dict(induction.TASK), {})
    with pytest.raises(TypeError, match="checkpoints"):
        induction.train_induction(1, steps=1, checkpoints=None)

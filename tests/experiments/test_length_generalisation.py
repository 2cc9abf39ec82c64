"""Chapter 15's lab: rotate_pairs and the score by distance, the
position-scheme Transformer, the task's data and the shipped results."""

import math

import pytest
import torch
import torch.nn.functional as F

from attnbook import alibi_bias, apply_rotary, rope_frequencies
from attnbook.core.long_context import rope_score_by_distance, t5_buckets
from attnbook.core.rotary import rotate_pairs
from attnbook.nn.position_schemes import SCHEMES, PositionSchemeTransformer
from attnbook.tasks import long_context as lab

# ------------------------------------------------------------ rotate_pairs


def test_rotate_pairs_with_unscaled_frequencies_is_apply_rotary():
    x = torch.randn(2, 3, 10, 8, generator=torch.Generator().manual_seed(0))
    positions = torch.arange(10)
    turned = rotate_pairs(x, positions, rope_frequencies(8))
    torch.testing.assert_close(turned, apply_rotary(x, positions))


def test_position_interpolation_is_rope_at_positions_divided_by_s():
    # Chen et al. 2023: position m of the long context is read as m / s
    x = torch.randn(5, 16, generator=torch.Generator().manual_seed(1))
    positions = torch.arange(5) * 7
    scaled = rotate_pairs(
        x, positions, rope_frequencies(16, 10000, "linear", 4)
    )
    torch.testing.assert_close(scaled, apply_rotary(x, positions / 4))


def test_apply_rotary_is_rotate_pairs_with_the_unscaled_frequencies():
    """RoPE is written once: apply_rotary (any positions that broadcast,
    e.g. one row of positions per sequence) gives rotate_pairs' numbers bit
    for bit."""
    x = torch.randn(2, 5, 8, generator=torch.Generator().manual_seed(3))
    positions = torch.tensor([[0, 1, 2, 3, 4], [7, 3, 9, 0, 2]])
    turned = rotate_pairs(x, positions, rope_frequencies(8))
    assert torch.equal(apply_rotary(x, positions), turned)
    assert torch.equal(
        apply_rotary(x[0, 0], 2.5),
        rotate_pairs(x[0, 0], torch.tensor(2.5), rope_frequencies(8)),
    )


def test_rotate_pairs_names_bad_shapes():
    x = torch.randn(4, 8)
    with pytest.raises(ValueError, match="positions"):
        rotate_pairs(x, torch.arange(3), rope_frequencies(8))
    with pytest.raises(ValueError, match="frequencies"):
        rotate_pairs(x, torch.arange(4), rope_frequencies(6))
    with pytest.raises(ValueError, match="even"):
        rotate_pairs(torch.randn(4, 7), torch.arange(4), torch.ones(3))


def test_score_by_distance_is_the_score_of_a_vector_with_itself():
    # a vector whose pairs all have length 1: q . R(distance) q / q . q
    frequencies = rope_frequencies(16)
    q = torch.tensor([1.0, 0.0] * 8, dtype=torch.float64)
    distances = torch.tensor([0, 1, 5, 100, 4000])
    by_hand = [
        float(q @ rotate_pairs(q[None], torch.tensor([d]), frequencies)[0])
        / float(q @ q)
        for d in distances.tolist()
    ]
    torch.testing.assert_close(
        rope_score_by_distance(frequencies, distances),
        torch.tensor(by_hand, dtype=torch.float64),
    )


# ------------------------------------------------------------------- model


def _model(scheme, **kwargs):
    torch.manual_seed(0)
    return PositionSchemeTransformer(
        scheme, 16, 16, 2, 2, max_len=32, **kwargs
    )


@pytest.mark.parametrize("scheme", SCHEMES)
def test_every_scheme_predicts_every_position(scheme):
    tokens = torch.randint(16, (3, 20))
    assert _model(scheme)(tokens).shape == (3, 20, 16)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_the_layers_are_causal(scheme):
    model = _model(scheme)
    tokens = torch.randint(16, (1, 12))
    changed = tokens.clone()
    changed[0, 8:] = (changed[0, 8:] + 1) % 16
    torch.testing.assert_close(model(tokens)[:, :8], model(changed)[:, :8])


def test_attention_equals_pytorchs_with_the_alibi_bias():
    model = _model("alibi")
    x = model.embed(torch.randint(16, (2, 9)))
    q, k, v = (
        t.unflatten(-1, (2, 8)).transpose(1, 2)
        for t in model.qkv[0](x).chunk(3, dim=-1)
    )
    bias = alibi_bias(2, 9)
    theirs = F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
    _, weights = model(torch.zeros(1, 1, dtype=torch.long), True)
    ours = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(8) + bias, -1)
    torch.testing.assert_close(ours @ v, theirs)
    assert weights.shape == (2, 1, 2, 1, 1)


def test_nope_learns_order_only_through_the_causal_mask():
    # one layer without positions: the last output depends on the set of
    # earlier tokens only, so reordering tokens 0 .. n-2 changes nothing;
    # with two layers, each earlier token saw its own prefix: it does
    tokens = torch.tensor([[3, 1, 4, 1, 5, 9, 2, 6]])
    shuffled = tokens[:, [5, 2, 0, 6, 1, 4, 3, 7]]
    torch.manual_seed(0)
    one = PositionSchemeTransformer("nope", 16, 16, 2, 1, max_len=32)
    torch.testing.assert_close(one(tokens)[:, -1], one(shuffled)[:, -1])
    two = _model("nope")
    assert not torch.allclose(two(tokens)[:, -1], two(shuffled)[:, -1])


def test_learned_rows_beyond_the_training_length_are_not_trained():
    model = _model("learned")
    before = model.position_embedding.weight.detach().clone()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    tokens = torch.randint(16, (2, 10))
    model(tokens).sum().backward()
    optimizer.step()
    after = model.position_embedding.weight.detach()
    assert not torch.equal(after[:10], before[:10])
    assert torch.equal(after[10:], before[10:])


def test_rope_scaling_changes_frequencies_not_weights():
    model = _model("rope")
    state = {k: v.clone() for k, v in model.state_dict().items()}
    tokens = torch.randint(16, (1, 30))
    plain = model(tokens)
    model.set_rope_scaling("linear", 2.0)
    assert torch.equal(model.frequencies, rope_frequencies(8) / 2)
    assert not torch.allclose(model(tokens), plain)
    model.set_rope_scaling(None)
    torch.testing.assert_close(model(tokens), plain)
    for name, tensor in model.state_dict().items():
        assert torch.equal(tensor, state[name])


def test_bad_scheme_and_scaling_are_named():
    with pytest.raises(ValueError, match="scheme"):
        _model("absolute")
    with pytest.raises(ValueError, match="rope"):
        _model("alibi").set_rope_scaling("linear", 2.0)
    with pytest.raises(ValueError, match="max_len"):
        _model("rope")(torch.zeros(1, 33, dtype=torch.long))


# -------------------------------------------------------------------- data


def _training_sequences(seed, steps):
    generator = torch.Generator().manual_seed(seed + 1)
    rows = set()
    for _ in range(steps):
        tokens, _ = lab.lab_batch(
            lab.TRAINING_RECIPE["batch_size"], lab.TASK["train_len"], generator
        )
        rows.update(tuple(row) for row in tokens.tolist())
    return rows


def test_evaluation_seeds_are_no_training_seed():
    seeds = set(lab.SEEDS) | set(lab.CURVE_SEEDS)
    training = {seed + 1 for seed in seeds}
    finetune = {seed + 101 for seed in seeds}
    evaluation = {lab.EVAL_SEED + n for n in lab.LENGTHS}
    assert not evaluation & (training | finetune)


def test_no_evaluation_sequence_occurs_in_training():
    generator = lab.eval_generator(lab.TASK["train_len"])
    batches = lab.EVAL_BATCHES
    evaluation = set()
    for _ in range(batches["batches"]):
        tokens, _ = lab.lab_batch(
            batches["batch_size"], lab.TASK["train_len"], generator
        )
        evaluation.update(tuple(row) for row in tokens.tolist())
    for seed in lab.SEEDS:
        training = _training_sequences(seed, 100)
        assert not evaluation & training


def test_accuracy_counts_the_predictable_tokens():
    class Oracle(torch.nn.Module):
        # predicts token i + 1 by looking it up: always right
        def __init__(self, tokens):
            super().__init__()
            self.tokens = tokens

        def forward(self, tokens):
            nxt = torch.roll(tokens, -1, dims=1)
            return F.one_hot(nxt, lab.TASK["vocab_size"]).float()

    assert lab.accuracy(Oracle(None), 64, batches=2, batch_size=4) == 1.0


# -------------------------------------------------------- shipped results


def test_shipped_results_cover_every_scheme_seed_and_length():
    results = lab.pretrained_results()
    runs = {(r["scheme"], r["seed"]) for r in results["runs"]}
    assert runs == {(s, seed) for s in SCHEMES for seed in lab.SEEDS}
    for run in results["runs"]:
        assert [int(n) for n in run["accuracy"]] == list(lab.LENGTHS)
        assert all(0 <= a <= 1 for a in run["accuracy"].values())


def test_shipped_models_reproduce_their_stored_accuracy():
    models = lab.pretrained_models()
    results = lab.pretrained_results()
    for run in results["runs"]:
        if run["seed"] != lab.SEEDS[0]:
            continue
        for n in (64, 512):
            stored = run["accuracy"][str(n)]
            measured = lab.accuracy(
                models[run["scheme"]], n, **lab.EVAL_BATCHES
            )
            assert abs(measured - stored) < 0.01, (run["scheme"], n)


# ------------------------------------------------------------ T5 buckets


def test_t5_buckets_by_the_formula_written_out():
    # Raffel et al. 2020 / the T5 code, one direction: 16 exact buckets,
    # then 16 logarithmic ones up to 128, the last one for everything beyond
    for d in range(0, 400):
        if d < 16:
            expected = d
        else:
            expected = min(
                31, 16 + int(math.log(d / 16) / math.log(128 / 16) * 16)
            )
        assert t5_buckets(torch.tensor([d]))[0].item() == expected, d


def test_t5_buckets_refuse_negative_distances():
    with pytest.raises(ValueError, match="distances"):
        t5_buckets(torch.tensor([3, -1]))


# --------------------------------------------------------------- diagrams


def test_position_terms_depend_on_the_distance_only():
    from attnbook.display.long_context import position_terms

    for name, term in position_terms(10).items():
        for offset in range(10):
            diagonal = term.diagonal(-offset)
            assert torch.allclose(diagonal, diagonal[0].expand_as(diagonal)), (
                name
            )
        assert torch.isnan(term.triu(1)[0, 1:]).all(), name


def test_window_hides_the_far_keys_only():
    model = _model("rope")
    tokens = torch.randint(16, (1, 20))
    changed = tokens.clone()
    changed[0, :5] = (changed[0, :5] + 3) % 16
    # with a window of 4 per layer and 2 layers, the last query reaches
    # at most 2 * 3 = 6 positions back: tokens 0 .. 4 do not matter
    torch.testing.assert_close(
        model(tokens, window=4)[:, -1], model(changed, window=4)[:, -1]
    )
    assert not torch.allclose(model(tokens)[:, -1], model(changed)[:, -1])


def test_bad_arguments_of_the_lab_are_named():
    with pytest.raises(ValueError, match="length"):
        lab.accuracy(_model("rope"), 20)
    with pytest.raises(ValueError, match="rope"):
        lab.finetune_rope(_model("alibi"), "linear", steps=0)
    with pytest.raises(ValueError, match="distances"):
        rope_score_by_distance(rope_frequencies(8), torch.ones(2, 2))
    with pytest.raises(TypeError, match="frequencies"):
        rope_score_by_distance([1.0], torch.arange(3))


# ----------------------------------------------- interventions and curves


def test_clamp_scores_a_far_key_as_if_it_were_clamp_back():
    # layer 0 sees token embeddings only: two equal tokens, one exactly
    # 3 back and one 9 back, get the same weight under clamp = 3, and
    # different weights without it
    model = _model("rope")
    tokens = torch.tensor([[5, 1, 2, 7, 4, 6, 5, 8, 9, 10, 3, 11, 12]])
    i = 12
    tokens[0, i - 9] = tokens[0, i - 3] = 5
    _, clamped = model(tokens, return_weights=True, clamp=3)
    _, plain = model(tokens, return_weights=True)
    torch.testing.assert_close(clamped[0, 0, :, i, i - 9],
                               clamped[0, 0, :, i, i - 3])  # fmt: skip
    assert not torch.allclose(plain[0, 0, :, i, i - 9],
                              plain[0, 0, :, i, i - 3])  # fmt: skip
    # within the clamp nothing changes
    torch.testing.assert_close(clamped[0, 0, :, i, i - 3:],
                               plain[0, 0, :, i, i - 3:])  # fmt: skip
    assert torch.equal(model(tokens, clamp=20), model(tokens))


def test_score_scale_is_a_temperature():
    # softmax(2 s) is softmax(s) squared and renormalised (no bias but
    # the causal mask's 0 and -inf)
    model = _model("nope")
    tokens = torch.randint(16, (1, 10))
    _, plain = model(tokens, return_weights=True)
    _, sharp = model(tokens, return_weights=True, score_scale=2.0)
    squared = plain[0] ** 2
    torch.testing.assert_close(sharp[0], squared / squared.sum(-1, True))


def test_clamp_and_score_scale_are_checked():
    with pytest.raises(ValueError, match="clamp"):
        _model("alibi")(torch.zeros(1, 4, dtype=torch.long), clamp=2)
    with pytest.raises(ValueError, match="score_scale"):
        _model("rope")(torch.zeros(1, 4, dtype=torch.long), score_scale=-1)


def test_yarn_ramp_reaches_the_model():
    model = _model("rope")
    model.set_rope_scaling("yarn", 4.0, 16, alpha=0.5, beta=2.0)
    expected = rope_frequencies(
        8, 10000, "yarn", 4.0, original_context=16, alpha=0.5, beta=2.0
    )
    assert torch.equal(model.frequencies, expected)
    model.set_rope_scaling("yarn", 4.0, 16)
    assert not torch.equal(model.frequencies, expected)


def test_a_curve_checkpoint_is_the_fine_tune_of_that_many_steps():
    torch.manual_seed(0)
    model = lab.build_model("rope").eval()
    curve = lab.finetune_curve(model, "ntk", (0, 3), length=128)
    assert [c["steps"] for c in curve] == [0, 3]
    tuned = lab.finetune_rope(model, "ntk", steps=3, length=128)
    assert curve[1]["128"] == lab.accuracy(tuned, 128, **lab.EVAL_BATCHES)
    untouched = lab.finetune_rope(model, "ntk", steps=0, length=128)
    assert curve[0]["64"] == lab.accuracy(untouched, 64, **lab.EVAL_BATCHES)
    assert len(curve[0]["previous_token"]) == 4
    with pytest.raises(ValueError, match="checkpoints"):
        lab.finetune_curve(model, "ntk", (5, 3), length=128)


def test_accuracy_by_period_uses_one_period():
    class Oracle(torch.nn.Module):
        # right exactly where token i + 1 repeats token i + 1 - 8
        def forward(self, tokens):
            guess = torch.roll(tokens, 7, dims=1)
            return F.one_hot(guess, lab.TASK["vocab_size"]).float()

    assert lab.accuracy(Oracle(), 64, batches=1, batch_size=4, period=8) == 1
    assert lab.accuracy(Oracle(), 64, batches=1, batch_size=4, period=9) < 0.2
    with pytest.raises(ValueError, match="period"):
        lab.accuracy(Oracle(), 64, period=30)


def test_shipped_curves_cover_every_seed_scaling_and_checkpoint():
    results = lab.scaling_curve_results()
    runs = {(r["seed"], r["scaling"]) for r in results["runs"]}
    assert runs == {
        (seed, name) for seed in lab.CURVE_SEEDS for name in lab.CURVE_SCALINGS
    }
    for run in results["runs"]:
        assert [c["steps"] for c in run["curve"]] == list(
            lab.CURVE_CHECKPOINTS
        )
        for point in run["curve"]:
            assert 0 <= point["64"] <= 1 and 0 <= point["512"] <= 1
            assert (
                len(point["previous_token"]) == lab.MODEL_CONFIG["num_heads"]
            )


def test_the_curves_agree_with_the_shipped_fine_tunes():
    # seed 0: the curve starts at the shipped model's accuracy, and its
    # 100-step checkpoint is the 100-step fine-tune of the lab's results
    curves = lab.scaling_curve_results()
    shipped = next(
        r
        for r in lab.pretrained_results()["runs"]
        if r["scheme"] == "rope" and r["seed"] == 0
    )
    names = {"none": "None", "PI": "linear", "NTK": "ntk", "YaRN": "yarn"}
    at_100 = lab.CURVE_CHECKPOINTS.index(lab.FINETUNE_RECIPE["steps"])
    for run in curves["runs"]:
        if run["seed"] != 0 or run["scaling"] not in names:
            continue
        scaled = shipped["scaled"][names[run["scaling"]]]
        for n in ("64", "512"):
            assert abs(run["curve"][0][n] - scaled["as_trained"][n]) < 0.02
            assert abs(run["curve"][at_100][n] - scaled["finetuned"][n]) < 0.02


def test_shipped_budget_runs_cover_both_seeds_and_every_length():
    results = lab.budget_results()
    assert results["recipe"]["steps"] == lab.BUDGET_STEPS
    assert {r["seed"] for r in results["runs"]} == set(lab.SEEDS)
    for run in results["runs"]:
        assert run["scheme"] == "sinusoidal"
        assert [int(n) for n in run["accuracy"]] == list(lab.LENGTHS)
        assert all(0 <= a <= 1 for a in run["accuracy"].values())

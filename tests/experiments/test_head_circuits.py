"""Tests for attnbook.experiments.head_circuits (chapter 14).

References: the head matrices against the module's own projections (the
head's slice of ``MultiHeadAttention``'s queries, keys and output), the QK
and OV circuits against the scores and logits of a hand-run head, the
block-by-block language model against the model's forward, a shuffle that
keeps each row's numbers and the causal zeros, and hand-built weights for
the first-key mass.
"""

import math

import pytest
import torch

from attnbook import MultiHeadAttention
from attnbook.core.masking import causal_mask
from attnbook.experiments.head_circuits import (
    first_key_mass,
    head_matrices,
    induction_model_scores,
    key_heads,
    language_model_forward,
    ov_circuit,
    qk_circuit,
    shuffle_keys,
    uniform_causal_weights,
)
from attnbook.nn.attention_only import AttentionOnlyTransformer
from attnbook.nn.language_model import DecoderOnlyTransformer
from attnbook.nn.multihead import split_heads
from attnbook.tasks.induction import pretrained_induction_models


@pytest.fixture(scope="module")
def layer():
    with torch.random.fork_rng():
        torch.manual_seed(0)
        return MultiHeadAttention(16, 4, bias=False)


@pytest.fixture(scope="module")
def small_lm():
    with torch.random.fork_rng():
        torch.manual_seed(0)
        return DecoderOnlyTransformer(
            11, context_len=12, embed_dim=16, num_heads=2, num_layers=2,
            ffn_dim=32,
        ).eval()  # fmt: skip


@pytest.fixture(scope="module")
def shipped():
    return pretrained_induction_models()


def test_head_matrices_are_the_heads_slices(layer):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(5, 16, generator=g)
    q, k, v = (split_heads(t, 4) for t in layer.project(x, x, x))
    for head in range(4):
        m = head_matrices(layer, head)
        assert torch.allclose(x @ m["q"].T, q[head], atol=1e-6)
        assert torch.allclose(x @ m["k"].T, k[head], atol=1e-6)
        assert torch.allclose(x @ m["v"].T, v[head], atol=1e-6)
    # the output is the sum of the heads' outputs through their columns of W_O
    out, weights = layer(x, x, x)
    by_heads = sum(
        weights[h] @ (x @ head_matrices(layer, h)["v"].T)
        @ head_matrices(layer, h)["o"].T
        for h in range(4)
    )  # fmt: skip
    assert torch.allclose(out, by_heads, atol=1e-5)


def test_qk_circuit_is_the_heads_scores(layer):
    g = torch.Generator().manual_seed(2)
    x = torch.randn(6, 16, generator=g)
    q, k, _ = (split_heads(t, 4) for t in layer.project(x, x, x))
    for head in range(4):
        expected = q[head] @ k[head].T / math.sqrt(4)
        assert torch.allclose(
            qk_circuit(layer, head, x, x), expected, atol=1e-5
        )


def test_ov_circuit_is_what_attending_to_an_input_adds(layer):
    g = torch.Generator().manual_seed(3)
    x = torch.randn(3, 16, generator=g)
    unembed = torch.randn(7, 16, generator=g)
    m = head_matrices(layer, 2)
    for i in range(3):
        # weight 1 on input i: the head outputs its value through W_O^h
        written = (x[i] @ m["v"].T) @ m["o"].T
        assert torch.allclose(
            ov_circuit(layer, 2, x, unembed)[i], unembed @ written, atol=1e-5
        )


def test_circuit_inputs_are_checked(layer):
    with pytest.raises(ValueError, match="query_inputs"):
        qk_circuit(layer, 0, torch.randn(3, 8), torch.randn(3, 16))
    with pytest.raises(ValueError, match="head"):
        head_matrices(layer, 4)
    with pytest.raises(TypeError, match="layer"):
        head_matrices(torch.nn.Linear(2, 2), 0)
    with torch.random.fork_rng():
        grouped = MultiHeadAttention(16, 4, num_kv_heads=2)
    with pytest.raises(ValueError, match="num_kv_heads"):
        head_matrices(grouped, 0)


def test_language_model_forward_equals_the_model(small_lm):
    tokens = torch.randint(11, (3, 12), generator=torch.Generator())
    logits, weights = language_model_forward(small_lm, tokens)
    with torch.no_grad():
        assert torch.allclose(logits, small_lm(tokens), atol=1e-5)
    assert weights.shape == (2, 3, 2, 12, 12)
    assert torch.allclose(weights.sum(-1), torch.ones(2, 3, 2, 12))
    assert not weights.masked_select(~causal_mask(12)).any()


def test_an_edit_changes_only_what_it_replaces(small_lm):
    tokens = torch.randint(11, (2, 12), generator=torch.Generator())
    calls = []

    def same(layer, weights):
        calls.append(layer)
        return weights.clone()

    logits, _ = language_model_forward(small_lm, tokens, same)
    assert calls == [0, 1]
    with torch.no_grad():
        assert torch.allclose(logits, small_lm(tokens), atol=1e-5)

    def zero_last_layer(layer, weights):
        return torch.zeros_like(weights) if layer == 1 else weights

    edited, used = language_model_forward(small_lm, tokens, zero_last_layer)
    assert not torch.allclose(edited, logits)
    assert not used[1].any()
    with pytest.raises(ValueError, match="edit must return"):
        language_model_forward(small_lm, tokens, lambda layer, w: w[..., 1:])
    with pytest.raises(TypeError, match="model"):
        language_model_forward(torch.nn.Linear(2, 2), tokens)


def test_shuffle_keys_moves_weights_among_visible_keys_only():
    g = torch.Generator().manual_seed(5)
    weights = torch.rand(3, 9, 9, generator=g).masked_fill(
        ~causal_mask(9), 0.0
    )
    weights = weights / weights.sum(-1, keepdim=True)
    shuffled = shuffle_keys(weights, torch.Generator().manual_seed(0))
    assert not shuffled.masked_select(~causal_mask(9)).any()
    assert torch.equal(
        shuffled.sort(dim=-1).values, weights.sort(dim=-1).values
    )
    assert not torch.equal(shuffled, weights)
    again = shuffle_keys(weights, torch.Generator().manual_seed(0))
    assert torch.equal(shuffled, again)  # all draws from the generator


def test_shuffle_keys_leaves_the_global_rng_alone():
    state = torch.get_rng_state()
    shuffle_keys(uniform_causal_weights(5), torch.Generator().manual_seed(1))
    assert torch.equal(state, torch.get_rng_state())
    with pytest.raises(TypeError, match="generator"):
        shuffle_keys(uniform_causal_weights(5), None)


def test_first_key_mass_on_hand_built_weights():
    uniform = uniform_causal_weights(6)
    expected = sum(1 / (i + 1) for i in range(1, 6)) / 5
    assert first_key_mass(uniform).item() == pytest.approx(expected)
    sink = torch.zeros(6, 6)
    sink[:, 0] = 1.0
    assert first_key_mass(sink).item() == 1.0
    assert first_key_mass(torch.eye(6)).item() == 0.0
    with pytest.raises(ValueError, match="n >= 2"):
        first_key_mass(torch.ones(1, 1))


def test_the_shipped_model_has_the_heads_the_chapter_names(shipped):
    models, _ = shipped
    final = models["two_layer"][3000]
    previous, induction = induction_model_scores(final)
    assert previous[0].max() > 0.9 and induction[1].min() > 0.7
    # by the score over every earlier copy, head 1.0 leads narrowly (0.92)
    assert key_heads(final) == ((0, 3), (1, 0))
    # K-composition: without the previous-token heads no induction is left
    _, ablated = induction_model_scores(final, ablate={(0, 2), (0, 3)})
    assert ablated[1].max() < 0.2
    # the untrained model spreads its weight
    _, untrained = induction_model_scores(models["two_layer"][0])
    assert untrained.max() < 0.1


def test_the_shipped_induction_scores_hardly_move_with_the_period(shipped):
    """Review F: scored on the last earlier copy only, the same heads gave
    0.28 at P = 8 and 0.87 at P = 24; over every earlier copy they give
    0.94 to 0.87 (measured)."""
    models, _ = shipped
    final = models["two_layer"][3000]
    by_period = torch.stack(
        [induction_model_scores(final, period=p)[1][1] for p in (8, 16, 24)]
    )
    assert by_period.min() > 0.8
    assert (
        by_period.max(dim=0).values - by_period.min(dim=0).values
    ).max() < 0.15


def test_scores_refuse_other_models(small_lm):
    with pytest.raises(TypeError, match="AttentionOnlyTransformer"):
        induction_model_scores(small_lm)
    with torch.random.fork_rng():
        one = AttentionOnlyTransformer(8, 16, 8, 2, 1)
    with pytest.raises(ValueError, match="two layers"):
        key_heads(one)


@pytest.mark.parametrize("seed", [None, True, 2.5, "3", 10**400])
def test_induction_model_scores_names_a_bad_seed(seed):
    from attnbook.experiments.head_circuits import induction_model_scores
    from attnbook.nn.attention_only import AttentionOnlyTransformer

    torch.manual_seed(0)
    model = AttentionOnlyTransformer(10, 8, 8, 2, 1)
    with pytest.raises(ValueError, match="seed"):
        induction_model_scores(model, period=3, batch_size=2, seed=seed)


def test_circuits_refuse_inputs_of_another_dtype():
    """Probe finding: float16/float64 inputs reached a matmul's dtype
    error; now a TypeError naming the input and both dtypes."""
    layer = MultiHeadAttention(8, 2)
    x = torch.randn(3, 8)
    with pytest.raises(TypeError, match="query_inputs"):
        qk_circuit(layer, 1, x.double(), x)
    with pytest.raises(TypeError, match="unembed"):
        ov_circuit(layer, 1, x, torch.randn(10, 8).half())

"""Issue 21, the rest of the probe (tests/tools/probe.py): every hostile call
of the core API that used to fail deep in torch, allocate absurdly, return
NaN or hang now raises a clear error naming the argument, before anything
the caller owns changes (its tensors, a cache, torch's global RNG)."""

import copy

import pytest
import torch

import attnbook
from attnbook import _checks, _random
from attnbook.core.attention import (
    attention,
    attention_weights,
    hard_attention,
)
from attnbook.core.errata import (
    Source002PositionalEncoding,
    source_002_encoding,
)
from attnbook.core.positional import (
    LearnedPositionalEmbedding,
    position_shift_matrix,
)
from attnbook.core.sampling import (
    next_token_distribution,
    sample_next_token,
    top_k_filter,
    top_p_filter,
)
from attnbook.measure.compare import agreement
from attnbook.nn.decoder import (
    EncoderDecoderTransformer,
    TransformerDecoder,
    TransformerDecoderBlock,
)
from attnbook.nn.encoder import (
    LayerNorm,
    PositionWiseFFN,
    TransformerEncoderBlock,
    padding_mask,
)
from attnbook.nn.language_model import DecoderOnlyTransformer, KVCache
from attnbook.nn.pointer import PointerNetwork, not_chosen_mask
from attnbook.nn.self_attention import SelfAttention


def refused(call, error, match, *owned):
    """``call()`` raises ``error`` matching ``match``; the tensors (or
    objects) in ``owned`` and torch's global RNG are as they were."""
    before = [copy.deepcopy(o) for o in owned]
    rng = torch.get_rng_state()
    with pytest.raises(error, match=match):
        call()
    assert torch.equal(torch.get_rng_state(), rng)
    for old, new in zip(before, owned):
        _assert_same(old, new)


def _assert_same(old, new):
    if isinstance(old, torch.Tensor):
        assert old.shape == new.shape and old.dtype == new.dtype
        assert old.stride() == new.stride()
        # compare what the tensors hold (their storage), not the view: a
        # broadcast view of 10**9 rows would be materialised by a comparison
        old_bytes = bytes(old.untyped_storage())
        assert bytes(new.untyped_storage()) == old_bytes
    elif isinstance(old, KVCache):
        assert len(old.keys) == len(new.keys)
        for a, b in zip(old.keys + old.values, new.keys + new.values):
            assert (a is None and b is None) or torch.equal(a, b)
    elif isinstance(old, (list, tuple)):
        for a, b in zip(old, new):
            _assert_same(a, b)


def wide(t: torch.Tensor, rows: int = 10**9) -> torch.Tensor:
    """A stride-0 view with ``rows`` rows (the probe's hostile view)."""
    return t[:1].expand(rows, *t.shape[1:])


# -- the shared checks ---------------------------------------------------


def test_a_broadcast_view_beyond_the_limit_is_refused_by_require_tensor():
    x = wide(torch.randn(2, 8))  # 32 GB if copied, 32 bytes held
    with pytest.raises(ValueError, match="x, a broadcast view"):
        _checks.require_tensor("x", x)


def test_a_real_tensor_beyond_the_limit_is_not_a_view_and_passes():
    x = torch.zeros(64, 4)  # 1,024 bytes, all held
    previous = attnbook.set_matrix_memory_limit(1000)
    try:
        assert _checks.require_tensor("x", x) is x
        with pytest.raises(ValueError, match="x, a broadcast view"):
            _checks.require_tensor("x", x[:1].expand(1000, 4))
    finally:
        attnbook.set_matrix_memory_limit(previous)


@pytest.mark.parametrize("value", [10**400, -(10**400)])
def test_an_int_beyond_every_float_is_not_a_finite_number(value):
    assert not _checks.is_finite_number(value)
    with pytest.raises(ValueError, match="delta must be a finite number"):
        _checks.require_finite_number("delta", value)


def test_require_shape_names_both_shapes():
    with pytest.raises(ValueError, match=r"fed must have shape \(2, 1, n\)"):
        _checks.require_shape("fed", torch.zeros(2, 3, 4), (2, 1, None))


# -- core.attention ------------------------------------------------------


def qkv():
    g = torch.Generator().manual_seed(0)
    return (
        torch.randn(2, 3, 4, generator=g),
        torch.randn(2, 5, 4, generator=g),
        torch.randn(2, 5, 6, generator=g),
    )


@pytest.mark.parametrize(
    "call",
    [
        lambda q, k, v: attention(q, k, v, score=None),
        lambda q, k, v: attention_weights(q, k, score=None),
        lambda q, k, v: hard_attention(q, k, v, score=None),
    ],
    ids=["attention", "attention_weights", "hard_attention"],
)
def test_score_none_is_refused(call):
    q, k, v = qkv()
    refused(lambda: call(q, k, v), TypeError, "score must be a function", q)


@pytest.mark.parametrize("function", [attention, hard_attention])
def test_values_none_is_refused(function):
    q, k, _ = qkv()
    refused(lambda: function(q, k, None), TypeError, "values", q, k)


# -- core.positional and core.kernel_regression ---------------------------


def test_position_shift_matrix_refuses_a_delta_beyond_every_float():
    refused(lambda: position_shift_matrix(10**400, 8), ValueError, "delta", 0)


@pytest.mark.parametrize("sizes", [(10**12, 8), (8, 10**12)])
def test_learned_positions_too_large_are_refused_before_drawing(sizes):
    refused(
        lambda: LearnedPositionalEmbedding(*sizes),
        ValueError,
        "the weights of LearnedPositionalEmbedding",
    )


def test_source_002_encoding_too_large_is_refused():
    with pytest.raises(ValueError, match=r"the encoding of shape"):
        source_002_encoding(10**12, 8)


@pytest.mark.parametrize("dropout", [-1.0, None, float("inf")])
def test_source_002_module_refuses_a_bad_dropout(dropout):
    refused(
        lambda: Source002PositionalEncoding(8, dropout=dropout),
        ValueError,
        "dropout",
    )


@pytest.mark.parametrize(
    "x",
    [None, torch.randn(80), torch.randn(10, 2, 0)],
    ids=["None", "shape (80,)", "shape (10, 2, 0)"],
)
def test_source_002_forward_refuses_what_it_cannot_add(x):
    module = Source002PositionalEncoding(8)
    with pytest.raises((TypeError, ValueError), match="x"):
        module(x)


def test_gaussian_scores_below_the_range_are_minus_inf_not_nan():
    scores = attnbook.gaussian_scores(
        torch.tensor([0.0, 1.0]), torch.tensor([0.0, 1.0]), 1e-320
    )
    assert not scores.isnan().any()
    assert torch.equal(scores.diagonal(), torch.zeros(2))
    assert (scores[0, 1] == -torch.inf).item()


# -- core.sampling -------------------------------------------------------


def logits():
    return torch.randn(2, 6, generator=torch.Generator().manual_seed(0))


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(logits=torch.tensor(1.0)), ValueError, "logits must have"),
        (dict(logits=torch.zeros(2, 0)), ValueError, "V >= 1"),
        (dict(temperature=10**400), ValueError, "temperature"),
        (dict(top_p=10**400), ValueError, "top_p"),
    ],
)
def test_next_token_distribution_refuses(kwargs, error, match):
    kwargs = {"logits": logits(), **kwargs}
    owned = kwargs["logits"]
    refused(lambda: next_token_distribution(**kwargs), error, match, owned)


def test_a_logits_view_beyond_the_limit_is_refused():
    view = wide(logits())
    for call in (
        lambda: next_token_distribution(view),
        lambda: sample_next_token(view, generator=torch.Generator()),
        lambda: top_k_filter(view, 2),
        lambda: top_p_filter(view, 0.5),
    ):
        refused(call, ValueError, "logits, a broadcast view")


@pytest.mark.parametrize("p", [1e-320, 1e-60, 1e-10])
def test_a_top_p_below_the_dtype_keeps_the_most_likely_token(p):
    x = logits()
    probs = next_token_distribution(x, top_p=p)
    assert not probs.isnan().any()
    expected = torch.zeros_like(x).scatter(-1, x.argmax(-1, True), 1.0)
    assert torch.equal(probs, expected)
    g = torch.Generator().manual_seed(0)
    assert torch.equal(
        sample_next_token(x, top_p=p, generator=g), x.argmax(-1)
    )


def test_sample_next_token_refuses_an_empty_vocabulary():
    refused(
        lambda: sample_next_token(
            torch.zeros(2, 0), generator=torch.Generator()
        ),
        ValueError,
        "logits must have shape",
    )


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda x: top_k_filter(None, 2), "logits"),
        (lambda x: top_k_filter(x.long(), 2), "logits"),
        (lambda x: top_k_filter(x, 0), "top_k"),
        (lambda x: top_k_filter(x, 2.5), "top_k"),
        (lambda x: top_p_filter(x, None), "top_p"),
        (lambda x: top_p_filter(x, 10**400), "top_p"),
        (lambda x: top_p_filter(torch.tensor(1.0), 0.5), "logits"),
    ],
)
def test_the_filters_check_their_arguments(call, match):
    x = logits()
    refused(lambda: call(x), (TypeError, ValueError), match, x)


# -- measure.compare -----------------------------------------------------


@pytest.mark.parametrize("which", ["actual", "expected"])
def test_agreement_refuses_meta_tensors(which):
    a, b = torch.ones(3), torch.ones(3)
    args = {"actual": a, "expected": b, which: torch.ones(3).to("meta")}
    with pytest.raises(ValueError, match=f"{which} is on the meta device"):
        agreement(args["actual"], args["expected"], 1e-6)


def test_agreement_still_compares_with_a_number():
    assert agreement(torch.ones(3), 1.0, 1e-6) == "equal within 1e-06"


# -- module constructors: sizes checked before any weight is drawn --------


@pytest.mark.parametrize(
    "build, match",
    [
        (lambda: LayerNorm(10**12), "the weights of LayerNorm"),
        (lambda: PositionWiseFFN(10**12, 8), "PositionWiseFFN"),
        (lambda: PositionWiseFFN(8, 10**12), "PositionWiseFFN"),
        (lambda: TransformerEncoderBlock(8, 2, 10**12), "EncoderBlock"),
        (lambda: TransformerDecoderBlock(8, 2, 10**12), "DecoderBlock"),
        (lambda: TransformerDecoder(8, 2, None, 1), "ffn_hidden"),
        (lambda: TransformerDecoder(8, 2, "3", 1), "ffn_hidden"),
        (lambda: TransformerDecoder(8, 2, 10**400, 1), "ffn_hidden"),
        (lambda: EncoderDecoderTransformer(10, 10**12), "target side"),
        (lambda: SelfAttention(10**12), "the weights of SelfAttention"),
        (lambda: KVCache(10**12), "KVCache's lists of layers"),
    ],
)
def test_a_layer_too_large_is_refused_before_drawing(build, match):
    refused(build, ValueError, match)


# -- nn.self_attention ---------------------------------------------------


@pytest.mark.parametrize(
    "x, error, match",
    [
        (None, TypeError, "x must be a torch.Tensor"),
        (torch.tensor(1.0), ValueError, "x needs shape"),
        (torch.randn(80), ValueError, "x needs shape"),
        (torch.randn(2, 5, 0), ValueError, "feature size"),
        (torch.randn(2, 5, 8).double(), TypeError, "x has dtype"),
        (torch.randn(2, 5, 8).long(), TypeError, "x must be a floating"),
        (wide(torch.randn(2, 5, 8)), ValueError, "x, a broadcast view"),
    ],
)
def test_self_attention_project_checks_x(x, error, match):
    layer = SelfAttention(8)
    refused(lambda: layer.project(x), error, match, layer.state_dict())


def test_self_attention_checks_a_huge_mask_view_before_reading_it():
    layer, x = SelfAttention(8), torch.randn(2, 5, 8)
    mask = torch.ones(2, 1, 5, dtype=torch.bool).expand(2, 10**9, 5)
    refused(lambda: layer(x, mask), ValueError, "mask", x)


# -- nn.pointer ----------------------------------------------------------


def pointer():
    with _random.seeded(0):
        model = PointerNetwork(hidden_dim=8)
    x = torch.randn(2, 5, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        encoder_states, state = model.encode(x)
    fed = model.start.expand(2, 1, -1).detach()
    available = torch.ones(2, 5, dtype=torch.bool)
    return model, x, (fed, state, encoder_states, available)


@pytest.mark.parametrize(
    "x, error, match",
    [
        (None, TypeError, "x must be a torch.Tensor"),
        (torch.tensor(1.0), ValueError, "x must have shape"),
        (torch.randn(1, 2, 5), ValueError, "x must have shape"),
        (torch.randn(2, 0), ValueError, "x must hold at least one"),
        (torch.randn(2, 5).double(), TypeError, "x has dtype"),
        (torch.randint(0, 3, (2, 5)), TypeError, "x must be a floating"),
        (wide(torch.randn(2, 5)), ValueError, "x, a broadcast view"),
    ],
)
def test_pointer_encode_checks_x(x, error, match):
    model, _, _ = pointer()
    refused(lambda: model.encode(x), error, match, model.state_dict())


@pytest.mark.parametrize(
    "method", ["teacher_forced_scores", "forward", "loss"]
)
def test_pointer_methods_need_a_target(method):
    model, x, _ = pointer()
    refused(
        lambda: getattr(model, method)(x, None),
        TypeError,
        "target must be a torch.Tensor",
        x,
    )


@pytest.mark.parametrize(
    "position, value, error, match",
    [
        (0, None, TypeError, "fed must be a torch.Tensor"),
        (0, torch.randn(16), ValueError, r"fed must have shape \(2, 1, 8\)"),
        (0, torch.randn(2, 1, 8).double(), TypeError, "fed has dtype"),
        (0, torch.zeros(2, 1, 8, dtype=torch.long), TypeError, "fed must"),
        (0, wide(torch.randn(2, 1, 8)), ValueError, "fed, a broadcast"),
        (1, [], TypeError, "state must be the decoder LSTM's pair"),
        (1, (None, None), TypeError, r"state\[0\] must be a torch.Tensor"),
        (2, None, TypeError, "encoder_states must be a torch.Tensor"),
        (2, torch.randn(2, 5, 3), ValueError, "encoder_states must have"),
        (3, None, TypeError, "available must be a torch.Tensor"),
        (3, torch.ones(2, 5), TypeError, "available must be a boolean"),
        (3, torch.ones(2), ValueError, r"available must have shape \(2, 5\)"),
        (3, torch.zeros(2, 5, dtype=torch.bool), ValueError, "at least one"),
    ],
)
def test_pointer_step_checks_every_argument(position, value, error, match):
    model, _, args = pointer()
    args = list(args)
    args[position] = value
    owned = [a for a in args if isinstance(a, torch.Tensor)]
    refused(lambda: model.pointer_step(*args), error, match, *owned)


def test_pointer_step_still_gives_the_same_answer():
    model, x, (fed, state, keys, available) = pointer()
    choice, weights, _ = model.pointer_step(fed, state, keys, available)
    decoder_state, _ = model.decoder(fed, state)
    scores = model.pointer_scores(decoder_state, keys)
    assert torch.equal(weights, scores.softmax(-1))
    assert torch.equal(choice, weights.squeeze(1).argmax(-1))


@pytest.mark.parametrize(
    "target, error, match",
    [
        (torch.randn(2, 5), TypeError, "target must hold int64"),
        (torch.zeros(2, 5, dtype=torch.bool), TypeError, "int64"),
        (torch.tensor([0, 1, 2]), ValueError, r"target must have \(B, n\)"),
        (torch.tensor([[0, 0, 1]]), ValueError, "permutation of 0..2"),
    ],
)
def test_not_chosen_mask_checks_the_target(target, error, match):
    refused(lambda: not_chosen_mask(target), error, match, target)


# -- nn.language_model ---------------------------------------------------


def language_model():
    with _random.seeded(0):
        model = DecoderOnlyTransformer(
            12,
            context_len=8,
            embed_dim=8,
            num_heads=2,
            num_layers=1,
            ffn_dim=16,
        )
    tokens = torch.randint(0, 12, (2, 5), generator=torch.Generator())
    return model, tokens


@pytest.mark.parametrize("layer", [2.5, True, None, "3", 1, 10**12, 10**400])
def test_kv_cache_append_refuses_a_bad_layer(layer):
    cache = KVCache(1)
    k = torch.randn(2, 2, 3, 4)
    cache.append(0, k, k)
    refused(lambda: cache.append(layer, k, k), ValueError, "layer", cache, k)


@pytest.mark.parametrize(
    "keys, match",
    [
        (torch.randn(2, 2, 3, 5), "cannot join layer 0's cached"),
        (torch.randn(3, 2, 3, 4), "cannot join layer 0's cached"),
        (torch.randn(2, 2, 3, 4).double(), r"\(torch.float64, cpu\) cannot"),
        (torch.randn(2, 3, 4), r"shapes \(B, h, n_new, d\)"),
        (None, "keys must be a torch.Tensor"),
    ],
)
def test_kv_cache_append_refuses_keys_that_do_not_continue(keys, match):
    cache = KVCache(1)
    k = torch.randn(2, 2, 3, 4)
    cache.append(0, k, k)
    values = torch.randn(2, 2, 3, 4) if keys is None else keys
    refused(
        lambda: cache.append(0, keys, values),
        (TypeError, ValueError),
        match,
        cache,
    )


@pytest.mark.parametrize("start", [-1, 2.5, None, "3"])
def test_embed_refuses_a_bad_start(start):
    model, tokens = language_model()
    refused(lambda: model.embed(tokens, start), ValueError, "start", tokens)


@pytest.mark.parametrize(
    "targets, error, match",
    [
        (None, TypeError, "targets must be a torch.Tensor"),
        (torch.tensor(1), ValueError, "targets must have the shape"),
        (torch.zeros(2, 0, dtype=torch.long), ValueError, "targets must have"),
        (torch.zeros(2, 5), TypeError, "targets must hold int64"),
        (torch.zeros(2, 5, dtype=torch.int32), TypeError, "targets must be"),
        (torch.full((2, 5), -1), ValueError, "targets holds id -1"),
        (torch.full((2, 5), 10**9), ValueError, "targets holds id"),
        (torch.zeros(2, 5, dtype=torch.long).to("meta"), ValueError, "meta"),
    ],
)
def test_language_model_loss_checks_targets(targets, error, match):
    model, tokens = language_model()
    refused(lambda: model.loss(tokens, targets), error, match, tokens)


def test_language_model_loss_refuses_empty_inputs():
    model, _ = language_model()
    empty = torch.zeros(0, 5, dtype=torch.long)
    refused(lambda: model.loss(empty, empty), ValueError, "inputs of shape")


def test_generate_refuses_a_result_that_cannot_fit():
    model, tokens = language_model()
    refused(
        lambda: model.generate(tokens, 10**12, temperature=0),
        ValueError,
        "the generated tokens of shape",
        tokens,
    )


def test_generate_with_a_tiny_top_p_is_greedy():
    model, tokens = language_model()
    g = torch.Generator().manual_seed(0)
    sampled = model.generate(tokens, 3, top_p=1e-320, generator=g)
    assert torch.equal(sampled, model.generate(tokens, 3, temperature=0))


def test_a_cache_of_another_model_is_refused_before_it_grows():
    model, tokens = language_model()
    cache = KVCache(3)
    refused(lambda: model(tokens, cache), ValueError, "cache has 3", cache)
    block = model.blocks[0]
    x = torch.randn(2, 1, 8)
    refused(
        lambda: block.forward_cached(x, None, 0),
        TypeError,
        "cache must be a KVCache",
        x,
    )


@pytest.mark.parametrize(
    "call",
    [
        lambda m, t: m(wide(t)),
        lambda m, t: m.embed(wide(t)),
        lambda m, t: m.loss(wide(t), t),
        lambda m, t: m.generate(wide(t), 1, temperature=0),
    ],
    ids=["forward", "embed", "loss", "generate"],
)
def test_language_model_refuses_a_huge_token_view(call):
    model, tokens = language_model()
    refused(lambda: call(model, tokens), ValueError, "tokens, a broadcast")


# -- nn.encoder / nn.decoder: huge views are refused before any work ------


def test_padding_mask_refuses_a_huge_lengths_view():
    lengths = torch.tensor([3]).expand(10**9)
    refused(lambda: padding_mask(lengths, 5), ValueError, "valid_lens")


@pytest.mark.parametrize(
    "module, x",
    [
        (LayerNorm(8), torch.randn(2, 5, 8)),
        (PositionWiseFFN(8, 16), torch.randn(2, 5, 8)),
    ],
    ids=["LayerNorm", "PositionWiseFFN"],
)
def test_position_wise_layers_refuse_a_huge_view(module, x):
    view = x[:, :1].expand(2, 10**9, 8)
    refused(lambda: module(view), ValueError, "x, a broadcast view", x)


# -- display.figures.show_heatmaps ----------------------------------------


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(titles=2.5), TypeError, "titles must be None or a list"),
        (dict(titles=["a"]), ValueError, "got 1 titles for 2 columns"),
        (dict(xticklabels="x"), TypeError, "xticklabels must be None"),
        (dict(xticklabels=-1), TypeError, "xticklabels must be None"),
        (dict(yticklabels=["a"]), ValueError, "got 1 yticklabels for 3"),
        (dict(figsize="x"), ValueError, r"figsize must be \(width, height\)"),
        (dict(figsize=(2.5, -1)), ValueError, r"figsize must be \(width"),
        (dict(cmap=""), ValueError, "cmap must be a matplotlib colour map"),
        (dict(cmap=3), ValueError, "cmap must be"),
        (dict(vmin=10**400), ValueError, "vmin must be None or a finite"),
        (dict(vmax="x"), ValueError, "vmax must be None or a finite"),
    ],
)
def test_show_heatmaps_checks_its_options_before_drawing(kwargs, error, match):
    import matplotlib.pyplot as plt

    from attnbook.display.figures import show_heatmaps

    matrices = torch.rand(2, 2, 3, 4)
    figures = plt.get_fignums()
    refused(lambda: show_heatmaps(matrices, **kwargs), error, match, matrices)
    assert plt.get_fignums() == figures  # no half-drawn figure left open


def test_show_heatmaps_refuses_a_huge_view():
    from attnbook.display.figures import show_heatmaps

    view = torch.rand(1, 4).expand(10**9, 4)
    refused(lambda: show_heatmaps(view), ValueError, "matrices, a broadcast")


# -- helpers: training settings, explorers' figures, experiments ---------


@pytest.mark.parametrize(
    "settings, match",
    [
        (dict(steps=2.5), "steps must be a non-negative int"),
        (dict(steps=-1), "steps must be a non-negative int"),
        (dict(batch_size=None), "batch_size must be a positive int"),
        (dict(warmup="3"), "warmup must be a non-negative int"),
        (dict(seed=10**400), "seed = 1000"),
        (dict(lr=float("nan")), "lr must be a finite number"),
        (dict(lr=0.0), r"lr must be in \(0.0"),
        (dict(lr=1e300), "lr must be in"),
        (dict(weight_decay=-1.0), r"weight_decay must be in \[0.0"),
        (dict(eval_every=0), "eval_every must be a positive int"),
    ],
)
def test_require_training_names_the_setting(settings, match):
    with pytest.raises(ValueError, match=match):
        _checks.require_training(**settings)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(steps=None), "steps"),
        (dict(lr=-1.0), "lr"),
        (dict(weight_decay=float("nan")), "weight_decay"),
        (dict(warmup=10**400), "warmup"),
        (dict(seed=2.5), "seed"),
        (dict(batch_size=10**12), "batch_size"),
        (dict(config="x"), "config must be a dict"),
    ],
)
def test_train_language_model_refuses_bad_settings_before_training(
    kwargs, match
):
    from attnbook.tasks.language_model import train_language_model

    call = {"steps": 1, "batch_size": 2, "progress": False, **kwargs}
    refused(
        lambda: train_language_model(**call), (TypeError, ValueError), match
    )


def test_text_batch_refuses_a_batch_beyond_the_limit():
    from attnbook.tasks.text import text_batch

    ids, g = torch.zeros(100, dtype=torch.long), torch.Generator()
    state = g.get_state()
    refused(
        lambda: text_batch(ids, 10**12, 8, g), ValueError, "the batch", ids
    )
    assert torch.equal(g.get_state(), state)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(steps="3"), "steps"),
        (dict(lr=None), "lr"),
        (dict(batch_size=0), "batch_size"),
        (dict(warmup=None), "warmup"),
        (dict(seed=None), "seed"),
    ],
)
def test_train_date_transformer_refuses_bad_settings(kwargs, match):
    from attnbook.train.date_transformer import train_date_transformer

    call = {"steps": 1, "batch_size": 2, "lr": 1e-3, "warmup": 1, "seed": 0}
    call.update(kwargs)
    refused(lambda: train_date_transformer(**call), ValueError, match)


def test_random_dates_refuses_a_list_beyond_the_limit():
    from attnbook.tasks.dates import random_dates

    refused(
        lambda: random_dates(10**12, torch.Generator()), ValueError, "dates"
    )


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(steps=2.5), "steps"),
        (dict(eval_every=0), "eval_every"),
        (dict(seed="3"), "seed"),
        (dict(batch_size=None), "batch_size"),
        (dict(n_test=0), "n_test"),
    ],
)
def test_train_selector_refuses_bad_settings(kwargs, match):
    from attnbook.experiments.hard_training import train_selector

    refused(lambda: train_selector("soft", **kwargs), ValueError, match)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(methods=None), "methods must be a non-empty"),
        (dict(seeds=[]), "seeds must be a non-empty"),
        (dict(lrs="abc"), "lrs must be a non-empty"),
        (dict(level=None), "level must be a finite number"),
    ],
)
def test_compare_selectors_checks_its_grid(kwargs, match):
    from attnbook.experiments.hard_training import compare_selectors

    refused(lambda: compare_selectors(**kwargs), ValueError, match)


@pytest.mark.parametrize(
    "args, error, match",
    [
        ((None, torch.randn(3)), TypeError, "log_probs must be a torch"),
        ((torch.randn(3), "abc"), TypeError, "losses must be a torch"),
        ((torch.randn(0), torch.randn(0)), ValueError, "batch >= 1"),
        ((torch.randn(3), torch.randn(4)), ValueError, "batch must match"),
        ((torch.randn(3), torch.randn(3) > 0), TypeError, "losses must be"),
    ],
)
def test_reinforce_surrogate_checks_its_tensors(args, error, match):
    from attnbook.experiments.hard_training import reinforce_surrogate

    refused(lambda: reinforce_surrogate(*args), error, match, *args)


@pytest.mark.parametrize("baseline", [1e300, 10**400, None, "1"])
def test_reinforce_surrogate_refuses_a_baseline_its_dtype_cannot_hold(
    baseline,
):
    from attnbook.experiments.hard_training import reinforce_surrogate

    log_p, losses = torch.randn(3), torch.rand(3)
    refused(
        lambda: reinforce_surrogate(log_p, losses, baseline),
        ValueError,
        "baseline",
        log_p,
        losses,
    )


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(layer=None), TypeError, "layer must be callable"),
        (dict(n=0), ValueError, "n must be a positive int"),
        (dict(dim=2.5), ValueError, "dim must be a positive int"),
        (dict(seed=True), ValueError, "seed must be"),
        (dict(n=10**12), ValueError, "the input of shape"),
        (dict(layer=torch.nn.Linear(4, 4)), TypeError, "x has dtype"),
    ],
)
def test_sees_first_position_checks_its_arguments(kwargs, error, match):
    from attnbook.experiments.complexity import (
        RecurrentLayer,
        sees_first_position,
    )

    call = {"layer": RecurrentLayer(4).double(), "n": 6, "dim": 4, **kwargs}
    refused(lambda: sees_first_position(**call), error, match)


@pytest.mark.parametrize(
    "x, error, match",
    [
        (None, TypeError, "x must be a torch.Tensor"),
        (torch.randn(6, 4), ValueError, r"x must have shape \(B, n, 4\)"),
        (torch.randn(2, 6, 0), ValueError, r"x must have shape \(B, n, 4\)"),
        (torch.randn(2, 6, 4).double(), TypeError, "x has dtype"),
    ],
)
def test_the_complexity_layers_check_x(x, error, match):
    from attnbook.experiments.complexity import ConvStack, RecurrentLayer

    for layer in (RecurrentLayer(4), ConvStack(4)):
        refused(lambda: layer(x), error, match)


def test_explorer_figures_refuse_what_is_not_a_figure_or_a_view():
    import matplotlib.pyplot as plt

    from attnbook.widgets.basics import (
        kernel_regression_view,
        plot_kernel_regression,
        update_kernel_regression_figure,
    )

    view = kernel_regression_view()
    for bad in (None, {}, "x"):
        with pytest.raises(TypeError, match="view must be the dict"):
            plot_kernel_regression(bad)
    fig = plot_kernel_regression(view)
    try:
        for bad in (None, 3, torch.nn.Linear(2, 2)):
            with pytest.raises(TypeError, match="fig must be the matplotlib"):
                update_kernel_regression_figure(bad, view)
        assert update_kernel_regression_figure(fig, view)
    finally:
        plt.close(fig)


@pytest.mark.parametrize("seed", [2.5, True, None, "3", -1, 10**400])
def test_seeded_generator_names_the_seed(seed):
    refused(lambda: _random.seeded_generator(seed), ValueError, "seed")


def test_seeded_generator_draws_what_a_seeded_torch_generator_draws():
    a = torch.randn(5, generator=_random.seeded_generator(7))
    assert torch.equal(
        a, torch.randn(5, generator=torch.Generator().manual_seed(7))
    )


@pytest.mark.parametrize(
    "call, error, match",
    [
        (
            lambda: attnbook.measure.timing.mean_call_time(None, 1),
            TypeError,
            "function must be callable",
        ),
        (
            lambda: attnbook.measure.timing.mean_call_time(print, 1, clock=3),
            TypeError,
            "clock must be callable",
        ),
        (
            lambda: attnbook.measure.parameters.count_parameters(3),
            TypeError,
            "model must be a torch.nn.Module",
        ),
        (
            lambda: attnbook.tasks.language_model.model_from({}),
            TypeError,
            "saved must be a dict with the keys",
        ),
        (
            lambda: attnbook.tasks.order_classifier.classifier_from("x"),
            TypeError,
            "saved must be a dict",
        ),
        (
            lambda: attnbook.train.date_translator.translator_config(None),
            TypeError,
            "recipe must be a dict",
        ),
        (
            lambda: attnbook.tasks.text.split_documents(None),
            TypeError,
            "documents must be a list",
        ),
        (
            lambda: attnbook.tasks.text.nats_to_bits(10**400),
            ValueError,
            "nats must be a number",
        ),
        (
            lambda: attnbook.train.corpus.module_files(""),
            TypeError,
            "lib must be a path",
        ),
        (
            lambda: attnbook.train.corpus.module_files("/nonexistent/x"),
            ValueError,
            "lib must be a directory",
        ),
        (
            lambda: attnbook.train.corpus.clean(None),
            ValueError,
            "text must be text",
        ),
        (
            lambda: attnbook.core.positional.pair_frequencies(8, dtype="f"),
            TypeError,
            "dtype must be a floating-point torch.dtype",
        ),
        (
            lambda: attnbook.widgets.soft_hard.angle_query(10**400),
            ValueError,
            "angle must be finite",
        ),
        (
            lambda: attnbook.experiments.complexity.loglog_slope(None, [1.0]),
            TypeError,
            "lengths must be a list of numbers",
        ),
    ],
)
def test_helpers_name_the_argument_at_fault(call, error, match):
    import attnbook.experiments.complexity  # noqa: F401
    import attnbook.measure.parameters  # noqa: F401
    import attnbook.measure.timing  # noqa: F401
    import attnbook.tasks.language_model  # noqa: F401
    import attnbook.tasks.order_classifier  # noqa: F401
    import attnbook.tasks.text  # noqa: F401
    import attnbook.train.corpus  # noqa: F401
    import attnbook.train.date_translator  # noqa: F401
    import attnbook.widgets.soft_hard  # noqa: F401

    refused(call, error, match)


def test_corpus_module_name_takes_str_paths_and_checks_them():
    from attnbook.train.corpus import module_name

    assert module_name("/lib/email/mime/text.py", "/lib") == "email.mime.text"
    with pytest.raises(ValueError, match="is not under lib"):
        module_name("/elsewhere/a.py", "/lib")


@pytest.mark.parametrize("score", [float("nan"), float("inf")])
@pytest.mark.parametrize("name", ["reinforce_loss", "gumbel_loss"])
def test_sampling_losses_refuse_scores_they_cannot_sample(name, score):
    from attnbook.experiments import hard_training

    items, target = hard_training.selection_task(3, 5, 4, torch.Generator())
    w = torch.zeros((3, 5), dtype=torch.float64)
    w[0, 0] = score
    g = torch.Generator()
    state = g.get_state()
    loss = getattr(hard_training, name)
    refused(
        lambda: loss(w, items, target, g),
        ValueError,
        "scores must be finite",
        w,
    )
    assert torch.equal(g.get_state(), state)


def test_greedy_decode_refuses_a_result_that_cannot_fit():
    from attnbook.nn.seq2seq import Seq2Seq

    with _random.seeded(0):
        model = Seq2Seq(10, 10, 4, 4)
    src, lengths = torch.randint(3, 10, (2, 5)), torch.tensor([5, 3])
    refused(
        lambda: model.greedy_decode(src, lengths, 10**12),
        ValueError,
        "the decoded tokens",
        src,
        lengths,
    )


def test_train_seq2seq_still_needs_one_step():
    from attnbook.nn.seq2seq import Seq2Seq, train_seq2seq

    with _random.seeded(0):
        model = Seq2Seq(10, 10, 4, 4)
    refused(
        lambda: train_seq2seq(model, lambda g: None, steps=0),
        ValueError,
        "steps must be a positive int",
        model.state_dict(),
    )


@pytest.mark.parametrize("count", [0, 2**31, 10**12, 2.5])
def test_torch_threads_refuses_a_count_torch_cannot_take(count):
    from attnbook.measure.threads import torch_threads

    threads = torch.get_num_threads()
    with pytest.raises(ValueError, match="count must be"):
        with torch_threads(count):
            pass
    assert torch.get_num_threads() == threads


@pytest.mark.parametrize(
    "call, error, match",
    [
        (
            lambda m: m.tasks.dates.random_date_pairs(2, G(), None),
            TypeError,
            "forms",
        ),
        (lambda m: m.tasks.dates.SOURCE_VOCAB.decode(None), TypeError, "ids"),
        (
            lambda m: m.tasks.dates.SOURCE_VOCAB.decode(
                torch.zeros(2, 3, dtype=torch.long).to("meta")
            ),
            ValueError,
            "ids is on the meta device",
        ),
        (
            lambda m: m.tasks.date_translator.DateTranslator(None),
            TypeError,
            "model",
        ),
        (
            lambda m: m.tasks.date_transformer.DateTransformer(3),
            TypeError,
            "model must be an EncoderDecoderTransformer",
        ),
        (lambda m: m.tasks.copying.copy_accuracy(None, 3), TypeError, "model"),
        (
            lambda m: m.tasks.copying.copy_batch(10**12, 3, G()),
            ValueError,
            "the batch of shape",
        ),
    ],
)
def test_date_and_copy_helpers_check_their_arguments(call, error, match):
    import attnbook.tasks.copying  # noqa: F401
    import attnbook.tasks.date_transformer  # noqa: F401
    import attnbook.tasks.date_translator  # noqa: F401
    import attnbook.tasks.dates  # noqa: F401

    refused(lambda: call(attnbook), error, match)


def G():
    return torch.Generator().manual_seed(0)


def test_a_chunk_larger_than_the_keys_is_one_chunk():
    g = G()
    q, k, v = (torch.randn(2, 5, 8, generator=g) for _ in range(3))
    mask = attnbook.causal_mask(5)
    huge = attnbook.chunked_attention(q, k, v, mask=mask, chunk_size=10**12)
    whole = attnbook.chunked_attention(q, k, v, mask=mask, chunk_size=5)
    assert torch.equal(huge, whole)


def test_regression_target_counts_its_temporaries_before_allocating():
    from attnbook.core.kernel_regression import regression_target

    x = torch.zeros(()).expand(10**9)  # 4 GB as a copy; 12 GB in all
    refused(lambda: regression_target(x), ValueError, "f\\(x\\) and its two")
    small = torch.linspace(0, 5, 7)
    assert torch.equal(
        regression_target(small), 2 * torch.sin(small) + small.pow(0.8)
    )

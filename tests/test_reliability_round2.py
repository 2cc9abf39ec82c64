"""Defects of the second hostile-input probe (../shared/reviews/probe.md),
each with its reproducer: the answer is right, or a clear error names the
argument at fault."""

import pytest
import torch

import attnbook
from attnbook import (
    attention,
    attention_weights,
    dot_score,
    hard_attention,
    masked_softmax,
)


def qkv(n_q=3, n_k=5, d=4, d_v=2, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (
        torch.randn(n_q, d, generator=g),
        torch.randn(n_k, d, generator=g),
        torch.randn(n_k, d_v, generator=g),
    )


# D3: a mask or keys on another device are refused, not silently misused.
@pytest.mark.parametrize(
    "call",
    [
        lambda q, k, v, m: attention(q, k, v, mask=m),
        lambda q, k, v, m: attention_weights(q, k, mask=m),
        lambda q, k, v, m: hard_attention(q, k, v, mask=m),
        lambda q, k, v, m: masked_softmax(q @ k.T, m),
    ],
    ids=["attention", "attention_weights", "hard_attention", "softmax"],
)
def test_a_mask_on_another_device_is_refused(call):
    q, k, v = qkv()
    keep = torch.zeros(3, 5, dtype=torch.bool).to("meta")
    with pytest.raises(ValueError, match="meta"):
        call(q, k, v, keep)


def test_keys_on_another_device_are_refused():
    from attnbook._checks import require_same_device

    q, k, _ = qkv()
    with pytest.raises(ValueError, match="meta"):
        dot_score(q, k.to("meta"))
    with pytest.raises(ValueError, match="meta"):
        attention(q, k.to("meta"), torch.randn(5, 2))
    with pytest.raises(ValueError, match="one device: queries on cpu"):
        require_same_device(queries=q, keys=k.to("meta"))


# D5 (a): a NaN query whose every key is masked reaches no gradient.
def test_garbage_query_of_a_fully_masked_row_stays_out_of_gradients():
    q, k, v = qkv()
    q[1] = float("nan")
    q.requires_grad_()
    k.requires_grad_()
    keep = torch.ones(3, 5, dtype=torch.bool)
    keep[1] = False
    output, weights = attention(q, k, v, mask=keep)
    output.sum().backward()
    assert torch.isfinite(output).all() and (weights[1] == 0).all()
    assert torch.isfinite(k.grad).all() and torch.isfinite(q.grad).all()


# D12: a kept score equal to the dtype's most negative number is a score.
@pytest.mark.parametrize(
    "dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64]
)
def test_a_kept_score_at_finfo_min_keeps_its_weight(dtype):
    lowest = torch.finfo(dtype).min
    scores = torch.tensor([[lowest, 0.0, 0.0]], dtype=dtype)
    keep = torch.tensor([[True, False, False]])
    expected = torch.tensor([[1.0, 0.0, 0.0]], dtype=dtype)
    assert torch.equal(masked_softmax(scores, keep), expected)
    assert torch.equal(
        masked_softmax(scores.clone(), keep, inplace=True), expected
    )


def test_a_fully_masked_row_is_zeros_and_its_gradient_finite():
    scores = torch.randn(2, 4, requires_grad=True)
    keep = torch.tensor([[True, True, False, False], [False] * 4])
    weights = masked_softmax(scores, keep)
    weights.sum().backward()
    assert (weights[1] == 0).all() and torch.isfinite(scores.grad).all()
    assert torch.allclose(weights[0].sum(), torch.tensor(1.0))


# D13: plausible misuse of the core API gets a clear error.
@pytest.mark.parametrize("dim", [2, -3, 1.0, "x"])
def test_masked_softmax_refuses_a_bad_dim(dim):
    with pytest.raises((ValueError, TypeError), match="dim"):
        masked_softmax(torch.randn(3, 4), dim=dim)


@pytest.mark.parametrize("function", [attention, hard_attention])
@pytest.mark.parametrize("score", ["dot", 3])
def test_a_score_that_is_not_a_function_is_refused(function, score):
    q, k, v = qkv()
    with pytest.raises(TypeError, match="score must be a function"):
        function(q, k, v, score=score)
    with pytest.raises(TypeError, match="score must be a function"):
        attention_weights(q, k, score=score)


def test_hard_attention_refuses_a_generator_that_is_not_one():
    q, k, v = qkv()
    with pytest.raises(TypeError, match="generator"):
        hard_attention(q, k, v, mode="sample", generator="g")


def test_the_device_check_leaves_ordinary_calls_alone():
    q, k, v = qkv()
    keep = torch.rand(3, 5, generator=torch.Generator().manual_seed(1)) > 0.3
    keep[:, 0] = True
    output, weights = attention(q, k, v, mask=keep)
    reference = torch.nn.functional.scaled_dot_product_attention(
        q[None], k[None], v[None], attn_mask=keep
    )[0]
    assert attnbook.agreement(output, reference, 1e-6).startswith("equal")


# D9 (a): the date functions never draw from torch's global generator.
@pytest.mark.parametrize(
    "name", ["random_dates", "random_date_pairs", "date_batch"]
)
def test_date_functions_need_a_generator_and_leave_the_global_rng(name):
    from attnbook.tasks import dates

    state = torch.get_rng_state()
    with pytest.raises(TypeError, match="generator"):
        getattr(dates, name)(4, None)
    assert torch.equal(state, torch.get_rng_state())


# D13: kernel regression's data, target and extreme bandwidths.
@pytest.mark.parametrize(
    "kwargs",
    [
        {"n_test": 0},
        {"n_train": -1},
        {"seed": "0"},
        {"noise": float("nan")},
        {"n_train": 10**12},
    ],
)
def test_regression_data_refuses_bad_arguments(kwargs):
    with pytest.raises((ValueError, TypeError)):
        attnbook.regression_data(**kwargs)


def test_regression_target_refuses_what_is_not_a_tensor():
    with pytest.raises(TypeError, match="x"):
        attnbook.regression_target(None)


def test_extreme_bandwidths_give_the_limit_not_nan():
    x = torch.tensor([0.0, 1.0])
    wide = attnbook.gaussian_scores(x, x, 1e200)
    narrow = attnbook.gaussian_scores(x, x, 1e-200)
    assert (wide == 0).all()
    assert narrow[0, 0] == 0 and narrow[0, 1] == -float("inf")
    with pytest.raises(ValueError, match="bandwidth"):
        attnbook.gaussian_scores(x, x, 10**400)


@pytest.mark.parametrize("matrices", [None, "abc", torch.empty(0, 3)])
def test_show_heatmaps_refuses_what_it_cannot_draw(matrices):
    with pytest.raises((TypeError, ValueError), match="matrices"):
        attnbook.show_heatmaps(matrices)


# D16: smaller contract breaks.
def test_score_matrix_bytes_takes_whole_chunks_and_torch_dtypes():
    from attnbook.measure.memory import score_matrix_bytes

    assert score_matrix_bytes(4, 10, chunk_size=3) == 4 * 3 * 4
    with pytest.raises((TypeError, ValueError), match="chunk_size"):
        score_matrix_bytes(4, 10, chunk_size=2.5)
    with pytest.raises(TypeError, match="dtype"):
        score_matrix_bytes(4, 10, dtype="float32")


def test_a_damaged_weight_file_never_suggests_weights_only_false(monkeypatch):
    from attnbook import _weights

    monkeypatch.setattr(_weights, "read_pinned", lambda name, digest: b"junk")
    with pytest.raises(ValueError) as error:
        _weights.load_pinned("any.pt", "0" * 64)
    assert "weights_only" not in str(error.value)


def refused_before_allocating(build) -> None:
    """``build()`` raises the memory-limit ValueError and leaves torch's
    global random state as it was."""
    state = torch.get_rng_state()
    with pytest.raises(ValueError, match="GiB"):
        build()
    assert torch.equal(state, torch.get_rng_state())


# D8: every large allocation is checked against the memory limit first.
@pytest.mark.parametrize(
    "call",
    [
        lambda: dot_score(torch.zeros(10**5, 2), torch.zeros(10**5, 2)),
        lambda: attnbook.scaled_dot_score(
            torch.zeros(10**5, 2), torch.zeros(10**5, 2)
        ),
        lambda: attnbook.lengths_to_mask(torch.tensor([3]), 10**12),
        lambda: attnbook.AdditiveScore(10**6, 10**6, 10**4),
        lambda: attnbook.BilinearScore(10**6, 10**6),
    ],
    ids=["dot", "scaled_dot", "lengths_to_mask", "additive", "bilinear"],
)
def test_huge_allocations_are_refused_before_they_start(call):
    refused_before_allocating(call)


def test_random_queries_and_keys_refuses_a_huge_dim():
    from attnbook.experiments.score_scaling import random_queries_and_keys

    with pytest.raises(ValueError, match="GiB"):
        random_queries_and_keys(10**12)


# D9 (b): a refused constructor leaves torch's global random state alone.
def test_a_constructor_that_fails_midway_restores_the_rng():
    from attnbook._random import restores_rng_on_error

    class Half(torch.nn.Module):
        @restores_rng_on_error
        def __init__(self):
            super().__init__()
            self.first = torch.nn.Linear(4, 4)  # draws weights
            raise ValueError("refused after drawing")

    state = torch.get_rng_state()
    with pytest.raises(ValueError):
        Half()
    assert torch.equal(state, torch.get_rng_state())


# D4: seeded builds from several threads get their seed's weights.
def same_weights_in_threads(make, seeds, rounds=3):
    """Build ``make(seed)`` for every seed from one thread each, ``rounds``
    times; assert every build equals the serial one and the caller's RNG is
    unchanged."""
    import threading

    expected = [make(seed) for seed in seeds]
    results = [None] * len(seeds)
    state = torch.get_rng_state()

    def work(i, seed):
        for _ in range(rounds):
            results[i] = make(seed)

    threads = [
        threading.Thread(target=work, args=(i, s)) for i, s in enumerate(seeds)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for got, want in zip(results, expected):
        assert all(torch.equal(got[k], want[k]) for k in want)
    assert torch.equal(state, torch.get_rng_state())


def test_seeded_builds_in_threads_match_the_serial_ones():
    from attnbook._random import seeded

    def build(seed):
        with seeded(seed):
            return torch.nn.Linear(64, 64).state_dict()

    same_weights_in_threads(build, range(8), rounds=20)


# D14: extreme but accepted parameters give an error, not NaN statistics.
def test_softmax_statistics_refuses_a_temperature_that_overflows():
    from attnbook.experiments.score_scaling import softmax_statistics

    scores = torch.randn(4, 8)
    with pytest.raises(ValueError, match="temperature"):
        softmax_statistics(scores, temperature=1e-320)
    with pytest.raises(ValueError, match="shape"):
        softmax_statistics(torch.empty(0, 8))


# The chapter tasks and models (D8, D9a, D10, D13-D16 in chapters 5-8).
def test_sorting_batch_needs_a_generator():
    from attnbook.tasks.sorting import sorting_batch

    state = torch.get_rng_state()
    with pytest.raises(TypeError, match="generator"):
        sorting_batch(2, 4, None)
    with pytest.raises(ValueError, match="GiB"):
        sorting_batch(10**6, 10**6, torch.Generator())
    assert torch.equal(state, torch.get_rng_state())


def test_sorting_accuracy_refuses_a_tensor_count_and_leaves_it_alone():
    from attnbook.tasks.sorting import sorting_accuracy

    count = torch.tensor(20)
    with pytest.raises(ValueError, match="num_sequences"):
        sorting_accuracy(attnbook.pretrained_sorter(), 5, num_sequences=count)
    assert count.item() == 20
    with pytest.raises(ValueError, match="num_sequences"):
        sorting_accuracy(attnbook.pretrained_sorter(), 5, num_sequences=0)


def test_scale_to_unit_refuses_bounds_that_reverse_the_order():
    from attnbook.tasks.sorting import scale_to_unit

    x = torch.tensor([[3.0, 1.0, 2.0]])
    with pytest.raises(ValueError, match="high"):
        scale_to_unit(x, low=0.9, high=0.1)
    with pytest.raises(ValueError, match="low"):
        scale_to_unit(x, low=float("nan"))


def test_a_crafted_sorter_file_is_refused_before_it_allocates(tmp_path):
    from attnbook.tasks.sorting import load_sorter

    path = tmp_path / "crafted.pt"
    torch.save({"hidden_dim": 10**6, "state_dict": {}, "info": {}}, path)
    with pytest.raises(ValueError, match="GiB"):
        load_sorter(path)
    torch.save(
        {"hidden_dim": 8, "state_dict": {"x": torch.ones(1)}, "info": {}}, path
    )
    with pytest.raises(ValueError, match="save_sorter"):
        load_sorter(path)


@pytest.mark.parametrize(
    "call",
    [
        lambda: attnbook.sinusoidal_encoding(10**9, 64),
        lambda: attnbook.PositionalEncoding(64, max_len=10**9),
        lambda: attnbook.position_shift_matrix(1, 10**6),
    ],
    ids=["sinusoidal", "PositionalEncoding", "shift_matrix"],
)
def test_position_tables_beyond_the_limit_are_refused(call):
    with pytest.raises(ValueError, match="GiB"):
        call()


def test_a_base_that_makes_nan_frequencies_is_refused():
    with pytest.raises(ValueError, match="base"):
        attnbook.sinusoidal_encoding(8, 64, base=5e-324)


def test_copy_batch_refuses_strings_beyond_the_limit():
    from attnbook.tasks.copying import copy_batch

    with pytest.raises(ValueError, match="GiB"):
        copy_batch(4, 10**9, torch.Generator())


@pytest.mark.parametrize("lengths", [[4, 4, 4], [0, 4, 8], [-1, 2, 3]])
def test_loglog_slope_refuses_lengths_without_a_slope(lengths):
    from attnbook.experiments.complexity import loglog_slope

    with pytest.raises(ValueError, match="lengths"):
        loglog_slope(lengths, [1.0, 2.0, 3.0])


def test_comparison_layers_built_in_threads_match_the_serial_ones():
    from attnbook.experiments.complexity import comparison_layers

    def weights(seed):
        return comparison_layers(8, seed=seed)["RNN"].state_dict()

    same_weights_in_threads(weights, range(4), rounds=5)


@pytest.mark.parametrize("strings", [None, 42, {"a": 1}])
def test_translators_refuse_what_is_not_a_list_of_strings(strings):
    from attnbook.tasks.dates import SOURCE_VOCAB

    with pytest.raises(TypeError, match="list of strings"):
        SOURCE_VOCAB.encode_for_translation(strings)


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int16, torch.float32])
def test_ids_of_a_dtype_embeddings_cannot_take_are_refused(dtype):
    from attnbook.nn.seq2seq import Seq2Seq
    from attnbook.tasks.copying import BOTTLENECK_MODELS

    with attnbook._random.keep_global_rng():
        model = Seq2Seq(**BOTTLENECK_MODELS["attention"])
    src = torch.tensor([[3, 4, 5]])
    tgt = torch.tensor([[1, 3, 4]])
    with pytest.raises(TypeError, match="int64"):
        model(src.to(dtype), torch.tensor([3]), tgt)
    with pytest.raises(TypeError, match="int64"):
        model(src, torch.tensor([3]), tgt.to(dtype))
    with pytest.raises(TypeError, match="int64"):
        model.loss(src, torch.tensor([3]), tgt, tgt.to(dtype))


def test_seq2seq_refuses_an_empty_target_and_bad_target_ids():
    from attnbook.nn.seq2seq import Seq2Seq
    from attnbook.tasks.copying import BOTTLENECK_MODELS

    with attnbook._random.keep_global_rng():
        model = Seq2Seq(**BOTTLENECK_MODELS["plain"])
    src, lengths = torch.tensor([[3, 4, 5]]), torch.tensor([3])
    with pytest.raises(ValueError, match="T = 0"):
        model(src, lengths, torch.zeros(1, 0, dtype=torch.long))
    tgt = torch.tensor([[1, 3, 4]])
    with pytest.raises(ValueError, match="tgt_out"):
        model.loss(src, lengths, tgt, torch.tensor([[3, 4, 99]]))


def test_pointer_targets_must_be_int64_positions():
    model = attnbook.pretrained_sorter()
    x = torch.tensor([[0.3, 0.1, 0.2]])
    target = torch.tensor([[0, 2, 1]], dtype=torch.int32)
    with pytest.raises(TypeError, match="int64"):
        model.loss(x, target)


# D7: chunked_attention's backward pass.
def test_chunked_backward_allocates_for_the_keys_it_has():
    q = torch.randn(4, 8, requires_grad=True)
    out = attnbook.chunked_attention(
        q, torch.randn(16, 8), torch.randn(16, 8), chunk_size=10**9
    )
    out.sum().backward()  # a buffer of 4 x 16, not 4 x 10**9
    assert torch.isfinite(q.grad).all()


def test_chunked_attention_supports_create_graph():
    g = torch.Generator().manual_seed(0)
    q, k, v = (
        torch.randn(n, d, generator=g, dtype=torch.float64, requires_grad=True)
        for n, d in ((3, 4), (6, 4), (6, 2))
    )
    assert torch.autograd.gradgradcheck(
        lambda a, b, c: attnbook.chunked_attention(a, b, c, chunk_size=2),
        (q, k, v),
    )


def test_chunked_attention_over_no_keys_keeps_the_graph():
    q = torch.randn(4, 8, requires_grad=True)
    out = attnbook.chunked_attention(q, torch.randn(0, 8), torch.randn(0, 2))
    out.sum().backward()
    assert (out == 0).all() and (q.grad == 0).all()


# D11: infinite scores give attention's limit, or a clear error when streaming.
@pytest.mark.parametrize("value", [float("inf"), -float("inf")])
def test_chunked_attention_equals_attention_for_infinite_scores(value):
    q, k, v = qkv()
    k[0, 0] = value
    expected = attention(q, k, v)[0]
    assert torch.equal(attnbook.chunked_attention(q, k, v), expected)


def test_streaming_refuses_an_infinite_kept_score():
    from attnbook.core.chunked import StreamingAttention

    q, k, v = qkv()
    k[0, 0] = float("inf")
    with pytest.raises(ValueError, match=r"\+inf or NaN"):
        StreamingAttention(q).update(k, v)


def test_chunked_attention_refuses_a_mask_on_another_device():
    q, k, v = qkv()
    keep = torch.ones(3, 5, dtype=torch.bool).to("meta")
    with pytest.raises(ValueError, match="meta"):
        attnbook.chunked_attention(q, k, v, mask=keep)


def test_garbage_query_of_a_fully_masked_row_in_chunked_attention():
    q, k, v = qkv()
    q[1] = float("nan")
    q.requires_grad_()
    k.requires_grad_()
    keep = torch.ones(3, 5, dtype=torch.bool)
    keep[1] = False
    out = attnbook.chunked_attention(q, k, v, mask=keep)
    out.sum().backward()
    assert torch.isfinite(out).all() and torch.isfinite(k.grad).all()


# D5 (b): garbage in masked padding reaches no parameter's gradient.
def test_garbage_in_masked_memory_stays_out_of_multihead_gradients():
    g = torch.Generator().manual_seed(0)
    with attnbook._random.keep_global_rng():
        mha = attnbook.MultiHeadAttention(8, 2)
    memory = torch.randn(2, 5, 8, generator=g)
    memory[1, 3:] = float("nan")
    keep = torch.ones(2, 5, dtype=torch.bool)
    keep[1, 3:] = False
    query = torch.randn(2, 3, 8, generator=g)
    output = mha(query, memory, memory, mask=keep[:, None, None, :])[0]
    output.sum().backward()
    assert torch.isfinite(output).all()
    assert all(torch.isfinite(p.grad).all() for p in mha.parameters())


def test_garbage_padding_stays_out_of_self_attention_gradients():
    g = torch.Generator().manual_seed(0)
    with attnbook._random.keep_global_rng():
        layer = attnbook.SelfAttention(8, 4, 4)
    x = torch.randn(2, 5, 8, generator=g)
    x[1, 3:] = float("nan")
    keep = torch.ones(2, 5, dtype=torch.bool)
    keep[1, 3:] = False
    output, _ = layer(x, mask=keep[:, None, :])
    (output[0].sum() + output[1, :3].sum()).backward()  # real tokens only
    assert all(torch.isfinite(p.grad).all() for p in layer.parameters())


# D8, D9 (b), D10, D14 in the Transformer's modules.
@pytest.mark.parametrize(
    "build",
    [
        lambda: attnbook.MultiHeadAttention(10**6, 1),
        lambda: attnbook.TransformerEncoder(10**12, 8, 2, 16, 1),
        lambda: attnbook.TransformerEncoder(10, 8, 2, 16, 10**12),
        lambda: attnbook.TransformerDecoder(8, 2, 16, 10**12),
        lambda: attnbook.causal_mask(10**6),
    ],
    ids=["mha", "vocab", "encoder_layers", "decoder_layers", "causal_mask"],
)
def test_huge_transformer_parts_are_refused_before_drawing(build):
    refused_before_allocating(build)


def test_every_module_of_the_package_restores_the_rng_when_refused():
    import importlib
    import inspect
    import pkgutil

    unguarded = []
    for info in pkgutil.walk_packages(attnbook.__path__, "attnbook."):
        if ".widgets" in info.name or ".train" in info.name:
            continue
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if (
                inspect.isclass(obj)
                and issubclass(obj, torch.nn.Module)
                and obj.__module__ == module.__name__
                and "__init__" in vars(obj)
                and not hasattr(obj.__init__, "__wrapped__")
            ):
                unguarded.append(f"{info.name}.{name}")
    assert not unguarded


def test_a_refused_encoder_leaves_the_rng():
    state = torch.get_rng_state()
    with pytest.raises(ValueError):
        attnbook.TransformerEncoder(10, 8, 3, 16, 1)  # 8 not divisible by 3
    assert torch.equal(state, torch.get_rng_state())


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int16])
def test_decoder_target_ids_of_other_dtypes_are_refused(dtype):
    with attnbook._random.keep_global_rng():
        model = attnbook.EncoderDecoderTransformer(
            src_vocab_size=10,
            tgt_vocab_size=10,
            embed_dim=8,
            num_heads=2,
            ffn_hidden=16,
            num_encoder_layers=1,
            num_decoder_layers=1,
        )
    with pytest.raises(TypeError, match="int64"):
        model.embed_target(torch.tensor([[1, 2]], dtype=dtype))


def test_layer_norm_refuses_an_eps_that_rounds_to_zero():
    with pytest.raises(ValueError, match="eps"):
        attnbook.LayerNorm(8, eps=1e-50)


# D4: the book's seeded builders, from several threads at once.
@pytest.mark.parametrize(
    "build",
    ["build_date_transformer", "placement_classifier"],
)
def test_seeded_builders_are_thread_safe(build):
    if build == "build_date_transformer":
        from attnbook.tasks.date_transformer import build_date_transformer

        def make(seed):
            return build_date_transformer(seed=seed).state_dict()
    else:
        from attnbook.experiments.norm_placement import placement_classifier

        def make(seed):
            return placement_classifier("pre-LN", seed=seed).state_dict()

    same_weights_in_threads(make, range(3))


# D13, D14, D16, D17: smaller misuse, each with a clear error.
def test_rotary_positions_beyond_every_float_are_refused():
    x = torch.randn(4, 8)
    with pytest.raises(ValueError, match="finite"):
        attnbook.apply_rotary(x, 10**400)


def test_rotary_checks_the_shape_of_positions_before_their_values():
    x = torch.randn(4, 8)
    huge = torch.zeros(()).expand(10**9)  # a stride-0 view of 10**9 numbers
    with pytest.raises(ValueError, match="broadcast"):
        attnbook.apply_rotary(x, huge)


def test_angle_query_refuses_nan():
    from attnbook.widgets.soft_hard import angle_query

    with pytest.raises(ValueError, match="angle"):
        angle_query(float("nan"))


def test_mean_squared_error_refuses_empty_or_mismatched_tensors():
    from attnbook.core.kernel_regression import mean_squared_error

    with pytest.raises(ValueError, match="shape"):
        mean_squared_error(torch.empty(0), torch.empty(0))
    with pytest.raises(ValueError, match="shape"):
        mean_squared_error(torch.zeros(3), torch.zeros(4))


@pytest.mark.parametrize("name", ["soft_loss", "expected_loss", "selector"])
def test_the_selection_losses_check_their_inputs(name):
    from attnbook.experiments import hard_training as h

    items = torch.randn(2, 4, 3, dtype=torch.float64)
    target = torch.tensor([0, 3])
    weights = torch.full((2, 4), 0.25, dtype=torch.float64)

    def call(w, x, t):
        if name == "selector":
            return h.selector_loss("soft", w, x, t)
        return getattr(h, name)(w, x, t)

    call(weights, items, target)  # the valid call
    with pytest.raises(ValueError, match="target"):
        call(weights, items, torch.tensor([0, 4]))
    with pytest.raises(TypeError, match="weights|scores"):
        call(weights.long(), items, target)
    with pytest.raises(ValueError, match="items"):
        call(weights, items[0], target)
    with pytest.raises(TypeError, match="target"):
        call(weights, items, target.float())


def test_show_heatmaps_refuses_a_grid_too_large_to_draw():
    with pytest.raises(ValueError, match="too many"):
        attnbook.show_heatmaps(torch.zeros(300, 300, 2, 2))


def test_positional_view_keeps_its_table_small():
    from attnbook.widgets.positional import positional_view

    with pytest.raises(ValueError, match="numbers"):
        positional_view(dim=4096, num_positions=100_000)


# What our own probe (tests/tools/probe.py) found after the fixes above.
@pytest.mark.parametrize(
    "build",
    [
        lambda: attnbook.TransformerEncoder(10**400, 8, 2, 16, 1),
        lambda: attnbook.causal_mask(10**400),
    ],
)
def test_sizes_beyond_any_tensor_are_refused(build):
    with pytest.raises(ValueError, match="too large"):
        build()


@pytest.mark.parametrize(
    "build",
    [
        lambda: __import__("attnbook.nn.seq2seq").nn.seq2seq.Seq2Seq(
            10**12, 9
        ),
        lambda: attnbook.DecoderOnlyTransformer(10**12),
        lambda: attnbook.DecoderOnlyTransformer(10, num_layers=10**12),
        lambda: attnbook.PointerNetwork(10**6),
    ],
    ids=["seq2seq", "lm_vocab", "lm_layers", "pointer"],
)
def test_huge_models_are_refused_before_drawing(build):
    refused_before_allocating(build)


def test_a_projection_of_a_free_view_is_still_checked():
    with attnbook._random.keep_global_rng():
        mha = attnbook.MultiHeadAttention(8, 2)
    huge = torch.zeros(2, 1, 8).expand(2, 10**9, 8)
    with pytest.raises(ValueError, match="GiB"):
        mha.project(huge, huge, huge)


def test_sampling_refuses_a_temperature_that_overflows_the_logits():
    logits = torch.randn(2, 10)
    with pytest.raises(ValueError, match="temperature"):
        attnbook.next_token_distribution(logits, temperature=1e-320)


def test_masked_softmax_inplace_must_be_a_bool():
    scores = torch.randn(2, 3)
    before = scores.clone()
    with pytest.raises(ValueError, match="inplace"):
        masked_softmax(scores, inplace="yes")
    assert torch.equal(scores, before)


def test_count_baselines_need_held_out_text():
    from attnbook.tasks import text

    for baseline in (text.unigram_bits_per_char, text.bigram_bits_per_char):
        with pytest.raises(ValueError, match="held_out"):
            baseline("hello world", "")


def test_hand_questions_checks_its_hands():
    from attnbook.tasks.card_lookup import hand_questions

    colours = torch.tensor([[0, 1, 2, 3, 4, 5]])
    digits = torch.tensor([[0, 1, 2, 3, 4, 5]])
    with pytest.raises(TypeError, match="colour_card"):
        hand_questions(colours, digits, torch.randn(1, 1), torch.tensor([[0]]))
    with pytest.raises(ValueError, match="colours"):
        hand_questions(
            -colours, digits, torch.tensor([[0]]), torch.tensor([[0]])
        )


def test_train_seq2seq_checks_before_it_trains():
    from attnbook.nn.seq2seq import Seq2Seq, train_seq2seq

    with attnbook._random.keep_global_rng():
        model = Seq2Seq(13, 13, 8, 8)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    with pytest.raises(ValueError, match="log_every"):
        train_seq2seq(model, lambda g: None, 1, log_every="3")
    assert all(
        torch.equal(before[k], v) for k, v in model.state_dict().items()
    )


def test_loading_the_language_model_leaves_the_rng():
    state = torch.get_rng_state()
    attnbook.pretrained_language_model()
    assert torch.equal(state, torch.get_rng_state())

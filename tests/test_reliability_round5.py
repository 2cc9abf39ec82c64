"""Reliability, round 5 (issue 36): the probe's last core hangs, the
helpers' undocumented moves of the global RNG, silent NaNs and deep errors,
each now a clear error (or no move)."""

import time

import pytest
import torch

from attnbook import (
    DecoderOnlyTransformer,
    PointerNetwork,
    matrix_memory_limit,
    sliding_window_mask,
)


@pytest.fixture
def lm():
    torch.manual_seed(0)
    return DecoderOnlyTransformer(10, 8, 8, 2, 1, 16)


MANY_ROWS = torch.randint(0, 10, (1, 5)).expand(10**6, 5)


def _refused_fast(call, match):
    start = time.perf_counter()
    with pytest.raises(ValueError, match=match):
        call()
    assert time.perf_counter() - start < 5


def test_a_language_model_refuses_a_million_rows_before_the_work(lm):
    _refused_fast(
        lambda: lm(MANY_ROWS, mask=sliding_window_mask(5, window=2)),
        r"tokens of shape \(1000000, 5\): a forward computes about "
        r"[\d.]+ GiB of activations \(limit 4.0 GiB\)",
    )


def test_generate_refuses_a_million_rows_before_sampling(lm):
    generator = torch.Generator().manual_seed(0)
    state = generator.get_state()
    _refused_fast(
        lambda: lm.generate(MANY_ROWS, 2, top_k=3, generator=generator),
        r"tokens of shape \(1000000, 5\)",
    )
    assert torch.equal(generator.get_state(), state)


def test_the_activation_bound_leaves_ordinary_batches_alone(lm):
    tokens = torch.randint(0, 10, (64, 8))
    assert lm(tokens).shape == (64, 8, 10)
    assert matrix_memory_limit() == 4 * 2**30


def test_a_pointer_network_refuses_a_million_rows_before_decoding():
    torch.manual_seed(0)
    network = PointerNetwork(8)
    many = torch.rand(1, 5).expand(10**6, 5)
    _refused_fast(
        lambda: network.decode(many),
        r"x of shape \(1000000, 5\): a pointer network computes",
    )
    assert network.decode(torch.rand(3, 5)).shape == (3, 5)


def test_teacher_forced_training_needs_a_generator_and_leaves_the_rng():
    from attnbook.tasks.sorting import sorting_batch, teacher_forced_training

    torch.manual_seed(0)
    network = PointerNetwork(8)
    before = [p.detach().clone() for p in network.parameters()]
    state = torch.get_rng_state()
    with pytest.raises(TypeError, match="generator must be a torch.Gen"):
        teacher_forced_training(
            network, sorting_batch, None, steps=1, batch_size=2,
            lengths=(3, 4), lr=1e-3, final_lr=1e-4,
        )  # fmt: skip
    assert torch.equal(torch.get_rng_state(), state)
    for old, new in zip(before, network.parameters()):
        assert torch.equal(old, new)


@pytest.mark.parametrize(
    "change, error, match",
    [
        ({"steps": 10**12}, ValueError, "steps"),
        ({"final_lr": 0.0}, ValueError, "final_lr"),
        ({"model": torch.nn.Linear(2, 2)}, TypeError, "loss"),
        ({"draw_batch": None}, TypeError, "draw_batch"),
        ({"lengths": (3,)}, TypeError, "lengths"),
        ({"lengths": (4, 3)}, ValueError, "lengths"),
    ],
    ids=["steps", "final_lr", "model", "draw_batch", "pair", "order"],
)
def test_teacher_forced_training_refuses_before_training(change, error, match):
    # the probe's 10**12 steps trained until killed, changing the model
    from attnbook.tasks.sorting import sorting_batch, teacher_forced_training

    torch.manual_seed(0)
    network = PointerNetwork(8)
    before = [p.detach().clone() for p in network.parameters()]
    settings = dict(
        model=network, draw_batch=sorting_batch,
        generator=torch.Generator().manual_seed(0), steps=1, batch_size=2,
        lengths=(3, 4), lr=1e-3, final_lr=1e-4,
    )  # fmt: skip
    settings.update(change)
    model, draw, generator = (
        settings.pop(k) for k in ("model", "draw_batch", "generator")
    )
    with pytest.raises(error, match=match):
        teacher_forced_training(model, draw, generator, **settings)
    for old, new in zip(before, network.parameters()):
        assert torch.equal(old, new)


def test_scale_training_evaluate_and_best_rows_name_bad_arguments():
    from attnbook.experiments.scale_training import (
        ProjectedDotScore,
        best_rows,
        evaluate,
        noisy_copy_task,
    )

    data = noisy_copy_task(2, 3, 4, 5, generator=torch.Generator())
    model = ProjectedDotScore(5, True)
    accuracy, loss = evaluate(model, data)
    assert 0 <= accuracy <= 1 and loss > 0
    with pytest.raises(TypeError, match="model must be a ProjectedDotScore"):
        evaluate(torch.nn.Linear(2, 2), data)
    with pytest.raises(TypeError, match="data must be"):
        evaluate(model, data[:2])
    with pytest.raises(ValueError, match="targets"):
        evaluate(model, (data[0], data[1], data[2][:1]))
    with pytest.raises(TypeError, match="data's queries"):
        evaluate(model, ("queries", data[1], data[2]))
    with pytest.raises(TypeError, match="sweep must be"):
        best_rows({})


def test_held_out_batch_documents_its_draws_from_the_global_generator():
    from attnbook.tasks.order_classifier import held_out_batch

    assert "None: torch's global" in " ".join(held_out_batch.__doc__.split())
    generator = torch.Generator().manual_seed(0)
    state = torch.get_rng_state()
    held_out_batch(4, set(), max_len=6, generator=generator)
    assert torch.equal(torch.get_rng_state(), state)


def test_finetune_rope_names_both_sizes_of_a_model_of_another_size():
    from attnbook.nn.position_schemes import PositionSchemeTransformer
    from attnbook.tasks.long_context import finetune_rope

    torch.manual_seed(0)
    small = PositionSchemeTransformer("rope", 10, 8, 2, 1, max_len=16)
    state = torch.get_rng_state()
    with pytest.raises(
        ValueError, match=r"'embed_dim': 8.*'embed_dim': 64"
    ) as error:
        finetune_rope(small, "linear", steps=0)
    assert "'vocab_size': 10" in str(error.value)
    assert torch.equal(torch.get_rng_state(), state)


def test_lookup_loss_refuses_a_batch_with_nothing_predictable():
    from attnbook.tasks.long_context import lookup_loss

    logits, tokens = torch.randn(2, 8, 5), torch.randint(0, 5, (2, 8))
    nothing = torch.zeros(2, 8, dtype=torch.bool)
    with pytest.raises(ValueError, match="predictable marks no token"):
        lookup_loss(logits, tokens, nothing)
    some = nothing.clone()
    some[:, 4:] = True
    assert torch.isfinite(lookup_loss(logits, tokens, some))


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


@pytest.fixture
def referent_inputs():
    from attnbook.tasks.referent import encode

    sentences = [
        "the trophy did not fit in the suitcase because it was too big",
        "the red box did not fit in the tin because it was too small",
    ]
    return encode(sentences)[:2]


@pytest.mark.parametrize(
    "edit, match",
    [
        (lambda ids, it: (ids.float(), it), "ids must hold int64"),
        (lambda ids, it: (ids[0], it), "ids must have 2 dimensions"),
        (lambda ids, it: (ids * 0 - 1, it), "ids holds id -1"),
        (lambda ids, it: (ids.tolist(), it), "ids must be a torch.Tensor"),
        (lambda ids, it: (ids, it.float()), "it_index must be int64"),
        (lambda ids, it: (ids, it[None]), r"it_index must be int64 of shape"),
        (lambda ids, it: (ids, it + 100), r"it_index must be positions in"),
    ],
)
def test_the_referent_model_names_bad_sentences(referent_inputs, edit, match):
    from attnbook.tasks.referent import ReferentModel

    torch.manual_seed(0)
    model = ReferentModel(8)
    ids, it_index = edit(*referent_inputs)
    with pytest.raises((TypeError, ValueError), match=match):
        model(ids, it_index)
    row, weights = model(*referent_inputs)
    assert row.shape == referent_inputs[0].shape


def _batch_calls():
    from attnbook.tasks.convex_hull import hull_batch
    from attnbook.tasks.induction import repeated_batch
    from attnbook.tasks.long_context import lab_batch
    from attnbook.tasks.recall import recall_batch

    huge = 10**12
    return [
        ("repeated_batch", lambda g: repeated_batch(huge, 3, 8, 10, g)),
        ("repeated_batch", lambda g: repeated_batch(2, 3, huge, 10, g)),
        ("lab_batch", lambda g: lab_batch(huge, 48, g)),
        ("hull_batch", lambda g: hull_batch(huge, 6, g)),
        ("hull_batch", lambda g: hull_batch(2, huge, g)),
        ("recall_batch", lambda g: recall_batch(huge, 3, g)),
        ("recall_batch", lambda g: recall_batch(2, 3, g, num_keys=huge)),
    ]


@pytest.mark.parametrize("index", range(7))
def test_batch_makers_refuse_a_batch_beyond_the_memory_limit(index):
    name, call = _batch_calls()[index]
    generator = torch.Generator().manual_seed(0)
    state = generator.get_state()
    with pytest.raises(ValueError, match=r"the batch.* would take .* GiB"):
        call(generator)
    assert torch.equal(generator.get_state(), state), name


@pytest.mark.parametrize("bad", [None, "3", 2.5, 10**400])
def test_the_evaluation_generators_name_a_bad_size(bad):
    from attnbook.tasks import long_context, recall

    with pytest.raises(ValueError, match="length (must be|= 1)"):
        long_context.eval_generator(bad)
    with pytest.raises(ValueError, match="pairs (must be|= 1)"):
        recall.eval_generator(bad)
    with pytest.raises(ValueError, match="pairs (must be|= 1)"):
        recall.evaluation_batch(bad, sequences=2)


@pytest.mark.parametrize("model", [None, 3])
def test_the_accuracies_need_a_model(model):
    from attnbook.tasks import long_context, recall

    with pytest.raises(TypeError, match="model must be a"):
        long_context.accuracy(model, 64, batches=1, batch_size=2)
    with pytest.raises(TypeError, match="model must be a"):
        long_context.accuracy_by_length(model, (64,))
    with pytest.raises(TypeError, match="model must be a"):
        recall.recall_accuracy(model, 4, sequences=2)
    with pytest.raises(ValueError, match="PositionSchemeTransformer"):
        long_context.scale(torch.nn.Linear(2, 2), "yarn", 128)


def test_the_lab_accuracy_takes_a_function_of_the_tokens():
    # chapter 15 measures a model under an intervention through a wrapper
    from attnbook.tasks import long_context

    def constant(tokens):
        return torch.zeros(*tokens.shape, long_context.TASK["vocab_size"])

    accuracy = long_context.accuracy(constant, 64, batches=1, batch_size=2)
    assert 0.0 <= accuracy <= 1.0


def test_the_lab_accuracy_bounds_its_evaluation_tokens():
    from attnbook.tasks import long_context

    with pytest.raises(ValueError, match="the evaluation tokens of shape"):
        long_context.accuracy(torch.nn.Identity(), 64, batches=10**12)
    with pytest.raises(TypeError, match="lengths must be a sequence"):
        long_context.accuracy_by_length(torch.nn.Identity(), None)


@pytest.mark.parametrize("seed", [None, True, 2.5, "3", 10**400])
def test_induction_model_scores_names_a_bad_seed(seed):
    from attnbook.experiments.head_circuits import induction_model_scores
    from attnbook.nn.attention_only import AttentionOnlyTransformer

    torch.manual_seed(0)
    model = AttentionOnlyTransformer(10, 8, 8, 2, 1)
    with pytest.raises(ValueError, match="seed"):
        induction_model_scores(model, period=3, batch_size=2, seed=seed)


@pytest.mark.parametrize(
    "model, sources, targets, match",
    [
        (None, None, None, "model must be a Seq2Seq"),
        (torch.nn.Linear(2, 2), None, None, "model must be a Seq2Seq"),
        ("m", [], None, "sources and targets must be as many"),
        ("m", None, [], "sources and targets must be as many"),
        ("m", None, "abc", "targets must be a list of str"),
        ("m", [3], None, "sources must be a list of str"),
    ],
)
def test_exact_match_names_bad_arguments(model, sources, targets, match):
    from attnbook.experiments.luong_bahdanau import build_decoder, exact_match

    good = ["3 May 1999", "1999-5-3"]
    model = build_decoder("luong", 0) if model == "m" else model
    sources = good if sources is None else sources
    targets = ["1999-05-03"] * 2 if targets is None else targets
    with pytest.raises((TypeError, ValueError), match=match):
        exact_match(model, sources, targets)


def test_the_hull_pointer_files_are_checked_as_the_sorter_files(tmp_path):
    from attnbook.nn.hull_pointer import HullPointerNetwork
    from attnbook.tasks.convex_hull import load_hull_pointer, save_hull_pointer

    torch.manual_seed(0)
    model = HullPointerNetwork(8)
    with pytest.raises(TypeError, match="model must be a HullPointerNetwork"):
        save_hull_pointer(torch.nn.Linear(2, 2), tmp_path / "a.pt")
    with pytest.raises(TypeError, match="path must be a file path"):
        save_hull_pointer(model, "")
    with pytest.raises(TypeError, match="info must be a dict"):
        save_hull_pointer(model, tmp_path / "a.pt", info="x")
    with pytest.raises(TypeError, match="path must be a file path"):
        load_hull_pointer(None)
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="could not be read as a saved hull"):
        load_hull_pointer(junk)
    torch.save({"weights": torch.zeros(1)}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="does not hold a saved HullPointer"):
        load_hull_pointer(tmp_path / "other.pt")
    save_hull_pointer(model, tmp_path / "ok.pt", info={"n": 1})
    loaded, info = load_hull_pointer(tmp_path / "ok.pt")
    assert info == {"n": 1}
    for a, b in zip(model.parameters(), loaded.parameters()):
        assert torch.equal(a, b)


def test_evaluations_and_sequence_sets_bound_their_work():
    from attnbook.nn.attention_only import AttentionOnlyTransformer
    from attnbook.tasks.induction import evaluate
    from attnbook.tasks.order_classifier import training_sequences
    from attnbook.tasks.sorting import sorting_accuracy

    torch.manual_seed(0)
    model = AttentionOnlyTransformer(64, 64, 8, 2, 1)
    with pytest.raises(ValueError, match="the evaluation tokens of shape"):
        evaluate(model, batches=10**12, batch_size=2)
    with pytest.raises(ValueError, match="the evaluation sequences of shape"):
        sorting_accuracy(PointerNetwork(8), 5, num_sequences=10**12)
    with pytest.raises(ValueError, match="the training sequences of shape"):
        training_sequences(steps=10**12, batch_size=2, seed=0, max_len=6)


@pytest.mark.parametrize(
    "target, error, match",
    [
        (torch.zeros(2, 0, dtype=torch.long), ValueError, "L >= 1"),
        (
            torch.ones(2, 7, dtype=torch.bool),
            TypeError,
            "target must be int64",
        ),
        (torch.full((2, 7), -1), ValueError, "a vertex first"),
        (torch.full((2, 7), 6), ValueError, r"positions in \[0, 6\)"),
        (torch.zeros(3, 7, dtype=torch.long), ValueError, "target has 3 rows"),
    ],
)
def test_the_hull_loss_refuses_a_target_it_cannot_score(target, error, match):
    from attnbook.nn.hull_pointer import HullPointerNetwork

    torch.manual_seed(0)
    model = HullPointerNetwork(8)
    with pytest.raises(error, match=match):
        model.loss(torch.rand(2, 6, 2), target)


def test_the_hull_loss_is_finite_on_a_true_hull():
    from attnbook.nn.hull_pointer import HullPointerNetwork
    from attnbook.tasks.convex_hull import hull_batch

    torch.manual_seed(0)
    points, target = hull_batch(4, 6, torch.Generator().manual_seed(0))
    assert torch.isfinite(HullPointerNetwork(8).loss(points, target))


@pytest.mark.parametrize(
    "module, input_dim, hidden_dim, match",
    [
        (None, 1, 8, "module must be a torch.nn.Module"),
        ("m", 2.5, 8, "input_dim must be a positive int"),
        ("m", 1, None, "hidden_dim must be a positive int"),
        ("m", 1, 10**12, "the weights of the pointer layers"),
    ],
)
def test_add_pointer_layers_names_bad_sizes(
    module, input_dim, hidden_dim, match
):
    from attnbook.nn.pointer import add_pointer_layers

    module = torch.nn.Module() if module == "m" else module
    state = torch.get_rng_state()
    with pytest.raises((TypeError, ValueError), match=match):
        add_pointer_layers(module, input_dim, hidden_dim)
    assert torch.equal(torch.get_rng_state(), state)


@pytest.mark.parametrize(
    "tokens, match",
    [
        (None, "tokens must be a torch.Tensor"),
        (torch.tensor(3), "tokens must have 2 dimensions"),
        (torch.zeros(2, 0, dtype=torch.long), "T >= 1"),
        (torch.full((2, 4), 99), "tokens holds id 99"),
    ],
)
def test_sequence_log_probs_names_bad_tokens(tokens, match):
    from attnbook.nn.beam_search import sequence_log_probs
    from attnbook.nn.decoder import EncoderDecoderTransformer

    torch.manual_seed(0)
    model = EncoderDecoderTransformer(10, 10, 8, 2, 16, 1, 1)
    src, lens = torch.randint(3, 10, (2, 5)), torch.tensor([5, 3])
    with pytest.raises((TypeError, ValueError), match=match):
        sequence_log_probs(model, src, lens, tokens)
    assert sequence_log_probs(model, src, lens, torch.ones(2, 4).long()).shape


def test_rope_score_by_distance_refuses_no_frequency():
    from attnbook.core.long_context import rope_score_by_distance

    with pytest.raises(ValueError, match="at least one frequency"):
        rope_score_by_distance(torch.randn(0), torch.arange(5.0))
    score = rope_score_by_distance(torch.ones(2), torch.zeros(1))
    assert score.tolist() == [1.0]


def test_the_masks_helpers_check_their_tensors():
    from attnbook.core._nonfinite import positions_in_use, zero_unused

    with pytest.raises(ValueError, match="mask is on the meta device"):
        positions_in_use(torch.ones(2, 3, dtype=torch.bool, device="meta"))
    with pytest.raises(TypeError, match="mask must be a bool tensor"):
        positions_in_use(torch.ones(2, 3))
    huge = torch.ones(1, 1).expand(10**9, 3)
    with pytest.raises(ValueError, match="x, a broadcast view"):
        zero_unused(huge, torch.ones(10**9, dtype=torch.bool))


def test_the_drawing_helpers_name_bad_arguments():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from attnbook.display.diagrams import weight_line
    from attnbook.display.long_context import draw_rope_turns
    from attnbook.display.rotary import draw_rotated_pairs

    fig, ax = plt.subplots()
    try:
        with pytest.raises(ValueError, match="start must be a point"):
            weight_line(ax, [], (1.0, 1.0), 0.5)
        with pytest.raises(ValueError, match=r"weight must be in \[0, 1\]"):
            weight_line(ax, (0, 0), (1.0, 1.0), float("nan"))
        weight_line(ax, (0, 0), (1.0, 1.0), torch.tensor(0.5))
        with pytest.raises(ValueError, match="trained must be an int >= 2"):
            draw_rope_turns(8, None, 64)
        with pytest.raises(ValueError, match="vector contains NaN"):
            draw_rotated_pairs(
                torch.tensor([1.0, float("nan")]), [(0, range(3))]
            )
        with pytest.raises(TypeError, match="vector must be a floating"):
            draw_rotated_pairs(
                torch.ones(4, dtype=torch.long), [(0, range(3))]
            )
    finally:
        plt.close("all")


def test_timings_refuse_a_count_that_would_run_for_hours():
    from attnbook.experiments.complexity import median_forward_time
    from attnbook.measure.timing import (
        interleaved_medians,
        mean_call_time,
        median_call_time,
    )

    def noop():
        return None

    calls = [
        (lambda: mean_call_time(noop, 10**12), "number"),
        (lambda: median_call_time(noop, repeats=10**12), "repeats"),
        (lambda: interleaved_medians({"a": noop}, repeats=10**12), "repeats"),
        (lambda: interleaved_medians({"a": noop}, warmup=10**12), "warmup"),
        (
            lambda: median_forward_time(
                torch.nn.Identity(), torch.randn(2, 3), repeats=10**12
            ),
            "repeats",
        ),
    ]
    for call, name in calls:
        with pytest.raises(
            ValueError, match=rf"{name} = 1000000000000 is more than 1,000,000"
        ):
            call()
    assert mean_call_time(noop, 3) >= 0


def test_an_attention_only_model_refuses_a_million_rows_before_the_work():
    from attnbook.nn.attention_only import AttentionOnlyTransformer

    torch.manual_seed(0)
    model = AttentionOnlyTransformer(16, 12, 8, 2, 2)
    many = torch.randint(0, 16, (1, 6)).expand(10**6, 6)
    _refused_fast(
        lambda: model(many, return_weights=True, ablate=[(0, 1)]),
        r"tokens of shape \(1000000, 6\): a forward computes about",
    )
    logits, weights = model(many[:64], return_weights=True)
    assert weights.shape == (2, 64, 2, 6, 6)


def test_trainings_refuse_steps_that_would_run_for_years():
    from attnbook._checks import require_training
    from attnbook.experiments.luong_bahdanau import training_targets
    from attnbook.nn.seq2seq import Seq2Seq, train_seq2seq

    with pytest.raises(ValueError, match="steps = 1000000000000 is more than"):
        require_training(steps=10**12)
    require_training(steps=10**7, batch_size=2)
    with pytest.raises(ValueError, match="steps = 1000000000000 is more"):
        training_targets(0, 10**12, 2)
    torch.manual_seed(0)
    model = Seq2Seq(10, 10, 8, 8)
    before = [p.detach().clone() for p in model.parameters()]
    with pytest.raises(ValueError, match="steps = 1000000000000 is more"):
        train_seq2seq(model, lambda: None, steps=10**12, lr=1e-3, seed=0)
    for old, new in zip(before, model.parameters()):
        assert torch.equal(old, new)


def test_more_steps_or_layers_than_the_book_could_run_are_refused_at_once():
    # the probe's 10**12 steps (card lookup, RoPE fine-tuning) and 10**12
    # layers (the position-scheme model) ran until killed
    from attnbook.nn.position_schemes import PositionSchemeTransformer
    from attnbook.tasks.card_lookup import train_card_lookup
    from attnbook.tasks.long_context import finetune_rope

    with pytest.raises(ValueError, match="steps"):
        train_card_lookup(steps=10**12)
    model = PositionSchemeTransformer("rope", 16, 8, 2, 1, 32)
    with pytest.raises(ValueError, match="steps"):
        finetune_rope(model, "pi", steps=10**12)
    state = torch.get_rng_state()
    with pytest.raises(
        ValueError, match="weights of PositionSchemeTransformer"
    ):
        PositionSchemeTransformer("rope", 16, 8, 2, 10**12, 32)
    assert torch.equal(state, torch.get_rng_state())

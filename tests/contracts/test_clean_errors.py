"""Bad sizes, probabilities and arguments get the book's clear errors,
across the package, before any work is done."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import attnbook
from attnbook import (
    AdditiveScore,
    BilinearScore,
    LayerNorm,
    MultiHeadAttention,
    PointerNetwork,
    PositionWiseFFN,
    SelfAttention,
    TransformerEncoder,
    TransformerEncoderBlock,
    attention,
    chunked_attention,
    lengths_to_mask,
    merge_heads,
    scaled_dot_score,
    split_heads,
)
from attnbook.core.chunked import StreamingAttention
from attnbook.experiments import norm_placement
from attnbook.measure import timing
from attnbook.nn import seq2seq
from attnbook.tasks import card_lookup as lookup

from _refusals import refused
from _tensors import seeded_randn

BAD_SIZES = [0, -1, True, False, 2.5, None, "4"]


@pytest.mark.parametrize("value", BAD_SIZES)
@pytest.mark.parametrize(
    "build",
    [
        lambda a: AdditiveScore(a, 4, 8),
        lambda a: AdditiveScore(4, a, 8),
        lambda a: AdditiveScore(4, 4, a),
        lambda a: BilinearScore(a, 4),
        lambda a: BilinearScore(4, a),
        lambda a: MultiHeadAttention(a, 2),
        lambda a: MultiHeadAttention(8, a),
        lambda a: SelfAttention(a),
        lambda a: LayerNorm(a),
        lambda a: PositionWiseFFN(a, 8),
        lambda a: PositionWiseFFN(8, a),
        lambda a: TransformerEncoderBlock(8, 2, a),
        lambda a: TransformerEncoder(a, 8, 2, 8, 1),
        lambda a: PointerNetwork(a),
        lambda a: split_heads(seeded_randn(2, 3, 8), a),
        lambda a: attnbook.PositionalEncoding(a),
        lambda a: attnbook.LearnedPositionalEmbedding(4, a),
    ],
    ids=lambda f: "",
)
def test_constructors_refuse_bad_sizes(build, value):
    with pytest.raises((ValueError, TypeError)):
        build(value)


@pytest.mark.parametrize(
    "dropout", [-0.1, 1.0, 2.0, float("nan"), float("inf"), "0.1", None, True]
)
@pytest.mark.parametrize(
    "build",
    [
        lambda p: attnbook.PositionalEncoding(4, dropout=p),
        lambda p: PositionWiseFFN(4, 8, dropout=p),
        lambda p: TransformerEncoderBlock(4, 2, 8, dropout=p),
        lambda p: TransformerEncoder(5, 4, 2, 8, 1, dropout=p),
    ],
    ids=[
        "PositionalEncoding",
        "PositionWiseFFN",
        "TransformerEncoderBlock",
        "TransformerEncoder",
    ],
)
def test_dropout_must_be_a_probability(build, dropout):
    with pytest.raises(
        ValueError, match=r"dropout must be a number in \[0, 1\)"
    ):
        build(dropout)


@pytest.mark.parametrize(
    "call, message",
    [
        (
            lambda: split_heads(seeded_randn(2, 3, 8), 3),
            "not divisible by num_heads = 3",
        ),
        (lambda: split_heads(seeded_randn(8), 2), "x needs shape"),
        (lambda: merge_heads(seeded_randn(3, 4)), "x needs shape"),
        (lambda: lengths_to_mask(None, 5), "valid_lens must be"),
        (
            lambda: attnbook.padding_mask(torch.tensor(3), 5),
            "one length per sequence",
        ),
        (
            lambda: attention(
                seeded_randn(2, 3, 4),
                seeded_randn(3, 5, 4),
                seeded_randn(3, 5, 2),
            ),
            "do not broadcast",
        ),
        (
            lambda: scaled_dot_score(seeded_randn(3, 0), seeded_randn(5, 0)),
            "feature size d >= 1",
        ),
        (
            lambda: chunked_attention(
                seeded_randn(3, 0), seeded_randn(5, 0), seeded_randn(5, 2)
            ),
            "feature size d >= 1",
        ),
        (
            lambda: attention(
                seeded_randn(3, 4),
                seeded_randn(5, 4),
                seeded_randn(5, 2),
                score=lambda q, k: torch.zeros(3, 4),
            ),
            "score returned shape",
        ),
        (
            lambda: (
                StreamingAttention(seeded_randn(3, 4))
                .update(seeded_randn(5, 4), seeded_randn(5, 2))
                .update(seeded_randn(5, 4), seeded_randn(5, 3))
            ),
            "earlier blocks had 2",
        ),
    ],
)
def test_sizes_get_clear_errors(call, message):
    with pytest.raises((ValueError, TypeError), match=message):
        call()


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(["float", "bool", "too big", "negative", "None", "1-d"]),
    st.sampled_from(
        ["seq2seq src", "seq2seq tgt_in", "card_colours", "ask_digit"]
    ),
)
def test_every_embedding_input_names_bad_ids(kind, where):
    src = torch.tensor([[3, 4, 5, 0], [6, 7, 0, 0]])
    bad_of = {
        "float": lambda t: t.float(),
        "bool": lambda t: t.bool(),
        "too big": lambda t: t + 50,
        "negative": lambda t: t - 50,
        "None": lambda t: None,
        "1-d": lambda t: t[0],
    }[kind]
    if where.startswith("seq2seq"):
        torch.manual_seed(0)
        model = seq2seq.Seq2Seq(10, 10, 8, 8)
        tgt = torch.tensor([[1, 3, 4], [1, 5, 6]])
        args = [src, torch.tensor([3, 2]), tgt]
        position = 0 if where == "seq2seq src" else 2
        args[position] = bad_of(args[position])
        call = lambda: model(*args)  # noqa: E731
    else:
        torch.manual_seed(0)
        model = lookup.CardLookup(2)
        batch = lookup.lookup_batch(2, 1, torch.Generator().manual_seed(0))
        args = [
            batch["card_colours"],
            batch["card_digits"],
            batch["ask_colour"],
            batch["ask_digit"],
        ]
        position = 0 if where == "card_colours" else 3
        args[position] = bad_of(args[position])
        call = lambda: model(*args)  # noqa: E731
    with pytest.raises((TypeError, ValueError)):
        call()


def test_labels_measure_and_diagram_arguments():
    from attnbook.display.diagrams import draw_bahdanau_step

    with pytest.raises(ValueError):
        lookup.card_label(99, 1)
    with pytest.raises(ValueError):
        lookup.question_label(1, True)
    with pytest.raises(ValueError):
        timing.mean_call_time(lambda: None, 0)
    with pytest.raises(ValueError):
        timing.calls_per_sample(lambda: None, float("inf"))
    for weights in [(float("nan"), 1.0), (True, False), (0.01,) * 100]:
        with pytest.raises(ValueError):
            draw_bahdanau_step(weights)
    with pytest.raises(ValueError, match="key"):
        norm_placement.summarize(norm_placement.load_comparison(), key="nope")


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

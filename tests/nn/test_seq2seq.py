"""The RNN encoder-decoders, the shipped date translator and the chapter 5 explorer."""

import shutil
from importlib import resources

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import attnbook
from attnbook import _random
from attnbook.measure.parameters import count_parameters
from attnbook.nn import seq2seq
from attnbook.nn.seq2seq import Seq2Seq
from attnbook.tasks import copying, date_translator
from attnbook.tasks.copying import copy_batch
from attnbook.tasks.date_translator import pretrained_date_translator
from attnbook.tasks.dates import SOURCE_VOCAB, random_date_pairs

from _refusals import refused


@pytest.fixture(scope="module")
def translator():
    return pretrained_date_translator()


def tiny_model(attention=True):
    torch.manual_seed(0)
    return Seq2Seq(
        13, 13, embed_dim=4, hidden_dim=3, attention=attention, attn_dim=5
    ).eval()


def test_attention_weights_equal_the_direct_formula():
    """alpha_{tj} = softmax_j(v^T tanh(W_q s_{t-1} + W_k e_j)) over real tokens; c_t = sum_j alpha_{tj} e_j."""
    model = tiny_model()
    src, lengths, tgt_in, _ = copy_batch(
        2, torch.tensor([5, 3]), torch.Generator().manual_seed(1)
    )
    with torch.no_grad():
        logits, weights = model(src, lengths, tgt_in)
        states, summary, _ = model.encode(src, lengths)
        s = torch.tanh(model.init_state(summary))  # s_0
        Wq, Wk, v = (
            model.score.query_proj.weight,
            model.score.key_proj.weight,
            model.score.v.weight[0],
        )
        for t in range(tgt_in.shape[1]):
            for b in range(2):
                n = int(lengths[b])
                scores = torch.stack(
                    [
                        v @ torch.tanh(Wq @ s[b] + Wk @ states[b, j])
                        for j in range(n)
                    ]
                )
                alpha = torch.exp(scores) / torch.exp(scores).sum()
                torch.testing.assert_close(weights[b, t, :n], alpha)
                assert (weights[b, t, n:] == 0).all()
            c = torch.einsum("bn,bnd->bd", weights[:, t], states)
            y = model.tgt_embed(tgt_in[:, t])
            s_next = model.cell(torch.cat([y, c], -1), s)
            torch.testing.assert_close(
                logits[:, t], model.out(torch.cat([s_next, c, y], -1))
            )
            s = s_next


def test_encoder_states_ignore_padding_and_summary_is_final_states():
    model = tiny_model()
    src, lengths, _, _ = copy_batch(1, 4, torch.Generator().manual_seed(2))
    padded = torch.cat([src, torch.zeros(1, 3, dtype=torch.long)], 1)
    with torch.no_grad():
        e1, c1, keep1 = model.encode(src, lengths)
        e2, c2, keep2 = model.encode(padded, lengths)
        torch.testing.assert_close(e2[:, :4], e1)
        assert (e2[:, 4:] == 0).all() and keep2.tolist() == [
            [True] * 4 + [False] * 3
        ]
        torch.testing.assert_close(c2, c1)
        H = 3  # forward final = last real forward state, backward final = first backward state
        torch.testing.assert_close(c1[0, :H], e1[0, -1, :H])
        torch.testing.assert_close(c1[0, H:], e1[0, 0, H:])


def test_plain_model_reads_one_fixed_vector():
    model = tiny_model(attention=False)
    src, lengths, tgt_in, _ = copy_batch(
        2, 4, torch.Generator().manual_seed(3)
    )
    with torch.no_grad():
        _, weights = model(src, lengths, tgt_in)
        states, summary, keep = model.encode(src, lengths)
        c, alpha = model.context(torch.zeros(2, 3), states, summary, keep)
    assert weights is None and alpha is None and torch.equal(c, summary)


def test_copy_batch():
    src, lengths, tgt_in, tgt_out = copy_batch(
        3, torch.tensor([2, 4, 3]), torch.Generator().manual_seed(0)
    )
    assert src.shape == (3, 4) and tgt_in.shape == tgt_out.shape == (3, 5)
    assert (src[0, 2:] == 0).all() and ((src[1] >= 3) & (src[1] <= 12)).all()
    assert torch.equal(
        tgt_out[1], torch.cat([src[1], torch.tensor([seq2seq.EOS])])
    )
    assert (
        tgt_out[0].tolist()[2:] == [seq2seq.EOS, 0, 0]
        and (tgt_in[:, 0] == seq2seq.BOS).all()
    )


def test_errors():
    model = tiny_model()
    with pytest.raises(ValueError, match="lengths"):
        model.encode(torch.ones(2, 3, dtype=torch.long), torch.tensor([3, 0]))
    with pytest.raises(ValueError, match=r"\(B, n\)"):
        model.encode(torch.ones(3, dtype=torch.long), torch.tensor([3]))
    with pytest.raises(ValueError, match="max_steps"):
        model.greedy_decode(
            torch.ones(1, 3, dtype=torch.long), torch.tensor([3]), 0
        )


def test_shipped_translator_accuracy(translator):
    sources, targets = random_date_pairs(
        1000, torch.Generator().manual_seed(777)
    )
    outputs = translator.translate(sources)
    accuracy = sum(o == t for o, t in zip(outputs, targets)) / len(targets)
    assert accuracy >= 0.995, [
        (s, t, o) for s, t, o in zip(sources, targets, outputs) if o != t
    ][:10]


def test_translate_weights_shapes_and_values(translator):
    texts = ["Monday, May 3, 1999", "3 may 1999", "hello"]
    outputs, weights = translator.translate(texts, return_weights=True)
    assert outputs[:2] == ["1999-05-03", "1999-05-03"]
    for text, out, w in zip(texts, outputs, weights):
        assert w.shape == (len(out), len(text))
        torch.testing.assert_close(w.sum(1), torch.ones(len(out)))
        assert (w >= 0).all()
    # the batched weights: padding columns get exactly zero weight
    src, lengths = SOURCE_VOCAB.encode(texts)
    _, batched = translator.model.greedy_decode(src, lengths, 11)
    assert (batched[1, :, 10:] == 0).all() and (batched[2, :, 5:] == 0).all()
    torch.testing.assert_close(batched[0, :10], weights[0])
    # translating alone or in a batch gives the same weights
    _, alone = translator.translate(["3 may 1999"], return_weights=True)
    torch.testing.assert_close(alone[0], weights[1])


def test_translate_errors_and_odd_input(translator):
    with pytest.raises(
        ValueError, match=r"'3 Mai 1999€' has the character '€' at position 10"
    ):
        translator.translate(["3 Mai 1999€"])
    with pytest.raises(ValueError, match="at most 32"):
        translator.translate(["Wednesday, September 30th, in the year 1999"])
    with pytest.raises(ValueError, match="empty"):
        translator.translate([""])
    with pytest.raises(TypeError, match="list of strings"):
        translator.translate("3 May 1999")
    (odd,) = translator.translate(["no date here"])
    assert isinstance(odd, str) and len(odd) <= 11


def test_loader_refuses_a_changed_file_and_leaves_the_rng_alone(
    tmp_path, monkeypatch
):
    torch.manual_seed(123)
    before = torch.get_rng_state()
    pretrained_date_translator()
    assert torch.equal(torch.get_rng_state(), before)
    # a copy of the package's data folder with one byte flipped is refused
    data = resources.files("attnbook") / "data"
    copy = tmp_path / "attnbook" / "data"
    shutil.copytree(str(data), copy)
    blob = bytearray((copy / date_translator.TRANSLATOR_FILE).read_bytes())
    blob[len(blob) // 2] ^= 0x01
    (copy / date_translator.TRANSLATOR_FILE).write_bytes(bytes(blob))
    import attnbook._weights as weights

    monkeypatch.setattr(
        weights.resources, "files", lambda package: tmp_path / "attnbook"
    )
    with pytest.raises(ValueError, match="SHA-256"):
        pretrained_date_translator()


def test_the_two_bottleneck_models_have_about_the_same_size():
    attention = Seq2Seq(13, 13, 16, 64, attention=True, attn_dim=64)
    plain = Seq2Seq(13, 13, 16, 69, attention=False)
    assert (
        abs(count_parameters(attention) - count_parameters(plain))
        / count_parameters(attention)
        < 0.01
    )


def test_explorer_view(translator):
    from attnbook.widgets.seq2seq import plot_seq2seq, seq2seq_view

    view = seq2seq_view("Monday, May 3, 1999", step=1, translator=translator)
    assert (
        view["output"] == "1999-05-03"
        and view["step"] == 1
        and view["char"] == "1"
    )
    assert view["weights"].shape == (10, 19) and view["row"].shape == (19,)
    torch.testing.assert_close(view["row"].sum(), torch.tensor(1.0))
    j, char = view["reads"]
    assert 1 <= j <= 19 and char == "Monday, May 3, 1999"[j - 1]
    assert (
        seq2seq_view("3 May 1999", step=99, translator=translator)["step"]
        == 10
    )  # clamped
    with pytest.raises(ValueError, match="position"):
        seq2seq_view("3 Mai 1999€", translator=translator)
    fig = plot_seq2seq(view)
    bars_ax, map_ax = fig.axes
    assert len(bars_ax.patches) == 32 and len(map_ax.texts) == 32 + 11
    assert [t.get_text() for t in map_ax.texts[:3]] == ["M", "o", "n"]
    assert map_ax.texts[32].get_text() == "1: 1"


def test_shipped_bottleneck_models():
    models = copying.pretrained_bottleneck_models()
    assert (
        count_parameters(models["attention"]) == 95_549
        and count_parameters(models["plain"]) == 95_512
    )
    assert (
        models["attention"].uses_attention
        and not models["plain"].uses_attention
    )
    accuracy = copying.copy_accuracies(
        models, [6, 20], num_sequences=100, seed=31_000
    )
    assert (
        accuracy["attention"][0] >= 0.95 and accuracy["attention"][1] >= 0.95
    )
    assert (
        accuracy["plain"][0] >= 0.95 and accuracy["plain"][1] <= 0.1
    )  # the bottleneck


@settings(max_examples=25, deadline=None)
@given(
    lengths=st.lists(st.integers(1, 9), min_size=1, max_size=4),
    seed=st.integers(0, 2**16),
)
def test_weights_are_distributions_over_real_positions(lengths, seed):
    model = tiny_model()
    src, src_lengths, tgt_in, _ = copy_batch(
        len(lengths),
        torch.tensor(lengths),
        torch.Generator().manual_seed(seed),
    )
    with torch.no_grad():
        _, weights = model(src, src_lengths, tgt_in)
    keep = torch.arange(src.shape[1]) < src_lengths[:, None]
    torch.testing.assert_close(weights.sum(-1), torch.ones(weights.shape[:2]))
    assert (
        weights.masked_select(~keep[:, None, :].expand_as(weights)) == 0
    ).all()
    assert (weights >= 0).all()


def test_shipped_weight_files_are_small_and_match_their_pinned_digests():
    from attnbook._weights import sha256_of

    data = resources.files("attnbook") / "data"
    for filename, pinned in (
        (date_translator.TRANSLATOR_FILE, date_translator.TRANSLATOR_SHA256),
        (copying.BOTTLENECK_FILE, copying.BOTTLENECK_SHA256),
    ):
        blob = (data / filename).read_bytes()
        assert len(blob) <= 1_000_000, (filename, len(blob))
        assert sha256_of(blob) == pinned


def test_every_form_and_case_at_the_range_limits_and_leap_days(translator):
    import datetime

    from attnbook.tasks.dates import CASES, FORMS, format_date

    generator = torch.Generator().manual_seed(5)
    dates = [
        datetime.date(1900, 1, 1),
        datetime.date(2099, 12, 31),
        datetime.date(2000, 2, 29),
        datetime.date(1904, 2, 29),
        datetime.date(2096, 2, 29),
        datetime.date(1999, 9, 30),
    ]
    sources, targets = [], []
    for date in dates:
        for form in FORMS:
            for case in CASES:
                for short in (False, True):
                    sources.append(
                        format_date(
                            date,
                            form,
                            short_month=short,
                            case=case,
                            generator=generator,
                        )
                    )
                    targets.append(date.isoformat())
    outputs = translator.translate(sources)
    wrong = [(s, t, o) for s, t, o in zip(sources, targets, outputs) if o != t]
    assert not wrong, wrong[:10]


def test_bahdanau_step_diagram_draws_one_weighted_line_per_input():
    import matplotlib

    matplotlib.use("Agg")
    from attnbook.display.diagrams import draw_bahdanau_step

    fig = draw_bahdanau_step(weights=(0.1, 0.6, 0.3))
    (ax,) = fig.axes
    texts = [t.get_text() for t in ax.texts]
    for label in (
        "$x_1$",
        "$x_3$",
        "$\\mathbf{e}_2$",
        "$\\alpha_{t3}$",
        "$\\mathbf{s}_{t-1}$",
        "$\\mathbf{s}_t$",
        "$y_{t-1}$",
    ):
        assert label in texts
    assert "$x_4$" not in texts
    red = [line for line in ax.lines if line.get_color() == "tab:red"]
    assert [round(line.get_linewidth(), 2) for line in red] == [1.1, 4.1, 2.3]
    with pytest.raises(ValueError, match="sum to 1"):
        draw_bahdanau_step(weights=(0.5, 0.6))


@pytest.mark.parametrize(
    "lengths",
    [
        [0, 2],
        [5, 2],
        [3],
        [3.0, 2.0],
        [float("nan"), 2.0],
        [True, True],
        None,
        [[3, 2]],
    ],
)
def test_seq2seq_lengths_are_checked(lengths):
    torch.manual_seed(0)
    model = seq2seq.Seq2Seq(10, 10, 8, 8)
    src = torch.tensor([[3, 4, 5, 0], [6, 7, 0, 0]])
    with pytest.raises((TypeError, ValueError), match="lengths"):
        model.greedy_decode(
            src, lengths if lengths is None else torch.tensor(lengths), 4
        )


def test_seq2seq_context_checks_dtype_and_sizes():
    """context is chapter 5's printed code: the additive score it calls checks its inputs."""
    torch.manual_seed(0)
    model = seq2seq.Seq2Seq(10, 10, 8, 8)
    keep = torch.tensor([[True] * 4, [True, True, False, False]])
    with pytest.raises(TypeError, match="dtype"):
        model.context(
            torch.randn(2, 8).half(),
            torch.randn(2, 4, 16),
            torch.randn(2, 16),
            keep,
        )
    with pytest.raises(ValueError, match="feature size"):
        model.context(
            torch.randn(2, 7), torch.randn(2, 4, 16), torch.randn(2, 16), keep
        )


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


def test_the_checks_are_first_line_calls_not_hooks():
    # forward and step check their own inputs: called directly (not only
    # through model(...)) they refuse bad targets and token ids before any
    # work, and no forward pre-hook is left on the model or its embedding.
    model = tiny_model()
    assert not model._forward_pre_hooks
    assert not model.tgt_embed._forward_pre_hooks
    src, lengths = torch.tensor([[3, 4, 5]]), torch.tensor([3])
    with pytest.raises(ValueError, match="tgt_in"):
        model.forward(src, lengths, torch.tensor([[1, 99]]))
    with pytest.raises(ValueError, match="at least one step"):
        model.forward(src, lengths, torch.zeros(1, 0, dtype=torch.long))
    states, summary, keep = model.encode(src, lengths)
    state = torch.tanh(model.init_state(summary))
    with pytest.raises(ValueError, match="previous target tokens"):
        model.step(torch.tensor([13]), state, states, summary, keep)
    with pytest.raises(TypeError, match="prev_tokens"):
        model.step(None, state, states, summary, keep)

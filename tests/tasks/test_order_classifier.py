"""The "A before B?" task, the [CLS] classifier and the chapter-8 explorer's view."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from attnbook.tasks.order_classifier import (
    TOKEN_ID,
    VOCAB,
    CLSClassifier,
    accuracy,
    encode,
    order_batch,
    train_order_classifier,
)
from attnbook.widgets.transformer import (  # noqa: E402
    cls_attention_explorer,
    cls_attention_view,
    plot_cls_attention,
    update_cls_attention_figure,
)


def _model(seed=0):
    torch.manual_seed(seed)
    return CLSClassifier(max_len=24).eval()


def test_order_batch_structure_and_labels():
    tokens, lens, labels = order_batch(
        500, max_len=12, generator=torch.Generator().manual_seed(0)
    )
    assert tokens.shape == (500, 12) and lens.shape == labels.shape == (500,)
    assert ((lens >= 3) & (lens <= 12)).all()
    for row, n, label in zip(tokens.tolist(), lens.tolist(), labels.tolist()):
        assert row[0] == TOKEN_ID["[CLS]"]
        assert all(t == TOKEN_ID["[PAD]"] for t in row[n:])
        body = row[1:n]
        assert TOKEN_ID["[PAD]"] not in body and TOKEN_ID["[CLS]"] not in body
        assert (
            body.count(TOKEN_ID["A"]) == 1 and body.count(TOKEN_ID["B"]) == 1
        )
        assert label == int(
            body.index(TOKEN_ID["A"]) < body.index(TOKEN_ID["B"])
        )
    assert 0.4 < labels.float().mean().item() < 0.6  # balanced classes


def test_order_batch_is_seeded_and_checks_lengths():
    a = order_batch(8, generator=torch.Generator().manual_seed(3))
    b = order_batch(8, generator=torch.Generator().manual_seed(3))
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    with pytest.raises(ValueError, match="min_len=2, max_len=10"):
        order_batch(4, max_len=10, min_len=2)


def test_encode():
    assert encode("c A dB").tolist() == [
        TOKEN_ID[t] for t in ["[CLS]", "c", "A", "d", "B"]
    ]
    with pytest.raises(ValueError, match=r"unknown tokens \['x', 'z'\]"):
        encode("cxAzB")
    with pytest.raises(
        ValueError, match="5 tokens plus \\[CLS\\] exceed max_len 5"
    ):
        encode("ccccc", max_len=5)


def test_classifier_reads_the_cls_hidden_state():
    model = _model()
    tokens, lens, _ = order_batch(
        4, generator=torch.Generator().manual_seed(1)
    )
    logits, weights = model(tokens, lens, return_weights=True)
    hidden = model.encoder(tokens, lens)
    torch.testing.assert_close(logits, model.head(hidden[:, 0]))
    assert weights.shape == (2, 4, 4, 24, 24)


def test_accuracy_counts_argmax_hits():
    model = _model()
    tokens, lens, _ = order_batch(
        16, generator=torch.Generator().manual_seed(2)
    )
    predicted = model(tokens, lens).argmax(-1)
    assert accuracy(model, tokens, lens, predicted) == 1.0
    assert accuracy(model, tokens, lens, 1 - predicted) == 0.0


def test_accuracy_over_many_chunks_counts_every_sequence_once():
    # accuracy reads 500 sequences at a time: 1,234 sequences (three
    # chunks, the last partial) must count as one pass over all of them
    model = _model().double()
    tokens, lens, labels = order_batch(
        1234, generator=torch.Generator().manual_seed(3)
    )
    with torch.no_grad():
        hits = (model(tokens, lens).argmax(-1) == labels).sum().item()
    assert accuracy(model, tokens, lens, labels) == pytest.approx(
        hits / 1234, abs=1e-7
    )
    empty = tokens[:0], lens[:0], labels[:0]
    with torch.no_grad():
        whole = model(*empty[:2]).argmax(-1).float().mean().item()
    assert repr(accuracy(model, *empty)) == repr(whole)  # as before: no error


def test_training_is_seeded_and_lowers_the_loss():
    model_a, history_a = train_order_classifier(
        steps=40, batch_size=32, progress=False
    )
    model_b, history_b = train_order_classifier(
        steps=40, batch_size=32, progress=False
    )
    assert history_a["loss"] == history_b["loss"]
    assert sum(history_a["loss"][-10:]) < sum(history_a["loss"][:10])
    assert not model_a.training


def test_cls_attention_view_returns_the_models_weights():
    model = _model(1)
    view = cls_attention_view(model, "cd A e B", layer=1, head=3)
    ids = encode("cdAeB")
    logits, weights = model(ids[None], return_weights=True)
    torch.testing.assert_close(view["weights"], weights[1, 0, 3])
    torch.testing.assert_close(view["cls_row"], weights[1, 0, 3, 0])
    assert view["tokens"] == ["[CLS]", "c", "d", "A", "e", "B"]
    assert view["prob_before"] == pytest.approx(
        logits.softmax(-1)[0, 1].item()
    )
    assert view["answer"] is True
    torch.testing.assert_close(view["weights"].sum(-1), torch.ones(6))


def test_cls_attention_view_answer_and_errors():
    model = _model()
    assert cls_attention_view(model, "BcA")["answer"] is False
    assert cls_attention_view(model, "AcA")["answer"] is None
    with pytest.raises(ValueError, match=r"layer 2 is outside \[0, 2\)"):
        cls_attention_view(model, "AB", layer=2)
    with pytest.raises(ValueError, match=r"head -1 is outside \[0, 4\)"):
        cls_attention_view(model, "AB", head=-1)
    with pytest.raises(ValueError, match="unknown tokens"):
        cls_attention_view(model, "A?B")


def test_plot_cls_attention_draws_one_heat_map():
    fig = plot_cls_attention(cls_attention_view(_model(), "cAdB"))
    assert len(fig.axes) == 1
    assert fig.axes[0].images[0].get_array().shape == (5, 5)
    assert "P(A before B)" in fig.axes[0].get_title()
    plt.close(fig)


def test_update_changes_the_map_and_title_and_relabels_only_for_new_tokens():
    model = _model()
    fig = plot_cls_attention(
        cls_attention_view(model, "cAdB", layer=0, head=0)
    )
    (ax,) = fig.axes
    first = update_cls_attention_figure(
        fig, cls_attention_view(model, "cAdB", layer=0, head=0)
    )
    assert first == [ax.images[0], ax.title]
    view = cls_attention_view(
        model, "c A d B", layer=1, head=2
    )  # the same tokens, spaced
    assert (
        update_cls_attention_figure(fig, view) == first
    )  # the same artists: only they are redrawn
    torch.testing.assert_close(
        torch.as_tensor(ax.images[0].get_array()), view["weights"]
    )
    assert ax.get_title().startswith("layer 1, head 2: P(A before B) = ")
    longer = cls_attention_view(model, "BcdeA", layer=1, head=2)
    changed = update_cls_attention_figure(fig, longer)
    assert changed[0] is not first[0] and changed == [
        ax.images[0],
        ax.title,
    ]  # a new image: all is drawn again
    assert ax.images[0].get_array().shape == (6, 6) and ax.get_xlim() == (
        -0.5,
        5.5,
    )
    assert [t.get_text() for t in ax.texts] == longer[
        "tokens"
    ] * 2  # column labels, then row labels
    assert ax.get_title().endswith("(true answer: no)")
    plt.close(fig)


def test_explorer_shows_the_figure_of_the_current_controls():
    from _pixels import differing_pixels, drawn_in_full

    model = _model()
    box = cls_attention_explorer(model, text="cdAefgBh", layer=0, head=1)
    text, layer, head = box.children[0].children
    for tokens, at_layer, at_head in (
        ("cdAefgBh", 1, 3),
        ("AcB", 1, 3),
        ("AcB", 0, 2),
    ):
        text.value, layer.value, head.value = tokens, at_layer, at_head
        expected = drawn_in_full(
            plot_cls_attention,
            cls_attention_view(model, tokens, at_layer, at_head),
        )
        other = drawn_in_full(
            plot_cls_attention,
            cls_attention_view(model, tokens, at_layer, (at_head + 1) % 4),
        )
        # The same pixels as a full draw of a fresh figure, and a test that could fail.
        assert (
            differing_pixels(box.children[1].outputs[0], expected)
            == 0
            < differing_pixels(other, expected)
        )


def test_vocabulary():
    assert VOCAB[:4] == ("[PAD]", "[CLS]", "A", "B")
    assert len(set(VOCAB)) == len(VOCAB)


def test_held_out_batch_is_disjoint_from_the_training_stream():
    from attnbook.tasks.order_classifier import (
        TRAINING_RECIPE,
        held_out_batch,
        training_sequences,
    )

    recipe = TRAINING_RECIPE
    seen = training_sequences(
        recipe["steps"], recipe["batch_size"], recipe["seed"]
    )
    # rebuild the stream the way train_order_classifier draws it
    generator = torch.Generator().manual_seed(recipe["seed"] + 1)
    stream = set()
    for _ in range(recipe["steps"]):
        tokens, lens, _ = order_batch(
            recipe["batch_size"], generator=generator
        )
        stream.update(
            tuple(row[:n]) for row, n in zip(tokens.tolist(), lens.tolist())
        )
    assert seen == stream
    tokens, lens, labels = held_out_batch(
        2000, seen, generator=torch.Generator().manual_seed(123)
    )
    assert tokens.shape == (2000, 24) and lens.shape == labels.shape == (2000,)
    held = [tuple(row[:n]) for row, n in zip(tokens.tolist(), lens.tolist())]
    assert not set(held) & stream  # disjoint from training
    assert len(set(held)) == 2000  # and no sequence twice
    a_first = [
        row.index(TOKEN_ID["A"]) < row.index(TOKEN_ID["B"]) for row in held
    ]
    assert labels.tolist() == [int(a) for a in a_first]
    # the plain draw of the same seed does overlap: the test can fail
    plain = order_batch(2000, generator=torch.Generator().manual_seed(123))
    plain_rows = zip(plain[0].tolist(), plain[1].tolist())
    assert any(tuple(row[:n]) in stream for row, n in plain_rows)
    with pytest.raises(TypeError, match="exclude must be a set"):
        held_out_batch(4, list(seen))


def test_without_heads_removes_only_the_chosen_heads():
    from attnbook.tasks.order_classifier import without_heads

    model = _model()
    tokens, lens, _ = order_batch(
        16, generator=torch.Generator().manual_seed(1)
    )
    before = [p.clone() for p in model.parameters()]
    none_removed = without_heads(model, [])
    with torch.no_grad():
        assert torch.equal(none_removed(tokens, lens), model(tokens, lens))
        ablated = without_heads(model, [(1, 2)])
        assert not torch.allclose(ablated(tokens, lens), model(tokens, lens))
    assert all(torch.equal(p, q) for p, q in zip(before, model.parameters()))
    weight = ablated.encoder.blocks[1].self_attn.out_proj.weight
    assert (weight[:, 16:24] == 0).all() and (weight[:, :16] != 0).all()
    # a removed head's weights no longer matter
    with torch.no_grad():
        ablated.encoder.blocks[1].self_attn.in_proj_weight[16:24] += 1.0
        changed = ablated(tokens, lens)
        again = without_heads(model, [(1, 2)])(tokens, lens)
    assert torch.allclose(changed, again)
    with pytest.raises(ValueError, match=r"no head \(2, 0\)"):
        without_heads(model, [(2, 0)])
    with pytest.raises(TypeError, match="CLSClassifier"):
        without_heads(torch.nn.Linear(2, 2), [])
    with pytest.raises(TypeError, match="pairs of ints"):
        without_heads(model, [1])


def test_held_out_batch_documents_its_draws_from_the_global_generator():
    from attnbook.tasks.order_classifier import held_out_batch

    assert "None: torch's global" in " ".join(held_out_batch.__doc__.split())
    generator = torch.Generator().manual_seed(0)
    state = torch.get_rng_state()
    held_out_batch(4, set(), max_len=6, generator=generator)
    assert torch.equal(torch.get_rng_state(), state)


def test_order_classifier_helpers_refuse_bad_input_by_name():
    """Probe findings: 10**12 steps ran for ever, a 0-d valid_lens and
    heads=None reached deep errors."""
    import pytest

    from attnbook.tasks import order_classifier as oc

    with pytest.raises(ValueError, match="steps"):
        oc.train_order_classifier(steps=10**12, progress=False)
    with pytest.raises(ValueError, match="steps"):
        oc.train_order_classifier(steps=0, progress=False)
    model = oc.CLSClassifier(embed_dim=8, num_heads=2, ffn_dim=8, max_len=6)
    generator = torch.Generator().manual_seed(0)
    tokens, valid_lens, labels = oc.order_batch(2, 6, generator=generator)
    with pytest.raises((TypeError, ValueError), match="valid_lens"):
        oc.accuracy(model, tokens, valid_lens[0], labels)
    with pytest.raises(TypeError, match="heads"):
        oc.without_heads(model, None)

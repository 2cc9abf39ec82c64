"""Chapter 7's "what does *it* refer to?" task and its two-layer model."""

import pytest
import torch

from attnbook.tasks import referent


def test_referent_follows_the_adjective():
    big = referent.sentence("trophy", "suitcase", "big", ("red", None))
    small = referent.sentence("trophy", "suitcase", "small")
    assert big == (
        "the red trophy did not fit in the suitcase because it was too big"
    )
    assert referent.referent(big) == "trophy"
    assert referent.referent(small) == "suitcase"
    with pytest.raises(ValueError, match="must follow the template"):
        referent.referent("the trophy was too big")


def test_evaluation_pairs_and_sentences_are_disjoint_from_training():
    train_pairs, test_pairs = referent.split_pairs()
    assert len(train_pairs) == 102 and len(test_pairs) == 30
    assert not set(train_pairs) & set(test_pairs)
    assert ("trophy", "suitcase") in test_pairs
    assert ("suitcase", "trophy") in test_pairs
    train = referent.sentences_of(train_pairs)
    test = referent.sentences_of(test_pairs)
    assert len(train) == 102 * 32 and len(test) == 30 * 32
    assert not set(train) & set(test)
    with pytest.raises(ValueError, match="test_pairs"):
        referent.split_pairs(test_pairs=1)


def test_encode_marks_it_and_the_referent_position():
    sentences = [
        referent.sentence("ball", "box", "big", ("old", "blue")),
        referent.sentence("ball", "box", "small"),
    ]
    ids, it_index, target = referent.encode(sentences)
    assert ids.shape == (2, 15)
    assert it_index.tolist() == [11, 9]
    assert target.tolist() == [2, 7]  # 'ball' in the first, 'box' in the 2nd
    assert referent.VOCAB[ids[1, 7]] == "box"


def test_model_masks_padding_and_rows_sum_to_one():
    model = referent.ReferentModel(8).double()
    sentences = [
        referent.sentence("ball", "box", "big", ("old", "blue")),
        referent.sentence("ball", "box", "small"),
    ]
    ids, it_index, _ = referent.encode(sentences)
    row, (w1, w2) = model(ids, it_index)
    assert row.shape == (2, 15) and w1.shape == w2.shape == (2, 15, 15)
    assert torch.allclose(row.sum(-1), torch.ones(2, dtype=torch.float64))
    assert (w1[1, :13, 13:] == 0).all() and (row[1, 13:] == 0).all()
    skipped, _ = model(ids, it_index, use_first_layer=False)
    assert not torch.allclose(skipped, row)


def test_training_resolves_it_on_unseen_pairs_and_needs_layer_one():
    train_pairs, test_pairs = referent.split_pairs()
    model = referent.train_referent_model(0)
    test = referent.sentences_of(test_pairs)
    assert referent.accuracy(model, test) > 0.99
    assert referent.accuracy(model, test, use_first_layer=False) < 0.6
    for adjective, noun in (("big", "trophy"), ("small", "suitcase")):
        view = referent.it_rows(
            model, referent.sentence("trophy", "suitcase", adjective)
        )
        assert view["answer"] == noun
        assert view["rows"][1][view["words"].index(noun)] > 0.9


def test_training_leaves_the_global_random_stream_alone():
    state = torch.get_rng_state()
    referent.train_referent_model(1, steps=2)
    assert torch.equal(state, torch.get_rng_state())


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


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: referent.encode([None]), "each of sentences"),
        (lambda: referent.encode([]), "sentences must be a non-empty"),
        (lambda: referent.sentence("trophy", "box", "big", []), "colours"),
        (lambda: referent.sentence("cup", "box", "big"), "thing"),
        (lambda: referent.sentences_of([None]), "pairs"),
        (lambda: referent.accuracy(None, ["x"]), "ReferentModel"),
        (lambda: referent.it_rows(referent.ReferentModel(4), 3), "text"),
        (lambda: referent.train_referent_model(steps=10**12), "steps"),
        (lambda: referent.train_referent_model(lr=None), "lr"),
        (lambda: referent.train_referent_model(batch_size=10**12), "batch"),
        (lambda: referent.train_referent_model(train_sentences="x"), "train"),
        (lambda: referent.ReferentModel(10**12), "d_model"),
    ],
)
def test_bad_input_is_refused_by_name(call, message):
    """The probe's deep errors and hangs of the task's helpers (round 3):
    each bad argument is refused at once, by name."""
    with pytest.raises((TypeError, ValueError), match=message):
        call()

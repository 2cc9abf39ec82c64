"""Chapter 12's training and scoring helpers: held-out curves that do not
change the weights, spread evaluation windows, per-prediction bits, the
minimal cached forward pass, and the byte-pair model's bits per character
and per byte."""

import math

import pytest
import torch

import attnbook
from attnbook import BytePairEncoder
from attnbook._weights import weights_digest
from attnbook.nn.language_model import (
    DecoderOnlyTransformer,
    cached_forward_minimal,
)
from attnbook.tasks.bpe_language_model import (
    BPE_TRAINING_RECIPE,
    pretrained_bpe_language_model,
    token_model_bits,
)
from attnbook.tasks.language_model import (
    bits_per_char,
    spread_windows,
    train_language_model,
    train_on_ids,
    window_bits,
)
from attnbook.tasks.text import VOCAB, corpus_split, encode

from _refusals import refused

TINY = dict(context_len=8, embed_dim=8, num_heads=2, num_layers=1, ffn_dim=16)
TEXT = "Return the number of items in the list, or zero if it is empty.\n"


def tiny_model(vocab_size=len(VOCAB), dtype=torch.float64):
    with torch.random.fork_rng():
        torch.manual_seed(0)
        return DecoderOnlyTransformer(vocab_size, **TINY).to(dtype).eval()


def test_held_out_evaluation_does_not_change_the_weights():
    settings = dict(steps=5, batch_size=2, warmup=1, config=TINY)
    plain, _ = train_language_model(**settings, progress=False)
    logged, history = train_language_model(
        **settings, progress=False, eval_every=2
    )
    assert weights_digest(plain) == weights_digest(logged)
    assert history["eval_steps"] == [0, 2, 4, 5]
    assert len(history["held_out_bits"]) == len(history["train_bits"]) == 4
    # before training, both near the uniform guess over 96 characters
    assert abs(history["held_out_bits"][0] - math.log2(96)) < 0.5


def test_float64_training_gives_a_float64_model():
    model, history = train_language_model(
        steps=2, batch_size=2, config=TINY, progress=False,
        dtype=torch.float64,
    )  # fmt: skip
    assert next(model.parameters()).dtype == torch.float64
    with pytest.raises(ValueError, match="dtype must be float32 or float64"):
        train_language_model(steps=1, config=TINY, dtype=torch.float16)


def test_spread_windows_reach_both_ends_of_the_text():
    windows = spread_windows(TEXT, 4, 8)
    assert windows.shape == (4, 9)
    assert windows[0].tolist() == encode(TEXT[:9]).tolist()
    assert windows[-1].tolist() == encode(TEXT[-9:]).tolist()
    with pytest.raises(ValueError, match="context_len \\+ 1 = 100"):
        spread_windows(TEXT, 4, 99)


def test_window_bits_agree_with_bits_per_char():
    model = tiny_model()
    text = TEXT[: 7 * 8 + 1]  # seven whole windows of 9 that overlap by 1
    ids = encode(text)
    windows = torch.stack([ids[s : s + 9] for s in range(0, 56, 8)])
    bits = window_bits(model, windows)
    assert bits.shape == (7, 8)
    assert bits.mean().item() == pytest.approx(
        bits_per_char(model, text), rel=1e-6
    )
    with pytest.raises(ValueError, match="windows must be"):
        window_bits(model, torch.zeros(2, 12, dtype=torch.int64))


def test_the_minimal_cached_forward_equals_the_model():
    model = tiny_model()
    tokens = encode("Return a new")[None][:, :8]
    cache, reference = model.new_cache(), model.new_cache()
    with torch.no_grad():
        pieces = torch.cat(
            [
                cached_forward_minimal(model, tokens[:, :5], cache),
                cached_forward_minimal(model, tokens[:, 5:], cache),
            ],
            dim=1,
        )
        whole = model(tokens)
        same = model(tokens, reference)
    assert len(cache) == 8
    assert torch.allclose(pieces, whole, atol=1e-12)
    assert torch.allclose(pieces, same, atol=1e-12)


def test_a_byte_model_scores_the_same_per_byte_char_and_token():
    bpe = BytePairEncoder.train(TEXT, 0)  # tokens = bytes = characters
    model = tiny_model(bpe.vocab_size)
    scores = token_model_bits(model, bpe, TEXT)
    assert scores["tokens"] == scores["bytes"] == scores["chars"]
    assert scores["bits_per_byte"] == pytest.approx(scores["bits_per_char"])
    assert scores["bits_per_token"] == pytest.approx(scores["bits_per_char"])


def test_merged_tokens_spread_their_bits_over_their_characters():
    bpe = BytePairEncoder.train(TEXT, 10)
    model = tiny_model(bpe.vocab_size)
    scores = token_model_bits(model, bpe, TEXT + "é")  # é: 2 bytes
    assert scores["tokens"] < scores["chars"] < scores["bytes"]
    assert scores["bits_per_char"] == pytest.approx(
        scores["bits"] / scores["chars"]
    )
    with pytest.raises(ValueError, match="token ids"):
        token_model_bits(tiny_model(), bpe, TEXT)


def test_train_on_ids_names_bad_ids():
    settings = dict(
        vocab_size=10, steps=1, batch_size=1, lr=1e-3, warmup=0,
        weight_decay=0.0, seed=0, config=TINY, progress=False,
    )  # fmt: skip
    good = torch.randint(0, 10, (20,))
    with pytest.raises(ValueError, match="train_ids must be int64 ids"):
        train_on_ids(torch.arange(5), good, **settings)
    with pytest.raises(ValueError, match="held_out_ids"):
        train_on_ids(good, torch.arange(20), **settings)  # ids up to 19


def test_the_shipped_byte_pair_model():
    lm = pretrained_bpe_language_model()
    assert lm.recipe == BPE_TRAINING_RECIPE
    assert lm.bpe.vocab_size == 256 + BPE_TRAINING_RECIPE["merges"]
    # the merges were learned on the training text alone
    train_text, held_out_text = corpus_split()
    assert lm.bpe.merges == BytePairEncoder.train(train_text, 256).merges
    scores = lm.held_out
    assert (
        scores["chars"]
        == scores["bytes"]
        == len(held_out_text)
        - len(lm.bpe.token_bytes[lm.bpe.encode(held_out_text[:20])[0]])
    )
    assert scores["bits_per_byte"] == scores["bits_per_char"]  # ASCII text
    assert scores["bits_per_char"] < 3.0  # far below the bigram's 3.77
    sample = held_out_text[:4000]
    again = token_model_bits(lm.model, lm.bpe, sample)["bits_per_char"]
    assert abs(again - scores["bits_per_char"]) < 0.5


def test_the_shipped_training_log_is_the_recipe_and_ends_near_the_model():
    from attnbook.tasks.language_model import (
        TRAINING_RECIPE,
        language_model_log,
        pretrained_language_model,
    )

    log = language_model_log()
    assert log["recipe"] == TRAINING_RECIPE
    steps = TRAINING_RECIPE["steps"]
    assert log["eval_steps"] == list(range(0, steps + 1, log["eval_every"]))
    assert len(log["train_bits"]) == len(log["held_out_bits"]) == 16
    # a re-run on another CPU: not the shipped weights, but the same recipe,
    # so its held-out curve ends within a few hundredths of a bit of the
    # shipped model's score
    shipped = pretrained_language_model()
    assert (
        abs(log["held_out_bits"][-1] - shipped.held_out_bits_per_char) < 0.05
    )
    assert log["held_out_bits"][-1] > log["train_bits"][-1]


def test_total_bits_serves_both_models_and_checks_its_ids():
    from attnbook.tasks.language_model import (
        bits_per_char,
        pretrained_language_model,
        total_bits,
    )
    from attnbook.tasks.text import encode

    model = pretrained_language_model().model
    text = "Return the path of the file."
    ids = encode(text)
    assert math.isclose(
        total_bits(model, ids) / (len(ids) - 1),
        bits_per_char(model, text),
        rel_tol=1e-12,
    )
    with pytest.raises(TypeError, match="int64"):
        total_bits(model, ids.float())
    with pytest.raises(ValueError, match="vocab_size"):
        total_bits(model, ids + 1000)
    with pytest.raises(ValueError, match="N >= 2|2 <= N"):
        total_bits(model, ids[:1])


def test_loading_the_language_model_leaves_the_rng():
    state = torch.get_rng_state()
    attnbook.pretrained_language_model()
    assert torch.equal(state, torch.get_rng_state())


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


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_window_bits_do_not_depend_on_the_batch_size(dtype):
    torch.manual_seed(0)
    model = DecoderOnlyTransformer(
        11, context_len=16, embed_dim=16, num_heads=2, num_layers=2,
        ffn_dim=32,
    ).to(dtype)  # fmt: skip
    windows = torch.randint(0, 11, (70, 17))
    default = window_bits(model, windows)
    assert default.shape == (70, 16) and default.dtype == torch.float64
    tol = 1e-12 if dtype == torch.float64 else 1e-5
    for batch_size in (1, 7, 32, 64, 70, 128):
        bits = window_bits(model, windows, batch_size=batch_size)
        torch.testing.assert_close(bits, default, rtol=0, atol=tol)

"""Chapter 12's groundwork: the corpus and its split, the character
tokenizer, batches, the decoder-only Transformer and its key-value cache
(prefill under a bottom-right causal mask), sampling, and the shipped model
against the count baselines."""

import gzip
import hashlib
import math
import time
from importlib import resources

import pytest
import torch
import torch.nn.functional as F

from attnbook import (
    _random,
    causal_mask,
    matrix_memory_limit,
    sliding_window_mask,
)
from attnbook.core.attention import attention
from attnbook.core.sampling import (
    next_token_distribution,
    sample_next_token,
    top_k_filter,
    top_p_filter,
)
from attnbook.nn.language_model import (
    DecoderOnlyTransformer,
    KVCache,
)
from attnbook.tasks import language_model as lm_task
from attnbook.tasks import text

from _refusals import refused, wide


def data_file(name: str) -> bytes:
    return (resources.files("attnbook") / "data" / name).read_bytes()


@pytest.fixture(scope="module")
def split():
    return text.corpus_split()


@pytest.fixture(scope="module")
def lm():
    return lm_task.pretrained_language_model()


def small_model(context_len=16, seed=0):
    torch.manual_seed(seed)
    return DecoderOnlyTransformer(
        len(text.VOCAB), context_len, 32, 4, 2, 64
    ).eval()


# -- the corpus, its split and the tokenizer


def test_shipped_files_match_their_pinned_digests():
    corpus = data_file(text.CORPUS_FILE)
    assert hashlib.sha256(corpus).hexdigest() == text.CORPUS_SHA256
    weights = data_file(lm_task.LANGUAGE_MODEL_FILE)
    assert hashlib.sha256(weights).hexdigest() == lm_task.LANGUAGE_MODEL_SHA256
    assert len(corpus) < 2_000_000
    licence = data_file("python_docstrings_LICENSE.txt").decode()
    assert "PYTHON SOFTWARE FOUNDATION LICENSE VERSION 2" in licence


def test_corpus_is_ascii_documents_in_the_vocabulary():
    raw = gzip.decompress(data_file(text.CORPUS_FILE)).decode("ascii")
    documents = text.corpus_documents()
    assert len(documents) == 403
    assert set("".join(documents)) <= set(text.VOCAB)
    assert text.DOCUMENT_SEPARATOR.join(documents) == raw


def test_held_out_documents_are_disjoint_from_training(split):
    documents = text.corpus_documents()
    train, held_out = text.split_documents(documents)
    assert len(train) + len(held_out) == len(documents)
    assert len(held_out) == 40
    assert not set(train) & set(held_out)
    assert all(d not in split[0] for d in held_out)
    assert (len(split[0]), len(split[1])) == (1_426_722, 167_317)


def test_tokenizer_round_trips(split):
    sample = split[1][:5000]
    ids = text.encode(sample)
    assert ids.dtype == torch.int64 and ids.shape == (5000,)
    assert text.decode(ids) == sample
    assert text.decode(torch.arange(len(text.VOCAB))) == text.VOCAB
    assert len(text.VOCAB) == 96


def test_tokenizer_names_a_bad_character_or_id():
    with pytest.raises(ValueError, match="'\\\\xe9'|'é'"):
        text.encode("café")
    with pytest.raises(TypeError, match="str"):
        text.encode(b"abc")
    with pytest.raises(ValueError, match="96"):
        text.decode([3, 96])


def test_batch_targets_are_inputs_shifted_by_one():
    ids = torch.arange(1000)  # every id is its own position
    generator = torch.Generator().manual_seed(0)
    state = torch.get_rng_state()
    inputs, targets = text.text_batch(ids, 8, 32, generator)
    assert torch.equal(torch.get_rng_state(), state)
    assert inputs.shape == targets.shape == (8, 32)
    assert torch.equal(targets, inputs + 1)
    assert torch.equal(targets[:, :-1], inputs[:, 1:])
    again = text.text_batch(ids, 8, 32, torch.Generator().manual_seed(0))
    assert torch.equal(again[0], inputs)


def test_count_baselines_by_hand():
    # train "abab": counts a 2, b 2; pairs ab 2, ba 1. Held out: "ab"
    v = len(text.VOCAB)
    uni = text.unigram_bits_per_char("abab", "xab")
    assert uni == pytest.approx(-math.log2(3 / (4 + v)))
    bi = text.bigram_bits_per_char("abab", "xab")
    assert bi == pytest.approx(
        -(math.log2(1 / v) + math.log2(3 / (2 + v))) / 2
    )


# -- the bottom-right causal mask and the cache


@pytest.mark.parametrize("n_q, n_k", [(1, 1), (5, 5), (1, 7), (3, 7)])
def test_causal_mask_against_sdpa_with_an_explicit_mask(n_q, n_k):
    generator = torch.Generator().manual_seed(n_q * 10 + n_k)
    q = torch.randn(2, 3, n_q, 8, generator=generator, dtype=torch.float64)
    k, v = torch.randn(
        2, 2, 3, n_k, 8, generator=generator, dtype=torch.float64
    )
    mask = causal_mask(n_q, n_k)
    assert mask.shape == (n_q, n_k) and mask.dtype == torch.bool
    assert mask[-1].all()  # the last query sees every key
    ours, _ = attention(q, k, v, mask=mask)
    theirs = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    torch.testing.assert_close(ours, theirs, rtol=0, atol=1e-12)
    top_left = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    if n_q == n_k:
        torch.testing.assert_close(ours, top_left, rtol=0, atol=1e-12)
    else:  # is_causal=True is top-left aligned: wrong for a prefill
        assert not torch.allclose(ours, top_left)
        assert not torch.equal(
            mask, torch.ones(n_q, n_k, dtype=torch.bool).tril()
        )


def test_causal_mask_square_is_lower_triangular_and_checks_sizes():
    assert torch.equal(
        causal_mask(4, 4), torch.ones(4, 4, dtype=torch.bool).tril()
    )
    with pytest.raises(ValueError, match="n_k"):
        causal_mask(5, 3)


def test_cached_prefill_and_steps_equal_the_full_forward():
    model = small_model()
    tokens = torch.randint(96, (2, 16), generator=torch.Generator())
    with torch.no_grad():
        full = model(tokens)
        cache = model.new_cache()
        parts = [model(tokens[:, :6], cache)]  # prefill: 6 queries, 6 keys
        parts.append(model(tokens[:, 6:9], cache))  # 3 queries, 9 keys
        parts += [model(tokens[:, t : t + 1], cache) for t in range(9, 16)]
    assert len(cache) == 16
    assert cache.keys[0].shape == (2, 4, 16, 8)
    assert cache.nbytes() == 2 * 2 * (2 * 4 * 16 * 8) * 4
    torch.testing.assert_close(
        torch.cat(parts, dim=1), full, rtol=0, atol=1e-5
    )


def test_the_pretrained_model_prefill_equals_the_full_forward(lm, split):
    tokens = text.encode(split[1][:100])[None]
    model = lm.model
    with torch.no_grad():
        full = model(tokens)
        cache = model.new_cache()
        cached = torch.cat(
            [model(tokens[:, :60], cache)]
            + [model(tokens[:, t : t + 1], cache) for t in range(60, 100)],
            dim=1,
        )
    torch.testing.assert_close(cached, full, rtol=0, atol=1e-4)


def test_a_cache_past_the_context_is_refused():
    model = small_model(context_len=8)
    cache = model.new_cache()
    model(torch.zeros(1, 8, dtype=torch.int64), cache)
    with pytest.raises(ValueError, match="context length 8"):
        model(torch.zeros(1, 1, dtype=torch.int64), cache)
    assert isinstance(cache, KVCache)


# -- sampling


def test_top_k_keeps_exactly_k_tokens_mass():
    logits = torch.randn(4, 20, generator=torch.Generator().manual_seed(1))
    probs = next_token_distribution(logits, top_k=5)
    assert ((probs > 0).sum(dim=-1) == 5).all()
    kept = logits.topk(5, dim=-1).indices
    torch.testing.assert_close(
        probs.gather(-1, kept), logits.gather(-1, kept).softmax(dim=-1)
    )
    torch.testing.assert_close(probs.sum(dim=-1), torch.ones(4))
    assert torch.isinf(top_k_filter(logits, 5)).sum() == 4 * 15
    assert not torch.isinf(top_k_filter(logits, 99)).any()


@pytest.mark.parametrize("p", [0.05, 0.3, 0.5, 0.9, 0.999, 1.0])
def test_top_p_keeps_the_smallest_set_reaching_p(p):
    logits = torch.randn(6, 30, generator=torch.Generator().manual_seed(2))
    full = logits.softmax(dim=-1)
    probs = next_token_distribution(logits, top_p=p)
    for row in range(6):
        ordered = full[row].sort(descending=True)
        size = int((probs[row] > 0).sum())
        assert set(ordered.indices[:size].tolist()) == set(
            probs[row].nonzero().flatten().tolist()
        )
        mass = ordered.values[:size].sum()
        assert mass >= p - 1e-6  # reaches p ...
        assert ordered.values[: size - 1].sum() < p  # ... and no smaller set
        torch.testing.assert_close(probs[row].sum(), torch.tensor(1.0))
    assert not torch.isinf(top_p_filter(logits, 1.0)).any()


def test_temperature_zero_is_greedy_and_draws_nothing():
    logits = torch.randn(3, 10, generator=torch.Generator().manual_seed(3))
    generator = torch.Generator().manual_seed(0)
    state = generator.get_state()
    ids = sample_next_token(logits, temperature=0, generator=generator)
    assert torch.equal(ids, logits.argmax(dim=-1))
    assert torch.equal(generator.get_state(), state)
    assert torch.equal(
        next_token_distribution(logits, temperature=0).argmax(dim=-1), ids
    )


def test_temperature_scales_the_logits():
    logits = torch.randn(2, 10, generator=torch.Generator().manual_seed(4))
    torch.testing.assert_close(
        next_token_distribution(logits, temperature=0.5),
        (logits * 2).softmax(dim=-1),
    )


def test_sampling_needs_a_generator_and_leaves_the_global_rng():
    logits = torch.randn(2, 10)
    with pytest.raises(TypeError, match="generator"):
        sample_next_token(logits, temperature=1.0)
    state = torch.get_rng_state()
    a = sample_next_token(
        logits, 1.0, generator=torch.Generator().manual_seed(5)
    )
    b = sample_next_token(
        logits, 1.0, generator=torch.Generator().manual_seed(5)
    )
    assert torch.equal(a, b)
    assert torch.equal(torch.get_rng_state(), state)


# -- generation


@pytest.mark.parametrize(
    "sampling",
    [
        {"temperature": 0},
        {"temperature": 1.0, "seed": 3},
        {"temperature": 0.8, "top_k": 10, "seed": 4},
        {"temperature": 1.2, "top_p": 0.9, "seed": 5},
    ],
)
def test_generation_is_the_same_with_and_without_the_cache(lm, sampling):
    prompt = "Return the number of "  # a prompt of several tokens
    cached = lm.generate(prompt, 40, **sampling, use_cache=True)
    plain = lm.generate(prompt, 40, **sampling, use_cache=False)
    assert cached == plain
    assert len(cached) == 40


def test_generation_past_the_context_length_agrees_too(lm, split):
    prompt = split[1][1000:1110]  # 110 characters, context 128
    for kwargs in ({"temperature": 0}, {"seed": 7}):
        cached = lm.generate(prompt, 40, **kwargs)
        assert cached == lm.generate(prompt, 40, **kwargs, use_cache=False)


def test_generation_is_seeded_and_leaves_the_global_rng(lm):
    state = torch.get_rng_state()
    a = lm.generate("The ", 30, seed=1)
    assert torch.equal(torch.get_rng_state(), state)
    assert a == lm.generate("The ", 30, seed=1)
    assert a != lm.generate("The ", 30, seed=2)
    assert lm.generate("The ", 0) == ""


def test_greedy_generation_follows_the_argmax(lm):
    prompt = "Return the "
    out = lm.generate(prompt, 5, temperature=0)
    for char in out:
        probs = lm.next_char_distribution(prompt)
        assert text.VOCAB[int(probs.argmax())] == char
        prompt += char


@pytest.mark.parametrize(
    "kwargs, error, words",
    [
        ({"prompt": 12}, TypeError, ["prompt", "int"]),
        ({"prompt": ""}, ValueError, ["prompt"]),
        ({"prompt": "na\u00efve"}, ValueError, ["prompt", "\u00ef"]),
        ({"max_new_tokens": -1}, ValueError, ["max_new_tokens", "-1"]),
        ({"max_new_tokens": 2.5}, ValueError, ["max_new_tokens", "2.5"]),
        ({"temperature": -0.5}, ValueError, ["temperature", "-0.5"]),
        ({"temperature": float("nan")}, ValueError, ["temperature", "nan"]),
        ({"temperature": "hot"}, TypeError, ["temperature", "'hot'"]),
        ({"top_k": 0}, ValueError, ["top_k", "0"]),
        ({"top_k": 2.5}, TypeError, ["top_k", "2.5"]),
        ({"top_p": 0.0}, ValueError, ["top_p", "0.0"]),
        ({"top_p": 1.5}, ValueError, ["top_p", "1.5"]),
        ({"seed": -1}, ValueError, ["seed", "-1"]),
        ({"seed": "a"}, TypeError, ["seed", "'a'"]),
        ({"use_cache": "yes"}, TypeError, ["use_cache", "'yes'"]),
    ],
)
def test_bad_arguments_are_named(lm, kwargs, error, words):
    arguments = {"prompt": "The ", "max_new_tokens": 3, **kwargs}
    with pytest.raises(error) as raised:
        lm.generate(**arguments)
    message = str(raised.value)
    for word in words:
        assert word in message, (word, message)


# -- quality


def test_the_model_beats_the_count_baselines_on_held_out_text(lm, split):
    train, held_out = split
    sample = held_out[:30_000]
    ours = lm.bits_per_char(sample)
    bigram = text.bigram_bits_per_char(train, sample)
    unigram = text.unigram_bits_per_char(train, sample)
    assert ours < bigram - 0.5 < unigram
    assert lm.held_out_bits_per_char < 3.0


def test_bits_per_char_predicts_every_character_after_the_first_once():
    model = small_model(context_len=8)
    sample = "abcdefghijklmnopqrstu"  # 21 characters: windows of 9
    ids = text.encode(sample)
    with torch.no_grad():
        total = sum(
            F.cross_entropy(
                model(ids[None, s : s + 8]).squeeze(0)[: len(ids) - s - 1],
                ids[s + 1 : s + 9],
                reduction="sum",
            )
            for s in (0, 8, 16)
        )
    assert lm_task.bits_per_char(model, sample) == pytest.approx(
        total.item() / 20 / math.log(2), rel=1e-6
    )


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


@pytest.fixture
def tiny_lm():
    torch.manual_seed(0)
    return DecoderOnlyTransformer(10, 8, 8, 2, 1, 16)


MANY_ROWS = torch.randint(0, 10, (1, 5)).expand(10**6, 5)


def _refused_fast(call, match):
    start = time.perf_counter()
    with pytest.raises(ValueError, match=match):
        call()
    assert time.perf_counter() - start < 5


def test_a_language_model_refuses_a_million_rows_before_the_work(tiny_lm):
    _refused_fast(
        lambda: tiny_lm(MANY_ROWS, mask=sliding_window_mask(5, window=2)),
        r"tokens of shape \(1000000, 5\): a forward computes about "
        r"[\d.]+ GiB of activations \(limit 4.0 GiB\)",
    )


def test_generate_refuses_a_million_rows_before_sampling(tiny_lm):
    generator = torch.Generator().manual_seed(0)
    state = generator.get_state()
    _refused_fast(
        lambda: tiny_lm.generate(MANY_ROWS, 2, top_k=3, generator=generator),
        r"tokens of shape \(1000000, 5\)",
    )
    assert torch.equal(generator.get_state(), state)


def test_the_activation_bound_leaves_ordinary_batches_alone(tiny_lm):
    tokens = torch.randint(0, 10, (64, 8))
    assert tiny_lm(tokens).shape == (64, 8, 10)
    assert matrix_memory_limit() == 4 * 2**30

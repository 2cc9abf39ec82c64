"""Chapter 7's dependency task: what does "it" refer to?

"the trophy did not fit in the suitcase because it was too big": *it* is the
trophy; end the sentence with "small" and *it* is the suitcase. The sentences
follow that one template with a noun pair from ``NOUNS``, an optional colour
word before each noun (so the nouns do not sit at fixed positions) and "big"
or "small" at the end. The task is to name the noun *it* refers to, read off
the attention row of *it* in the model's second layer (as in a pointer
network, the answer is the word that row weights most). The word that decides
comes three positions after *it*, so the row can only find it if the first
layer has carried "big" or "small" into the state of *it*.

Training and evaluation sentences use disjoint noun pairs (``split_pairs``),
so every evaluation sentence is new to the model, and so is the pair of nouns
in it. ``ReferentModel`` is two single-head self-attention layers on word
embeddings plus sinusoidal positions, trained in float64 on one thread in
about a second by ``train_referent_model``.
"""

import itertools

import torch
from torch import nn

from .._checks import (
    require_flag,
    require_ids,
    require_int,
    require_int_in,
    require_tensor,
    require_text,
    require_training,
)
from .._memory import require_matrix_fits, require_weights_fit
from .._random import restores_rng_on_error, seeded, seeded_generator
from ..core.positional import sinusoidal_encoding
from ..measure.threads import single_thread
from ..nn.self_attention import SelfAttention

NOUNS = (
    "trophy",
    "suitcase",
    "ball",
    "box",
    "book",
    "bag",
    "lamp",
    "drawer",
    "coat",
    "closet",
    "cake",
    "tin",
)
COLOURS = ("red", "blue", "old")
ADJECTIVES = ("big", "small")
OTHER_WORDS = ("the", "did", "not", "fit", "in", "because", "it", "was", "too")
VOCAB = (*OTHER_WORDS, *COLOURS, *ADJECTIVES, *NOUNS)
WORD_ID = {word: i for i, word in enumerate(VOCAB)}


def sentence(
    thing: str, container: str, adjective: str, colours=(None, None)
) -> str:
    """The template: 'the [colour] thing did not fit in the [colour]
    container because it was too adjective'."""
    _check_template(thing, container, adjective, colours)
    first = "the" if colours[0] is None else f"the {colours[0]}"
    second = "the" if colours[1] is None else f"the {colours[1]}"
    return (
        f"{first} {thing} did not fit in {second} {container} "
        f"because it was too {adjective}"
    )


def _check_template(thing, container, adjective, colours) -> None:
    """thing and container two of ``NOUNS``, adjective one of
    ``ADJECTIVES``, colours a pair of None or ``COLOURS``."""
    for name, word, allowed in (
        ("thing", thing, NOUNS),
        ("container", container, NOUNS),
        ("adjective", adjective, ADJECTIVES),
    ):
        if not isinstance(word, str) or word not in allowed:
            raise ValueError(
                f"{name} must be one of {allowed}, got {word!r:.40}"
            )
    if (
        not isinstance(colours, (tuple, list))
        or len(colours) != 2
        or not all(c is None or c in COLOURS for c in colours)
    ):
        raise ValueError(
            "colours must be a pair, each None or one of "
            f"{COLOURS}, got {colours!r:.60}"
        )


def referent(sentence_text: str) -> str:
    """The noun *it* refers to: the thing if it was too big, the container
    if too small."""
    words = require_text("sentence_text", sentence_text).split()
    nouns = [w for w in words if w in NOUNS]
    if len(nouns) != 2 or words[-1] not in ADJECTIVES:
        raise ValueError(
            "sentence_text must follow the template (two nouns, ending in "
            f"'big' or 'small'), got {sentence_text!r:.80}"
        )
    return nouns[0] if words[-1] == "big" else nouns[1]


def split_pairs(test_pairs: int = 30, seed: int = 0):
    """Ordered noun pairs (thing, container), split into training and
    evaluation pairs that share none: (train_pairs, test_pairs).

    Both orders of (trophy, suitcase) are always evaluation pairs, so the
    sentence this task is named after is never trained on; the other
    ``test_pairs - 2`` are drawn with ``seed``.
    """
    pairs = list(itertools.permutations(NOUNS, 2))
    require_int_in("test_pairs", test_pairs, 2, len(pairs) - 1)
    opening = [("trophy", "suitcase"), ("suitcase", "trophy")]
    others = [pair for pair in pairs if pair not in opening]
    order = torch.randperm(len(others), generator=seeded_generator(seed))
    chosen = [others[i] for i in order.tolist()]
    cut = test_pairs - len(opening)
    return chosen[cut:], opening + chosen[:cut]


def sentences_of(pairs) -> list:
    """Every sentence of the template for the given noun pairs: each pair
    with every colour choice (none or one of ``COLOURS``) before each noun
    and both adjectives."""
    if not isinstance(pairs, (list, tuple)) or not all(
        isinstance(pair, (tuple, list)) and len(pair) == 2 for pair in pairs
    ):
        raise TypeError(
            "pairs must be a list of (thing, container) pairs, got "
            f"{pairs!r:.60}"
        )
    options = (None, *COLOURS)
    return [
        sentence(thing, container, adjective, (c1, c2))
        for thing, container in pairs
        for c1, c2 in itertools.product(options, options)
        for adjective in ADJECTIVES
    ]


def encode(sentences) -> tuple:
    """Word ids (B, n) right-padded with 0 (padding is masked), the index of
    *it* (B,) and the position of the noun it refers to (B,)."""
    _check_sentence_list(sentences)
    rows = [s.split() for s in sentences]
    n = max(len(r) for r in rows)
    ids = torch.zeros(len(rows), n, dtype=torch.long)
    for b, r in enumerate(rows):
        ids[b, : len(r)] = torch.tensor([WORD_ID[w] for w in r])
    it_index = torch.tensor([r.index("it") for r in rows])
    target = torch.tensor(
        [r.index(referent(s)) for r, s in zip(rows, sentences)]
    )
    return ids, it_index, target


def _check_sentence_list(sentences, name: str = "sentences") -> None:
    """A non-empty list of sentences of the template, words of ``VOCAB``."""
    if not isinstance(sentences, (list, tuple)) or not sentences:
        raise TypeError(
            f"{name} must be a non-empty list of sentences of the "
            f"template, got {sentences!r:.60}"
        )
    for s in sentences:
        require_text(f"each of {name}", s)
        referent(s)  # of the template
        words = s.split()
        unknown = [w for w in words if w not in WORD_ID]
        if unknown or "it" not in words:
            raise ValueError(
                f"every sentence of {name} must follow the template (words "
                f"of VOCAB, with 'it'), got {s!r:.80}"
            )


def _require_model(model) -> None:
    if not isinstance(model, ReferentModel):
        raise TypeError(
            f"model must be a ReferentModel, got {type(model).__name__}"
        )


class ReferentModel(nn.Module):
    """Word embedding + sinusoidal positions, a self-attention layer with a
    residual connection, h = x + SA_1(x), and a second self-attention layer
    whose row of *it* is the answer: as in a pointer network, the model names
    the word that row weights most.

    forward(ids (B, n), it_index (B,)) -> (row of *it* in layer 2 (B, n),
    the attention weights of both layers, a list of two (B, n, n)).
    ``use_first_layer=False`` skips layer 1 (h = x), an ablation. Padding
    (every position from it_index + 4 on) is masked out.
    """

    @restores_rng_on_error
    def __init__(self, d_model: int = 16):
        super().__init__()
        require_int("d_model", d_model, 2)
        require_weights_fit(
            f"ReferentModel (d_model={d_model})",
            (len(VOCAB), d_model),
            (6, d_model, d_model),
        )
        self.embed = nn.Embedding(len(VOCAB), d_model)
        self.layers = nn.ModuleList(SelfAttention(d_model) for _ in range(2))

    def forward(self, ids, it_index, use_first_layer: bool = True):
        _check_sentences(ids, it_index)
        require_flag("use_first_layer", use_first_layer)
        x = self.embed(ids)
        n, d = ids.shape[1], x.shape[-1]
        x = x + sinusoidal_encoding(n, d).to(x.dtype)
        mask = _padding_mask(ids, it_index)
        first, second = self.layers
        out, w1 = first(x, mask)
        h = x + out if use_first_layer else x
        _, w2 = second(h, mask)
        return w2[torch.arange(len(ids)), it_index], [w1, w2]


def _check_sentences(ids, it_index) -> None:
    """ids (B, n) word ids, n >= 1; it_index (B,) int64 in [0, n)."""
    require_ids("ids", ids, len(VOCAB), dims=2)
    require_tensor("it_index", it_index)
    if it_index.dtype != torch.int64 or it_index.shape != ids.shape[:1]:
        raise ValueError(
            f"it_index must be int64 of shape ({len(ids)},), one position "
            f"per sentence of ids {tuple(ids.shape)}, got {it_index.dtype} "
            f"{tuple(it_index.shape)}"
        )
    if it_index.numel() and (
        it_index.min() < 0 or it_index.max() >= ids.shape[1]
    ):
        raise ValueError(
            f"it_index must be positions in [0, {ids.shape[1]}), got "
            f"{it_index.min().item()} .. {it_index.max().item()}"
        )


def _padding_mask(ids, it_index) -> torch.Tensor:
    """(B, 1, n), True = keep: the sentence's words, not its padding (the
    template ends three words after *it*)."""
    lengths = it_index + 4
    return (torch.arange(ids.shape[1])[None, :] < lengths[:, None])[:, None]


def train_referent_model(
    seed: int = 0,
    steps: int = 150,
    batch_size: int = 64,
    lr: float = 1e-2,
    d_model: int = 16,
    train_sentences=None,
) -> ReferentModel:
    """Adam on the negative log of the weight the row of *it* gives the
    right noun; float64, one thread, seeded batches from
    ``train_sentences`` (default: every sentence of the training pairs of
    ``split_pairs()``)."""
    require_training(seed=seed, steps=steps, batch_size=batch_size, lr=lr)
    require_int("d_model", d_model, 2)
    if train_sentences is None:
        train_sentences = sentences_of(split_pairs()[0])
    _check_sentence_list(train_sentences, "train_sentences")
    ids, it_index, target = encode(train_sentences)
    require_matrix_fits(
        f"a batch of batch_size={batch_size} sentences",
        (batch_size, ids.shape[1]),
        torch.float64,
    )
    with seeded(seed):
        model = ReferentModel(d_model).double()
    generator = seeded_generator(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    nll = nn.NLLLoss()
    with single_thread():
        for _ in range(steps):
            batch = torch.randint(len(ids), (batch_size,), generator=generator)
            row, _ = model(ids[batch], it_index[batch])
            loss = nll(row.clamp_min(1e-300).log(), target[batch])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    return model.eval()


@torch.no_grad()
def accuracy(
    model: ReferentModel, sentences, use_first_layer: bool = True
) -> float:
    """Fraction of ``sentences`` where the row of *it* weights the right noun
    most."""
    _require_model(model)
    ids, it_index, target = encode(sentences)
    row, _ = model(ids, it_index, use_first_layer)
    return float((row.argmax(-1) == target).double().mean())


@torch.no_grad()
def it_rows(model: ReferentModel, sentence_text: str) -> dict:
    """The words of one sentence, the attention rows of *it* in both layers
    (two tensors (n,)) and the word the model names."""
    _require_model(model)
    require_text("sentence_text", sentence_text)
    ids, it_index, _ = encode([sentence_text])
    _, weights = model(ids, it_index)
    i = int(it_index[0])
    rows = [w[0, i] for w in weights]
    words = sentence_text.split()
    return {"words": words, "rows": rows, "answer": words[rows[1].argmax()]}

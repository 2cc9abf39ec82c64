"""A task that multi-head attention solves and one head cannot: two lookups in
one query.

Each example is a small hand of cards. Every card has a colour (all different
within a hand) and a digit (all different within a hand). A query asks two
questions at once:

* "which digit is on the card of colour c?" (look the card up by its colour),
  and
* "which colour is the card with digit v?" (look another card up by its
  digit).

The two answers usually sit on two different cards. ``CardLookup`` is one
``MultiHeadAttention`` layer (queries: the questions; keys and values: the
cards) followed by two linear read-outs; nothing but attention moves
information from the cards to the answers. One softmax can put its weight on
one card only, so the task shows what separate heads buy. ``train_card_lookup``
trains one (seeded, on one thread, in float64, a few seconds);
``trained_card_lookup(h)`` loads the shipped result of that training for ``h``
heads (``python -m attnbook.train.card_lookup`` made it), the same on every
CPU.
"""

from copy import deepcopy
from functools import lru_cache

import torch
import torch.nn.functional as F
from torch import nn

from .._checks import (
    require_float_dtype,
    require_ids,
    require_int,
    require_int_in,
    require_positive,
    require_same_size,
    require_saved,
    require_training,
)
from .._memory import require_matrix_fits, require_weights_fit
from .._random import (
    keep_global_rng,
    require_generator,
    restores_rng_on_error,
    seeded,
    seeded_generator,
)
from .._weights import load_pinned
from ..measure.threads import torch_threads
from ..nn.multihead import MultiHeadAttention

COLOURS = ("red", "green", "blue", "yellow", "purple", "orange")
NUM_DIGITS = 10
NUM_CARDS = 6
EMBED_DIM = 32
TRAINING_RECIPE = {"steps": 600, "batch_size": 128, "lr": 3e-3, "seed": 0}


def lookup_batch(
    batch_size: int,
    num_queries: int = 1,
    generator: torch.Generator | None = None,
) -> dict:
    """A batch of hands and questions, drawn with ``generator`` (None:
    torch's global generator, as torch does).

    Returns a dict of int64 tensors: ``card_colours`` and ``card_digits`` (B,
    NUM_CARDS) (distinct within each hand); for each of the ``num_queries``
    questions, (B, n_q): ``ask_colour`` and ``ask_digit`` (the colour and the
    digit asked about), ``colour_card`` and ``digit_card`` (the positions of
    the two cards they name), and the answers ``digit_answer`` (the digit on
    ``colour_card``) and ``colour_answer`` (the colour of ``digit_card``). The
    two named cards are drawn independently, so they are the same card in about
    one question in ``NUM_CARDS``.
    """
    require_int("batch_size", batch_size)
    require_int("num_queries", num_queries)
    require_matrix_fits(
        "the batch",
        (batch_size, 8 * num_queries + 2 * NUM_DIGITS),
        torch.int64,
    )
    require_generator(
        "generator", generator, allow_none=True
    )  # None: torch's global generator
    colours = torch.rand(
        batch_size, len(COLOURS), generator=generator
    ).argsort(dim=1)[:, :NUM_CARDS]
    digits = torch.rand(batch_size, NUM_DIGITS, generator=generator).argsort(
        dim=1
    )[:, :NUM_CARDS]
    colour_card = torch.randint(
        0, NUM_CARDS, (batch_size, num_queries), generator=generator
    )
    digit_card = torch.randint(
        0, NUM_CARDS, (batch_size, num_queries), generator=generator
    )
    return hand_questions(colours, digits, colour_card, digit_card)


def hand_questions(colours, digits, colour_card, digit_card) -> dict:
    """The batch dict of ``lookup_batch`` for given hands and the cards each
    question names.

    colours, digits: (B, NUM_CARDS) ids; colour_card, digit_card: (B, n_q) card
    positions. The questions ask the colour of ``colour_card`` and the digit of
    ``digit_card``; the answers are the digit on ``colour_card`` and the colour
    of ``digit_card``.
    """
    require_ids("colours", colours, len(COLOURS), dims=2)
    require_ids("digits", digits, NUM_DIGITS, dims=2)
    if colours.shape != digits.shape:
        raise ValueError(
            f"colours {tuple(colours.shape)} and digits {tuple(digits.shape)} "
            "must describe the same hands"
        )
    for name, cards in (
        ("colour_card", colour_card),
        ("digit_card", digit_card),
    ):
        require_ids(name, cards, colours.shape[1], dims=2)
        require_same_size(
            "batch size", "colours", len(colours), name, len(cards)
        )
    return {
        "card_colours": colours,
        "card_digits": digits,
        "ask_colour": colours.gather(1, colour_card),
        "ask_digit": digits.gather(1, digit_card),
        "colour_card": colour_card,
        "digit_card": digit_card,
        "digit_answer": digits.gather(1, colour_card),
        "colour_answer": colours.gather(1, digit_card),
    }


class CardLookup(nn.Module):
    """Embeddings, one multi-head cross-attention layer, two linear read-outs.

    A card is the sum of a colour and a digit embedding; a question is the sum
    of an "asked colour" and an "asked digit" embedding (separate tables).
    forward returns digit logits (B, n_q, NUM_DIGITS), colour logits (B, n_q,
    len(COLOURS)) and the attention weights (B, num_heads, n_q, NUM_CARDS). The
    read-outs see only the attention output (no residual connection): every
    answer must come through attention.
    """

    @restores_rng_on_error
    def __init__(self, num_heads: int = 2, embed_dim: int = EMBED_DIM):
        super().__init__()
        require_int("num_heads", num_heads)
        require_int("embed_dim", embed_dim)
        require_weights_fit("CardLookup", (4 * embed_dim + 40, embed_dim))
        if embed_dim % num_heads:  # checked before any weight is drawn
            raise ValueError(
                f"embed_dim ({embed_dim}) must be divisible by num_heads ("
                f"{num_heads})"
            )
        self.card_colour = nn.Embedding(len(COLOURS), embed_dim)
        self.card_digit = nn.Embedding(NUM_DIGITS, embed_dim)
        self.ask_colour = nn.Embedding(len(COLOURS), embed_dim)
        self.ask_digit = nn.Embedding(NUM_DIGITS, embed_dim)
        self.attention = MultiHeadAttention(embed_dim, num_heads)
        self.read_digit = nn.Linear(embed_dim, NUM_DIGITS)
        self.read_colour = nn.Linear(embed_dim, len(COLOURS))

    def forward(self, card_colours, card_digits, ask_colour, ask_digit):
        _check_inputs(card_colours, card_digits, ask_colour, ask_digit)
        # cards (B, n, d): keys and values; questions (B, n_q, d): queries
        cards = self.card_colour(card_colours) + self.card_digit(card_digits)
        questions = self.ask_colour(ask_colour) + self.ask_digit(ask_digit)
        answers, weights = self.attention(questions, cards, cards)
        return self.read_digit(answers), self.read_colour(answers), weights


def _check_inputs(card_colours, card_digits, ask_colour, ask_digit) -> None:
    """CardLookup's inputs: card_colours, card_digits (B, n) ids;
    ask_colour, ask_digit (B, n_q) ids."""
    names = ("card_colours", "card_digits", "ask_colour", "ask_digit")
    given = (card_colours, card_digits, ask_colour, ask_digit)
    for name, ids, size in zip(
        names, given, (len(COLOURS), NUM_DIGITS, len(COLOURS), NUM_DIGITS)
    ):
        require_ids(name, ids, size, dims=2)
    if (
        card_colours.shape != card_digits.shape
        or ask_colour.shape != ask_digit.shape
    ):
        raise ValueError(
            f"cards (colours {tuple(card_colours.shape)}, digits "
            f"{tuple(card_digits.shape)}) and questions "
            f"(colour {tuple(ask_colour.shape)}, digit "
            f"{tuple(ask_digit.shape)}) must match in pairs"
        )
    require_same_size(
        "batch size",
        "cards",
        card_colours.shape[0],
        "questions",
        ask_colour.shape[0],
    )


_BATCH_KEYS = (
    "card_colours",
    "card_digits",
    "ask_colour",
    "ask_digit",
    "digit_answer",
    "colour_answer",
)


def _run(model: CardLookup, batch: dict):
    if not isinstance(model, CardLookup):
        raise TypeError(
            f"model must be a CardLookup, got {type(model).__name__}"
        )
    require_saved("batch", batch, *_BATCH_KEYS)
    return model(
        batch["card_colours"],
        batch["card_digits"],
        batch["ask_colour"],
        batch["ask_digit"],
    )


def lookup_loss(model: CardLookup, batch: dict) -> torch.Tensor:
    """Cross-entropy of the digit answer plus that of the colour answer,
    averaged over questions."""
    digit_logits, colour_logits, _ = _run(model, batch)
    return F.cross_entropy(
        digit_logits.flatten(0, 1), batch["digit_answer"].flatten()
    ) + F.cross_entropy(
        colour_logits.flatten(0, 1), batch["colour_answer"].flatten()
    )


def train_card_lookup(
    num_heads: int = 2,
    steps: int = 1000,
    batch_size: int = 128,
    lr: float = 3e-3,
    seed: int = 0,
    threads: int | None = 1,
    dtype: torch.dtype = torch.float64,
):
    """Train a ``CardLookup`` with Adam on fresh batches (one question per
    hand).

    Seeded by ``seed`` and run on ``threads`` threads (default 1, restored
    after), in ``dtype`` (float64 by default), so a second run on the same
    machine gives the same model bit for bit. On another CPU the one-head model
    ends a few percent away even in float64 (its training amplifies rounding),
    so the chapter loads shipped runs (``trained_card_lookup``). Returns (model
    in eval mode, losses). Torch's global random state is restored on exit.
    """
    require_training(steps=steps, batch_size=batch_size)
    require_positive("lr", lr)
    require_int("seed", seed, minimum=0)
    require_float_dtype("dtype", dtype)
    with torch_threads(threads), seeded(seed):
        model = CardLookup(num_heads).to(dtype)
        generator = seeded_generator(seed)
        optimizer = torch.optim.Adam(model.parameters(), lr=lr)
        losses = []
        for _ in range(steps):
            loss = lookup_loss(model, lookup_batch(batch_size, 1, generator))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    return model.eval(), losses


# The runs of train_card_lookup that ship with the package, as (num_heads,
# steps, seed), all with TRAINING_RECIPE's batch size and learning rate; made
# by ``python -m attnbook.train.card_lookup``.
SHIPPED_RUNS = (
    (1, 600, 0),
    (2, 600, 0),
    (4, 600, 0),
    (2, 600, 1),
    (2, 600, 2),
    (2, 600, 3),
    (1, 2400, 0),
)
CARD_LOOKUP_FILE = "card_lookup_models.pt"
CARD_LOOKUP_SHA256 = (
    "de545bf409e1071c6c852a9ed900aa64281cabb924eeabbb8a983876ecd50f05"
)


def run_name(num_heads: int, steps: int, seed: int) -> str:
    """The key of one shipped run in the weight file, e.g. 'heads=2
    steps=600 seed=0'."""
    return f"heads={num_heads} steps={steps} seed={seed}"


def trained_card_lookup(
    num_heads: int = 2, steps: int = 600, seed: int = 0
) -> CardLookup:
    """The shipped result of
    ``train_card_lookup(num_heads, steps=steps, seed=seed)``, in eval mode.

    Training is cheap, but the one-head model never settles: rounding
    differences between CPUs (another SIMD width, other BLAS kernels) grow,
    step by step through Adam, into accuracies a few percent apart. So the book
    loads the runs in ``SHIPPED_RUNS``, made once by
    ``python -m attnbook.train.card_lookup`` and pinned by SHA-256. Cached per
    process: do not modify the returned model in place, it is shared by every
    caller.
    """
    require_int("num_heads", num_heads)
    require_int("steps", steps)
    require_int("seed", seed, minimum=0)
    if (num_heads, steps, seed) not in SHIPPED_RUNS:
        shipped = ", ".join(f"({h}, {n}, {s})" for h, n, s in SHIPPED_RUNS)
        raise ValueError(
            f"no shipped run with num_heads={num_heads}, steps={steps}, seed="
            f"{seed}; the shipped "
            f"(num_heads, steps, seed) are {shipped}; train others with "
            "train_card_lookup"
        )
    return _shipped_model(num_heads, steps, seed)


@lru_cache(maxsize=len(SHIPPED_RUNS))
def _shipped_model(num_heads: int, steps: int, seed: int) -> CardLookup:
    return card_lookup_from(
        shipped_card_lookups(), run_name(num_heads, steps, seed)
    )


def card_lookup_from(saved: dict, name: str) -> CardLookup:
    """Run ``name`` of the dict ``python -m attnbook.train.card_lookup``
    writes, in eval mode."""
    if not isinstance(saved, dict) or {"info", "models"} - set(saved):
        raise TypeError(
            "saved must be the dict python -m attnbook.train.card_lookup "
            f"writes (keys 'info', 'models'), got {str(saved):.40}"
        )
    if not isinstance(name, str) or name not in saved["info"]:
        raise ValueError(
            f"name must be one of the saved runs {sorted(saved['info'])[:4]}"
            f"..., got {name!r:.40}"
        )
    with (
        keep_global_rng()
    ):  # building the module draws initial weights, overwritten below
        model = CardLookup(saved["info"][name]["num_heads"]).to(torch.float64)
    model.load_state_dict(saved["models"][name])
    return model.eval()


@lru_cache(maxsize=1)
def shipped_card_lookups() -> dict:
    """The shipped weight file's contents: ``models`` (run name -> state
    dict) and ``info`` (run name -> its recipe and final loss), after
    checking the file against its SHA-256."""
    return load_pinned(CARD_LOOKUP_FILE, CARD_LOOKUP_SHA256)


@torch.no_grad()
def lookup_report(
    model: CardLookup, num_hands: int = 2000, seed: int = 1
) -> dict:
    """Accuracy and where each head looks, on ``num_hands`` fresh hands (one
    question each).

    Returns ``digit_accuracy`` and ``colour_accuracy`` (floats) and, per head
    (tensors of shape (num_heads,)), the mean weight on the card named by the
    asked colour (``on_colour_card``) and on the card named by the asked digit
    (``on_digit_card``), both over the questions whose two named cards differ.
    """
    if not isinstance(model, CardLookup):
        raise TypeError(
            f"model must be a CardLookup, got {type(model).__name__}"
        )
    require_int("num_hands", num_hands)
    with torch_threads(1):
        batch = lookup_batch(num_hands, 1, seeded_generator(seed))
        digit_logits, colour_logits, weights = _run(model, batch)
    different = (batch["colour_card"] != batch["digit_card"])[:, 0]
    weights = weights[:, :, 0]  # (B, h, n)
    on_colour = weights.gather(
        2, batch["colour_card"][:, None].expand(-1, weights.shape[1], 1)
    )[..., 0]
    on_digit = weights.gather(
        2, batch["digit_card"][:, None].expand(-1, weights.shape[1], 1)
    )[..., 0]
    return {
        "digit_accuracy": (digit_logits.argmax(-1) == batch["digit_answer"])
        .float()
        .mean()
        .item(),
        "colour_accuracy": (colour_logits.argmax(-1) == batch["colour_answer"])
        .float()
        .mean()
        .item(),
        "on_colour_card": on_colour[different].mean(dim=0),
        "on_digit_card": on_digit[different].mean(dim=0),
    }


def card_label(colour: int, digit: int) -> str:
    """'red 7' for a card."""
    require_int_in("colour", colour, 0, len(COLOURS) - 1)
    require_int_in("digit", digit, 0, NUM_DIGITS - 1)
    return f"{COLOURS[colour]} {digit}"


def question_label(colour: int, digit: int) -> str:
    """'red? 7?' for a question: the digit on the red card, the colour of
    the card with 7."""
    require_int_in("colour", colour, 0, len(COLOURS) - 1)
    require_int_in("digit", digit, 0, NUM_DIGITS - 1)
    return f"{COLOURS[colour]}? {digit}?"


def without_heads(model: CardLookup, heads) -> CardLookup:
    """A copy of ``model`` whose attention layer drops the given heads.

    heads: a collection of head indices (0-based). The layer's output is
    Concat(head_1, ..., head_h) W^O = sum_i head_i W^O_i, so zeroing the
    block of d_k columns of ``out_proj.weight`` that reads head i removes
    exactly head i's term (the head mask xi_i = 0 of Michel et al. 2019);
    the other heads, the bias and the attention weights are unchanged. The
    copy is in eval mode; ``model`` is not modified.
    """
    if not isinstance(model, CardLookup):
        raise TypeError(
            f"model must be a CardLookup, got {type(model).__name__}"
        )
    num_heads = model.attention.num_heads
    if isinstance(heads, (str, bytes, torch.Tensor)) or not hasattr(
        heads, "__iter__"
    ):
        raise TypeError(
            "heads must be a collection of head indices, got "
            f"{type(heads).__name__}"
        )
    heads = list(heads)
    for head in heads:
        require_int_in("each head", head, 0, num_heads - 1)
    copy = deepcopy(model)  # no new weights drawn: the global RNG stays
    size = model.attention.head_dim
    with torch.no_grad():
        for head in heads:
            copy.attention.out_proj.weight[
                :, head * size : (head + 1) * size
            ] = 0
    return copy.eval()

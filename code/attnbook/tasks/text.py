"""Chapter 12's text: the corpus, a character-level tokenizer, the
train/held-out split, batches for next-character prediction, and the count
baselines (unigram, bigram) a language model must beat.

The corpus is the docstrings of Python's standard library (English written by
the Python developers, PSF licence; see ``attnbook.train.corpus`` for how it
was extracted), shipped as ``data/python_docstrings.txt.gz`` and pinned by
SHA-256. It holds one document per module; every tenth module (documents 9,
19, 29, ...) is held out, so no held-out sentence was ever seen in training,
not even a module's other docstrings.

Tokens are characters: newline and the 95 printable ASCII characters, 96
in all (``VOCAB``), id = position in ``VOCAB``.
"""

import gzip
import math

import torch

from .._checks import (
    is_finite_number,
    require_ids,
    require_int,
    require_tensor,
)
from .._memory import require_matrix_fits
from .._random import require_generator
from .._weights import read_pinned

CORPUS_FILE = "python_docstrings.txt.gz"
CORPUS_SHA256 = (
    "34b39f708f758aee46a5fac1219ce0351620b196de1d47c89a15dde4f5e2b6db"
)
DOCUMENT_SEPARATOR = "\f"
HELD_OUT_EVERY = 10  # documents 9, 19, 29, ... are held out
VOCAB = "\n" + "".join(chr(c) for c in range(32, 127))
TOKEN_ID = {c: i for i, c in enumerate(VOCAB)}
# byte value -> token id, -1 for bytes outside VOCAB (encode's fast path)
_BYTE_ID = torch.full((256,), -1, dtype=torch.int64)
_BYTE_ID[[ord(c) for c in VOCAB]] = torch.arange(len(VOCAB))
_SMALLER = "use a smaller batch_size, or"


def encode(text: str) -> torch.Tensor:
    """Token ids (n,) int64 of a string; ``ValueError`` names the first
    character outside ``VOCAB``."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    if text and text.isascii():  # fast path: one table look-up per byte
        raw = torch.frombuffer(
            bytearray(text.encode("ascii")), dtype=torch.uint8
        )
        ids = _BYTE_ID[raw.long()]
        if ids.min() >= 0:
            return ids
    try:  # the slow path names the first character outside VOCAB
        return torch.tensor([TOKEN_ID[c] for c in text], dtype=torch.int64)
    except KeyError as error:
        raise ValueError(
            f"character {error.args[0]!r} is not in the vocabulary (newline "
            "and printable ASCII)"
        ) from None


def decode(ids) -> str:
    """The string of token ids (n,) (a tensor or a list of ints)."""
    if isinstance(ids, torch.Tensor):
        ids = require_ids("ids", ids, len(VOCAB), dims=1).tolist()
    elif not isinstance(ids, (list, tuple, range)) or not all(
        isinstance(i, int) and not isinstance(i, bool) for i in ids
    ):
        raise TypeError(f"ids must be a tensor or a list of ints: {ids!r:.40}")
    bad = [i for i in ids if not 0 <= i < len(VOCAB)]
    if bad:
        raise ValueError(f"token id {bad[0]} is outside [0, {len(VOCAB)})")
    return "".join(VOCAB[i] for i in ids)


def corpus_documents() -> list:
    """The shipped corpus as a list of documents (str), one per module."""
    text = gzip.decompress(read_pinned(CORPUS_FILE, CORPUS_SHA256))
    return text.decode("ascii").split(DOCUMENT_SEPARATOR)


def split_documents(documents: list) -> tuple:
    """(train documents, held-out documents): every ``HELD_OUT_EVERY``-th
    document (index 9, 19, ...) is held out, the others train."""
    if not isinstance(documents, (list, tuple)):
        raise TypeError(
            f"documents must be a list, got {type(documents).__name__}"
        )
    held_out = [d for i, d in enumerate(documents) if i % HELD_OUT_EVERY == 9]
    train = [d for i, d in enumerate(documents) if i % HELD_OUT_EVERY != 9]
    return train, held_out


def corpus_split() -> tuple:
    """(train text, held-out text): each split's documents joined by a blank
    line, as two strings."""
    train, held_out = split_documents(corpus_documents())
    return "\n\n".join(train), "\n\n".join(held_out)


def text_batch(
    ids: torch.Tensor, batch_size: int, context_len: int, generator
) -> tuple:
    """A batch of windows for next-token prediction, drawn from ``generator``.

    ids: (N,) token ids of a text. Returns (inputs, targets), each
    (batch_size, context_len) int64: each target window is its input window
    one character later, so targets[:, t] = inputs[:, t + 1] and
    targets[b, t] is the character that follows inputs[b, : t + 1].
    """
    require_int("batch_size", batch_size)
    require_int("context_len", context_len)
    require_generator("generator", generator)
    require_tensor("ids", ids)
    require_matrix_fits(
        "the batch", (batch_size, context_len + 1), torch.int64, _SMALLER
    )
    if ids.dim() != 1 or len(ids) < context_len + 1:
        raise ValueError(
            f"ids must be (N,) with N > context_len = {context_len}, got "
            f"shape {tuple(ids.shape)}"
        )
    starts = torch.randint(
        len(ids) - context_len, (batch_size,), generator=generator
    )
    offsets = torch.arange(context_len + 1)
    windows = ids[starts[:, None] + offsets]  # (B, context_len + 1)
    return windows[:, :-1], windows[:, 1:]


# -- count baselines: what a model that ignores all but the last character
# (bigram) or every character (unigram) scores


def _check_held_out(held_out) -> None:
    if not isinstance(held_out, str) or len(held_out) < 2:
        raise ValueError(
            "held_out must be a str of at least 2 characters (the first is "
            f"context only), got {held_out!r:.40}"
        )


def unigram_bits_per_char(train: str, held_out: str) -> float:
    """Bits per character of add-one unigram counts from ``train`` on
    ``held_out[1:]``: p(c) = (count(c) + 1) / (N + V), V = 96."""
    _check_held_out(held_out)
    counts = torch.bincount(encode(train), minlength=len(VOCAB)).double()
    log_p = torch.log2((counts + 1) / (counts.sum() + len(VOCAB)))
    return -log_p[encode(held_out)[1:]].mean().item()


def bigram_bits_per_char(train: str, held_out: str) -> float:
    """Bits per character of add-one bigram counts from ``train`` on
    ``held_out[1:]``: p(b | a) = (count(a b) + 1) / (count(a .) + V)."""
    _check_held_out(held_out)
    ids = encode(train)
    pairs = ids[:-1] * len(VOCAB) + ids[1:]
    counts = torch.bincount(pairs, minlength=len(VOCAB) ** 2).double()
    counts = counts.view(len(VOCAB), len(VOCAB)) + 1
    log_p = torch.log2(counts / counts.sum(dim=1, keepdim=True))
    held = encode(held_out)
    return -log_p[held[:-1], held[1:]].mean().item()


def nats_to_bits(nats: float) -> float:
    """A cross-entropy in nats (torch's) in bits: divide by ln 2."""
    if not isinstance(nats, (torch.Tensor, float)) and not is_finite_number(
        nats
    ):
        raise ValueError(f"nats must be a number, got {nats!r:.40}")
    return nats / math.log(2)

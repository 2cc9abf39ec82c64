"""A BERT-style [CLS] classifier and the synthetic task it learns: "does A come
before B?".

Each sequence is ``[CLS]`` followed by 1..``max_len`` - 1 tokens: filler
letters, one ``A`` and one ``B`` at random places, then ``[PAD]`` up to a
common length. The label is 1 if A comes before B. The counts of every token
carry no information about the label (a bag of words scores 50 %): the model
must use order, and A and B may be far apart. The classifier reads the final
hidden state of ``[CLS]`` with a linear head, as BERT does.
"""

import copy
import time

import torch
import torch.nn.functional as F
from torch import nn

from .._checks import (
    require_float_dtype,
    require_ids,
    require_int,
    require_lengths,
    require_saved,
    require_tensor,
    require_text,
    require_training,
)
from .._memory import require_matrix_fits, require_weights_fit
from .._random import (
    keep_global_rng,
    require_generator,
    restores_rng_on_error,
    seeded,
)
from .._weights import load_pinned
from ..measure.threads import single_thread
from ..nn.encoder import TransformerEncoder

PAD, CLS, A, B = "[PAD]", "[CLS]", "A", "B"
# The chapter's model: train_order_classifier(**TRAINING_RECIPE), made by
# ``python -m attnbook.train.order_classifier`` and shipped, pinned by SHA-256.
TRAINING_RECIPE = {
    "steps": 250,
    "batch_size": 64,
    "lr": 3e-3,
    "seed": 0,
    "max_len": 24,
}
ORDER_CLASSIFIER_FILE = "order_classifier.pt"
ORDER_CLASSIFIER_SHA256 = (
    "6b166c5bbc6c2480ebf445e93cb3be87eb45dcc31c8c94ceb3516904a0cf2ff2"
)
FILLERS = tuple("cdefghij")
VOCAB = (PAD, CLS, A, B) + FILLERS
TOKEN_ID = {token: i for i, token in enumerate(VOCAB)}


def _check_batch_sizes(batch_size, max_len, min_len, generator) -> None:
    """Sizes of ``order_batch``: ints, the batch within the memory limit."""
    require_int("batch_size", batch_size)
    require_int("max_len", max_len)
    require_int("min_len", min_len)
    require_generator("generator", generator, allow_none=True)
    require_matrix_fits(
        "the batch", (batch_size, max_len), torch.int64, "make it smaller or"
    )


def _check_labels(model, tokens, labels) -> None:
    """model a CLSClassifier; tokens (B, n); labels (B,) integer classes."""
    if not isinstance(model, CLSClassifier):
        raise TypeError(
            f"model must be a CLSClassifier, got {type(model).__name__}"
        )
    require_tensor("tokens", tokens)
    require_ids("labels", labels, model.head.out_features, dims=1)
    if tokens.dim() != 2 or len(labels) != len(tokens):
        raise ValueError(
            f"labels must hold one class per sequence of tokens "
            f"{tuple(tokens.shape)}, got shape {tuple(labels.shape)}"
        )


def order_batch(
    batch_size: int, max_len: int = 24, min_len: int = 3, generator=None
):
    """A batch of the "A before B?" task.

    Returns tokens (batch_size, max_len) int64 with [CLS] at position 0 and
    [PAD] after each sequence, valid_lens (batch_size,) counting [CLS], and
    labels (batch_size,) int64: 1 if A comes before B, else 0. Each sequence
    has between ``min_len`` and ``max_len`` tokens (with [CLS]), exactly one A
    and one B. Drawn with ``generator`` (None: torch's global generator, as
    torch does).
    """
    _check_batch_sizes(batch_size, max_len, min_len, generator)
    if not 3 <= min_len <= max_len:
        raise ValueError(
            f"need 3 <= min_len <= max_len, got min_len={min_len}, max_len="
            f"{max_len}"
        )
    lens = torch.randint(
        min_len, max_len + 1, (batch_size,), generator=generator
    )
    fillers = torch.randint(
        len(VOCAB) - len(FILLERS),
        len(VOCAB),
        (batch_size, max_len),
        generator=generator,
    )
    positions = torch.arange(max_len)
    tokens = torch.where(positions < lens[:, None], fillers, TOKEN_ID[PAD])
    tokens[:, 0] = TOKEN_ID[CLS]
    # Two distinct places among 1 .. len-1: rank random keys, masked outside
    # the sequence.
    keys = torch.rand(batch_size, max_len, generator=generator)
    keys[(positions == 0) | (positions >= lens[:, None])] = 2.0
    first, second = keys.argsort(dim=1)[:, :2].unbind(dim=1)
    rows = torch.arange(batch_size)
    tokens[rows, first] = TOKEN_ID[A]
    tokens[rows, second] = TOKEN_ID[B]
    return tokens, lens, (first < second).long()


def training_sequences(
    steps: int, batch_size: int, seed: int, max_len: int = 24
) -> set:
    """Every sequence a training run on fresh batches sees, as tuples of ids.

    The stream of ``train_order_classifier(steps, batch_size, seed=seed)``
    and of the chapter's placement sweep: ``order_batch(batch_size,
    max_len)`` once per step, from a generator seeded ``seed + 1``. Each
    tuple holds the ids of one sequence, [CLS] included, padding left out.
    """
    require_int("steps", steps)
    require_int("seed", seed, minimum=0)
    require_matrix_fits(
        "the training sequences",
        (
            steps,
            require_int("batch_size", batch_size),
            require_int("max_len", max_len),
        ),
        torch.int64,
        "use fewer steps, or",
    )
    generator = torch.Generator().manual_seed(seed + 1)
    seen = set()
    for _ in range(steps):
        tokens, lens, _ = order_batch(batch_size, max_len, generator=generator)
        seen.update(_as_tuples(tokens, lens))
    return seen


def _as_tuples(tokens, lens) -> list:
    """One tuple of ids per row of tokens (B, n), cut at its length."""
    return [tuple(row[:n]) for row, n in zip(tokens.tolist(), lens.tolist())]


def held_out_batch(
    batch_size: int, exclude: set, max_len: int = 24, generator=None
):
    """``order_batch`` with no sequence from ``exclude``: evaluation data
    disjoint from training data.

    exclude: a set of id tuples, e.g. from ``training_sequences``. Draws
    batches of ``batch_size`` with ``generator`` (None: torch's global
    generator, as torch does) and keeps the sequences not in ``exclude``
    (nor already kept) until ``batch_size`` are kept. Returns
    tokens (batch_size, max_len), valid_lens (batch_size,), labels
    (batch_size,) as ``order_batch`` does.
    """
    if not isinstance(exclude, (set, frozenset)):
        raise TypeError(
            f"exclude must be a set of id tuples, got {type(exclude).__name__}"
        )
    kept, seen = [], set(exclude)
    for _ in range(100):  # every round keeps most of a batch
        batch = order_batch(batch_size, max_len, generator=generator)
        for i, sequence in enumerate(_as_tuples(*batch[:2])):
            if sequence not in seen and len(kept) < batch_size:
                seen.add(sequence)
                kept.append([part[i] for part in batch])
        if len(kept) == batch_size:
            return tuple(torch.stack(part) for part in zip(*kept))
    raise ValueError(
        f"could not draw {batch_size} sequences outside exclude "
        f"({len(exclude)} sequences) with max_len {max_len}"
    )


def encode(text: str, max_len: int = 64) -> torch.Tensor:
    """Token ids (n,) for a string such as "c d A e B" (spaces optional),
    [CLS] prepended."""
    require_text("text", text)
    require_int("max_len", max_len)
    symbols = [c for c in text if not c.isspace()]
    unknown = sorted(
        {c for c in symbols if c not in TOKEN_ID or c in (PAD, CLS)}
    )
    if unknown:
        raise ValueError(
            f"unknown tokens {unknown}; use A, B and the fillers "
            f"{' '.join(FILLERS)}"
        )
    if len(symbols) + 1 > max_len:
        raise ValueError(
            f"{len(symbols)} tokens plus [CLS] exceed max_len {max_len}"
        )
    return torch.tensor([TOKEN_ID[CLS]] + [TOKEN_ID[c] for c in symbols])


class CLSClassifier(nn.Module):
    """An encoder whose final [CLS] hidden state (position 0) feeds a linear
    head.

    tokens: (B, n) ids with [CLS] first; valid_lens: (B,) or None.
    Returns logits (B, num_classes), or (logits, weights) with the attention
    weights (num_layers, B, num_heads, n, n) if ``return_weights`` is True.
    """

    @restores_rng_on_error
    def __init__(
        self,
        vocab_size: int = len(VOCAB),
        embed_dim: int = 32,
        num_heads: int = 4,
        ffn_dim: int = 64,
        num_layers: int = 2,
        num_classes: int = 2,
        max_len: int = 64,
        dropout: float = 0.0,
    ):
        super().__init__()
        require_int("embed_dim", embed_dim)
        require_int("num_classes", num_classes)
        require_weights_fit("CLSClassifier's head", (num_classes, embed_dim))
        self.encoder = TransformerEncoder(
            vocab_size,
            embed_dim,
            num_heads,
            ffn_dim,
            num_layers,
            max_len,
            dropout,
        )
        self.head = nn.Linear(embed_dim, num_classes)

    def forward(self, tokens, valid_lens=None, return_weights=False):
        hidden, weights = self.encoder(tokens, valid_lens, return_weights=True)
        logits = self.head(hidden[:, 0])
        return (logits, weights) if return_weights else logits


def without_heads(model: "CLSClassifier", heads) -> "CLSClassifier":
    """A copy of ``model`` with the given heads removed (ablated).

    heads: (layer, head) pairs, both counted from 0. A head is removed by
    zeroing its columns of the block's output projection W^O, so its
    weighted values no longer reach the residual stream; everything else
    is unchanged. ``model`` itself is left alone.
    """
    if not isinstance(model, CLSClassifier):
        raise TypeError(
            f"model must be a CLSClassifier, got {type(model).__name__}"
        )
    if not isinstance(heads, (list, tuple, set)):
        raise TypeError(
            f"heads must be a list of (layer, head) pairs, got {heads!r:.40}"
        )
    blocks = model.encoder.blocks
    ablated = copy.deepcopy(model)
    for pair in heads:
        if not (
            isinstance(pair, tuple)
            and len(pair) == 2
            and all(isinstance(i, int) for i in pair)
        ):
            raise TypeError(
                f"heads must hold (layer, head) pairs of ints, got {pair!r}"
            )
        layer, head = pair
        if not (0 <= layer < len(blocks) and 0 <= head < blocks[0].num_heads):
            raise ValueError(
                f"no head {pair} in a model of {len(blocks)} layers of "
                f"{blocks[0].num_heads} heads"
            )
        attention = ablated.encoder.blocks[layer].self_attn
        size = attention.out_proj.in_features // blocks[0].num_heads
        with torch.no_grad():
            attention.out_proj.weight[:, head * size : (head + 1) * size] = 0
    return ablated


@torch.no_grad()
def accuracy(model: nn.Module, tokens, valid_lens, labels) -> float:
    """Fraction of sequences whose arg-max class equals the label.

    tokens: (B, n), valid_lens: (B,) or None, labels: (B,). The model reads
    the sequences 500 at a time: the same predictions, a third faster on a
    CPU (the attention weights of a few thousand sequences overflow its
    caches)."""
    _check_labels(model, tokens, labels)
    if valid_lens is not None:
        require_lengths("valid_lens", valid_lens, len(tokens), tokens.shape[1])
    model.eval()
    predicted = []
    for start in range(0, max(len(tokens), 1), 500):  # B = 0: one call
        part = slice(start, start + 500)
        lens = None if valid_lens is None else valid_lens[part]
        predicted.append(model(tokens[part], lens).argmax(dim=-1))
    return (torch.cat(predicted) == labels).float().mean().item()


def train_order_classifier(
    steps: int = 250,
    batch_size: int = 64,
    lr: float = 3e-3,
    seed: int = 0,
    max_len: int = 24,
    progress: bool = True,
    dtype: torch.dtype = torch.float64,
):
    """Train a seeded CLSClassifier on fresh batches of the "A before B?" task.

    Runs on one thread with Adam and a linear learning-rate decay; shows a tqdm
    bar if ``progress``. The arithmetic is in ``dtype``, float64 by default; a
    second run on the same machine repeats bit for bit, another CPU ends about
    1e-4 away (see ``pretrained_order_classifier``, the copy the chapter
    analyses). Returns (model in eval mode, history dict with per-step "loss"
    and "seconds").
    """
    from tqdm.auto import tqdm

    require_float_dtype("dtype", dtype)
    require_int("steps", steps)  # at least one: the history averages them
    require_training(steps=steps, batch_size=batch_size, lr=lr, seed=seed)
    require_int("max_len", max_len, minimum=3)
    history = {"loss": []}
    start = time.perf_counter()
    # seeds its own stream (threads wait); the reader's is restored after
    with single_thread(), seeded(seed):
        model = CLSClassifier(max_len=max_len).to(dtype)
        generator = torch.Generator().manual_seed(seed + 1)
        optimizer = torch.optim.Adam(model.parameters(), lr=lr)
        schedule = torch.optim.lr_scheduler.LambdaLR(
            optimizer, lambda step: 1 - step / steps
        )
        model.train()
        bar = tqdm(range(steps), desc="training", disable=not progress)
        for step in bar:
            tokens, lens, labels = order_batch(
                batch_size, max_len, generator=generator
            )
            loss = F.cross_entropy(model(tokens, lens), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
            history["loss"].append(loss.item())
            if step % 50 == 0:
                bar.set_postfix(loss=f"{loss.item():.3f}")
    history["seconds"] = time.perf_counter() - start
    return model.eval(), history


def pretrained_order_classifier():
    """The shipped result of ``train_order_classifier(**TRAINING_RECIPE)``:
    (model, history).

    The model is in eval mode (float64, as trained); history holds the per-step
    "loss". Training takes seconds, but it amplifies rounding: on another CPU
    the same call ends with weights about 1e-4 away, enough to move a printed
    third decimal. The chapter analyses this copy, the same on every CPU. Each
    call returns a new model; torch's global RNG is left alone.
    """
    return classifier_from(
        load_pinned(ORDER_CLASSIFIER_FILE, ORDER_CLASSIFIER_SHA256)
    )


def classifier_from(saved: dict):
    """(model in eval mode, history) from the dict
    ``python -m attnbook.train.order_classifier`` writes."""
    require_saved("saved", saved, "recipe", "state_dict", "losses")
    with (
        keep_global_rng()
    ):  # building the module draws initial weights, overwritten below
        model = CLSClassifier(max_len=saved["recipe"]["max_len"]).to(
            torch.float64
        )
    model.load_state_dict(saved["state_dict"])
    return model.eval(), {"loss": list(saved["losses"])}

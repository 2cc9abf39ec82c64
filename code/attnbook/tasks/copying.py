"""Chapter 5's bottleneck experiment: copy a string of random digits, with
and without attention (the shipped pair of models,
``python -m attnbook.train.bottleneck``)."""

import torch

from .._checks import require_int, require_lengths, require_training
from .._memory import require_matrix_fits
from .._random import require_generator, seeded, seeded_generator
from .._weights import load_pinned
from ..core.masking import lengths_to_mask
from ..nn.seq2seq import BOS, EOS, PAD, Seq2Seq, train_seq2seq

COPY_VOCAB_SIZE = 13  # PAD, BOS, EOS and the digits 0-9 (ids 3..12)
COPY_LENGTHS = (4, 30)  # the shortest and longest strings of the experiment
#: The two models of the experiment: the same recipe, about the same number of
#: parameters (95,549 with attention, 95,512 without: the plain model's H = 69
#: pays for the additive score).
BOTTLENECK_MODELS = {
    "attention": {
        "src_vocab_size": COPY_VOCAB_SIZE,
        "tgt_vocab_size": COPY_VOCAB_SIZE,
        "embed_dim": 16,
        "hidden_dim": 64,
        "attention": True,
        "attn_dim": 64,
    },
    "plain": {
        "src_vocab_size": COPY_VOCAB_SIZE,
        "tgt_vocab_size": COPY_VOCAB_SIZE,
        "embed_dim": 16,
        "hidden_dim": 69,
        "attention": False,
        "attn_dim": 69,
    },
}
#: How both were trained (``train_bottleneck_model``): Adam with a one-cycle
#: learning rate peaking at lr, batches of one length each, drawn uniformly
#: from COPY_LENGTHS; the shipped pair is seed 0.
BOTTLENECK_RECIPE = {"steps": 1200, "batch_size": 64, "lr": 3e-3, "seed": 0}
BOTTLENECK_FILE = "bottleneck_models.pt"
BOTTLENECK_SHA256 = (
    "4610213f9b07b8a4976c3abc9fbaf41af2e29c3cbb7592766ec9a16c98176949"
)


def copy_batch(batch_size: int, lengths, generator: torch.Generator):
    """A batch of the copying task: random digit strings, the target is the
    same string.

    lengths: one int, or a (batch_size,) tensor of lengths (each >= 1).
    Returns (src (B, n) ids 3..12 padded with 0, src_lengths (B,), tgt_in (B, n
    + 1) = BOS + src, tgt_out (B, n + 1) = src + EOS, padded with 0), n the
    longest length.
    """
    require_int("batch_size", batch_size)
    require_matrix_fits("the batch", (batch_size, 4), torch.int64)
    require_generator("generator", generator)
    if isinstance(lengths, int) and not isinstance(lengths, bool):
        lengths = torch.full(
            (batch_size,), require_int("lengths", lengths), dtype=torch.long
        )
    else:
        lengths = require_lengths("lengths", lengths, batch_size, 2**31 - 1)
    n = int(lengths.max())
    require_matrix_fits(
        "the batch",
        (batch_size, n + 1),
        torch.int64,
        hint="use shorter strings, or",
    )
    digits = torch.randint(3, 13, (batch_size, n), generator=generator)
    keep = lengths_to_mask(lengths, n)
    src = digits.masked_fill(~keep, PAD)
    tgt_out = torch.cat([src, torch.zeros(batch_size, 1, dtype=torch.long)], 1)
    tgt_out[torch.arange(batch_size), lengths] = EOS
    tgt_in = torch.cat(
        [torch.full((batch_size, 1), BOS, dtype=torch.long), src], 1
    )
    return src, lengths, tgt_in, tgt_out


@torch.no_grad()
def copied_exactly(
    model: Seq2Seq, length: int, num_sequences: int = 500, seed: int = 0
) -> torch.Tensor:
    """A (num_sequences,) bool tensor: which of ``num_sequences`` fresh digit
    strings of ``length`` (drawn from ``seed``) the model copies exactly
    (greedy, EOS included)."""
    if not isinstance(model, Seq2Seq):
        raise TypeError(f"model must be a Seq2Seq, got {type(model).__name__}")
    require_int("length", length)
    require_int("num_sequences", num_sequences)
    require_int("seed", seed, minimum=0)
    require_matrix_fits(
        "num_sequences strings of length + 1 tokens",
        (num_sequences, length + 1),
        torch.int64,
        hint="use fewer or shorter strings, or",
    )
    src, lengths, _, tgt_out = copy_batch(
        num_sequences, length, seeded_generator(seed)
    )
    tokens, _ = model.eval().greedy_decode(src, lengths, max_steps=length + 1)
    if tokens.shape[1] < tgt_out.shape[1]:
        return torch.zeros(num_sequences, dtype=torch.bool)
    return (tokens[:, : tgt_out.shape[1]] == tgt_out).all(1)


def copy_accuracy(
    model: Seq2Seq, length: int, num_sequences: int = 500, seed: int = 0
) -> float:
    """Share of ``num_sequences`` fresh digit strings of ``length`` copied
    exactly (greedy, EOS included)."""
    hits = copied_exactly(model, length, num_sequences, seed)
    return hits.float().mean().item()


def train_bottleneck_model(
    name: str,
    seed: int,
    steps: int = BOTTLENECK_RECIPE["steps"],
    log_every: int = 0,
) -> tuple:
    """Train model ``name`` of ``BOTTLENECK_MODELS`` as the shipped pair was
    trained (``BOTTLENECK_RECIPE``), from ``seed``: initial weights and
    batches both come from it, and one seed gives both models the very same
    batches. ``steps`` other than 1,200 stretches the one-cycle schedule over
    the new length (the first batches stay the same). Prints the loss every
    ``log_every`` steps (0: never). Leaves torch's global random state as it
    was. Returns (the model, in eval mode, the list of losses)."""
    if not isinstance(name, str) or name not in BOTTLENECK_MODELS:
        raise ValueError(
            f"name must be one of {list(BOTTLENECK_MODELS)}, got {name!r:.40}"
        )
    require_training(steps=steps, seed=seed)
    low, high = COPY_LENGTHS

    def make_batch(generator):
        n = int(torch.randint(low, high + 1, (1,), generator=generator))
        return copy_batch(BOTTLENECK_RECIPE["batch_size"], n, generator)

    with seeded(seed):
        model = Seq2Seq(**BOTTLENECK_MODELS[name])
    losses = train_seq2seq(
        model, make_batch, steps, BOTTLENECK_RECIPE["lr"], seed, log_every
    )
    return model.eval(), losses


def pretrained_bottleneck_models() -> dict:
    """{"attention": Seq2Seq, "plain": Seq2Seq}: chapter 5's trained copying
    models (``python -m attnbook.train.bottleneck``), checked against the
    pinned SHA-256."""
    saved = load_pinned(BOTTLENECK_FILE, BOTTLENECK_SHA256)
    models = {}
    for name, entry in saved["models"].items():
        with torch.random.fork_rng(devices=[]):
            model = Seq2Seq(**entry["config"])
        model.load_state_dict(entry["state_dict"])
        models[name] = model.eval()
    return models


@torch.no_grad()
def copy_accuracies(
    models: dict, lengths, num_sequences: int = 200, seed: int = 20_000
) -> dict:
    """{name: [exact-match accuracy at each length]} on fresh strings (seed
    + length), one thread."""
    from ..measure.threads import single_thread

    require_int("seed", seed, minimum=0)
    if not isinstance(models, dict):
        raise TypeError(
            f"models must be a dict {{name: Seq2Seq}}, got "
            f"{type(models).__name__}"
        )
    lengths = (
        list(lengths) if isinstance(lengths, (list, tuple, range)) else lengths
    )
    if not isinstance(lengths, list):
        raise TypeError(f"lengths must be a list of ints, got {lengths!r}")
    for n in lengths:
        require_int("every length", n)
    with single_thread():
        return {
            name: [
                copy_accuracy(model, n, num_sequences, seed + n)
                for n in lengths
            ]
            for name, model in models.items()
        }


# ----------------------------------------------------------------------------
# The date translator.

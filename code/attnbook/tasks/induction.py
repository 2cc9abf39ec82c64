"""Chapter 14's induction task: random tokens whose later part repeats an
earlier segment, and the attention-only models trained on it.

A sequence of ``seq_len`` tokens holds random filler, then a random segment
of ``period`` tokens starting at ``offset``, then that segment again and
again until the end: token i equals token i - period for every
i >= offset + period. Those tokens are predictable (from the copy before
them); the filler and the first copy are not. The loss is measured on the
predictable tokens only, in nats; a model that has not found the repeat can
do no better than chance, ln(vocab_size).

With ``offset="fixed"`` every sequence starts its segment at 0, so the
repeated part always occupies the same positions; ``offset="random"`` draws
the start per sequence (after random filler). A random offset alone does not
force an induction head: with one period P for every sequence, one layer
learns to attend P - 1 positions back (a lag it can read off the learned
position embeddings) and solves the task by position (measured: a 1-layer
model at P = 16, random offsets, below 0.01 nats by step 700). The trap is
closed by drawing P per sequence from a range (``TASK["period"]``): no single
lag works, and only a head that finds the earlier occurrence of the current
token (which needs a head of the layer before) predicts the repeat.

``train_induction(**TRAINING_RECIPE, num_layers=2)`` is what
``python -m attnbook.train.induction`` runs; the 2-layer model at several
checkpoints and the 1-layer control ship as ``data/induction_models.pt``,
pinned by SHA-256, loaded by ``pretrained_induction_models()``.
"""

import math
import time

import torch
import torch.nn.functional as F

from .._checks import (
    require_dict_or_none,
    require_float,
    require_ids,
    require_int,
    require_saved,
    require_tensor,
    require_training,
)
from .._memory import require_matrix_fits
from .._random import keep_global_rng, require_generator
from .._weights import load_pinned
from ..measure.threads import single_thread
from ..nn.attention_only import AttentionOnlyTransformer

INDUCTION_FILE = "induction_models.pt"
INDUCTION_SHA256 = (
    "b96663eed12f6c4141c654a455bcaac23c44fda77b44f5f1478a0b20dfd70e31"
)
TASK = {"vocab_size": 64, "period": (8, 24), "seq_len": 64}
MODEL_CONFIG = {"embed_dim": 64, "num_heads": 4}
TRAINING_RECIPE = {
    "steps": 3000,
    "batch_size": 32,
    "lr": 3e-3,
    "weight_decay": 0.01,
    "seed": 0,
}
# the seeds of ``attnbook.train.induction_seeds`` (seed 0 is the main run)
INDUCTION_SEEDS_FILE = "induction_seeds.pt"
INDUCTION_SEEDS_SHA256 = (
    "09e7cfd640b485d7c4f769edcd26fccfd77636d8d0e5e1e07178ce91915714c2"
)
SEEDS = (1, 2, 3, 4)
# the steps at which the 2-layer model is kept: dense around its phase change
CHECKPOINTS = (0, 250, 500, 600, 700, 800, 1000, 1500, 3000)
OFFSETS = ("random", "fixed")


def repeated_batch(
    batch_size: int,
    period,
    seq_len: int,
    vocab_size: int,
    generator: torch.Generator,
    offset: str = "random",
):
    """A batch of sequences whose later part repeats an earlier segment.

    period: P, an int >= 1 (every sequence repeats with period P), or a
        pair (low, high) of ints: each sequence draws its own P uniformly
        from low .. high. With one P a single layer can learn the lag
        (attend P - 1 keys back, by position) and needs no induction head;
        with a range of P it cannot.
    offset: "random" (the segment's start drawn uniformly from
        0 .. seq_len - 2 P per sequence, random filler before it, so every
        sequence has at least P predictable tokens) or "fixed" (start 0:
        the sequence is periodic from its first token).
    seq_len must be at least 2 * the largest P. All draws come from
    ``generator``.

    Returns (tokens (B, seq_len) int64 in [0, vocab_size), predictable
    (B, seq_len) bool): predictable[b, i] is True for i >= start + P + 1,
    where token i repeats token i - P and token i - 1 has occurred before
    (at i - 1 - P), so the token after that occurrence says what comes
    next. Token start + P repeats too, but nothing before it says that the
    segment has ended: it is not marked.
    """
    require_int("batch_size", batch_size)
    low, high = _periods(period)
    require_int("seq_len", seq_len, minimum=2)
    require_int("vocab_size", vocab_size, minimum=2)
    require_generator("generator", generator)
    _check_offset(offset)
    if seq_len < 2 * high:
        raise ValueError(
            f"seq_len ({seq_len}) must be at least 2 * period "
            f"({2 * high}): the segment and one full repeat"
        )
    require_matrix_fits(
        "the batch",
        (batch_size, seq_len),
        torch.int64,
        "use a smaller one, or",
    )
    tokens = torch.randint(
        vocab_size, (batch_size, seq_len), generator=generator
    )
    periods = torch.randint(
        low, high + 1, (batch_size, 1), generator=generator
    )
    if offset == "random":
        room = seq_len - 2 * periods + 1  # starts 0 .. seq_len - 2 P
        start = (torch.rand(batch_size, 1, generator=generator) * room).long()
    else:
        start = torch.zeros(batch_size, 1, dtype=torch.int64)
    positions = torch.arange(seq_len)
    predictable = positions > start + periods
    # position i >= start copies start + (i - start) % P
    source = torch.where(
        positions >= start, start + (positions - start) % periods, positions
    )
    return tokens.gather(1, source), predictable


def _check_offset(offset) -> None:
    if offset not in OFFSETS:
        raise ValueError(
            f"offset must be 'random' or 'fixed', got {offset!r:.40}"
        )


def _periods(period) -> tuple:
    """(low, high) of an int period or a pair of ints."""
    if isinstance(period, tuple) and len(period) == 2:
        low = require_int("period's low end", period[0])
        high = require_int("period's high end", period[1])
        if low > high:
            raise ValueError(f"period must be (low, high), got {period}")
        return low, high
    if isinstance(period, (list, tuple)):
        raise ValueError(
            f"period must be an int or a pair (low, high), got {period!r:.40}"
        )
    require_int("period", period)
    return period, period


def predictable_loss(logits, tokens, predictable) -> torch.Tensor:
    """Cross-entropy in nats of logits[:, i - 1] against token i, averaged
    over the predictable tokens i (``repeated_batch``'s mask)."""
    require_float("logits", logits)
    if logits.dim() != 3 or logits.shape[-1] == 0:
        raise ValueError(
            "logits must have shape (B, n, vocab) with vocab >= 1, got "
            f"{tuple(logits.shape)}"
        )
    require_ids("tokens", tokens, logits.shape[-1], dims=2)
    if tokens.dtype != torch.int64:
        raise TypeError(f"tokens must be int64, got {tokens.dtype}")
    require_tensor("predictable", predictable)
    if predictable.dtype != torch.bool or predictable.shape != tokens.shape:
        raise ValueError(
            "predictable must be a bool tensor shaped like tokens "
            f"{tuple(tokens.shape)}, got {predictable.dtype} "
            f"{tuple(predictable.shape)}"
        )
    if logits.shape[:2] != tokens.shape:
        raise ValueError(
            "logits must have shape (B, n, vocab) with (B, n) = "
            f"{tuple(tokens.shape)}, got {tuple(logits.shape)}"
        )
    keep = predictable[:, 1:]
    if not keep.any():
        raise ValueError("predictable marks no token after the first")
    return F.cross_entropy(logits[:, :-1][keep], tokens[:, 1:][keep])


def train_induction(
    num_layers: int = 2,
    steps: int = 3000,
    batch_size: int = 32,
    lr: float = 3e-3,
    weight_decay: float = 0.01,
    seed: int = 0,
    offset: str = "random",
    checkpoints=(),
    task: dict | None = None,
    config: dict | None = None,
    progress: bool = False,
):
    """Train a seeded ``AttentionOnlyTransformer`` on fresh
    ``repeated_batch``es, float32 on one thread, AdamW with gradient
    clipping at 1, on the loss of the predictable tokens.

    checkpoints: the steps (0 .. steps) after which a copy of the weights is
    kept (step 0: the initial weights). task, config: override ``TASK`` and
    ``MODEL_CONFIG``. Returns (model in eval mode, history dict with the
    per-step "loss" in nats and "seconds", dict step -> state_dict). Torch's
    global random state is left as it was.
    """
    require_int("num_layers", num_layers)
    require_training(
        steps=steps,
        batch_size=batch_size,
        lr=lr,
        weight_decay=weight_decay,
        seed=seed,
    )
    _check_offset(offset)
    if not isinstance(checkpoints, (list, tuple, set, range)):
        raise TypeError(
            f"checkpoints must be a list of steps, got {checkpoints!r:.40}"
        )
    keep_at = set()
    for step in checkpoints:
        require_int("a checkpoint step", step, minimum=0)
        if step > steps:
            raise ValueError(
                f"checkpoint step {step} is beyond steps = {steps}"
            )
        keep_at.add(step)
    task = {**TASK, **require_dict_or_none("task", task)}
    config = {**MODEL_CONFIG, **require_dict_or_none("config", config)}
    history, saved = {"loss": []}, {}
    start = time.perf_counter()
    with single_thread(), keep_global_rng():
        torch.manual_seed(seed)
        model = build_model(num_layers, task, config)
        generator = torch.Generator().manual_seed(seed + 1)
        optimizer = torch.optim.AdamW(
            model.parameters(), lr=lr, weight_decay=weight_decay
        )
        model.train()
        if 0 in keep_at:
            saved[0] = _copy(model)
        for step in range(1, steps + 1):
            tokens, predictable = repeated_batch(
                batch_size,
                task["period"],
                task["seq_len"],
                task["vocab_size"],
                generator,
                offset,
            )
            loss = predictable_loss(model(tokens), tokens, predictable)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            history["loss"].append(loss.item())
            if step in keep_at:
                saved[step] = _copy(model)
            if progress and step % 100 == 0:
                print(f"step {step:5d}: loss {loss.item():.3f} nats")
    history["seconds"] = time.perf_counter() - start
    return model.eval(), history, saved


def build_model(num_layers: int, task: dict, config: dict):
    """A fresh ``AttentionOnlyTransformer`` for ``task`` (its vocab_size and
    seq_len) with ``config``'s sizes, drawn from torch's global generator."""
    require_saved("task", task, "vocab_size", "seq_len")
    require_saved("config", config, "embed_dim", "num_heads")
    return AttentionOnlyTransformer(
        task["vocab_size"],
        task["seq_len"],
        config["embed_dim"],
        config["num_heads"],
        num_layers,
    )


@torch.no_grad()
def evaluate(
    model,
    batches: int = 8,
    batch_size: int = 64,
    seed: int = 12345,
    offset: str = "random",
) -> float:
    """The mean loss in nats on the predictable tokens of ``batches`` fresh
    batches drawn with a generator seeded ``seed`` (global state unused)."""
    if not isinstance(model, AttentionOnlyTransformer):
        raise TypeError(
            "model must be an AttentionOnlyTransformer, got "
            f"{type(model).__name__}"
        )
    require_int("batches", batches)
    require_training(batch_size=batch_size, seed=seed)
    require_matrix_fits(
        "the evaluation tokens",
        (batches, batch_size, TASK["seq_len"]),
        torch.int64,
        "use fewer batches, or",
    )
    generator = torch.Generator().manual_seed(seed)
    period = TASK["period"]
    total = 0.0
    with single_thread():
        for _ in range(batches):
            tokens, predictable = repeated_batch(
                batch_size,
                period,
                model.context_len,
                model.vocab_size,
                generator,
                offset,
            )
            total += predictable_loss(model(tokens), tokens, predictable)
    return float(total) / batches


def chance_loss(vocab_size: int = TASK["vocab_size"]) -> float:
    """ln(vocab_size): the loss of a uniform guess, in nats."""
    return math.log(require_int("vocab_size", vocab_size))


def _copy(model) -> dict:
    return {
        name: tensor.detach().clone()
        for name, tensor in model.state_dict().items()
    }


def models_from(saved: dict) -> dict:
    """The models (eval mode) stored by the training script:
    {"two_layer": {step: model}, "one_layer": model}."""
    require_saved("saved", saved, "task", "config", "checkpoints", "one_layer")
    task, config = saved["task"], saved["config"]

    def load(layers, state_dict):
        # the initial weights are drawn, then overwritten: the caller's
        # stream is left as it was
        with keep_global_rng():
            model = build_model(layers, task, config)
        model.load_state_dict(state_dict)
        return model.eval()

    return {
        "two_layer": {
            step: load(2, state)
            for step, state in sorted(saved["checkpoints"].items())
        },
        "one_layer": load(1, saved["one_layer"]),
    }


def pretrained_induction_models():
    """The shipped result of ``python -m attnbook.train.induction``, checked
    against its pinned SHA-256.

    Returns (models, history): models = {"two_layer": {step: model},
    "one_layer": model}, every model an ``AttentionOnlyTransformer`` in eval
    mode (the 2-layer model at each of ``CHECKPOINTS``, the 1-layer control
    at the end); history = {"two_layer": losses, "one_layer": losses (lists
    of per-step training losses in nats), "recipe", "task", "config"}.
    Torch's global random state is left as it was.
    """
    saved = load_pinned(INDUCTION_FILE, INDUCTION_SHA256)
    history = {
        name: saved["losses"][name].tolist()
        for name in ("two_layer", "one_layer")
    }
    history.update(
        recipe=saved["recipe"], task=saved["task"], config=saved["config"]
    )
    return models_from(saved), history


def pretrained_induction_seeds() -> dict:
    """The shipped result of ``python -m attnbook.train.induction_seeds``,
    checked against its pinned SHA-256: the recipe of the main run with the
    seeds ``SEEDS`` (seed 0 is ``pretrained_induction_models``).

    Returns {seed: {"two_layer": model, "one_layer": model, "losses":
    {"two_layer": list, "one_layer": list}}}: the final models of each seed
    (``AttentionOnlyTransformer``s in eval mode) and their per-step training
    losses in nats. Torch's global random state is left as it was.
    """
    saved = load_pinned(INDUCTION_SEEDS_FILE, INDUCTION_SEEDS_SHA256)
    require_saved(
        "saved", saved, "seeds", "task", "config", "two_layer", "one_layer"
    )

    def load(layers, state_dict):
        with keep_global_rng():
            model = build_model(layers, saved["task"], saved["config"])
        model.load_state_dict(state_dict)
        return model.eval()

    return {
        seed: {
            "two_layer": load(2, saved["two_layer"][seed]),
            "one_layer": load(1, saved["one_layer"][seed]),
            "losses": {
                name: saved["losses"][name][seed].tolist()
                for name in ("two_layer", "one_layer")
            },
        }
        for seed in saved["seeds"]
    }

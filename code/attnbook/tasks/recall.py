"""Chapter 18's recall lab: multi-query associative recall (MQAR, Zoology,
Arora et al. 2023) learned by small models with each token mixer.

A sequence holds P key-value pairs, then the P keys again in a new order:

    k_1 v_1 k_2 v_2 ... k_P v_P | q_1 q_2 ... q_P      (3P tokens)

Keys are P distinct tokens of 0 .. num_keys - 1, values tokens of
num_keys .. num_keys + num_values - 1 drawn independently; each query q_j
is one of the keys, and the model's output at q_j must be that key's
value. The loss and the accuracy count only these P answers.

Training cycles through ``PAIRS`` (batch i has PAIRS[i % len(PAIRS)]
pairs) from a generator seeded ``seed + 1`` (seeds 0, 1, ...); evaluation
draws from generators seeded ``EVAL_SEED + P``, far from every training
seed, and a test checks that no evaluation sequence occurs in training.

``python -m attnbook.train.recall`` trains every model of ``MODELS`` (and
the fixed-state models of ``STATE_SWEEP`` with smaller query-key features,
``KEY_DIMS``, which shrinks their state) with ``TRAINING_RECIPE`` for
``SEEDS`` and ships the accuracies and learning curves as
``data/recall.json`` (pinned, ``RECALL_SHA256``).
"""

import json
import time

import torch
import torch.nn.functional as F

from .._checks import (
    require_dict_or_none,
    require_float,
    require_float_dtype,
    require_int,
    require_int_in,
    require_tensor,
    require_training,
)
from .._memory import require_matrix_fits
from .._random import keep_global_rng, require_generator
from .._weights import read_pinned
from ..measure.threads import single_thread
from ..nn.recall_model import RecallModel

RESULTS_FILE = "recall.json"
RECALL_SHA256 = (
    "fc4e075ad4dc99fe01775d72d1439dae34bdab65d15f0a336556d6d5c7c57c7f"
)
TASK = {"num_keys": 64, "num_values": 64}
VOCAB_SIZE = TASK["num_keys"] + TASK["num_values"]
PAIRS = (4, 8, 16, 32)
MODELS = {
    "softmax": ("softmax", "softmax"),
    "sliding_window": ("sliding_window", "sliding_window"),
    "linear": ("linear", "linear"),
    "deltanet": ("deltanet", "deltanet"),
    "gated_deltanet": ("gated_deltanet", "gated_deltanet"),
    "hybrid": ("gated_deltanet", "softmax"),
}
MODEL_CONFIG = {"dim": 64, "num_heads": 2, "window": 16, "chunk_size": 16}
KEY_DIMS = (8, 16, 32)  # 32 = dim // num_heads, every model's default
STATE_SWEEP = ("linear",)
TRAINING_RECIPE = {
    "steps": 300,
    "batch_size": 32,
    "lr": 3e-3,
    "weight_decay": 0.01,
}
SEEDS = (0, 1, 2)
EVAL_SEED = 1_000_000
EVAL_SEQUENCES = 256
CURVE_EVERY = 100  # steps between two points of a learning curve


def recall_batch(
    batch_size: int,
    pairs: int,
    generator: torch.Generator,
    num_keys: int = TASK["num_keys"],
    num_values: int = TASK["num_values"],
):
    """(tokens, targets), both (batch_size, 3 * pairs) int64: the sequences
    above, with keys 0 .. num_keys - 1 and values num_keys .. num_keys +
    num_values - 1 (``TASK``'s by default); targets[b, t] is the value the
    output at t must name for the P query positions t, and -1 (no loss)
    elsewhere."""
    require_int("batch_size", batch_size)
    require_int("pairs", pairs)
    require_int("num_keys", num_keys)
    require_int("num_values", num_values)
    require_generator("generator", generator)
    if pairs > num_keys:
        raise ValueError(
            f"pairs = {pairs} needs at most num_keys = {num_keys} distinct "
            "keys"
        )
    require_matrix_fits(
        "the batch (keys and tokens)",
        (batch_size, num_keys + 3 * pairs),
        torch.int64,
        "use a smaller one, or",
    )
    keys = torch.rand(batch_size, num_keys, generator=generator)
    keys = keys.argsort(dim=1)[:, :pairs]  # P distinct keys per row
    values = num_keys + torch.randint(
        num_values, (batch_size, pairs), generator=generator
    )
    order = torch.rand(batch_size, pairs, generator=generator).argsort(dim=1)
    queries = keys.gather(1, order)
    answers = values.gather(1, order)
    context = torch.stack([keys, values], dim=2).flatten(1)  # k v k v ...
    tokens = torch.cat([context, queries], dim=1)
    targets = torch.full_like(tokens, -1)
    targets[:, 2 * pairs :] = answers
    return tokens, targets


def recall_loss(logits, targets) -> torch.Tensor:
    """Cross-entropy in nats over the answer positions (targets >= 0).

    logits (B, n, vocab), targets (B, n) int64 with -1 where no answer."""
    require_float("logits", logits)
    require_tensor("targets", targets)
    if (
        logits.dim() != 3
        or targets.shape != logits.shape[:2]
        or targets.dtype != torch.int64
        or not (targets < logits.shape[-1]).all()
    ):
        raise ValueError(
            "logits must be (B, n, vocab) and targets (B, n) int64 ids "
            f"below vocab or -1, got {tuple(logits.shape)} and "
            f"{tuple(targets.shape)} {targets.dtype}"
        )
    keep = targets >= 0
    return F.cross_entropy(logits[keep], targets[keep])


def build_model(
    name: str,
    key_dim: int | None = None,
    config: dict | None = None,
    task: dict | None = None,
) -> RecallModel:
    """A fresh model ``MODELS[name]`` (or, for a tuple or list, a model
    with those mixers) with ``MODEL_CONFIG`` (updated by config) and
    ``key_dim`` query-key features per head (None: dim // num_heads), for
    the vocabulary of ``TASK`` (updated by task), drawn from torch's global
    generator."""
    if isinstance(name, (tuple, list)):
        mixers = tuple(name)
    elif name in MODELS:
        mixers = MODELS[name]
    else:
        raise ValueError(
            f"name must be one of {tuple(MODELS)} or a tuple of mixers, "
            f"got {name!r:.40}"
        )
    config = {**MODEL_CONFIG, **require_dict_or_none("config", config)}
    task = _task(task)
    vocab_size = task["num_keys"] + task["num_values"]
    return RecallModel(mixers, vocab_size, key_dim=key_dim, **config)


def _task(task) -> dict:
    task = {**TASK, **require_dict_or_none("task", task)}
    if set(task) != set(TASK):
        raise ValueError(
            f"task may set only {sorted(TASK)}, got {sorted(task)}"
        )
    return task


def train_recall(
    name: str,
    key_dim: int | None = None,
    seed: int = 0,
    steps: int = 300,
    batch_size: int = 32,
    lr: float = 3e-3,
    weight_decay: float = 0.01,
    config: dict | None = None,
    dtype: torch.dtype = torch.float32,
    curve_every: int | None = None,
    pairs=PAIRS,
    task: dict | None = None,
):
    """Train a seeded ``build_model(name, key_dim, config, task)`` in
    ``dtype`` on batches cycling through ``pairs`` (P of each batch in
    turn), AdamW with gradient clipping at 1, on one thread. Returns
    (model in eval mode, per-step losses in nats, learning curve): the
    curve lists [step, held-out accuracy at the
    largest P] every ``curve_every`` steps (empty when None). Torch's
    global random state is left as it was."""
    require_training(
        steps=steps, batch_size=batch_size, lr=lr, weight_decay=weight_decay
    )
    require_int("seed", seed, minimum=0)
    require_float_dtype("dtype", dtype)
    if curve_every is not None:
        require_int("curve_every", curve_every)
    pairs = _check_pairs(pairs)
    task = _task(task)
    with single_thread(), keep_global_rng():
        torch.manual_seed(seed)
        model = build_model(name, key_dim, config, task).to(dtype)
        generator = torch.Generator().manual_seed(seed + 1)
        optimizer = torch.optim.AdamW(
            model.parameters(), lr=lr, weight_decay=weight_decay
        )
        losses, curve = [], []
        for step in range(1, steps + 1):
            model.train()
            size = pairs[(step - 1) % len(pairs)]
            tokens, targets = recall_batch(batch_size, size, generator, **task)
            loss = recall_loss(model(tokens), targets)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            losses.append(loss.item())
            if curve_every and step % curve_every == 0:
                model.eval()
                accuracy = recall_accuracy(model, max(pairs), task=task)
                curve.append([step, accuracy])
    return model.eval(), losses, curve


def _check_pairs(pairs) -> tuple:
    if isinstance(pairs, int) or not isinstance(pairs, (tuple, list)):
        raise TypeError(
            "pairs must be a tuple or list of pair counts, got "
            f"{type(pairs).__name__}"
        )
    if not pairs:
        raise ValueError("pairs must hold at least one pair count")
    for size in pairs:
        require_int_in("pairs", size, 1, 10**6)
    return tuple(pairs)


def eval_generator(pairs: int) -> torch.Generator:
    """The generator of the evaluation sequences with ``pairs`` pairs."""
    require_int("pairs", pairs)
    return torch.Generator().manual_seed(EVAL_SEED + pairs)


def evaluation_batch(
    pairs: int, sequences: int = EVAL_SEQUENCES, task: dict | None = None
):
    """The held-out (tokens, targets) with ``pairs`` pairs (``TASK``'s
    vocabulary, updated by task)."""
    return recall_batch(sequences, pairs, eval_generator(pairs), **_task(task))


@torch.no_grad()
def recall_accuracy(
    model,
    pairs: int,
    sequences: int = EVAL_SEQUENCES,
    task: dict | None = None,
):
    """The fraction of held-out queries whose most likely output is the
    right value (``evaluation_batch(pairs, sequences, task)``)."""
    if not isinstance(model, torch.nn.Module):
        raise TypeError(
            "model must be a module (tokens -> logits), got "
            f"{type(model).__name__}"
        )
    tokens, targets = evaluation_batch(pairs, sequences, task)
    keep = targets >= 0
    with single_thread():
        guess = model(tokens).argmax(-1)
    return float((guess == targets)[keep].float().mean())


def run_model(name: str, key_dim: int, seed: int) -> dict:
    """Train one model with ``key_dim`` query-key features per head and
    one seed, and evaluate it at every P of ``PAIRS``: what the training
    script runs per process. Returns a JSON-ready dict."""
    start = time.process_time()
    model, losses, curve = train_recall(
        name, key_dim, seed, **TRAINING_RECIPE, curve_every=CURVE_EVERY
    )
    tail = losses[-len(PAIRS) * 10 :]
    return {
        "model": name,
        "key_dim": key_dim,
        "seed": seed,
        "final_loss": sum(tail) / len(tail),
        "accuracy": {p: recall_accuracy(model, p) for p in PAIRS},
        "curve": curve,
        "state_numbers": {p: model.state_numbers(3 * p) for p in PAIRS},
        "parameters": sum(p.numel() for p in model.parameters()),
        "cpu_seconds": time.process_time() - start,
    }


def shipped_runs() -> list:
    """The (model, key_dim, seed) of every run the training script makes:
    every model at the default key_dim, the ``STATE_SWEEP`` models also at
    the smaller ``KEY_DIMS``."""
    default = KEY_DIMS[-1]
    main = [(name, default, seed) for seed in SEEDS for name in MODELS]
    sweep = [
        (name, k, seed)
        for seed in SEEDS
        for name in STATE_SWEEP
        for k in KEY_DIMS[:-1]
    ]
    return main + sweep


def pretrained_results() -> dict:
    """The shipped ``data/recall.json`` (checked against its pinned
    SHA-256): task, recipe, seeds and every accuracy."""
    return json.loads(read_pinned(RESULTS_FILE, RECALL_SHA256))


def chance_accuracy() -> float:
    """1 / num_values: a uniform guess among the values."""
    return 1 / TASK["num_values"]

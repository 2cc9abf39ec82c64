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

``python -m attnbook.train.recall`` trains every model of ``MODELS`` at
every width of ``WIDTHS`` with ``TRAINING_RECIPE`` for ``SEEDS`` and ships
the accuracies as ``data/recall.json`` (pinned, ``RECALL_SHA256``).
"""

import json
import time

import torch
import torch.nn.functional as F

from .._checks import (
    keep_global_rng,
    require_generator,
    require_int,
    require_training,
)
from .._weights import read_pinned
from ..measure.threads import single_thread
from ..nn.recall_model import RecallModel

RESULTS_FILE = "recall.json"
RECALL_SHA256 = ""
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
MODEL_CONFIG = {"num_heads": 2, "window": 16, "chunk_size": 16}
WIDTHS = (16, 32, 64)
TRAINING_RECIPE = {
    "steps": 400,
    "batch_size": 32,
    "lr": 3e-3,
    "weight_decay": 0.01,
}
SEEDS = (0, 1, 2)
EVAL_SEED = 1_000_000
EVAL_SEQUENCES = 256


def recall_batch(batch_size: int, pairs: int, generator: torch.Generator):
    """(tokens, targets), both (batch_size, 3 * pairs) int64: the sequences
    above; targets[b, t] is the value the output at t must name for the
    P query positions t, and -1 (no loss) elsewhere."""
    require_int("batch_size", batch_size)
    require_int("pairs", pairs)
    require_generator("generator", generator)
    num_keys, num_values = TASK["num_keys"], TASK["num_values"]
    if pairs > num_keys:
        raise ValueError(
            f"pairs = {pairs} needs at most num_keys = {num_keys} distinct "
            "keys"
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
    """Cross-entropy in nats over the answer positions (targets >= 0)."""
    keep = targets >= 0
    return F.cross_entropy(logits[keep], targets[keep])


def build_model(name: str, width: int) -> RecallModel:
    """A fresh model ``MODELS[name]`` of width ``width`` (MODEL_CONFIG),
    drawn from torch's global generator."""
    if name not in MODELS:
        raise ValueError(
            f"name must be one of {tuple(MODELS)}, got {name!r:.40}"
        )
    return RecallModel(MODELS[name], VOCAB_SIZE, width, **MODEL_CONFIG)


def train_recall(
    name: str,
    width: int = 32,
    seed: int = 0,
    steps: int = 400,
    batch_size: int = 32,
    lr: float = 3e-3,
    weight_decay: float = 0.01,
    dtype: torch.dtype = torch.float32,
):
    """Train a seeded ``build_model(name, width)`` on batches cycling
    through ``PAIRS``, AdamW with gradient clipping at 1, on one thread.
    Returns (model in eval mode, per-step losses in nats). Torch's global
    random state is left as it was."""
    require_training(
        steps=steps, batch_size=batch_size, lr=lr, weight_decay=weight_decay
    )
    require_int("seed", seed, minimum=0)
    with single_thread(), keep_global_rng():
        torch.manual_seed(seed)
        model = build_model(name, width).to(dtype)
        generator = torch.Generator().manual_seed(seed + 1)
        optimizer = torch.optim.AdamW(
            model.parameters(), lr=lr, weight_decay=weight_decay
        )
        model.train()
        losses = []
        for step in range(steps):
            pairs = PAIRS[step % len(PAIRS)]
            tokens, targets = recall_batch(batch_size, pairs, generator)
            loss = recall_loss(model(tokens), targets)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            losses.append(loss.item())
    return model.eval(), losses


def eval_generator(pairs: int) -> torch.Generator:
    """The generator of the evaluation sequences with ``pairs`` pairs."""
    return torch.Generator().manual_seed(EVAL_SEED + pairs)


def evaluation_batch(pairs: int, sequences: int = EVAL_SEQUENCES):
    """The held-out (tokens, targets) with ``pairs`` pairs."""
    return recall_batch(sequences, pairs, eval_generator(pairs))


@torch.no_grad()
def recall_accuracy(model, pairs: int, sequences: int = EVAL_SEQUENCES):
    """The fraction of held-out queries whose most likely output is the
    right value."""
    tokens, targets = evaluation_batch(pairs, sequences)
    keep = targets >= 0
    with single_thread():
        guess = model(tokens).argmax(-1)
    return float((guess == targets)[keep].float().mean())


def run_model(name: str, width: int, seed: int) -> dict:
    """Train one model at one width with one seed and evaluate it at every
    P of ``PAIRS``: what the training script runs per process. Returns a
    JSON-ready dict."""
    start = time.process_time()
    model, losses = train_recall(name, width, seed, **TRAINING_RECIPE)
    tail = losses[-len(PAIRS) * 10 :]
    return {
        "model": name,
        "width": width,
        "seed": seed,
        "final_loss": sum(tail) / len(tail),
        "accuracy": {p: recall_accuracy(model, p) for p in PAIRS},
        "state_numbers": {p: model.state_numbers(3 * p) for p in PAIRS},
        "parameters": sum(p.numel() for p in model.parameters()),
        "cpu_seconds": time.process_time() - start,
    }


def pretrained_results() -> dict:
    """The shipped ``data/recall.json`` (checked against its pinned
    SHA-256): task, recipe, seeds and every accuracy."""
    return json.loads(read_pinned(RESULTS_FILE, RECALL_SHA256))


def chance_accuracy() -> float:
    """1 / num_values: a uniform guess among the values."""
    return 1 / TASK["num_values"]

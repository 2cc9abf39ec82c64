"""Train the book's date Transformer and ship it with the package.

    # train, evaluate, write attnbook/data/date_transformer.pt
    python -m attnbook.train.date_transformer
    # evaluate the shipped file only
    python -m attnbook.train.date_transformer --check

An encoder-decoder Transformer
(``attnbook.tasks.date_transformer.DATE_TRANSFORMER_CONFIG``) learns to turn
dates as people write them into ISO 8601 (``attnbook.tasks.dates``), with
teacher forcing and a cross-entropy loss. The recipe is ``TRAINING_RECIPE``: a
fixed number of Adam steps, a fixed seed for the weights and the data, one
thread, no dropout, so two runs on one machine give the same weights bit for
bit. The script prints (and does not store, so that the file is identical on
every run) its wall time, CPU time and steps per second and the exact-match
accuracy (greedy decoding) on ``EVAL_DATES`` held-out dates
(``held_out_date_pairs``): drawn with ``EVAL_SEED``, on days that no training
batch of this model or of chapter 5's recurrent translator contains.
"""

import hashlib
import io
import math
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from .._checks import (
    require_text_pairs,
    require_training,
    require_translator,
)
from .._random import seeded_generator
from .._weights import weights_digest
from ..experiments.luong_bahdanau import (
    require_unseen_size,
    training_targets,
    unseen_dates,
)
from ..measure.parameters import count_parameters
from ..tasks.date_transformer import (
    DATE_TRANSFORMER_CONFIG,
    DATE_TRANSFORMER_FILE,
    DateTransformer,
    build_date_transformer,
)
from ._results import training_arguments

TRAINING_RECIPE = dict(steps=1000, batch_size=64, lr=2e-3, warmup=100, seed=11)
EVAL_DATES = 2000
EVAL_SEED = 4242


def held_out_date_pairs(
    size: int = EVAL_DATES,
    seed: int = EVAL_SEED,
    transformer_seed: int | None = None,
    rnn_seed: int | None = None,
):
    """(sources, targets): ``size`` random dates in random forms drawn with
    ``seed``, on days (ISO dates) that occur in no training batch of the
    date Transformer (``TRAINING_RECIPE``) or of chapter 5's recurrent
    translator (``attnbook.train.date_translator.RECIPE``): evaluation data
    disjoint from the training data of both models compared in chapter 10.

    ``transformer_seed`` and ``rnn_seed`` (default: the recipes' seeds, the
    shipped models) replay the training streams of those seeds of the same
    recipes instead: the held-out dates of another pair of training runs."""
    from .date_translator import RECIPE as RNN_RECIPE

    require_unseen_size(size)

    runs = (
        (TRAINING_RECIPE, transformer_seed),
        (RNN_RECIPE, rnn_seed),
    )
    seen = set()
    for recipe, run_seed in runs:
        seen |= training_targets(
            recipe["seed"] if run_seed is None else run_seed,
            recipe["steps"],
            recipe["batch_size"],
        )
    return unseen_dates(size, seed, seen)


def held_out_accuracy(translator, pairs) -> float:
    """Exact-match accuracy of ``translator.translate`` (greedy) on the
    (sources, targets) ``pairs``, 500 inputs at a time."""
    require_translator(translator)
    sources, targets = require_text_pairs("pairs", pairs)
    outputs = translations(translator, sources)
    return sum(o == t for o, t in zip(outputs, targets)) / len(targets)


def translations(translator, sources: list) -> list:
    """``translator.translate(sources)`` (greedy), 500 inputs at a time."""
    require_translator(translator)
    if not isinstance(sources, list):
        raise TypeError(
            f"sources must be a list of str, got {type(sources).__name__}"
        )
    outputs = []
    for start in range(0, len(sources), 500):
        outputs += translator.translate(sources[start : start + 500])
    return outputs


def train_date_transformer(
    steps: int,
    batch_size: int,
    lr: float,
    warmup: int,
    seed: int,
    progress: bool = False,
    callback=None,
    **config,
):
    """Train a fresh date Transformer; returns (model in eval mode, list of
    losses).

    Data: ``date_batch(batch_size, generator)`` with a generator seeded
    ``seed``; weights initialised from ``seed``. Learning rate: linear warm-up
    over ``warmup`` steps, then cosine decay to 0. Runs on one thread; leaves
    torch's global RNG untouched. ``callback(step, model)``, if given, is
    called after every 100th step (1-based).
    """
    from ..tasks.dates import TARGET_VOCAB, date_batch

    require_training(
        steps=steps, batch_size=batch_size, lr=lr, warmup=warmup, seed=seed
    )
    model = build_date_transformer(seed=seed, **config).train()
    optimizer = torch.optim.Adam(model.parameters(), lr=lr, betas=(0.9, 0.98))
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer,
        lambda s: (
            (s + 1) / warmup
            if s < warmup
            else 0.5
            * (1 + math.cos(math.pi * (s - warmup) / max(1, steps - warmup)))
        ),
    )
    generator = seeded_generator(seed)
    losses = []
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        start = time.perf_counter()
        for step in range(steps):
            src, src_lens, tgt_in, tgt_out = date_batch(batch_size, generator)
            logits = model(src, src_lens, tgt_in)
            loss = F.cross_entropy(
                logits.flatten(0, 1),
                tgt_out.flatten(),
                ignore_index=TARGET_VOCAB.pad,
            )
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
            losses.append(loss.item())
            if (step + 1) % 100 == 0:
                if progress:
                    print(
                        f"step {step + 1}: loss {sum(losses[-100:]) / 100:.4f}"
                        " "
                        f"({time.perf_counter() - start:.0f} s)",
                        flush=True,
                    )
                if callback is not None:
                    model.eval()
                    callback(step + 1, model)
                    model.train()
    finally:
        torch.set_num_threads(threads)
    return model.eval(), losses


def main(argv=None) -> None:
    args, recipe, command = training_arguments(
        argv, __doc__, TRAINING_RECIPE, "train.date_transformer"
    )
    torch.set_num_threads(1)
    out = (
        args.out
        or Path(__file__).resolve().parents[1] / "data" / DATE_TRANSFORMER_FILE
    )

    if args.check:
        saved = torch.load(out, weights_only=True)
        model = build_date_transformer(**saved["config"])
        model.load_state_dict(saved["state_dict"])
        print("stored info:", saved["info"])
        print(
            "digest",
            weights_digest(model),
            "| accuracy on held-out dates",
            held_out_accuracy(DateTransformer(model), held_out_date_pairs()),
        )
        return

    print("recipe:", recipe, "| model:", DATE_TRANSFORMER_CONFIG, flush=True)
    wall, cpu = time.perf_counter(), time.process_time()
    model, losses = train_date_transformer(**recipe, progress=True)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    steps = recipe["steps"]
    print(
        f"trained {steps} steps in {wall:.1f} s wall, {cpu:.1f} s CPU: "
        f"{steps / wall:.1f} steps/s wall, "
        f"{steps / cpu:.1f} steps/s CPU; mean loss of the last 100 steps "
        f"{sum(losses[-100:]) / 100:.5f}",
        flush=True,
    )
    accuracy = held_out_accuracy(DateTransformer(model), held_out_date_pairs())
    print(
        f"exact-match accuracy on {EVAL_DATES} held-out dates (seed "
        f"{EVAL_SEED}): {100 * accuracy:.2f}%"
    )
    info = {
        "recipe": recipe,
        "command": command,
        "parameters": count_parameters(model),
        "torch": str(torch.__version__),
        "final_loss": sum(losses[-100:]) / 100,
        "losses": [round(x, 5) for x in losses],
        "eval_dates": EVAL_DATES,
        "eval_seed": EVAL_SEED,
        "accuracy": accuracy,
        "digest": weights_digest(model),
    }
    config = {
        k: v for k, v in model.config.items() if k in DATE_TRANSFORMER_CONFIG
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    state = {
        name: tensor.contiguous()
        for name, tensor in model.state_dict().items()
    }
    buffer = io.BytesIO()
    torch.save({"config": config, "state_dict": state, "info": info}, buffer)
    out.write_bytes(buffer.getvalue())
    print(
        f"weights digest {info['digest']}; saved to {out} ("
        f"{out.stat().st_size / 1024:.0f} KiB); "
        f"file SHA-256 {hashlib.sha256(buffer.getvalue()).hexdigest()}"
    )


if __name__ == "__main__":
    main()

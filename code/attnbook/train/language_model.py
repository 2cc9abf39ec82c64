"""Train chapter 12's character-level language model and ship it with the
package.

    # train, evaluate, write attnbook/data/language_model.pt
    python -m attnbook.train.language_model
    # evaluate the shipped file only
    python -m attnbook.train.language_model --check
    # train elsewhere (e.g. to compare digests)
    python -m attnbook.train.language_model --out /tmp/lm/language_model.pt

The run is
``train_language_model(**TRAINING_RECIPE, eval_every=EVAL_EVERY)``:
float32, one thread, a fixed seed and a fixed number of steps, so two runs on
one machine write the same file. Every 100 steps it measures the mean bits
per character on 256 windows spread over the training text and over the
held-out text (no random numbers drawn: the weights are those of a run
without evaluation). It prints the wall time, the steps per second, whether
the weights equal the shipped ones, and the held-out bits per character of
the model and of the unigram and bigram count baselines; it writes the
weights and, next to them, the curves as ``language_model_log.json`` (no
timing in either).
"""

import hashlib
import json
import time
from pathlib import Path

import torch

from .._weights import load_pinned, weights_digest
from ..tasks.language_model import (
    EVAL_EVERY,
    EVAL_WINDOWS,
    LANGUAGE_MODEL_FILE,
    LANGUAGE_MODEL_LOG_FILE,
    LANGUAGE_MODEL_SHA256,
    MODEL_CONFIG,
    TRAINING_RECIPE,
    bits_per_char,
    model_from,
    train_language_model,
)
from ..tasks.text import (
    bigram_bits_per_char,
    corpus_split,
    unigram_bits_per_char,
)
from ._results import training_arguments


def report(model) -> float:
    """Print the held-out bits per character of the model and the
    baselines; return the model's."""
    train, held_out = corpus_split()
    ours = bits_per_char(model, held_out)
    print(
        f"held-out bits per character ({len(held_out):,} characters): "
        f"model {ours:.3f}, bigram {bigram_bits_per_char(train, held_out):.3f}"
        f", unigram {unigram_bits_per_char(train, held_out):.3f} (add-one)"
    )
    return ours


def main(argv=None) -> None:
    args, recipe, command = training_arguments(
        argv, __doc__, TRAINING_RECIPE, "train.language_model"
    )
    out = (
        args.out
        or Path(__file__).resolve().parents[1] / "data" / LANGUAGE_MODEL_FILE
    )
    torch.set_num_threads(1)

    if args.check:
        saved = torch.load(out, weights_only=True)
        model = model_from(saved)
        print("recipe:", saved["recipe"], "| digest", weights_digest(model))
        report(model)
        return

    wall, cpu = time.perf_counter(), time.process_time()
    model, history = train_language_model(
        **recipe, progress=False, eval_every=EVAL_EVERY
    )
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(
        f"{command}: {recipe['steps']} steps in {wall:.1f} s wall, "
        f"{cpu:.1f} s CPU ({recipe['steps'] / wall:.2f} steps/s); final "
        f"training loss {history['loss'][-1]:.3f} nats; weights digest "
        f"{weights_digest(model)}"
    )
    shipped = model_from(
        load_pinned(LANGUAGE_MODEL_FILE, LANGUAGE_MODEL_SHA256)
    )
    print(
        "weights equal to the shipped ones (digest "
        f"{weights_digest(shipped)}): "
        f"{weights_digest(shipped) == weights_digest(model)}"
    )
    held_out = report(model)
    log = {
        "recipe": recipe,
        "eval_every": EVAL_EVERY,
        "eval_windows": EVAL_WINDOWS,
        "eval_steps": history["eval_steps"],
        "train_bits": [round(b, 6) for b in history["train_bits"]],
        "held_out_bits": [round(b, 6) for b in history["held_out_bits"]],
        "weights_digest": weights_digest(model),
    }
    for step, train, held in zip(
        log["eval_steps"], log["train_bits"], log["held_out_bits"]
    ):
        print(f"step {step:5}: train {train:.3f}, held out {held:.3f} bits")
    log_path = out.parent / LANGUAGE_MODEL_LOG_FILE
    log_path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(log, indent=1) + "\n"
    log_path.write_text(text)
    print(
        f"wrote {log_path}; SHA-256 "
        f"{hashlib.sha256(text.encode()).hexdigest()}"
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    torch.save(
        {
            "recipe": recipe,
            "config": MODEL_CONFIG,
            "state_dict": model.state_dict(),
            "losses": torch.tensor(history["loss"], dtype=torch.float32),
            "held_out_bits_per_char": held_out,
            "torch": str(torch.__version__),
        },
        out,
    )
    print(
        f"saved {out} ({out.stat().st_size / 1024:.0f} KiB); SHA-256 (pin it "
        "as LANGUAGE_MODEL_SHA256 in attnbook/tasks/language_model.py when "
        f"shipping it): {hashlib.sha256(out.read_bytes()).hexdigest()}"
    )


if __name__ == "__main__":
    main()

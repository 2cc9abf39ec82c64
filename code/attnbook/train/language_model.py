"""Train chapter 12's character-level language model and ship it with the
package.

    # train, evaluate, write attnbook/data/language_model.pt
    python -m attnbook.train.language_model
    # evaluate the shipped file only
    python -m attnbook.train.language_model --check
    # train elsewhere (e.g. to compare digests)
    python -m attnbook.train.language_model --out /tmp/lm.pt

The run is
``train_language_model(**attnbook.tasks.language_model.TRAINING_RECIPE)``:
float32, one thread, a fixed seed and a fixed number of steps, so two runs on
one machine write the same file. It prints the wall time, the steps per
second and the held-out bits per character of the model and of the unigram
and bigram count baselines, and stores no timing.
"""

import hashlib
import time
from pathlib import Path

import torch

from .._weights import training_arguments, weights_digest
from ..tasks.language_model import (
    LANGUAGE_MODEL_FILE,
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
    model, history = train_language_model(**recipe, progress=False)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(
        f"{command}: {recipe['steps']} steps in {wall:.1f} s wall, "
        f"{cpu:.1f} s CPU ({recipe['steps'] / wall:.2f} steps/s); final "
        f"training loss {history['loss'][-1]:.3f} nats; weights digest "
        f"{weights_digest(model)}"
    )
    held_out = report(model)
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

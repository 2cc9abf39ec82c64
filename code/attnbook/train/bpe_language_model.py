"""Train chapter 12's language model on byte-pair tokens and ship it.

    # learn the merges, train, evaluate, write data/bpe_language_model.pt
    python -m attnbook.train.bpe_language_model
    # evaluate the shipped file only
    python -m attnbook.train.bpe_language_model --check

The run is ``train_bpe_language_model(**BPE_TRAINING_RECIPE,
eval_every=EVAL_EVERY)``: 256 merges learned on the training text, then the
character model's architecture and recipe on the token ids, with 16 windows
of 128 tokens per step (about the characters of one step of the character
model); float32, one thread, fixed seeds. It prints the time, the held-out
bits per token every 100 steps, and the held-out bits per character and per
byte of the whole held-out text, beside the character model's.
"""

import hashlib
import time
from pathlib import Path

import torch

from .._weights import load_pinned, weights_digest
from ..tasks.bpe_language_model import (
    BPE_LANGUAGE_MODEL_FILE,
    BPE_LANGUAGE_MODEL_SHA256,
    BPE_TRAINING_RECIPE,
    PretrainedBpeLanguageModel,
    token_model_bits,
    train_bpe_language_model,
)
from ..tasks.language_model import EVAL_EVERY, EVAL_WINDOWS, MODEL_CONFIG
from ..tasks.text import corpus_split
from ._results import training_arguments


def report(model, bpe) -> dict:
    """Print and return the token model's scores on the held-out text."""
    scores = token_model_bits(model, bpe, corpus_split()[1])
    print(
        f"held-out ({scores['chars']:,} characters, {scores['tokens']:,} "
        f"tokens): {scores['bits_per_token']:.3f} bits per token, "
        f"{scores['bits_per_char']:.3f} bits per character, "
        f"{scores['bits_per_byte']:.3f} bits per byte"
    )
    return scores


def main(argv=None) -> None:
    args, recipe, command = training_arguments(
        argv, __doc__, BPE_TRAINING_RECIPE, "train.bpe_language_model"
    )
    out = (
        args.out
        or Path(__file__).resolve().parents[1]
        / "data"
        / BPE_LANGUAGE_MODEL_FILE
    )
    torch.set_num_threads(1)
    if args.check:
        lm = PretrainedBpeLanguageModel(
            load_pinned(BPE_LANGUAGE_MODEL_FILE, BPE_LANGUAGE_MODEL_SHA256)
        )
        print("recipe:", lm.recipe, "| digest", weights_digest(lm.model))
        report(lm.model, lm.bpe)
        return

    wall, cpu = time.perf_counter(), time.process_time()
    bpe, model, history = train_bpe_language_model(
        **recipe, progress=False, eval_every=EVAL_EVERY
    )
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(
        f"{command}: {recipe['steps']} steps in {wall:.1f} s wall, "
        f"{cpu:.1f} s CPU; final training loss {history['loss'][-1]:.3f} "
        f"nats per token; weights digest {weights_digest(model)}"
    )
    for step, train, held in zip(
        history["eval_steps"], history["train_bits"], history["held_out_bits"]
    ):
        print(
            f"step {step:5}: train {train:.3f}, held out {held:.3f} bits/token"
        )
    scores = report(model, bpe)
    out.parent.mkdir(parents=True, exist_ok=True)
    torch.save(
        {
            "recipe": recipe,
            "config": MODEL_CONFIG,
            "merges": torch.tensor(bpe.merges, dtype=torch.int64),
            "state_dict": model.state_dict(),
            "losses": torch.tensor(history["loss"], dtype=torch.float32),
            "log": {
                "eval_every": EVAL_EVERY,
                "eval_windows": EVAL_WINDOWS,
                "eval_steps": history["eval_steps"],
                "train_bits_per_token": history["train_bits"],
                "held_out_bits_per_token": history["held_out_bits"],
            },
            "held_out": scores,
            "torch": str(torch.__version__),
        },
        out,
    )
    print(
        f"saved {out} ({out.stat().st_size / 1024:.0f} KiB); SHA-256 (pin it "
        "as BPE_LANGUAGE_MODEL_SHA256 in attnbook/tasks/bpe_language_model.py"
        f"): {hashlib.sha256(out.read_bytes()).hexdigest()}"
    )


if __name__ == "__main__":
    main()

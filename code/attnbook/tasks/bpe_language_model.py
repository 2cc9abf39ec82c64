"""Chapter 12's language model on byte-pair tokens: the same
``DecoderOnlyTransformer`` and training loop as the character model, on the
ids of a ``BytePairEncoder`` learned from the training text, and scored in
bits per character and bits per byte so the two can be compared.

``train_bpe_language_model(**BPE_TRAINING_RECIPE)`` is what
``python -m attnbook.train.bpe_language_model`` runs; the result ships as
``data/bpe_language_model.pt``, pinned by SHA-256, and
``pretrained_bpe_language_model()`` loads it.
"""

import torch

from .._checks import require_int, require_saved
from .._random import keep_global_rng
from .._weights import load_pinned
from ..measure.threads import single_thread
from ..nn.language_model import DecoderOnlyTransformer
from .bpe import BytePairEncoder
from .language_model import TRAINING_RECIPE, total_bits, train_on_ids
from .text import corpus_split

BPE_LANGUAGE_MODEL_FILE = "bpe_language_model.pt"
BPE_LANGUAGE_MODEL_SHA256 = (
    "cd7238773c354f0641bd9d15f1f4f80e4d2ec0803ec52ee2846de843e6512f54"
)
# The character model's recipe with 256 merges and half the batch: a token
# holds about 2 characters, so each step reads about as many characters as
# a step of the character model (and costs about half as much).
BPE_TRAINING_RECIPE = {**TRAINING_RECIPE, "batch_size": 16, "merges": 256}


def train_bpe_language_model(
    merges: int = 256,
    progress: bool = True,
    eval_every: int | None = None,
    **recipe,
):
    """Learn ``merges`` byte-pair merges on the training text, then train
    the character model's architecture (``MODEL_CONFIG``: a context of 128
    *tokens*) on its ids with ``recipe`` (the keys of ``TRAINING_RECIPE``).

    Returns (the encoder, the model in eval mode, the history of
    ``train_on_ids``; its evaluation bits are per token)."""
    train_text, held_out_text = corpus_split()
    bpe = BytePairEncoder.train(train_text, merges)
    model, history = train_on_ids(
        torch.tensor(bpe.encode(train_text)),
        torch.tensor(bpe.encode(held_out_text)),
        bpe.vocab_size,
        progress=progress,
        eval_every=eval_every,
        **{**TRAINING_RECIPE, **recipe},
    )
    return bpe, model, history


@torch.no_grad()
def token_model_bits(
    model: DecoderOnlyTransformer, bpe: BytePairEncoder, text: str
) -> dict:
    """Score a token model on ``text`` as ``bits_per_char`` scores the
    character model: windows of context_len + 1 tokens that overlap by one,
    so every token after the first is predicted once.

    Returns a dict: "bits" (the total), "tokens", "bytes" and "chars"
    predicted (all but the first token's), "bits_per_token",
    "bits_per_byte" and "bits_per_char" (the total over the bytes, or the
    characters, the predicted tokens spell)."""
    if not isinstance(model, DecoderOnlyTransformer):
        raise TypeError(
            "model must be a DecoderOnlyTransformer, got "
            f"{type(model).__name__}"
        )
    if not isinstance(bpe, BytePairEncoder):
        raise TypeError(f"bpe must be a BytePairEncoder, got {type(bpe)}")
    if model.vocab_size != bpe.vocab_size:
        raise ValueError(
            f"the model has {model.vocab_size} token ids, the encoder "
            f"{bpe.vocab_size}"
        )
    ids = torch.tensor(bpe.encode(text), dtype=torch.int64)
    if len(ids) < 2:
        raise ValueError("text must encode to at least two tokens")
    total = total_bits(model, ids)
    first = bpe.token_bytes[int(ids[0])]
    predicted_bytes = len(text.encode("utf-8")) - len(first)
    predicted_chars = len(text) - len(first.decode("utf-8", "ignore"))
    return {
        "bits": total,
        "tokens": len(ids) - 1,
        "bytes": predicted_bytes,
        "chars": predicted_chars,
        "bits_per_token": total / (len(ids) - 1),
        "bits_per_byte": total / predicted_bytes,
        "bits_per_char": total / predicted_chars,
    }


class PretrainedBpeLanguageModel:
    """The shipped token model: ``bpe`` (its encoder), ``model`` (eval
    mode), ``recipe``, ``losses`` (per step, nats per token), ``log`` (the
    evaluation curves, bits per token) and ``held_out`` (the script's
    ``token_model_bits`` on the whole held-out text)."""

    def __init__(self, saved: dict):
        require_saved("saved", saved, "config", "state_dict", "merges")
        self.bpe = BytePairEncoder(saved["merges"].tolist())
        with keep_global_rng():
            model = DecoderOnlyTransformer(
                self.bpe.vocab_size, **saved["config"]
            )
        model.load_state_dict(saved["state_dict"])
        self.model = model.eval()
        self.recipe = saved.get("recipe")
        self.losses = saved.get("losses")
        self.log = saved.get("log")
        self.held_out = saved.get("held_out")

    def greedy(self, prompt: str, max_new_tokens: int) -> str:
        """The greedy continuation of ``prompt`` (max_new_tokens tokens)."""
        if not isinstance(prompt, str):
            raise TypeError(
                f"prompt must be a str, got {type(prompt).__name__}"
            )
        require_int("max_new_tokens", max_new_tokens, minimum=0)
        ids = torch.tensor([self.bpe.encode(prompt)], dtype=torch.int64)
        if ids.shape[1] == 0:
            raise ValueError("prompt must hold at least one character")
        with single_thread():
            out = self.model.generate(ids, max_new_tokens, temperature=0)
        new = out[0, ids.shape[1] :].tolist()
        return self.bpe.decode(new, errors="replace")


def pretrained_bpe_language_model() -> PretrainedBpeLanguageModel:
    """The shipped result of ``python -m attnbook.train.bpe_language_model``,
    checked against its pinned SHA-256."""
    saved = load_pinned(BPE_LANGUAGE_MODEL_FILE, BPE_LANGUAGE_MODEL_SHA256)
    return PretrainedBpeLanguageModel(saved)

"""The trained date Transformer: chapter 5's date task
(``attnbook.tasks.dates``) solved by chapter 10's encoder-decoder
Transformer, shipped as pinned weights."""

import torch

from .._checks import (
    require_finite_number,
    require_flag,
    require_int,
    require_translator,
)
from .._random import keep_global_rng, seeded, seeded_generator
from .._weights import load_pinned
from ..measure.parameters import count_parameters
from ..nn.beam_search import beam_search
from ..nn.decoder import EncoderDecoderTransformer

DATE_TRANSFORMER_FILE = "date_transformer.pt"
DATE_TRANSFORMER_SHA256 = (
    "ebd8a8216e680c51d13c7a3f1e81b5b451078309aa88f42684c6c96a9c15d64c"
)

#: The model trained by ``python -m attnbook.train.date_transformer``.
DATE_TRANSFORMER_CONFIG = dict(
    embed_dim=64,
    num_heads=4,
    ffn_hidden=128,
    num_encoder_layers=2,
    num_decoder_layers=2,
    max_src_len=32,
    max_tgt_len=12,
)


def build_date_transformer(
    seed: int | None = None, **config
) -> EncoderDecoderTransformer:
    """A fresh date ``EncoderDecoderTransformer`` (vocabularies of
    ``attnbook.tasks.dates``).

    config overrides ``DATE_TRANSFORMER_CONFIG``; the initial weights come from
    ``seed`` (or are arbitrary if None). Torch's global random state is left
    untouched.
    """
    from .dates import SOURCE_VOCAB, TARGET_VOCAB

    if seed is not None:
        require_int("seed", seed, minimum=0)
    full = {**DATE_TRANSFORMER_CONFIG, **config}
    full.update(
        src_vocab_size=len(SOURCE_VOCAB),
        tgt_vocab_size=len(TARGET_VOCAB),
        bos=TARGET_VOCAB.bos,
        eos=TARGET_VOCAB.eos,
    )
    if seed is None:  # arbitrary weights, the caller's stream left alone
        with keep_global_rng():
            return EncoderDecoderTransformer(**full)
    with seeded(seed):  # other threads wait while this one draws
        return EncoderDecoderTransformer(**full)


class DateTransformer:
    """A trained date ``EncoderDecoderTransformer`` plus the vocabularies:
    strings in, strings out."""

    def __init__(
        self, model: EncoderDecoderTransformer, info: dict | None = None
    ):
        from .dates import SOURCE_VOCAB, TARGET_LENGTH, TARGET_VOCAB

        if not isinstance(model, EncoderDecoderTransformer):
            raise TypeError(
                "model must be an EncoderDecoderTransformer, got "
                f"{type(model).__name__}"
            )
        self.model = model.eval()
        self.info = info or {}
        self.source_vocab, self.target_vocab = SOURCE_VOCAB, TARGET_VOCAB
        self.max_steps = TARGET_LENGTH + 1

    def __repr__(self) -> str:
        c = self.model.config
        return (
            f"DateTransformer(d_model={c['embed_dim']}, h={c['num_heads']}, "
            f"{c['num_encoder_layers']}+{c['num_decoder_layers']} blocks, "
            f"{count_parameters(self.model):,} parameters)"
        )

    @torch.no_grad()
    def translate(self, strings, return_weights: bool = False):
        """Translate a list of strings with greedy decoding (and a key-value
        cache).

        Returns a list of output strings; with ``return_weights=True`` also a
        list holding, per input, its cross-attention weights (L, h, T,
        len(input)): row t - 1 is what the step that wrote output character t
        read (t = 1, ..., T, T = len(output) + 1 with the step that wrote EOS).
        Raises ``ValueError`` for an empty string, a character outside the
        source vocabulary or a string longer than ``source_vocab.max_length``.
        """
        require_flag("return_weights", return_weights)
        strings, src, lengths = self.source_vocab.encode_for_translation(
            strings
        )
        if not strings:
            return ([], []) if return_weights else []
        tokens, weights = self.model.generate(
            src, lengths, self.max_steps, return_weights=True
        )
        outputs = self.target_vocab.decode(tokens)
        if not return_weights:
            return outputs
        per_input = []
        for i, text in enumerate(outputs):
            steps = min(len(text) + 1, tokens.shape[1])
            per_input.append(
                weights[:, i, :, :steps, : int(lengths[i])].clone()
            )
        return outputs, per_input

    @torch.no_grad()
    def translate_beam(self, strings, beam_width: int = 4, alpha: float = 0.0):
        """Translate a list of strings with beam search
        (``attnbook.nn.beam_search.beam_search``, with the key-value cache)
        of width ``beam_width`` and length penalty ``alpha`` (0: none);
        ``beam_width=1`` gives what ``translate`` gives."""
        require_int("beam_width", beam_width)
        require_finite_number("alpha", alpha, 0.0)
        strings, src, lengths = self.source_vocab.encode_for_translation(
            strings
        )
        if not strings:
            return []
        tokens, _ = beam_search(
            self.model, src, lengths, beam_width, self.max_steps, alpha,
            use_cache=True,
        )  # fmt: skip
        return self.target_vocab.decode(tokens)


def date_accuracy(
    translator, num_dates: int = 2000, seed: int = 2027
) -> float:
    """Exact-match accuracy of ``translator.translate`` on ``num_dates``
    fresh random dates in random forms
    (``attnbook.tasks.dates.random_date_pairs`` with a generator seeded
    ``seed``)."""
    from .dates import random_date_pairs

    require_translator(translator)
    require_int("num_dates", num_dates)
    sources, targets = random_date_pairs(num_dates, seeded_generator(seed))
    outputs = []
    for start in range(0, num_dates, 500):
        outputs += translator.translate(sources[start : start + 500])
    return sum(o == t for o, t in zip(outputs, targets)) / num_dates


def pretrained_date_transformer(return_info: bool = False):
    """The book's trained date Transformer
    (``python -m attnbook.train.date_transformer``).

    Loads ``attnbook/data/date_transformer.pt`` after checking its SHA-256
    against the pinned ``DATE_TRANSFORMER_SHA256``; returns a
    ``DateTransformer`` (and, with ``return_info``, the dict saved with it:
    recipe, training time, accuracy). Leaves torch's global random state
    untouched.
    """
    saved = load_pinned(DATE_TRANSFORMER_FILE, DATE_TRANSFORMER_SHA256)
    model = build_date_transformer(**saved["config"])
    model.load_state_dict(saved["state_dict"])
    translator = DateTransformer(model, saved["info"])
    return (translator, saved["info"]) if return_info else translator

"""The trained date translator: a GRU encoder-decoder with additive
attention on chapter 5's date task, shipped as pinned weights
(``python -m attnbook.train.date_translator``)."""

import torch

from .._checks import require_flag
from .._weights import load_pinned
from ..measure.parameters import count_parameters
from ..nn.seq2seq import EOS, Seq2Seq

TRANSLATOR_FILE = "date_translator.pt"
TRANSLATOR_SHA256 = (
    "0586be3a26fea7d761aaaada0ab7950f8744e1f8ec203b0f8c88a1ddf7814d84"
)


class DateTranslator:
    """A trained ``Seq2Seq`` with attention plus the date vocabularies:
    strings in, strings out."""

    def __init__(self, model: Seq2Seq):
        from .dates import SOURCE_VOCAB, TARGET_LENGTH, TARGET_VOCAB

        if not isinstance(model, Seq2Seq):
            raise TypeError(
                f"model must be a Seq2Seq, got {type(model).__name__}"
            )
        self.model = model.eval()
        self.source_vocab, self.target_vocab = SOURCE_VOCAB, TARGET_VOCAB
        self.max_steps = TARGET_LENGTH + 1

    def __repr__(self) -> str:
        return (
            f"DateTranslator(GRU encoder-decoder with additive attention, "
            f"{count_parameters(self.model):,} parameters)"
        )

    @torch.no_grad()
    def translate(self, strings, return_weights: bool = False):
        """Translate a list of strings with greedy decoding.

        Returns a list of output strings; with ``return_weights=True`` also a
        list holding, per input, its attention weights as a (len(output),
        len(input)) tensor: row t - 1 is what the step that wrote output
        character t read (t = 1, 2, ...). Rows sum to 1. Raises ``ValueError``
        for an empty string, a character outside the source vocabulary or a
        string longer than ``source_vocab.max_length`` (naming the string).
        """
        require_flag("return_weights", return_weights)
        strings, src, lengths = self.source_vocab.encode_for_translation(
            strings
        )
        if not strings:
            return ([], []) if return_weights else []
        tokens, weights = self.model.greedy_decode(
            src, lengths, self.max_steps
        )
        outputs = self.target_vocab.decode(tokens)
        if not return_weights:
            return outputs
        per_input = []
        for i in range(len(strings)):
            # The steps that wrote a character of outputs[i]: before the first
            # EOS, not PAD/BOS.
            written = tokens[i] > EOS
            ended = (tokens[i] == EOS).cumsum(0) > 0
            rows = (written & ~ended).nonzero().flatten()
            per_input.append(weights[i, rows, : int(lengths[i])].clone())
        return outputs, per_input


def build_translator_model(**config) -> Seq2Seq:
    """A fresh date-translator ``Seq2Seq`` from its config, built without
    touching the global RNG."""
    with torch.random.fork_rng(devices=[]):
        return Seq2Seq(**config)


def pretrained_date_translator() -> DateTranslator:
    """The book's trained date translator
    (``python -m attnbook.train.date_translator``).

    Loads ``attnbook/data/date_translator.pt`` after checking its SHA-256
    against the pinned ``TRANSLATOR_SHA256``. Leaves torch's global random
    state untouched.
    """
    saved = load_pinned(TRANSLATOR_FILE, TRANSLATOR_SHA256)
    model = build_translator_model(**saved["config"])
    model.load_state_dict(saved["state_dict"])
    return DateTranslator(model)

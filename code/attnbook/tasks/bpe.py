"""A byte-pair encoder (BPE): sub-word tokens learned by merging the most
frequent pair of neighbouring tokens, again and again.

Text is first turned into its UTF-8 bytes, so ids 0 .. 255 are the 256 byte
values and any Unicode string can be encoded, also one the encoder never saw.
Training on a text repeats ``num_merges`` times: count every pair of
neighbouring ids, take the most frequent (ties: the pair that occurs first),
give it the next free id 256, 257, ... and replace its occurrences, left to
right, by that id. Encoding applies the learned merges in the order they were
learned; decoding joins the bytes of the ids and reads them as UTF-8:

    bpe = BytePairEncoder.train("the cat in the hat", num_merges=3)
    ids = bpe.encode("the hat")           # fewer ids than bytes
    assert bpe.decode(ids) == "the hat"

The algorithm is that of Sennrich et al. (2016) on bytes, as in GPT-2 and in
Karpathy's minbpe ``BasicTokenizer`` (which it reproduces, without GPT-2's
regex pre-split); the counts run on tensors, so a few hundred merges on a
million and a half bytes take seconds.
"""

import torch

BYTE_VALUES = 256


def _pair_codes(ids: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """Each pair of neighbours (ids[i], ids[i + 1]) as one int64 code."""
    return ids[:-1] * vocab_size + ids[1:]


def _merge_pair(ids: torch.Tensor, pair: tuple, new_id: int) -> torch.Tensor:
    """ids (N,) with each occurrence of ``pair`` (a, b), taken left to right
    without overlap, replaced by ``new_id``: (M,), M <= N. In a run of a
    repeated byte (a = b) "aaa" becomes [new_id, a], as a left-to-right scan
    gives."""
    a, b = pair
    if len(ids) < 2:
        return ids
    match = (ids[:-1] == a) & (ids[1:] == b)  # (N - 1,) a pair starts at i
    if a == b:  # overlapping matches: keep every other one of each run
        index = torch.arange(len(match))
        previous = torch.cat([match.new_zeros(1), match[:-1]])
        run_start = torch.where(match & ~previous, index, 0).cummax(0).values
        match &= (index - run_start) % 2 == 0
    keep = torch.ones(len(ids), dtype=torch.bool)
    keep[1:][match] = False  # the second id of each merged pair goes
    out = ids.clone()
    out[:-1][match] = new_id
    return out[keep]


class BytePairEncoder:
    """A byte-level BPE tokenizer: ``merges`` is the list of learned pairs,
    merge i making id 256 + i from the pair (a, b) of older ids.

    ``BytePairEncoder.train(text, num_merges)`` learns them; ``encode(text)
    -> list[int]`` and ``decode(ids) -> str`` are exact inverses on any
    Unicode string. ``vocab_size`` = 256 + len(merges); ``token_bytes[i]``
    is the bytes id i stands for.
    """

    def __init__(self, merges):
        if not isinstance(merges, (list, tuple)):
            raise TypeError(
                f"merges must be a list of (int, int) pairs, got "
                f"{type(merges).__name__}"
            )
        self.merges = []
        self.token_bytes = [bytes([b]) for b in range(BYTE_VALUES)]
        for i, pair in enumerate(merges):
            new_id = BYTE_VALUES + i
            if (
                not isinstance(pair, (list, tuple))
                or len(pair) != 2
                or not all(_is_int(t) and 0 <= t < new_id for t in pair)
            ):
                raise ValueError(
                    f"merges[{i}] must be a pair of ids in [0, {new_id}) "
                    f"(bytes and earlier merges), got {pair!r:.40}"
                )
            a, b = int(pair[0]), int(pair[1])
            self.merges.append((a, b))
            self.token_bytes.append(self.token_bytes[a] + self.token_bytes[b])

    @property
    def vocab_size(self) -> int:
        return BYTE_VALUES + len(self.merges)

    def __repr__(self) -> str:
        return f"BytePairEncoder({len(self.merges)} merges)"

    @classmethod
    def train(cls, text: str, num_merges: int) -> "BytePairEncoder":
        """Learn ``num_merges`` merges on the UTF-8 bytes of ``text``: each
        one the most frequent pair of neighbouring ids (overlapping pairs
        counted, as minbpe does; ties go to the pair seen first). Raises
        ``ValueError`` if the text runs out of pairs first."""
        _require_text(text)
        if not _is_int(num_merges):
            raise TypeError(
                f"num_merges must be an int, got {type(num_merges).__name__}"
            )
        if num_merges < 0:
            raise ValueError(f"num_merges must be >= 0, got {num_merges}")
        data = text.encode("utf-8")
        if num_merges > max(0, len(data) - 1):
            raise ValueError(
                f"num_merges={num_merges} is more than the {len(data):,} "
                f"bytes of text allow (at most {max(0, len(data) - 1)})"
            )
        ids = torch.tensor(list(data), dtype=torch.int64)
        vocab_size = BYTE_VALUES + num_merges
        merges = []
        for i in range(num_merges):
            if len(ids) < 2:
                raise ValueError(
                    f"text ({len(text.encode('utf-8')):,} bytes) has no pair "
                    f"left to merge after {i} merges; num_merges="
                    f"{num_merges} is too many for it"
                )
            codes = _pair_codes(ids, vocab_size)
            if vocab_size**2 <= 2**24:  # a table of all pairs is small
                count = torch.bincount(codes)[codes]
            else:
                _, inverse, counts = torch.unique(
                    codes, return_inverse=True, return_counts=True
                )
                count = counts[inverse]
            # the most frequent pair; of equal ones, the first to occur
            first = int((count == count.max()).nonzero()[0, 0])
            pair = (int(ids[first]), int(ids[first + 1]))
            merges.append(pair)
            ids = _merge_pair(ids, pair, BYTE_VALUES + i)
        return cls(merges)

    def encode(self, text: str) -> list:
        """The ids of ``text``: its UTF-8 bytes with every merge applied in
        the order learned."""
        _require_text(text)
        ids = torch.tensor(list(text.encode("utf-8")), dtype=torch.int64)
        for i, pair in enumerate(self.merges):
            if len(ids) < 2:
                break
            ids = _merge_pair(ids, pair, BYTE_VALUES + i)
        return ids.tolist()

    def decode(self, ids, errors: str = "strict") -> str:
        """The text of ``ids`` (a list or 1-D tensor of ints in [0,
        vocab_size)); ``ValueError`` if their bytes are not UTF-8 (e.g. a
        character cut in two), unless ``errors="replace"`` (U+FFFD for each
        bad byte, as minbpe does)."""
        if errors not in ("strict", "replace"):
            raise ValueError(
                f'errors must be "strict" or "replace", got {errors!r:.40}'
            )
        if isinstance(ids, torch.Tensor):
            if ids.dim() != 1 or ids.dtype not in (torch.int64, torch.int32):
                raise TypeError(
                    "ids must be a list of ints or a 1-D integer tensor, got "
                    f"a tensor {tuple(ids.shape)} of {ids.dtype}"
                )
            ids = ids.tolist()
        if not isinstance(ids, (list, tuple)) or not all(map(_is_int, ids)):
            raise TypeError(f"ids must be a list of ints, got {ids!r:.40}")
        for i, token in enumerate(ids):
            if not 0 <= token < self.vocab_size:
                raise ValueError(
                    f"ids[{i}] = {token} is outside [0, {self.vocab_size}) "
                    f"(256 bytes + {len(self.merges)} merges)"
                )
        data = b"".join(self.token_bytes[t] for t in ids)
        try:
            return data.decode("utf-8", errors)
        except UnicodeDecodeError as error:
            raise ValueError(
                f"ids decode to bytes that are not valid UTF-8 ({error.reason}"
                f" at byte {error.start}): a character is cut between ids"
            ) from None


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _require_text(text) -> None:
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")

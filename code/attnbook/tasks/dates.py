"""Dates as people write them, and their ISO 8601 form: the data of the date
translators.

A translator reads ``"Monday, May 3, 1999"`` (or ``"3rd of may 1999"``,
``"03.05.1999"``, ...) character by character and writes ``"1999-05-03"``. This
module makes the data only:

- ``random_dates(n, generator)``: dates drawn uniformly from 1900-01-01 to
  2099-12-31;
- ``format_date(date, form, ...)``: one date in one of the human ``FORMS``;
- ``random_date_pairs(n, generator)``: ``(sources, targets)``, lists of
  strings, random dates in random forms, month names full or three letters,
  random letter case (``random_date_targets`` replays the targets alone);
- ``CharVocabulary`` with the two vocabularies ``SOURCE_VOCAB`` (printable
  ASCII) and ``TARGET_VOCAB`` (digits and ``-``), which turn lists of strings
  into padded id tensors and back;
- ``date_batch(n, generator)``: the tensors a model trains on.

Every random draw uses the ``torch.Generator`` passed in, never the global RNG.
"""

import datetime as _dt
import string as _string

import torch

from .._checks import require_flag, require_int, require_tensor, require_text
from .._memory import require_matrix_fits
from .._random import require_generator

FIRST_DATE = _dt.date(1900, 1, 1)
LAST_DATE = _dt.date(2099, 12, 31)
MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
WEEKDAYS = (
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
)

#: The human forms, each named by how it writes Monday 3 May 1999 (its
#: canonical case).
FORMS = (
    "3 May 1999",
    "03 May 1999",
    "May 3, 1999",
    "Monday, May 3, 1999",
    "3 May, 1999",
    "3rd of May 1999",
    "MAY 3 1999",
    "03.05.1999",
    "1999-5-3",
    "May 03 1999",
)
#: Letter cases: as the form writes it, lower, upper, title, and each letter at
#: random.
CASES = ("canonical", "lower", "upper", "title", "mixed")
#: Probabilities of the cases in ``random_date_pairs``.
CASE_PROBABILITIES = (0.4, 0.15, 0.15, 0.1, 0.2)

#: The longest source string the translators accept (the longest form,
#: "Wednesday, September 30, 1999", has 29 characters).
MAX_INPUT_LENGTH = 32
#: Every target has this many characters: "yyyy-mm-dd".
TARGET_LENGTH = 10
_FEWER = "ask for fewer, or"


def ordinal(day: int) -> str:
    """``day`` with its English ordinal suffix: 1st 2nd 3rd 4th ... 11th
    12th 13th ... 21st 22nd 23rd ... 31st."""
    require_int("day", day)
    if 10 <= day % 100 <= 20:
        suffix = "th"
    else:
        suffix = {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return f"{day}{suffix}"


def iso(date: _dt.date) -> str:
    """The target: ``date`` as ISO 8601, e.g. ``'1999-05-03'``."""
    if not isinstance(date, _dt.date):
        raise TypeError(
            f"date must be a datetime.date, got {type(date).__name__}"
        )
    return date.isoformat()


def _month_name(date: _dt.date, short: bool) -> str:
    name = MONTHS[date.month - 1]
    return name[:3] if short else name


def _apply_case(
    text: str, case: str, form: str, generator: torch.Generator | None
) -> str:
    if case == "canonical":
        return text.upper() if form == "MAY 3 1999" else text
    if case == "lower":
        return text.lower()
    if case == "upper":
        return text.upper()
    if case == "title":
        # Each word's first character upper, the rest lower ("3rd" stays "3rd",
        # unlike str.title).
        return " ".join(
            word[:1].upper() + word[1:].lower() for word in text.split(" ")
        )
    if case == "mixed":
        if generator is None:
            raise ValueError(
                "case='mixed' draws each letter's case: pass a torch.Generator"
            )
        upper = torch.rand(len(text), generator=generator) < 0.5
        return "".join(
            c.upper() if u else c.lower() for c, u in zip(text, upper.tolist())
        )
    raise ValueError(f"unknown case {case!r}; choose one of {CASES}")


def format_date(
    date: _dt.date,
    form: str,
    short_month: bool = False,
    case: str = "canonical",
    generator: torch.Generator | None = None,
) -> str:
    """``date`` written in ``form`` (one of ``FORMS``).

    short_month: write the month (and weekday) name with three letters ("Sep",
    "Mon").
    case: one of ``CASES``; ``"mixed"`` draws each letter's case from
    ``generator``.

    >>> format_date(datetime.date(1999, 5, 3), "Monday, May 3, 1999")
    'Monday, May 3, 1999'
    >>> format_date(datetime.date(1999, 9, 3), "3rd of May 1999",
    short_month=True, case="lower") '3rd of sep 1999'
    """
    if not isinstance(date, _dt.date):
        raise TypeError(
            f"date must be a datetime.date, got {type(date).__name__}"
        )
    require_flag("short_month", short_month)
    month = _month_name(date, short_month)
    weekday = WEEKDAYS[date.weekday()]
    weekday = weekday[:3] if short_month else weekday
    d, m, y = date.day, date.month, date.year
    layouts = {
        "3 May 1999": f"{d} {month} {y}",
        "03 May 1999": f"{d:02d} {month} {y}",
        "May 3, 1999": f"{month} {d}, {y}",
        "Monday, May 3, 1999": f"{weekday}, {month} {d}, {y}",
        "3 May, 1999": f"{d} {month}, {y}",
        "3rd of May 1999": f"{ordinal(d)} of {month} {y}",
        "MAY 3 1999": f"{month} {d} {y}",
        "03.05.1999": f"{d:02d}.{m:02d}.{y}",
        "1999-5-3": f"{y}-{m}-{d}",
        "May 03 1999": f"{month} {d:02d} {y}",
    }
    if form not in layouts:
        raise ValueError(f"unknown form {form!r}; choose one of {FORMS}")
    return _apply_case(layouts[form], case, form, generator)


def random_dates(n: int, generator: torch.Generator) -> list[_dt.date]:
    """``n`` dates drawn uniformly (each day equally likely) from 1900-01-01
    to 2099-12-31."""
    require_generator("generator", generator)
    require_int("n", n, minimum=0)
    # a date object and its list entry: about 40 bytes each
    require_matrix_fits("the dates", (n, 40), torch.uint8, _FEWER)
    span = (LAST_DATE - FIRST_DATE).days + 1
    offsets = torch.randint(0, span, (n,), generator=generator)
    return [FIRST_DATE + _dt.timedelta(days=int(k)) for k in offsets]


def _checked_forms(forms) -> tuple:
    if not isinstance(forms, (list, tuple)):
        raise TypeError(f"forms must be a list of forms, got {forms!r:.40}")
    forms = tuple(forms)
    for form in forms:
        if form not in FORMS:
            raise ValueError(
                f"forms holds an unknown form {form!r}; choose from {FORMS}"
            )
    if not forms:
        raise ValueError(f"forms must name at least one form of {FORMS}")
    return forms


def _draw_layouts(n: int, generator: torch.Generator, forms: tuple):
    """What ``random_date_pairs`` draws before it formats: the dates, the
    form ids, the short-month flags and the case ids."""
    dates = random_dates(n, generator)
    form_ids = torch.randint(0, len(forms), (n,), generator=generator).tolist()
    short = (torch.rand(n, generator=generator) < 0.5).tolist()
    case_ids = torch.multinomial(
        torch.tensor(CASE_PROBABILITIES),
        n,
        replacement=True,
        generator=generator,
    ).tolist()
    return dates, form_ids, short, case_ids


def random_date_pairs(n: int, generator: torch.Generator, forms=FORMS):
    """``n`` random dates in random forms: ``(sources, targets)``, two lists of
    ``n`` strings.

    Each source draws its date (``random_dates``), its form from ``forms``
    (uniformly), a full or three-letter month name (even odds) and its case
    (``CASE_PROBABILITIES``). targets[i] is the ISO form of sources[i]'s date,
    e.g. ``('may 03 1999', '1999-05-03')``.
    """
    require_generator("generator", generator)
    require_int("n", n, minimum=0)
    forms = _checked_forms(forms)
    if n == 0:
        return [], []
    dates, form_ids, short, case_ids = _draw_layouts(n, generator, forms)
    sources = [
        format_date(
            date, forms[f], short_month=s, case=CASES[c], generator=generator
        )
        for date, f, s, c in zip(dates, form_ids, short, case_ids)
    ]
    return sources, [iso(date) for date in dates]


def random_date_targets(n: int, generator: torch.Generator, forms=FORMS):
    """The ``targets`` of ``random_date_pairs(n, generator, forms)``, leaving
    ``generator`` in the same state, about five times faster.

    Only the sources in the ``"mixed"`` case are formatted, and only to
    measure them: that case draws one number per character (upper or lower
    case does not change an ASCII text's length), so its length moves the
    generator; the other sources draw nothing more and are skipped. For
    replaying a training stream's dates (e.g. to hold evaluation days out of
    it).
    """
    require_generator("generator", generator)
    require_int("n", n, minimum=0)
    forms = _checked_forms(forms)
    if n == 0:
        return []
    dates, form_ids, short, case_ids = _draw_layouts(n, generator, forms)
    mixed = CASES.index("mixed")
    for date, f, s, c in zip(dates, form_ids, short, case_ids):
        if c == mixed:  # what _apply_case draws: one number per character
            text = format_date(date, forms[f], short_month=s)
            torch.rand(len(text), generator=generator)
    return [iso(date) for date in dates]


class CharVocabulary:
    """Characters <-> integer ids, with three special ids: ``pad`` = 0, ``bos``
    = 1, ``eos`` = 2.

    chars: the ordinary characters, ids 3, 4, ... in this order.
    max_length: the longest string ``encode`` accepts (not counting BOS/EOS).
    """

    PAD, BOS, EOS = "<pad>", "<bos>", "<eos>"

    def __init__(self, chars: str, max_length: int, name: str = "vocabulary"):
        require_text("chars", chars)
        if not chars:
            raise ValueError("chars must hold at least one character")
        if len(set(chars)) != len(chars):
            raise ValueError("chars must not repeat a character")
        require_int("max_length", max_length)
        self.name = name
        self.max_length = max_length
        self.itos = [self.PAD, self.BOS, self.EOS] + list(chars)
        self.stoi = {c: i for i, c in enumerate(self.itos)}
        self.pad, self.bos, self.eos = 0, 1, 2

    def __len__(self) -> int:
        return len(self.itos)

    def __repr__(self) -> str:
        return (
            f"CharVocabulary({self.name}: {len(self)} ids, "
            f"max_length={self.max_length})"
        )

    def check(self, strings) -> list[str]:
        """The strings as a list, after checking type, length and every
        character.

        Raises ``TypeError`` for a non-string and ``ValueError`` naming the
        string, the character and its position (0-based) for a character
        outside the vocabulary, or naming the string and both lengths for a
        string longer than ``max_length``.
        """
        if isinstance(strings, str):
            raise TypeError(
                "pass a list of strings, not one string (wrap it: [text])"
            )
        if not isinstance(strings, (list, tuple)):
            raise TypeError(
                f"pass a list of strings, got {type(strings).__name__}"
            )
        strings = list(strings)
        for text in strings:
            if not isinstance(text, str):
                raise TypeError(
                    f"every item must be a str, got {type(text).__name__}: "
                    f"{text!r}"
                )
            if len(text) > self.max_length:
                raise ValueError(
                    f"{text!r} has {len(text)} characters; the {self.name} "
                    "accepts at most "
                    f"{self.max_length}"
                )
            for position, char in enumerate(text):
                if char not in self.stoi or self.stoi[char] < 3:
                    raise ValueError(
                        f"{text!r} has the character {char!r} at position "
                        f"{position}, which "
                        f"is not in the {self.name}"
                    )
        return strings

    def encode(self, strings, add_bos: bool = False, add_eos: bool = False):
        """Encode a list of B strings: ``(ids, lengths)``.

        ids: (B, n) LongTensor, n the longest encoded string (BOS/EOS included
             if added), shorter rows padded with ``pad`` (0) at the end.
        lengths: (B,) LongTensor, each string's encoded length (BOS/EOS
        included). ``attnbook.lengths_to_mask(lengths, n)`` is the (B, n)
        padding mask, True = keep.
        """
        strings = self.check(strings)
        rows = [
            ([self.bos] if add_bos else [])
            + [self.stoi[c] for c in s]
            + ([self.eos] if add_eos else [])
            for s in strings
        ]
        n = max((len(r) for r in rows), default=0)
        ids = torch.full((len(rows), n), self.pad, dtype=torch.long)
        for i, row in enumerate(rows):
            ids[i, : len(row)] = torch.tensor(row, dtype=torch.long)
        return ids, torch.tensor([len(r) for r in rows], dtype=torch.long)

    def encode_for_translation(self, strings):
        """What a translator does first: ``check`` the strings, refuse empty
        ones, ``encode`` them.

        Returns (strings as a list, ids, lengths) as ``encode`` does; an empty
        list gives ([], None, None), nothing to translate.
        """
        strings = self.check(strings)
        for text in strings:
            if not text:
                raise ValueError("an empty string has nothing to translate")
        if not strings:
            return strings, None, None
        return (strings, *self.encode(strings))

    def decode(self, ids) -> list[str]:
        """Decode (B, n) ids (a tensor or nested lists) to B strings.

        Each row is read up to its first ``eos``; ``pad`` and ``bos`` are
        skipped.
        """
        if isinstance(ids, torch.Tensor):
            require_tensor("ids", ids)
            if (
                ids.is_floating_point()
                or ids.is_complex()
                or ids.dtype == torch.bool
            ):
                raise TypeError(
                    f"ids must hold integer ids, got dtype {ids.dtype}"
                )
            if ids.dim() != 2:
                raise ValueError(
                    f"ids must have shape (B, n), got {tuple(ids.shape)}"
                )
            ids = ids.tolist()
        if not isinstance(ids, (list, tuple)) or not all(
            isinstance(row, (list, tuple)) for row in ids
        ):
            raise TypeError(f"ids must be (B, n) ids, got {ids!r:.40}")
        out = []
        for row in ids:
            chars = []
            for i in row:
                i = int(i)
                if i == self.eos:
                    break
                if not 0 <= i < len(self.itos):
                    raise ValueError(
                        f"id {i} is outside the {self.name} (0.."
                        f"{len(self.itos) - 1})"
                    )
                if i > self.eos:
                    chars.append(self.itos[i])
            out.append("".join(chars))
        return out


#: The source vocabulary: every printable ASCII character (space included), so
#: that any typed text a keyboard makes is accepted and translated, date or
#: not.
SOURCE_VOCAB = CharVocabulary(
    "".join(chr(c) for c in range(32, 127)),
    MAX_INPUT_LENGTH,
    "source vocabulary",
)
#: The target vocabulary: the ten digits and '-'.
TARGET_VOCAB = CharVocabulary(
    _string.digits + "-", TARGET_LENGTH, "target vocabulary"
)


def date_batch(n: int, generator: torch.Generator, forms=FORMS):
    """A training batch of ``n`` random pairs:
    ``(src, src_lengths, tgt_in, tgt_out)``.

    src: (n, n_src) source ids (``SOURCE_VOCAB``, padded); src_lengths: (n,).
    tgt_in: (n, 11) BOS + the 10 target characters (the decoder's inputs under
    teacher forcing).
    tgt_out: (n, 11) the 10 target characters + EOS (what the decoder must
    predict).
    """
    require_generator("generator", generator)
    sources, targets = random_date_pairs(n, generator, forms)
    src, src_lengths = SOURCE_VOCAB.encode(sources)
    tgt, _ = TARGET_VOCAB.encode(targets, add_bos=True, add_eos=True)
    return src, src_lengths, tgt[:, :-1], tgt[:, 1:]


_MONTH_PREFIXES = tuple(name[:3].lower() for name in MONTHS)


def date_spans(text: str) -> dict:
    """Where a source string written in one of ``FORMS`` holds its year, month
    and day.

    Returns {"year": (start, end), "month": (start, end), "day": (start, end)},
    0-based, end excluded (``text[start:end]``): the four year digits, the
    month (its name or its digits) and the day's digits (without an ordinal
    suffix). Raises ``ValueError`` if ``text`` is not in one of the forms.

    >>> date_spans("Monday, May 3, 1999")
    {'year': (15, 19), 'month': (8, 11), 'day': (12, 13)}
    """
    import re

    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    digits = [m.span() for m in re.finditer(r"\d+", text)]
    words = [m.span() for m in re.finditer(r"[A-Za-z]+", text)]
    names = {name.lower() for name in MONTHS} | set(_MONTH_PREFIXES)
    months = [s for s in words if text[s[0] : s[1]].lower() in names]
    years = [s for s in digits if s[1] - s[0] == 4]
    if len(years) != 1:
        raise ValueError(
            f"{text!r} is not a date in one of the forms: no single four-digit"
            " year"
        )
    others = [s for s in digits if s != years[0]]
    if len(months) == 1 and len(others) == 1:
        month, day = months[0], others[0]
    elif not months and len(others) == 2:
        # 03.05.1999 (day first) or 1999-5-3 (year first, then month, then day)
        month, day = (
            (others[1], others[0]) if others[0][0] < years[0][0] else others
        )
    else:
        raise ValueError(f"{text!r} is not a date in one of the forms")
    return {"year": years[0], "month": month, "day": day}

"""The date data: every form parses back to its date with Python's own parser."""

import datetime
import datetime as dt
import re

import pytest
import torch

from attnbook.tasks import dates
from attnbook.tasks.dates import (
    CASES,
    FORMS,
    MAX_INPUT_LENGTH,
    SOURCE_VOCAB,
    TARGET_VOCAB,
    CharVocabulary,
    date_batch,
    format_date,
    ordinal,
    random_date_pairs,
    random_date_targets,
    random_dates,
)

from _refusals import refused

# Python's strptime formats of each form (full month name; %b for three letters).
STRPTIME = {
    "3 May 1999": "%d %B %Y",
    "03 May 1999": "%d %B %Y",
    "May 3, 1999": "%B %d, %Y",
    "Monday, May 3, 1999": "%A, %B %d, %Y",
    "3 May, 1999": "%d %B, %Y",
    "3rd of May 1999": "%d of %B %Y",
    "MAY 3 1999": "%B %d %Y",
    "03.05.1999": "%d.%m.%Y",
    "1999-5-3": "%Y-%m-%d",
    "May 03 1999": "%B %d %Y",
}


def parse(text: str, form: str) -> dt.date:
    """Parse ``text`` written in ``form`` with datetime.strptime (case-insensitive)."""
    fmt = STRPTIME[form]
    if form == "3rd of May 1999":
        match = re.fullmatch(
            r"(\d+)(st|nd|rd|th)( of .*)", text, flags=re.IGNORECASE
        )
        assert match, text
        assert match.group(2).lower() == ordinal(int(match.group(1)))[-2:]
        text = match.group(1) + match.group(3)
    parsed = None
    for month_fmt, weekday_fmt in (
        ("%B", "%A"),
        ("%b", "%a"),
    ):  # full names, then three letters
        try:
            parsed = dt.datetime.strptime(
                text, fmt.replace("%B", month_fmt).replace("%A", weekday_fmt)
            ).date()
            break
        except ValueError:
            continue
    assert parsed is not None, (text, form)
    if form == "Monday, May 3, 1999":
        weekday = text.split(",")[0].lower()
        assert weekday in (
            parsed.strftime("%A").lower(),
            parsed.strftime("%a").lower(),
        ), text
    return parsed


@pytest.mark.parametrize("seed", range(20))
def test_every_random_pair_parses_back_to_its_target(seed):
    g = torch.Generator().manual_seed(seed)
    for form in FORMS:
        sources, targets = random_date_pairs(50, g, forms=[form])
        for source, target in zip(sources, targets):
            assert parse(source, form).isoformat() == target
            assert len(source) <= MAX_INPUT_LENGTH


def test_the_issue_examples_exactly():
    may3 = dt.date(1999, 5, 3)
    assert [format_date(may3, form) for form in FORMS] == [
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
    ]
    assert (
        format_date(dt.date(1999, 9, 3), "May 3, 1999", short_month=True)
        == "Sep 3, 1999"
    )
    assert dates.iso(may3) == "1999-05-03"


def test_weekday_is_right_for_known_dates():
    # 1 January 1900 was a Monday, 31 December 2099 a Thursday, 20 July 1969 a Sunday.
    assert (
        format_date(dt.date(1900, 1, 1), "Monday, May 3, 1999")
        == "Monday, January 1, 1900"
    )
    assert (
        format_date(dt.date(2099, 12, 31), "Monday, May 3, 1999")
        == "Thursday, December 31, 2099"
    )
    assert (
        format_date(
            dt.date(1969, 7, 20), "Monday, May 3, 1999", short_month=True
        )
        == "Sun, Jul 20, 1969"
    )


def test_ordinal_suffixes():
    wanted = {
        1: "1st",
        2: "2nd",
        3: "3rd",
        4: "4th",
        10: "10th",
        11: "11th",
        12: "12th",
        13: "13th",
        14: "14th",
        20: "20th",
        21: "21st",
        22: "22nd",
        23: "23rd",
        24: "24th",
        30: "30th",
        31: "31st",
    }
    assert {d: ordinal(d) for d in wanted} == wanted


def test_cases():
    day = dt.date(2001, 11, 22)
    assert (
        format_date(day, "3rd of May 1999", case="lower")
        == "22nd of november 2001"
    )
    assert (
        format_date(day, "3rd of May 1999", case="upper")
        == "22ND OF NOVEMBER 2001"
    )
    assert (
        format_date(day, "3rd of May 1999", case="title")
        == "22nd Of November 2001"
    )
    mixed = format_date(
        day,
        "Monday, May 3, 1999",
        case="mixed",
        generator=torch.Generator().manual_seed(3),
    )
    assert mixed.lower() == "thursday, november 22, 2001"
    assert mixed != mixed.lower() and mixed != mixed.upper()
    with pytest.raises(ValueError, match="torch.Generator"):
        format_date(day, "3 May 1999", case="mixed")
    with pytest.raises(ValueError, match="unknown case"):
        format_date(day, "3 May 1999", case="shouting")
    with pytest.raises(ValueError, match="unknown form"):
        format_date(day, "1999/05/03")


def test_random_pairs_cover_forms_cases_and_range():
    sources, targets = random_date_pairs(
        4000, torch.Generator().manual_seed(0)
    )
    years = [int(t[:4]) for t in targets]
    assert min(years) == 1900 and max(years) == 2099
    lettered = [s for s in sources if re.search("[A-Za-z]", s)]
    assert any(s == s.lower() for s in lettered) and any(
        s == s.upper() for s in lettered
    )
    assert any(
        s != s.lower() and s != s.upper() and s != s.title() for s in lettered
    )
    assert any(re.search(r"\b(sep|SEP|Sep)\b", s) for s in sources)
    assert any(re.search(r"september", s, re.IGNORECASE) for s in sources)


def test_generation_is_seeded_and_leaves_the_global_rng_alone():
    torch.manual_seed(0)
    before = torch.get_rng_state()
    a = random_date_pairs(300, torch.Generator().manual_seed(7))
    b = random_date_pairs(300, torch.Generator().manual_seed(7))
    assert a == b
    assert torch.equal(torch.get_rng_state(), before)
    assert random_date_pairs(300, torch.Generator().manual_seed(8)) != a


def test_targets_alone_replay_the_pairs_and_the_generator_exactly():
    # random_date_targets skips formatting all but the "mixed" sources; the
    # stream after it must be the stream after random_date_pairs
    for seed in range(4):
        for forms in (FORMS, FORMS[:2], ["03.05.1999"]):
            a = torch.Generator().manual_seed(seed)
            b = torch.Generator().manual_seed(seed)
            for n in (0, 1, 7, 128, 1000):
                _, targets = random_date_pairs(n, a, forms)
                assert random_date_targets(n, b, forms) == targets
                assert torch.equal(a.get_state(), b.get_state())
    with pytest.raises(ValueError, match="unknown form"):
        random_date_targets(3, torch.Generator(), ["3rd May"])


def test_random_dates_are_uniform_over_days():
    days = random_dates(20000, torch.Generator().manual_seed(1))
    assert all(dates.FIRST_DATE <= d <= dates.LAST_DATE for d in days)
    # The 29 Februaries are as frequent as any other day (about 20000 * 24 / 73049 = 6.6 expected).
    feb29 = sum(d.month == 2 and d.day == 29 for d in days)
    assert 0 < feb29 < 20


def test_vocabulary_round_trip_and_padding():
    texts = ["3 May 1999", "Monday, May 3, 1999", ""]
    ids, lengths = SOURCE_VOCAB.encode(texts)
    assert ids.shape == (3, 19) and ids.dtype == torch.long
    assert lengths.tolist() == [10, 19, 0]
    assert (ids[0, 10:] == SOURCE_VOCAB.pad).all() and (ids[2] == 0).all()
    assert SOURCE_VOCAB.decode(ids) == texts
    tgt, tgt_lengths = TARGET_VOCAB.encode(
        ["1999-05-03"], add_bos=True, add_eos=True
    )
    assert (
        tgt[0, 0] == TARGET_VOCAB.bos
        and tgt[0, -1] == TARGET_VOCAB.eos
        and tgt_lengths.tolist() == [12]
    )
    assert TARGET_VOCAB.decode(tgt) == ["1999-05-03"]
    # decode stops at the first EOS
    assert TARGET_VOCAB.decode([[4, 5, 2, 6]]) == ["12"]


def test_vocabulary_errors_name_string_character_and_position():
    with pytest.raises(
        ValueError, match=r"'3 Mai 1999é' has the character 'é' at position 10"
    ):
        SOURCE_VOCAB.encode(["3 May 1999", "3 Mai 1999é"])
    with pytest.raises(ValueError, match="at most 32"):
        SOURCE_VOCAB.encode(["x" * 33])
    with pytest.raises(
        ValueError, match=r"'1999/05/03' has the character '/' at position 4"
    ):
        TARGET_VOCAB.encode(["1999/05/03"])
    with pytest.raises(ValueError, match="has the character '<'"):
        TARGET_VOCAB.encode(["<eos>"])  # special names are not characters
    with pytest.raises(TypeError, match="list of strings"):
        SOURCE_VOCAB.encode("3 May 1999")
    with pytest.raises(TypeError, match="must be a str"):
        SOURCE_VOCAB.encode([19990503])
    with pytest.raises(ValueError, match="repeat"):
        CharVocabulary("aa", 3)
    with pytest.raises(ValueError, match="outside"):
        TARGET_VOCAB.decode([[99]])


def test_date_batch_shapes_and_teacher_forcing_shift():
    src, src_lengths, tgt_in, tgt_out = date_batch(
        64, torch.Generator().manual_seed(0)
    )
    assert (
        src.shape[0] == 64
        and src.shape[1] == int(src_lengths.max()) <= MAX_INPUT_LENGTH
    )
    assert tgt_in.shape == tgt_out.shape == (64, 11)
    assert (tgt_in[:, 0] == TARGET_VOCAB.bos).all() and (
        tgt_out[:, -1] == TARGET_VOCAB.eos
    ).all()
    assert torch.equal(tgt_in[:, 1:], tgt_out[:, :-1])
    assert len(CASES) == len(dates.CASE_PROBABILITIES)


def test_date_spans_find_year_month_and_day():
    from attnbook.tasks.dates import date_spans

    assert date_spans("Monday, May 3, 1999") == {
        "year": (15, 19),
        "month": (8, 11),
        "day": (12, 13),
    }
    assert date_spans("03.05.1999") == {
        "year": (6, 10),
        "month": (3, 5),
        "day": (0, 2),
    }
    assert date_spans("1999-5-3") == {
        "year": (0, 4),
        "month": (5, 6),
        "day": (7, 8),
    }
    assert date_spans("3rd of SEP 1999")["day"] == (0, 1)
    g = torch.Generator().manual_seed(5)
    sources, targets = random_date_pairs(2000, g)
    for source, target in zip(sources, targets):
        spans = date_spans(source)
        assert source[slice(*spans["year"])] == target[:4]
        assert int(source[slice(*spans["day"])]) == int(target[8:])
        month = source[slice(*spans["month"])]
        wanted = int(target[5:7])
        assert (
            int(month) == wanted
            if month.isdigit()
            else month.lower()[:3] == dates.MONTHS[wanted - 1][:3].lower()
        )
    with pytest.raises(ValueError, match="not a date"):
        date_spans("hello")


def test_dates_helpers_refuse_bad_arguments():
    with pytest.raises(ValueError):
        dates.ordinal(0)
    assert dates.ordinal(32) == "32nd"
    with pytest.raises(TypeError):
        dates.iso("1999-05-03")
    with pytest.raises(ValueError, match="short_month"):
        dates.format_date(
            datetime.date(1999, 5, 3), dates.FORMS[0], short_month="yes"
        )
    assert dates.random_date_pairs(0, torch.Generator().manual_seed(0)) == (
        [],
        [],
    )
    with pytest.raises(ValueError, match="forms"):
        dates.random_date_pairs(2, torch.Generator().manual_seed(0), forms=[])
    with pytest.raises(TypeError):
        dates.TARGET_VOCAB.decode(torch.ones(1, 3))
    with pytest.raises(ValueError):
        dates.CharVocabulary("", 3)
    with pytest.raises(TypeError):
        dates.date_spans(None)


# The date functions never draw from torch's global generator.
@pytest.mark.parametrize(
    "name", ["random_dates", "random_date_pairs", "date_batch"]
)
def test_date_functions_need_a_generator_and_leave_the_global_rng(name):
    from attnbook.tasks import dates

    state = torch.get_rng_state()
    with pytest.raises(TypeError, match="generator"):
        getattr(dates, name)(4, None)
    assert torch.equal(state, torch.get_rng_state())


@pytest.mark.parametrize("strings", [None, 42, {"a": 1}])
def test_translators_refuse_what_is_not_a_list_of_strings(strings):
    from attnbook.tasks.dates import SOURCE_VOCAB

    with pytest.raises(TypeError, match="list of strings"):
        SOURCE_VOCAB.encode_for_translation(strings)


def test_random_dates_refuses_a_list_beyond_the_limit():
    from attnbook.tasks.dates import random_dates

    refused(
        lambda: random_dates(10**12, torch.Generator()), ValueError, "dates"
    )

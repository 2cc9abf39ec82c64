"""The second half of the chapters in a real JupyterLab: test_lab.py's
chapter test (run all cells, no error, the explorer reacts to a key) on a
second Lab server, so that `make test`'s parallel workers can share the
suite's longest test. test_lab.py's docstring describes the checks."""

import pytest

from book.test_lab import (  # noqa: F401 (lab: the fixture, one server per file)
    CHAPTERS,
    FIRST_HALF,
    lab,
    run_chapter_and_move_its_explorer,
)

pytestmark = pytest.mark.lab

LATER_HALF = CHAPTERS[len(FIRST_HALF) :]


def test_the_two_halves_cover_every_chapter_once():
    assert sorted(FIRST_HALF + LATER_HALF) == CHAPTERS
    assert not set(FIRST_HALF) & set(LATER_HALF)


@pytest.mark.parametrize("chapter", LATER_HALF)
def test_chapter_runs_and_its_explorer_reacts(chapter, lab, browser):  # noqa: F811
    run_chapter_and_move_its_explorer(chapter, lab, browser)

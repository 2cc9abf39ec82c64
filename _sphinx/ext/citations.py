"""Sphinx extension: author-year citations in round brackets.

sphinxcontrib-bibtex's "author_year" style writes {cite:p} as
"[Vaswani et al., 2017]" and {cite:t} as "Vaswani et al. [2017]". This
registers "author_year_round", the same style with round brackets, as
author-year citations are usually written: "(Vaswani et al., 2017)" and
"Vaswani et al. (2017)". _config.yml selects it (bibtex_reference_style);
lab/labextensions/attnbook-lab writes the same texts in JupyterLab.
"""

import dataclasses

from sphinxcontrib.bibtex.plugin import register_plugin
from sphinxcontrib.bibtex.style.referencing import BracketStyle
from sphinxcontrib.bibtex.style.referencing.author_year import (
    AuthorYearReferenceStyle,
)


def _round() -> BracketStyle:
    return BracketStyle(left="(", right=")")


@dataclasses.dataclass
class RoundAuthorYearStyle(AuthorYearReferenceStyle):
    bracket_parenthetical: BracketStyle = dataclasses.field(
        default_factory=_round
    )
    bracket_textual: BracketStyle = dataclasses.field(default_factory=_round)
    bracket_author: BracketStyle = dataclasses.field(default_factory=_round)
    bracket_label: BracketStyle = dataclasses.field(default_factory=_round)
    bracket_year: BracketStyle = dataclasses.field(default_factory=_round)


register_plugin(
    "sphinxcontrib.bibtex.style.referencing",
    "author_year_round",
    RoundAuthorYearStyle,
)


def setup(app):
    return {"parallel_read_safe": True, "parallel_write_safe": True}

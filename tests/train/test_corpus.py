"""attnbook.train.corpus: module names of the corpus's files."""

import pytest


def test_corpus_module_name_takes_str_paths_and_checks_them():
    from attnbook.train.corpus import module_name

    assert module_name("/lib/email/mime/text.py", "/lib") == "email.mime.text"
    with pytest.raises(ValueError, match="is not under lib"):
        module_name("/elsewhere/a.py", "/lib")

"""The helper the result-shipping training scripts share."""

import hashlib

from attnbook.train._results import DATA, results_parser, write_pinned


def test_out_defaults_to_the_data_folder_and_the_digest_is_the_files(
    tmp_path, capsys
):
    args = results_parser("x", "results.json").parse_args([])
    assert args.out == DATA / "results.json"
    path = tmp_path / "r.json"
    digest = write_pinned(path, '{"a": 1}\n', "R_SHA256", "attnbook/x.py")
    assert digest == hashlib.sha256(path.read_bytes()).hexdigest()
    assert "pin it as R_SHA256 in attnbook/x.py" in capsys.readouterr().out

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


def test_training_scripts_helpers_check_their_arguments():
    """Probe findings: records, recipes and lengths that are not what the
    scripts pass reached Python's errors; models that are none too."""
    import pytest

    from attnbook.train import hull_pointer, order_classifier, recall, sorter

    for records in (None, "abc", [None]):
        with pytest.raises(TypeError, match="records"):
            recall.results_json(records)
    for recipe in (None, "x", {}):
        with pytest.raises(TypeError, match="recipe"):
            order_classifier.held_out_accuracy(None, recipe)
    for lengths in (None, "abc", []):
        with pytest.raises(TypeError, match="lengths"):
            sorter.evaluate(None, lengths)
    with pytest.raises(ValueError, match="lengths"):
        sorter.evaluate(None, [None])
    with pytest.raises(TypeError, match="HullPointerNetwork"):
        hull_pointer.evaluate(None)


def test_training_arguments_one_option_per_recipe_entry():
    """The command line every training script shares: --out, --check
    (unless switched off) and one option per recipe entry; the command it
    returns repeats only the changed entries."""
    import pytest

    from attnbook.train._results import training_arguments

    recipe = {"steps": 100, "batch_size": 64}
    args, given, command = training_arguments(
        ["--batch-size", "32"], "x", recipe, "train.sorter"
    )
    assert given == {"steps": 100, "batch_size": 32} and not args.check
    assert command == "python -m attnbook.train.sorter --batch-size 32"
    with pytest.raises(SystemExit):
        training_arguments(["--check"], "x", recipe, "train.b", check=False)

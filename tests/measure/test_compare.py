"""agreement: what a printed comparison establishes, to a stated tolerance."""

import pytest
import torch

from attnbook import agreement


def test_equal_within_the_tolerance_says_so_and_names_it():
    a = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
    assert agreement(a, a + 1e-13, tol=1e-12) == "equal within 1e-12"
    assert agreement(a, a, tol=1e-6) == "equal within 1e-06"


def test_a_gap_over_the_tolerance_prints_the_gap():
    a = torch.zeros(4)
    b = torch.tensor([0.0, 0.0, 3e-3, -1e-3])
    assert (
        agreement(a, b, tol=1e-6)
        == "differ by up to 3.0e-03 (more than 1e-06)"
    )


def test_nan_and_infinity_count_as_differences():
    a = torch.ones(3)
    assert (
        agreement(a, torch.tensor([1.0, float("nan"), 1.0]), tol=1.0)
        == "differ: NaN"
    )
    assert agreement(
        a, torch.tensor([1.0, float("inf"), 1.0]), tol=1.0
    ).startswith("differ by up to inf")


def test_a_number_is_compared_with_every_entry_and_dtypes_may_differ():
    assert (
        agreement(torch.full((2, 3), 1e-9), 0, tol=1e-8)
        == "equal within 1e-08"
    )
    assert agreement(
        torch.ones(2, dtype=torch.float32),
        torch.ones(2, dtype=torch.float64),
        tol=1e-12,
    ).startswith("equal")
    assert agreement(0.5, 0.5 + 2e-7, tol=1e-6) == "equal within 1e-06"


@pytest.mark.parametrize(
    "args, error, words",
    [
        (
            (torch.ones(3), torch.ones(4), 1e-6),
            ValueError,
            "actual (3,) and expected (4,)",
        ),
        ((torch.ones(3), torch.ones(3), 0.0), ValueError, "tol"),
        ((torch.ones(3), torch.ones(3), -1.0), ValueError, "tol"),
        ((torch.ones(3), "1", 1e-6), TypeError, "expected"),
        (
            (torch.ones(3, dtype=torch.bool), torch.ones(3), 1e-6),
            TypeError,
            "actual",
        ),
        (([1.0], torch.ones(1), 1e-6), TypeError, "actual"),
    ],
)
def test_bad_input_is_refused_naming_the_argument(args, error, words):
    with pytest.raises(
        error, match=words.replace("(", r"\(").replace(")", r"\)")
    ):
        agreement(*args)


def test_integers_beyond_two_to_the_53_are_compared_exactly():
    # float64 cannot tell 2**53 + 1 from 2**53.
    big = torch.tensor([2**53 + 1])
    assert agreement(big, torch.tensor([2**53]), tol=1e-6).startswith(
        "differ by up to 1.0e+00"
    )
    assert agreement(2**53 + 1, 2**53, tol=1e-6).startswith("differ")
    assert agreement(big, 2**53 + 1, tol=1e-6) == "equal within 1e-06"
    extremes = torch.tensor([2**63 - 1, -(2**63)])
    assert agreement(extremes, extremes.flip(0), tol=1.0).startswith(
        "differ by up to 1.8e+19"
    )


@pytest.mark.parametrize("which", ["actual", "expected"])
def test_agreement_refuses_meta_tensors(which):
    a, b = torch.ones(3), torch.ones(3)
    args = {"actual": a, "expected": b, which: torch.ones(3).to("meta")}
    with pytest.raises(ValueError, match=f"{which} is on the meta device"):
        agreement(args["actual"], args["expected"], 1e-6)


def test_agreement_still_compares_with_a_number():
    assert agreement(torch.ones(3), 1.0, 1e-6) == "equal within 1e-06"

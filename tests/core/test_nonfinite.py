"""attnbook.core._nonfinite: the helpers that keep non-finite values under
a mask out of outputs and gradients check their tensors."""

import pytest
import torch


def test_the_masks_helpers_check_their_tensors():
    from attnbook.core._nonfinite import positions_in_use, zero_unused

    with pytest.raises(ValueError, match="mask is on the meta device"):
        positions_in_use(torch.ones(2, 3, dtype=torch.bool, device="meta"))
    with pytest.raises(TypeError, match="mask must be a bool tensor"):
        positions_in_use(torch.ones(2, 3))
    huge = torch.ones(1, 1).expand(10**9, 3)
    with pytest.raises(ValueError, match="x, a broadcast view"):
        zero_unused(huge, torch.ones(10**9, dtype=torch.bool))

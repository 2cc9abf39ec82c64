"""The state's bytes, counted from the states themselves."""

import pytest
import torch
import torch.nn.functional as F

from attnbook import delta_rule
from attnbook.measure.kv_cache import kv_cache_bytes
from attnbook.measure.state_bytes import QWEN3_NEXT, recurrent_state_bytes


def test_state_bytes_match_the_tensor_and_do_not_grow():
    heads, d_k, d_v = 3, 8, 5
    for n in (4, 40):
        q = torch.randn(2, heads, n, d_k, dtype=torch.bfloat16)
        k = F.normalize(torch.randn(2, heads, n, d_k), dim=-1).bfloat16()
        v = torch.randn(2, heads, n, d_v, dtype=torch.bfloat16)
        beta = torch.full((2, heads, n), 0.5, dtype=torch.bfloat16)
        _, state = delta_rule(q, k, v, beta, return_state=True)
        stored = state.numel() * state.element_size()
        assert stored == recurrent_state_bytes(1, heads, d_k, d_v, batch=2)


def test_qwen3_next_layers_add_up():
    c = QWEN3_NEXT
    assert c["attention_layers"] + c["deltanet_layers"] == c["num_layers"]
    assert c["num_layers"] // 4 == c["attention_layers"]
    state = recurrent_state_bytes(
        c["deltanet_layers"], c["deltanet_heads"], 128, 128
    )
    assert state == 36 * 32 * 128 * 128 * 2
    per_token = kv_cache_bytes(c["attention_layers"], 2, 256, 1)
    assert per_token == 2 * 12 * 2 * 256 * 2


def test_bad_sizes():
    with pytest.raises(ValueError, match="key_dim"):
        recurrent_state_bytes(1, 1, 0, 4)

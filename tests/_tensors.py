"""Small seeded tensors shared by the unit tests."""

import torch


def seeded_randn(*shape, seed=0, dtype=torch.float32):
    return torch.randn(
        *shape, generator=torch.Generator().manual_seed(seed), dtype=dtype
    )


def qkv(n_q=3, n_k=5, d=4, d_v=2, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (
        torch.randn(n_q, d, generator=g),
        torch.randn(n_k, d, generator=g),
        torch.randn(n_k, d_v, generator=g),
    )

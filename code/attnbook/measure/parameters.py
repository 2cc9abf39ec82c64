"""Counting a model's parameters."""

from torch import nn


def count_parameters(model: nn.Module) -> int:
    """The number of trainable parameters of ``model``."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)

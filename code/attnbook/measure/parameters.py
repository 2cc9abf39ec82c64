"""Counting a model's parameters."""

from torch import nn


def count_parameters(model: nn.Module) -> int:
    """The number of trainable parameters of ``model``."""
    if not isinstance(model, nn.Module):
        raise TypeError(
            f"model must be a torch.nn.Module, got {type(model).__name__}"
        )
    return sum(p.numel() for p in model.parameters() if p.requires_grad)

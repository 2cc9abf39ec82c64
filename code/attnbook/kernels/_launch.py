"""Triton, imported in the right mode: compiled for a GPU, or interpreted.

``@triton.jit`` kernels are compiled for the GPU, or run by Triton's
interpreter on the CPU when the environment variable ``TRITON_INTERPRET`` is
1 *when triton is imported* (its own library functions, ``tl.max`` and
``tl.sum`` among them, are defined then, in that mode). So every kernel
module imports triton from here: on a machine without CUDA this module sets
the variable to 1 before importing triton (and re-imports triton's Python
modules if something, torch itself, imported them first in compiled mode).
The mode is then fixed for the process; ``check_device`` says so clearly
when a tensor does not fit it. ``import attnbook`` never imports this
module: only the first kernel call does.
"""

import importlib.util
import os
import sys

import torch

if importlib.util.find_spec("triton") is None:
    raise ImportError(
        "the book's kernels need the triton package (pip install triton; "
        "on a CPU, triton runs them with its interpreter)"
    )


def _prepare_triton() -> None:
    """Set ``TRITON_INTERPRET=1`` on a machine without CUDA. If triton was
    already imported in compiled mode (torch imports it for some operations,
    e.g. on the meta device), drop its Python modules so that the import
    below loads them again, interpreted (its compiled core, ``triton._C``,
    stays)."""
    if not torch.cuda.is_available():
        os.environ["TRITON_INTERPRET"] = "1"
    standard = sys.modules.get("triton.language.standard")
    if (
        os.environ.get("TRITON_INTERPRET") == "1"
        and standard is not None
        and type(standard.max).__name__ != "InterpretedFunction"
    ):
        for name in list(sys.modules):
            if name.split(".")[0] == "triton" and not name.startswith(
                "triton._C"
            ):
                del sys.modules[name]


_prepare_triton()
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"

__all__ = ["INTERPRETED", "check_device", "tl", "triton"]


def check_device(name: str, tensor: torch.Tensor) -> None:
    """A tensor the kernels can run on in this process's mode, or a
    ``ValueError`` saying why not."""
    if INTERPRETED and tensor.device.type in ("cpu", "cuda"):
        return
    if not INTERPRETED and tensor.device.type == "cuda":
        return
    if INTERPRETED:
        raise ValueError(
            f"{name} is on {tensor.device}: Triton's interpreter runs the "
            "kernels on CPU (or CUDA) tensors"
        )
    if tensor.device.type == "cpu":
        raise ValueError(
            f"{name} is on the CPU, but this process compiles the kernels "
            "for the GPU (CUDA is available and triton was imported without "
            "TRITON_INTERPRET=1): move the tensors to the GPU with .cuda(), "
            "or start Python with TRITON_INTERPRET=1 to use the interpreter"
        )
    raise ValueError(
        f"{name} is on {tensor.device}: the kernels run on CUDA tensors "
        "(compiled) or CPU tensors (Triton's interpreter)"
    )


def launch(kernel, grid, args, meta, blocks, gpu_blocks):
    """Run ``kernel`` with ``grid(blocks)`` programs.

    ``blocks``: a dict of block sizes (e.g. ``{"BLOCK_M": 16, ...}``) used as
    given; None: on a GPU, Triton's autotuner picks the fastest of
    ``gpu_blocks`` (tuples of block sizes, num_warps, num_stages) for each
    size of problem; under the interpreter, the first entry of
    ``gpu_blocks`` with every size capped at 32 (interpreted programs are
    slow, small ones less so).
    """
    names = [n for n in kernel.arg_names if n.startswith("BLOCK_")]
    names = [n for n in names if n not in meta]
    if blocks is None and INTERPRETED:
        blocks = dict(zip(names, (min(b, 32) for b in gpu_blocks[0][0])))
    if blocks is not None:
        kernel[grid(blocks)](*args, **meta, **blocks)
        return
    key = (kernel, tuple(gpu_blocks))
    if key not in _TUNED:
        configs = [
            triton.Config(dict(zip(names, sizes)), num_warps=w, num_stages=s)
            for sizes, w, s in gpu_blocks
        ]
        tuned_on = [n for n in ("n_q", "n_k", "d") if n in kernel.arg_names]
        _TUNED[key] = triton.autotune(configs, key=tuned_on + list(meta))(
            kernel
        )
    _TUNED[key][grid](*args, **meta)


_TUNED: dict = {}

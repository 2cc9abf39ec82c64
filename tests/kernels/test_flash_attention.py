"""The Triton kernels (chapter 16) against ``attention`` and its autograd.

On a machine without a GPU, Triton's interpreter runs them on CPU tensors;
sizes are small (the interpreter runs every program in Python). Sizes are
odd on purpose: neither n nor d is a multiple of a block.
"""

import sys

import pytest
import torch

from attnbook import attention, causal_mask, flash_attention

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def qkv(b, h, n_q, n_k, d, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    make = [(b, h, n_q, d), (b, h, n_k, d), (b, h, n_k, d)]
    return [
        torch.randn(shape, generator=g).to(DEVICE, dtype).requires_grad_()
        for shape in make
    ]


def reference(q, k, v, causal):
    """``attention`` in float64: the definition, and its gradients."""
    n_q, n_k = q.shape[2], k.shape[2]
    mask = causal_mask(n_q, n_k, device=q.device) if causal else None
    return attention(q.double(), k.double(), v.double(), mask=mask)[0]


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize(
    "b, h, n_q, n_k, d",
    [
        (1, 1, 1, 1, 1),
        (2, 3, 37, 37, 24),
        (1, 2, 19, 53, 64),
        (1, 1, 45, 45, 128),
    ],
)
def test_forward_and_gradients_equal_attention(b, h, n_q, n_k, d, causal):
    q, k, v = qkv(b, h, n_q, n_k, d)
    out = flash_attention(q, k, v, causal=causal)
    expected = reference(q, k, v, causal)
    assert out.dtype == torch.float32 and out.shape == (b, h, n_q, d)
    assert torch.allclose(out.double(), expected, atol=2e-6, rtol=0)
    grad = torch.randn(out.shape, generator=torch.Generator().manual_seed(1))
    got = torch.autograd.grad(out, (q, k, v), grad.to(DEVICE))
    wanted = torch.autograd.grad(expected, (q, k, v), grad.to(expected))
    for name, a, e in zip("qkv", got, wanted):
        assert torch.allclose(a.double(), e.double(), atol=1e-5, rtol=0), name


def test_float16_is_right_to_half_precision():
    q, k, v = qkv(1, 2, 33, 33, 40, dtype=torch.float16)
    for causal in (False, True):
        out = flash_attention(q, k, v, causal=causal)
        expected = reference(q, k, v, causal)
        assert out.dtype == torch.float16
        assert (out.double() - expected).abs().max() < 2e-3
        g = torch.autograd.grad(out.float().sum(), q)[0]
        e = torch.autograd.grad(expected.sum(), q)[0]
        assert (g.double() - e).abs().max() < 1e-2


def test_equals_sdpa_on_a_noncontiguous_view():
    q, k, v = (t.detach() for t in qkv(2, 3, 29, 29, 16))
    q = q.transpose(1, 2).contiguous().transpose(1, 2)  # strided like a split
    got = flash_attention(q, k, v, causal=True)
    sdpa = torch.nn.functional.scaled_dot_product_attention
    assert torch.allclose(got, sdpa(q, k, v, is_causal=True), atol=1e-6)


def test_a_wrong_kernel_is_caught():
    # The check can fail: dropping the causal flag changes the output.
    q, k, v = qkv(1, 1, 20, 20, 16)
    wrong = flash_attention(q, k, v, causal=False)
    assert not torch.allclose(wrong.double(), reference(q, k, v, True))


def test_import_attnbook_does_not_import_triton():
    import subprocess

    code = "import attnbook, sys; print('triton' in sys.modules)"
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True
    )
    assert run.stdout.strip() == "False", run.stderr


def test_runs_after_torch_imported_triton_in_compiled_mode():
    # An operation on the meta device makes torch import triton (compiled
    # mode); the kernels must still run interpreted on a CPU-only machine.
    import subprocess

    code = (
        "import sys, torch\n"
        "q = torch.empty(4, 8, device='meta')\n"
        "try:\n    torch.maximum(torch.zeros(4, 1), q[:, :1])\n"
        "except Exception:\n    pass\n"
        "from attnbook import flash_attention, attention\n"
        "g = torch.Generator().manual_seed(0)\n"
        "x = torch.randn(1, 1, 20, 16, generator=g)\n"
        "print(float((flash_attention(x, x, x) - attention(x, x, x)[0])"
        ".abs().max()))\n"
    )
    if torch.cuda.is_available():
        pytest.skip("the compiled mode is right with a GPU")
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr[-500:]
    # float32 rounding (eps 1.2e-7 on outputs of size ~1); a kernel that ran
    # wrong (compiled mode on a CPU tensor) is off by far more than 1e-5
    assert float(run.stdout.strip()) < 1e-5

"""Every kernel of chapter 16 checked on CUDA against SDPA / ``attention``.

Run by ``tests/tools/gpu_check.sh`` on a GPU machine with its own Python
(torch and triton only, no pytest): compiled kernels, float32, float16 and
bfloat16, odd sizes, causal and not, gradients, Flash-Decoding and paged
decoding. Prints one line per check and exits non-zero if any fails.
``--dry-run`` runs the same checks at small sizes on the CPU (Triton's
interpreter; no bfloat16), to test this script without a GPU.
"""

import sys

import torch
import torch.nn.functional as F

from attnbook import (
    attention,
    causal_mask,
    flash_attention,
    flash_decoding,
    paged_decoding,
)
from attnbook.kernels.api import paged_cache, triton_softmax

TOLERANCE = {torch.float32: 2e-5, torch.float16: 4e-3, torch.bfloat16: 3e-2}
FAILED = []
DRY = "--dry-run" in sys.argv
DEVICE = "cpu" if DRY else "cuda"


def check(name: str, error: float, tol: float) -> None:
    ok = error <= tol
    print(
        f"{'ok  ' if ok else 'FAIL'} {name}: max error {error:.2e} "
        f"(tolerance {tol:.0e})",
        flush=True,
    )
    if not ok:
        FAILED.append(name)


def qkv(b, h, n_q, n_k, d, dtype, seed=0):
    g = torch.Generator(device=DEVICE).manual_seed(seed)
    return [
        torch.randn(
            b, h, n, d, device=DEVICE, dtype=dtype, generator=g
        ).requires_grad_()
        for n in (n_q, n_k, n_k)
    ]


def check_flash(b, h, n_q, n_k, d, dtype, causal):
    q, k, v = qkv(b, h, n_q, n_k, d, dtype)
    out = flash_attention(q, k, v, causal=causal)
    mask = causal_mask(n_q, n_k, device=DEVICE) if causal else None
    ref = F.scaled_dot_product_attention(
        *(t.double() for t in (q, k, v)), attn_mask=mask
    )
    name = f"flash {dtype} b{b} h{h} n_q{n_q} n_k{n_k} d{d} causal={causal}"
    tol = TOLERANCE[dtype]
    check(name + " forward", (out.double() - ref).abs().max().item(), tol)
    grad = torch.randn_like(out)
    got = torch.autograd.grad(out, (q, k, v), grad)
    want = torch.autograd.grad(ref, (q, k, v), grad.double())
    for label, a, e in zip(("dq", "dk", "dv"), got, want):
        scale = max(1.0, e.abs().max().item())
        err = (a.double() - e.double()).abs().max().item() / scale
        check(f"{name} {label} (relative to max)", err, 4 * tol)


def main() -> int:
    if not torch.cuda.is_available() and not DRY:
        print("gpu_check needs a GPU")
        return 2
    print("dry run on the CPU" if DRY else torch.cuda.get_device_name())
    x = torch.randn(37, 100 if DRY else 1000, device=DEVICE)
    check(
        "row softmax",
        (triton_softmax(x) - x.softmax(-1)).abs().max().item(),
        1e-6,
    )
    dtypes = (torch.float32, torch.float16, torch.bfloat16)
    sizes = [
        (2, 3, 197, 197, 64),
        (1, 2, 77, 300, 128),
        (1, 1, 1000, 1000, 40),
    ]
    if DRY:
        dtypes, sizes = dtypes[:2], [(1, 2, 19, 45, 24), (1, 1, 33, 33, 128)]
    for dtype in dtypes:
        for causal in (False, True):
            for size in sizes:
                if dtype == torch.float32 and size[-1] == 128 and not DRY:
                    continue  # fewer compilations: d = 128 in 16 bits only
                check_flash(*size, dtype, causal)
    n_cache = 300 if DRY else 5000
    q, k, v = (t.detach() for t in qkv(2, 8, 1, n_cache, 128, torch.float16))
    ref = attention(q.float(), k.float(), v.float())[0]
    for split in (64, 256, n_cache):
        out = flash_decoding(q, k, v, split_size=split)
        check(
            f"flash decoding split {split}",
            (out.float() - ref).abs().max().item(),
            2e-3,
        )
    pages = paged_cache(k, v, 16, torch.Generator().manual_seed(0))
    out = paged_decoding(q, *pages)
    check(
        "paged decoding, page 16", (out.float() - ref).abs().max().item(), 2e-3
    )
    print("FAILED:" if FAILED else "all checks passed", *FAILED, sep="\n  ")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())

"""`make test-portable`: the chapters' stored outputs and the unit tests, under other numeric set-ups.

The outputs in book/*.ipynb were recorded on one CPU. A reader's CPU may have another SIMD width
(ATen picks AVX-512, AVX2 or plain kernels), other BLAS kernels (MKL picks its own code path), and
another number of threads; each changes how sums are rounded. This script re-runs nbval on every
chapter, and the unit tests, once per variant below, and fails if any printed number moves.

Variants (each setting at least once, several settings per run to keep CI short):
  * ATen's kernels at every capability below this CPU's own (e.g. DEFAULT and AVX2 on AVX-512),
  * MKL limited to SSE4.2 and to AVX2 (MKL_ENABLE_INSTRUCTIONS; oneDNN likewise),
  * 1 and 2 threads (OMP_NUM_THREADS).

Usage: python tests/tools/portability.py [--only NAME ...] [--list] [pytest args after --]
"""

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LEVELS = ("DEFAULT", "AVX2", "AVX512")  # ATen's x86 capabilities, lowest first
# What nbval and the unit tests run here: everything but the browser, JupyterLab and PDF tests,
# which read the built book rather than compute.
PYTEST_ARGS = [
    "book",
    "tests",
    "-m",
    "not browser and not lab",
    "--ignore=tests/book/test_pdf.py",
    "-q",
    "-p",
    "no:randomly",
]


def variants(native: str) -> list[tuple[str, dict]]:
    """(name, environment) for each run.

    Every ATen level below ``native`` runs once; MKL's SSE4.2 and AVX2 paths and 1 and 2 threads
    are spread over those runs, and whatever is left over runs at the native level.
    """
    below = list(LEVELS[: LEVELS.index(native)]) if native in LEVELS else []
    blas_and_threads = [("SSE4_2", "1"), ("AVX2", "2")]
    runs = []
    for i, (isa, threads) in enumerate(blas_and_threads):
        env = {
            "MKL_ENABLE_INSTRUCTIONS": isa,
            "ONEDNN_MAX_CPU_ISA": isa,
            "OMP_NUM_THREADS": threads,
        }
        name = f"mkl-{isa.lower()}-threads-{threads}"
        if i < len(below):
            env = {"ATEN_CPU_CAPABILITY": below[i].lower(), **env}
            name = f"aten-{below[i].lower()}-{name}"
        runs.append((name, env))
    for level in below[len(blas_and_threads) :]:
        runs.append(
            (f"aten-{level.lower()}", {"ATEN_CPU_CAPABILITY": level.lower()})
        )
    return runs


def effective(env: dict) -> str:
    """What torch reports under ``env``: its ATen capability and thread count (a check that the setting took)."""
    code = "import torch; print(torch.backends.cpu.get_cpu_capability(), torch.get_num_threads())"
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return out.strip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--only", nargs="*", help="run only the variants with these names"
    )
    parser.add_argument(
        "--list", action="store_true", help="list the variants and exit"
    )
    args, extra = parser.parse_known_args()
    extra = [a for a in extra if a != "--"]
    # The capability torch picks on this CPU when nothing is set (e.g. 'AVX512').
    native = effective(
        {k: v for k, v in os.environ.items() if k != "ATEN_CPU_CAPABILITY"}
    ).split()[0]
    runs = variants(native)
    if args.only:
        runs = [run for run in runs if run[0] in args.only]
    print(f"this CPU's own ATen capability: {native}; {len(runs)} variants")
    results = []
    for name, settings in runs:
        env = {**os.environ, **settings}
        capability, threads = effective(env).split()
        shown = " ".join(f"{k}={v}" for k, v in settings.items())
        print(
            f"\n=== {name}: {shown} (torch sees {capability}, {threads} threads)",
            flush=True,
        )
        if args.list:
            continue
        if (
            "ATEN_CPU_CAPABILITY" in settings
            and capability != settings["ATEN_CPU_CAPABILITY"].upper()
        ):
            print(
                f"ATEN_CPU_CAPABILITY={settings['ATEN_CPU_CAPABILITY']} did not take (torch uses {capability})"
            )
            results.append((name, 1, 0.0))
            continue
        start = time.perf_counter()
        code = subprocess.run(
            [sys.executable, "-m", "pytest", *PYTEST_ARGS, *extra],
            env=env,
            cwd=ROOT,
        ).returncode
        results.append((name, code, time.perf_counter() - start))
    if args.list:
        return 0
    print("\nvariant                          result   seconds")
    for name, code, seconds in results:
        print(
            f"{name:32} {'passed' if code == 0 else 'FAILED':8} {seconds:7.0f}"
        )
    failed = sum(code != 0 for _, code, _ in results)
    print(
        f"portability: {len(results) - failed} of {len(results)} variants passed"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

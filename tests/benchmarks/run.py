"""Run the benchmark suite, print a table and write it as JSON (what `make bench` calls).

    python tests/benchmarks/run.py [--quick] [--only NAMES] [--skip NAMES] [--json PATH] [--markdown]

NAMES is a comma-separated subset of: multihead, chunked, sliding-window, kv-cache, widgets, notebooks, book.
Every comparison is a ratio of medians measured side by side in this one run;
absolute times drift on a shared machine, so the load average is recorded too.
Exit status 1 only if a benchmark crashed; missed targets are reported, not fatal.
"""

import argparse
import datetime
import importlib
import json
import os
import platform
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import ROOT, format_markdown, format_table, row  # noqa: E402

BENCHMARKS = (
    "multihead",
    "chunked",
    "sliding-window",
    "kv-cache",
    "widgets",
    "notebooks",
    "book",
)


def load(name: str):
    # a module name cannot hold a hyphen: "kv-cache" lives in bench_kv_cache.py
    return importlib.import_module(f"bench_{name.replace('-', '_')}")


def run_all(names, quick: bool = False, echo=print) -> tuple:
    rows, crashed = [], []
    for name in names:
        start = time.perf_counter()
        echo(f"running {name} ...", flush=True)
        try:
            new_rows = load(name).run(quick=quick)
        except Exception:
            crashed.append(name)
            new_rows = [
                row(
                    name,
                    "CRASHED",
                    None,
                    "",
                    "",
                    False,
                    traceback.format_exc().strip().splitlines()[-1],
                )
            ]
            traceback.print_exc()
        rows += new_rows
        echo(
            f"  {name}: {len(new_rows)} rows in {time.perf_counter() - start:.1f} s",
            flush=True,
        )
    return rows, crashed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="tiny sizes, no notebook runs or book build",
    )
    parser.add_argument(
        "--only", default="", help="comma-separated benchmarks to run"
    )
    parser.add_argument(
        "--skip", default="", help="comma-separated benchmarks to leave out"
    )
    parser.add_argument(
        "--json",
        default=str(ROOT / "_build" / "bench.json"),
        help="where to write the results",
    )
    parser.add_argument(
        "--markdown",
        action="store_true",
        help="also print the table in Markdown",
    )
    args = parser.parse_args(argv)
    only = [n for n in args.only.split(",") if n] or list(BENCHMARKS)
    skip = {n for n in args.skip.split(",") if n}
    unknown = (set(only) | skip) - set(BENCHMARKS)
    if unknown:
        parser.error(
            f"unknown benchmark(s) {sorted(unknown)}; choose from {', '.join(BENCHMARKS)}"
        )
    names = [n for n in BENCHMARKS if n in only and n not in skip]

    import torch

    load_before = os.getloadavg()
    started = time.perf_counter()
    rows, crashed = run_all(names, quick=args.quick)
    load_after = os.getloadavg()
    targets = [r for r in rows if r["met"] is not None]
    missed = [r for r in targets if not r["met"]]
    meta = {
        "created": datetime.datetime.now().isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "quick": args.quick,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cpus": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in load_after],
        "seconds": round(time.perf_counter() - started, 1),
    }
    print()
    print(format_table(rows))
    print()
    print(
        f"targets met: {len(targets) - len(missed)} of {len(targets)}"
        + (
            f"; missed: {'; '.join(r['measure'] for r in missed)}"
            if missed
            else ""
        )
    )
    print(
        f"load average (1, 5, 15 min): before {meta['load_average_before']}, after {meta['load_average_after']}; "
        f"{meta['cpus']} CPUs, torch threads {meta['torch_threads']}; {meta['seconds']} s in all"
    )
    if args.markdown:
        print()
        print(format_markdown(rows))
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps({"meta": meta, "rows": rows, "crashed": crashed}, indent=2)
        + "\n"
    )
    print(f"wrote {out}")
    return 1 if crashed else 0


if __name__ == "__main__":
    sys.exit(main())

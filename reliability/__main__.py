"""`python -m reliability --all [--smoke]`: every scenario, one after another.

`python -m reliability --list` names them; `python -m reliability kill9 lost_ack`
runs some. Each runs in a process of its own; the summary gives each one's exit
code, and the command exits with the worst (1 broken, 2 could not run, 3 skipped).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

from reliability import SCENARIOS
from reliability._harness import EXIT_BROKEN, EXIT_OK, EXIT_SETUP, EXIT_SKIPPED, ROOT

__all__ = ["main"]

_WORST = [EXIT_OK, EXIT_SKIPPED, EXIT_SETUP, EXIT_BROKEN]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reliability", description=__doc__)
    parser.add_argument("names", nargs="*", help="scenarios to run (default with --all: all)")
    parser.add_argument("--all", action="store_true", help="run every scenario")
    parser.add_argument("--smoke", action="store_true", help="small and fast sizes (CI)")
    parser.add_argument("--seed", type=int, help="passed on to every scenario")
    parser.add_argument("--list", action="store_true", help="name the scenarios and stop")
    args = parser.parse_args(argv)
    if args.list or not (args.all or args.names):
        for name, what in SCENARIOS.items():
            print(f"{name:18} {what}")
        return EXIT_OK if args.list else EXIT_SETUP
    names = list(SCENARIOS) if args.all else args.names
    unknown = [name for name in names if name not in SCENARIOS]
    if unknown:
        print(f"unknown scenario(s) {unknown}; known: {', '.join(SCENARIOS)}")
        return EXIT_SETUP
    results: list[tuple[str, int, float]] = []
    for name in names:
        argv_one = [sys.executable, "-m", f"reliability.{name}"]
        if args.smoke:
            argv_one.append("--smoke")
        if args.seed is not None:
            argv_one += ["--seed", str(args.seed)]
        began = time.monotonic()
        code = subprocess.call(argv_one, cwd=ROOT)
        results.append((name, code, time.monotonic() - began))
        print(flush=True)
    print("== summary")
    for name, code, seconds in results:
        shown = {EXIT_OK: "ok", EXIT_BROKEN: "BROKEN", EXIT_SETUP: "could not run"}.get(
            code, "skipped parts" if code == EXIT_SKIPPED else f"exit {code}"
        )
        print(f"   {name:18} {shown:14} {seconds:6.1f}s")
    codes = [code if code in _WORST else EXIT_BROKEN for _name, code, _s in results]
    return max(codes, key=_WORST.index)


if __name__ == "__main__":
    sys.exit(main())

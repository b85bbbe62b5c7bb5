"""Run one system's case in this process, for a profiler to watch; summarise py-spy output.

    py-spy record -r 500 -f raw -o /tmp/seq.txt -- \\
        python -m bench.profile sequential --store postgres --repeat 3
    python -m bench.profile --summarize /tmp/seq.txt

The engine does its work on worker threads, so use a sampling profiler that
sees every thread (py-spy); a tracing profiler started on the main thread
would only see it waiting for results. py-spy's `raw` format (collapsed
stacks) is what `--summarize` reads: it prints where the samples' time went,
by function including callees, and by function alone (self time).
Nothing here is installed by the suite: `pip install py-spy` to use it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections import Counter
from collections.abc import Sequence

from bench.cases import case_named
from bench.places import Places
from bench.suite import DEFAULT_PG
from bench.worker import make_system

__all__ = ["main", "summarize"]

_FRAME = re.compile(r"^(?P<func>.*?) \((?P<file>.*?)(?::(?P<line>\d+))?\)$")


def summarize(path: str, top: int = 25, idle: Sequence[str] = ()) -> str:
    """Inclusive and self sample counts per function from a py-spy `raw` file."""
    inclusive: Counter[str] = Counter()
    own: Counter[str] = Counter()
    total = 0
    with open(path) as f:
        for line in f:
            stack, _, count_text = line.rstrip("\n").rpartition(" ")
            if not stack:
                continue
            count = int(count_text)
            frames = [_name(frame) for frame in stack.split(";")]
            if any(word in frames[-1] for word in idle):
                continue
            total += count
            for name in set(frames):
                inclusive[name] += count
            own[frames[-1]] += count
    out = [f"{total} samples (busy threads only)" if idle else f"{total} samples"]
    for title, counter in (("including callees", inclusive), ("self", own)):
        out.append(f"\n-- {title} --")
        for name, count in counter.most_common(top):
            out.append(f"{count / max(total, 1) * 100:6.1f}%  {name}")
    return "\n".join(out)


def _name(frame: str) -> str:
    match = _FRAME.match(frame)
    if match is None:
        return frame
    return f"{match['func']} ({match['file']})"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.profile", description=__doc__)
    parser.add_argument("case", nargs="?")
    parser.add_argument("--store", default="postgres", choices=("sqlite", "postgres"))
    parser.add_argument("--system", default="replaykit")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--pg", default=DEFAULT_PG)
    parser.add_argument("--summarize", metavar="RAW", help="summarise a py-spy raw file")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument(
        "--busy",
        action="store_true",
        help="with --summarize: drop samples whose innermost frame is a wait",
    )
    args = parser.parse_args(argv)
    if args.summarize:
        idle = (
            ("wait (threading.py)", "_wait_for_tstate_lock", "select (", "poll (")
            if args.busy
            else ()
        )
        print(summarize(args.summarize, args.top, idle))
        return
    if not args.case:
        parser.error("name a case, or --summarize a py-spy raw file")
    case = case_named(args.case)
    sizes = dict(case.quick_sizes if args.quick else case.sizes)
    places = Places(args.pg if args.store == "postgres" else None)
    try:
        target, _ = places.make(args.system, args.store, case.name)
        spec = {"case": case.name, "store": args.store, "sizes": sizes, "target": target}
        system = make_system({**spec, "system": args.system})
        system.setup()
        for rep in range(args.repeat):
            started = time.perf_counter()
            result = system.run(rep)
            print(
                f"rep {rep}: {time.perf_counter() - started:.2f}s {json.dumps(result['metrics'])}",
                file=sys.stderr,
            )
        system.teardown()
    finally:
        places.remove_all()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # as the worker does: DBOS's sleeping threads would hold the exit for an hour


if __name__ == "__main__":
    main()

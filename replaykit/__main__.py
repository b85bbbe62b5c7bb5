"""`replaykit` and `python -m replaykit`: the command, or what to install for it.

The command is built on click and rich, which come with the `cli` extra. After a
plain `pip install replaykit` neither is there, and the console script still
starts here: so this module imports nothing beyond the standard library until it
knows click can be imported, and otherwise says what the command does and how to
install it (`--help` exits 0, anything else 1).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

__all__ = ["main"]

INSTALL = "pip install 'replaykit[cli]'"

# The top-level commands, for the help shown without click; a test keeps this
# list in step with replaykit.cli's.
COMMANDS = (
    ("db", "migrate | status: the store's schema"),
    ("inspect", "replay a run to a position and show the workflow's locals there"),
    ("lint", "check workflow bodies for what breaks replay (reads code, runs nothing)"),
    ("queues", "list: depth, delayed and running runs, and limits, per queue"),
    ("replay", "replay recorded logs against today's code: a deploy gate for CI"),
    ("schedules", "list | pause | resume | trigger | backfill | delete, in the store"),
    ("ui", "a local web UI for runs, timelines and queues (the ui extra)"),
    ("worker", "run your module's workflows, draining its queues"),
    (
        "workflows",
        "list | show | export | start | send | get-event | cancel | resume | fork | delete | gc",
    ),
)


def main(argv: Sequence[str] | None = None) -> None:
    """The console script: the `replaykit` command when click is installed."""
    try:
        import click  # noqa: F401
    except ImportError:
        sys.exit(_without_click(list(sys.argv[1:] if argv is None else argv)))
    from replaykit.cli import main as run

    run(argv)


def _without_click(args: list[str]) -> int:
    if not args or any(arg in ("-h", "--help") for arg in args):
        width = max(len(name) for name, _ in COMMANDS)
        lines = [
            "Usage: replaykit [OPTIONS] COMMAND [ARGS]...",
            "",
            "  Inspect and operate replaykit workflow runs.",
            "",
            f"  The command needs click and rich, which are not installed: {INSTALL}",
            "",
            "Commands:",
            *(f"  {name.ljust(width)}  {what}" for name, what in COMMANDS),
        ]
        print("\n".join(lines))
        return 0
    if args[0] == "--version":
        from importlib.metadata import PackageNotFoundError, version

        try:
            print(f"replaykit, version {version('replaykit')}")
        except PackageNotFoundError:
            print("replaykit, version unknown (not installed as a package)")
        return 0
    print(
        f"Error: the replaykit command needs click and rich, which are not installed: {INSTALL}",
        file=sys.stderr,
    )
    return 1


if __name__ == "__main__":
    main()

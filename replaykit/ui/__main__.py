"""`python -m replaykit.ui --url ...`: the UI without the `replaykit` command."""

from replaykit.ui.cli import ui

ui(prog_name="python -m replaykit.ui")

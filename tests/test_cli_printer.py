"""replaykit/cli/printer.py: aligned plain text off a terminal, fitted rich tables on one.

Every cell goes through `printable` and reaches rich as text, never markup.
"""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from replaykit.cli.fit import Fit
from replaykit.cli.printer import Printer


def on_terminal(width: int, *, wide: bool = False) -> tuple[Printer, io.StringIO]:
    """A printer as it is on a terminal `width` cells wide, writing to a buffer."""
    printer = Printer(wide=wide)
    out = io.StringIO()
    printer.console = Console(
        file=out, width=10**6 if wide else width, highlight=False, color_system=None
    )
    return printer, out


def test_off_a_terminal_a_table_is_aligned_plain_text(capsys: pytest.CaptureFixture[str]) -> None:
    printer = Printer()
    assert printer.console is None and not printer.fits and printer.value_width == 60
    printer.table(["ID", "STATUS"], [["run-1", "SUCCESS"], ["a-longer-id", "ERROR"]])
    assert capsys.readouterr().out.splitlines() == [
        "ID           STATUS",
        "run-1        SUCCESS",
        "a-longer-id  ERROR",
    ]


def test_off_a_terminal_cells_lines_and_fields_are_escaped(
    capsys: pytest.CaptureFixture[str],
) -> None:
    printer = Printer()
    printer.table(["ID"], [["evil\x1b[2J"]])
    printer.line("why\x1b]0;title\x07")
    printer.fields([("id", "x\ny", None), ("status", "ok", "green")])
    assert capsys.readouterr().out.splitlines() == [
        "ID",
        "evil\\x1b[2J",
        "why\\x1b]0;title\\x07",
        "id      x\\ny",
        "status  ok",
    ]


def test_a_traceback_keeps_its_line_breaks(capsys: pytest.CaptureFixture[str]) -> None:
    Printer().line("Traceback:\n  File x\x1b", newlines=True)
    assert capsys.readouterr().out == "Traceback:\n  File x\\x1b\n"


def test_on_a_terminal_the_fit_columns_are_cut_so_each_row_is_one_line() -> None:
    printer, out = on_terminal(40)
    assert printer.fits and printer.value_width == 2000
    long_site = "shop/checkout/payments.py:1234"
    printer.table(
        ["ID", "NAME", "SITE"],
        [["run-1", "a-rather-long-workflow-name", long_site]],
        fit={1: Fit(6), 2: Fit(10, keep_end=True)},
    )
    lines = [line for line in out.getvalue().splitlines() if line.strip()]
    assert all(len(line) <= 40 for line in lines), lines
    row = lines[-1]
    assert "run-1" in row  # a column not in `fit` is never cut
    assert "\u2026" in row and ":1234" in row  # the site keeps its end


def test_on_a_terminal_markup_in_a_cell_is_shown_as_written() -> None:
    printer, out = on_terminal(80)
    printer.table(["ID"], [["[bold]x[/bold] :smile:"]])
    printer.line("[red]y[/red]")
    text = out.getvalue()
    assert "[bold]x[/bold] :smile:" in text and "[red]y[/red]" in text


def test_wide_shows_everything_however_long() -> None:
    printer, out = on_terminal(40, wide=True)
    assert not printer.fits and printer.value_width is None
    name = "n" * 120
    printer.table(["NAME"], [[name]], fit={0: Fit(5)})
    assert name in out.getvalue()


def test_fields_fold_only_the_full_labels_on_a_terminal() -> None:
    printer, out = on_terminal(40)
    why = "waits for the message 'payment' on topic 'orders' since noon"
    printer.fields([("why", why, None), ("error", "e" * 80, None)], full=["why"])
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("why    waits")
    assert lines[1].startswith("       ")  # folded under the value column
    assert " ".join(line[7:].strip() for line in lines[:-1]) == why
    assert lines[-1].startswith("error  ") and lines[-1].endswith("\u2026")
    assert all(len(line) <= 40 for line in lines)

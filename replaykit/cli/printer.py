"""The printer: rich tables and colour on a terminal, aligned plain text otherwise."""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import click

from replaykit._text import printable
from replaykit.cli.fit import Fit, cut, fit_widths

__all__ = ["Printer"]


# A cell or value shown on a terminal is cut to fit long before this, but a
# megabyte of JSON is not worth encoding to be cut.
_TERMINAL_CELL = 2000


class Printer:
    """Rich tables and colour on a terminal, aligned plain text otherwise.

    On a terminal every line fits its width: long cells and values are cut with
    an ellipsis rather than folded over several lines, which makes a timeline
    unreadable at 80 columns. `wide=True` shows everything, however long.
    """

    def __init__(self, *, wide: bool = False) -> None:
        self.console: Any = None
        self.wide = wide
        try:
            from rich.console import Console
        except ImportError:  # rich is optional; plain text needs nothing
            return
        console = Console(highlight=False)
        if console.is_terminal:
            # Wide: lines as long as their content, for the terminal to wrap.
            self.console = Console(highlight=False, width=10**6) if wide else console

    @property
    def fits(self) -> bool:
        """Whether output is being fitted to a terminal's width."""
        return self.console is not None and not self.wide

    @property
    def value_width(self) -> int | None:
        """How long a value worth showing may be: the terminal cuts it to its column."""
        if self.wide:
            return None
        return _TERMINAL_CELL if self.console is not None else 60

    # Every cell and value is shown with `printable`, and handed to rich as a
    # Text, never as markup: "[bold]" or ":smile:" in an id print as written.

    def line(
        self,
        text: str = "",
        style: str | None = None,
        *,
        newlines: bool = False,
        code: bool = False,
    ) -> None:
        """A line of text; `code` (a traceback) is never folded: each line as it is.

        Rich folds a long line at the terminal's width, which cuts a traceback's
        `File "...", line N, in f` in two; unfolded, the terminal wraps it whole.
        """
        text = printable(text, newlines=newlines)
        if self.console is not None:
            from rich.text import Text

            if code:
                self.console.print(
                    Text(text, style=style or ""), no_wrap=True, overflow="ignore", crop=False
                )
            else:
                self.console.print(Text(text, style=style or ""))
        else:
            click.echo(text)

    def fields(
        self, pairs: Sequence[tuple[str, str, str | None]], *, full: Iterable[str] = ()
    ) -> None:
        """`label  value` lines; the third item is a rich style for the value.

        On a terminal a value is cut to fit its line, except those of the `full`
        labels (why a run waits): folded at words, under their value column.
        """
        width = max(len(label) for label, _, _ in pairs)
        folded = set(full)
        for label, raw_value, style in pairs:
            value = printable(raw_value)
            if self.console is not None:
                from rich.text import Text

                lines = [value]
                if label in folded and self.fits:
                    room = max(self.console.width - width - 2, 20)
                    lines = textwrap.wrap(value, room, break_on_hyphens=False) or [value]
                for index, part in enumerate(lines):
                    text = Text()
                    text.append(f"{(label if index == 0 else '').ljust(width)}  ", style="bold")
                    text.append(part, style=style or "")
                    self.console.print(text, no_wrap=True, overflow="ellipsis")
            else:
                click.echo(f"{label.ljust(width)}  {value}")

    def table(
        self,
        headers: Sequence[str],
        rows: Sequence[Sequence[str]],
        styles: Sequence[dict[int, str]] | None = None,
        fit: Mapping[int, Fit] | None = None,
    ) -> None:
        """A table; on a terminal, the `fit` columns are cut so each row is one line."""
        rows = [[printable(cell) for cell in row] for row in rows]
        if self.console is not None:
            from rich import box
            from rich.cells import cell_len
            from rich.table import Table
            from rich.text import Text

            fit = fit or {}
            if self.fits:
                natural = [
                    max([cell_len(header)] + [cell_len(row[col]) for row in rows])
                    for col, header in enumerate(headers)
                ]
                # With collapsed padding, each column boundary takes two cells.
                room = self.console.width - 2 * (len(headers) - 1)
                widths = fit_widths(natural, fit, room)
                rows = [
                    [
                        cut(cell, widths[col], keep_end=fit[col].keep_end)
                        if col in widths
                        else cell
                        for col, cell in enumerate(row)
                    ]
                    for row in rows
                ]
            table = Table(
                box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, collapse_padding=True
            )
            for header in headers:
                # Anything still too wide (a terminal too narrow for even the
                # uncut columns) is cut by rich; never folded.
                table.add_column(header, no_wrap=self.fits, overflow="ellipsis")
            for index, row in enumerate(rows):
                row_styles = styles[index] if styles else {}
                table.add_row(
                    *(Text(cell, style=row_styles.get(col, "")) for col, cell in enumerate(row))
                )
            self.console.print(table)
            return
        widths_plain = [len(h) for h in headers]
        for row in rows:
            widths_plain = [max(w, len(cell)) for w, cell in zip(widths_plain, row, strict=True)]
        for cells in (headers, *rows):
            click.echo(
                "  ".join(c.ljust(w) for c, w in zip(cells, widths_plain, strict=True)).rstrip()
            )

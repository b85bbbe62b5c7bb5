"""Table fitting: how a table's columns give way on a terminal narrower than the table."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

__all__ = ["Fit", "cut", "fit_widths"]


class Fit(NamedTuple):
    """How a table column gives way on a narrow terminal: it is cut, not folded."""

    min_width: int  # it is not cut below this (unless nothing else fits)
    weight: int = 1  # how much of the room left it gets, against the other cut columns
    keep_end: bool = False  # cut its start, not its end (a call site's file:line)


def fit_widths(natural: Sequence[int], fit: Mapping[int, Fit], room: int) -> dict[int, int]:
    """The widths to cut columns to so that a table's row takes at most `room` cells.

    Columns not in `fit` keep their natural width. The others get their minimum,
    then share what is left by weight, none getting more than it needs (a short
    column's unused share goes to the others). Only columns to cut are returned.
    """
    budget = room - sum(width for index, width in enumerate(natural) if index not in fit)
    if sum(natural[index] for index in fit) <= budget:
        return {}
    widths = {index: min(natural[index], spec.min_width) for index, spec in fit.items()}
    spare = budget - sum(widths.values())
    waiting = {index for index in fit if natural[index] > widths[index]}
    while waiting and spare > 0:
        total = sum(fit[index].weight for index in waiting)
        share = {index: spare * fit[index].weight // total for index in waiting}
        settled = {index for index in waiting if natural[index] - widths[index] <= share[index]}
        if not settled:
            for index in waiting:
                widths[index] += share[index]
            # What flooring the shares left over goes to the heaviest columns.
            left = spare - sum(share.values())
            for index in sorted(waiting, key=lambda i: -fit[i].weight)[:left]:
                widths[index] += 1
            break
        for index in settled:
            spare -= natural[index] - widths[index]
            widths[index] = natural[index]
            waiting.discard(index)
    return {index: width for index, width in widths.items() if width < natural[index]}


def cut(text: str, width: int, *, keep_end: bool = False) -> str:
    """`text` in at most `width` terminal cells, an ellipsis where it was cut."""
    from rich.cells import cell_len, set_cell_size

    if cell_len(text) <= width:
        return text
    if width <= 1:
        return "\u2026"[:width]
    if keep_end:
        return "\u2026" + set_cell_size(text[::-1], width - 1)[::-1].lstrip()
    return set_cell_size(text, width - 1).rstrip() + "\u2026"

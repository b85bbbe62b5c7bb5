"""replaykit/cli/fit.py: how a table's columns give way on a terminal narrower than the table."""

from __future__ import annotations

from rich.cells import cell_len

from replaykit.cli.fit import Fit, cut, fit_widths


def test_a_table_that_fits_is_not_cut() -> None:
    assert fit_widths([10, 20, 5], {1: Fit(8)}, room=35) == {}
    assert fit_widths([10, 20, 5], {1: Fit(8)}, room=100) == {}


def test_only_the_fit_columns_give_way_and_never_below_their_minimum_if_room_allows() -> None:
    # 10 + 5 stay; 15 cells are left for column 1, which needs 20.
    assert fit_widths([10, 20, 5], {1: Fit(8)}, room=30) == {1: 15}
    # Too little room even for the minimum: it still gets its minimum.
    assert fit_widths([10, 20, 5], {1: Fit(8)}, room=16) == {1: 8}


def test_the_room_left_is_shared_by_weight() -> None:
    widths = fit_widths([40, 40], {0: Fit(5, weight=1), 1: Fit(5, weight=3)}, room=50)
    assert widths == {0: 15, 1: 35}
    assert sum(widths.values()) == 50


def test_a_short_columns_unused_share_goes_to_the_others() -> None:
    # Column 0 needs only 12 of its half; column 1 takes the rest.
    widths = fit_widths([12, 100], {0: Fit(4), 1: Fit(4)}, room=60)
    assert widths == {1: 48}


def test_the_cells_left_by_rounding_go_to_the_heaviest_columns() -> None:
    widths = fit_widths([50, 50, 50], {0: Fit(0), 1: Fit(0, weight=2), 2: Fit(0)}, room=31)
    assert sum(widths.values()) == 31
    assert widths[1] >= max(widths[0], widths[2])


def test_cut_keeps_the_start_or_the_end_and_marks_the_cut() -> None:
    assert cut("checkout-workflow", 9) == "checkout\u2026"
    assert cut("shop/orders.py:120", 9, keep_end=True) == "\u2026s.py:120"
    assert cut("short", 9) == "short"
    assert cut("anything", 1) == "\u2026"
    assert cut("anything", 0) == ""


def test_cut_counts_terminal_cells_not_characters() -> None:
    wide = "\u6ce8\u6587\u756a\u53f7-42"  # four double-width characters, then "-42"
    shown = cut(wide, 6)
    assert cell_len(shown) <= 6 and shown.endswith("\u2026")
    assert shown.startswith("\u6ce8\u6587")

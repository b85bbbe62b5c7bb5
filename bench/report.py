"""Medians, ratios and targets from the raw repetitions; the tables printed and written.

    python -m bench.report [bench/results/latest.json] [--markdown]

re-prints the tables of a finished run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Iterable, Mapping
from typing import Any

from bench.cases import SYSTEM_TITLES, SYSTEMS, Case, Check, case_named

__all__ = ["checks_of", "format_value", "header", "medians", "render", "summarize"]


def medians(reps: Iterable[Mapping[str, Any]]) -> dict[str, float]:
    """The median of each metric over the repetitions that produced it."""
    values: dict[str, list[float]] = {}
    for rep in reps:
        for name, value in rep.get("metrics", {}).items():
            if isinstance(value, (int, float)):
                values.setdefault(name, []).append(float(value))
    return {name: statistics.median(vs) for name, vs in values.items()}


def _value(entry: Mapping[str, Any], system: str, metric: str) -> float | None:
    found = entry["systems"].get(system, {}).get("median", {}).get(metric)
    return None if found is None else float(found)


def _paired(entry: Mapping[str, Any], check: Check) -> float | None:
    """The median over repetitions of the ratio within each repetition.

    Both systems of a repetition ran back to back, so this ratio survives a machine
    whose speed drifts during the run better than the ratio of medians does.
    """
    if check.den is None:
        return None

    def by_rep(system: str, metric: str) -> dict[int, float]:
        reps = entry["systems"].get(system, {}).get("reps", [])
        return {
            r["rep"]: float(r["metrics"][metric])
            for r in reps
            if "rep" in r and isinstance(r.get("metrics", {}).get(metric), (int, float))
        }

    num, den = by_rep(*check.num), by_rep(*check.den)
    ratios = [num[r] / den[r] for r in num.keys() & den.keys() if den[r]]
    return statistics.median(ratios) if ratios else None


def checks_of(case: Case, entry: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each check's value on this store, and whether its target (if judged here) is met."""
    out = []
    for check in case.checks:
        num = _value(entry, *check.num)
        den = None if check.den is None else _value(entry, *check.den)
        value: float | None
        if num is None or (check.den is not None and not den):
            value = None
        else:
            value = num / den if den else num
        judged = check.has_target and entry["store"] in check.stores
        out.append(
            {
                "label": check.label,
                "value": value,
                "paired": _paired(entry, check),
                "unit": check.unit,
                "target": check.target_text() if judged else "",
                "met": (check.judge(value) if value is not None else None) if judged else None,
            }
        )
    return out


def summarize(entry: dict[str, Any]) -> None:
    """Fill in medians and checks of one (case, store) entry, in place."""
    case = case_named(entry["case"])
    for result in entry["systems"].values():
        result["median"] = medians(result["reps"])
    entry["checks"] = checks_of(case, entry)


def format_value(value: float | None, unit: str = "") -> str:
    if value is None:
        return "—"
    if unit == "x":
        return f"{value:,.1f}x" if value >= 10 else f"{value:.2f}x"
    magnitude = abs(value)
    if float(value).is_integer():
        return f"{int(value):,}"
    if magnitude >= 1000:
        text = f"{value:,.0f}"
    elif magnitude >= 100:
        text = f"{value:.0f}"
    elif magnitude >= 10:
        text = f"{value:.1f}"
    elif magnitude >= 1 or value == 0:
        text = f"{value:.2f}"
    else:
        text = f"{value:.3g}"
    return text


def _cell(entry: Mapping[str, Any], system: str, metric: str | None, unit: str) -> str:
    result = entry["systems"].get(system)
    if result is None or metric is None:
        return ""
    if result.get("error") and not result.get("reps"):
        return str(result.get("short_error", "error"))
    text = format_value(result.get("median", {}).get(metric), unit)
    if result.get("variant_note"):
        text += " *"
    return text


def render(data: Mapping[str, Any], markdown: bool = False) -> str:
    """The figures table and the checks table of a run, as text or as Markdown."""
    entries = data["results"]
    systems = [s for s in SYSTEMS if any(s in e["systems"] for e in entries)]
    head = ["case", "store", "figure (median)", *(SYSTEM_TITLES[s] for s in systems)]
    rows: list[list[str]] = []
    notes: list[str] = []
    for entry in entries:
        case = case_named(entry["case"])
        for row in case.rows:
            cells = [_cell(entry, s, row.metrics.get(s), row.unit) for s in systems]
            if any(cells):
                rows.append([case.name, entry["store"], row.label, *cells])
        for system, result in entry["systems"].items():
            where = f"{case.name}/{entry['store']}/{SYSTEM_TITLES[system]}"
            if result.get("variant_note"):
                notes.append(f"* {where}: measured as {result['variant_note']}")
            if result.get("error"):
                notes.append(f"{where}: {result['error']}")

    check_head = ["case", "store", "check", "value (of medians)", "per-rep median", "target", ""]
    check_rows = []
    for entry in entries:
        for check in entry.get("checks", []):
            if check["met"] is not None:
                status = "met" if check["met"] else "MISSED"
            else:
                status = "not measured" if check["target"] else ""
            value = format_value(check["value"], check["unit"])
            if check["value"] is not None and check["unit"] not in ("x", ""):
                value += f" {check['unit']}"
            paired = format_value(check.get("paired"), check["unit"]) if check.get("paired") else ""
            check_rows.append(
                [
                    entry["case"],
                    entry["store"],
                    check["label"],
                    value,
                    paired,
                    check["target"],
                    status,
                ]
            )
    parts = [_table(head, rows, markdown)]
    if check_rows:
        parts += ["", _table(check_head, check_rows, markdown)]
    if notes:
        parts += ["", *(f"- {n}" if markdown else n for n in notes)]
    return "\n".join(parts)


def _table(head: list[str], rows: list[list[str]], markdown: bool) -> str:
    if markdown:
        lines = ["| " + " | ".join(head) + " |", "|" + "|".join(" --- " for _ in head) + "|"]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
        return "\n".join(lines)
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows, strict=False)]
    numeric = [i >= 3 for i in range(len(head))]

    def line(cells: list[str]) -> str:
        return "  ".join(
            c.rjust(w) if numeric[i] else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=False))
        ).rstrip()

    return "\n".join([line(head), line(["-" * w for w in widths]), *(line(r) for r in rows)])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.report", description=__doc__)
    parser.add_argument("path", nargs="?", default="bench/results/latest.json")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args(argv)
    with open(args.path) as f:
        data = json.load(f)
    print(header(data))
    print(render(data, markdown=args.markdown))


def header(data: Mapping[str, Any]) -> str:
    """The command, when, how long, and how busy the machine was."""
    meta = data.get("meta", {})
    machine = meta.get("machine", {})
    return (
        f"{meta.get('command', '')}   ({meta.get('date', '')}, {meta.get('seconds', '?')}s, "
        f"{machine.get('cpus', '?')} CPUs, load average {machine.get('load_average_before')} "
        f"-> {machine.get('load_average_after')})"
    )


if __name__ == "__main__":
    main(sys.argv[1:])

"""The PostgreSQL store's named statements, read once at import from statements.sql."""

from __future__ import annotations

from replaykit.stores._statements import Statements

__all__ = ["SQL", "for_schema"]

SQL = Statements("replaykit.stores.postgres", "statements.sql")


def for_schema(s: str) -> dict[str, str]:
    """Every statement with `{s}` filled in by `s`, the schema's quoted identifier.

    Done once per store, so a call costs a dict lookup and no string work.
    """
    return {name: text.replace("{s}", s) for name, text in SQL.items()}

"""The suite's cases as data: sizes, which systems run them, what the table shows, targets.

Kept free of I/O so the orchestrator (`bench.suite`), the workers (`bench.worker`)
and docs/performance.md describe one and the same thing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

__all__ = [
    "CASES",
    "STORES",
    "SYSTEMS",
    "Case",
    "Check",
    "Row",
    "case_named",
]

#: Every system a case may run, in the order the table shows them.
SYSTEMS = ("replaykit", "dbos", "floor")
STORES = ("sqlite", "postgres")

SYSTEM_TITLES = {
    "replaykit": "replaykit",
    "dbos": "DBOS",
    "floor": "floor",
}


@dataclass(frozen=True)
class Row:
    """One line of the figures table: a metric per system (systems may name it differently)."""

    label: str
    metrics: Mapping[str, str]  # system -> metric name in that system's results
    unit: str


@dataclass(frozen=True)
class Check:
    """A derived figure: `num / den` of two medians (or `num` alone), with an optional target.

    `stores` limits where the target is judged (the figure is shown for every store).
    """

    label: str
    num: tuple[str, str]  # (system, metric)
    den: tuple[str, str] | None = None
    op: Literal["<=", ">="] | None = None
    threshold: float | None = None
    stores: tuple[str, ...] = STORES
    unit: str = "x"

    @property
    def has_target(self) -> bool:
        return self.op is not None and self.threshold is not None

    def target_text(self) -> str:
        if not self.has_target:
            return ""
        unit = "" if self.unit == "x" else f" {self.unit}"
        suffix = "x" if self.unit == "x" else ""
        return f"{self.op} {self.threshold:g}{suffix}{unit}"

    def judge(self, value: float) -> bool:
        assert self.op is not None and self.threshold is not None
        return value <= self.threshold if self.op == "<=" else value >= self.threshold


@dataclass(frozen=True)
class Case:
    name: str
    title: str
    systems: tuple[str, ...]
    sizes: Mapping[str, int]
    quick_sizes: Mapping[str, int]
    rows: tuple[Row, ...]
    checks: tuple[Check, ...] = ()
    #: Repetitions when the command line does not say (None: the suite's default).
    repeat: int | None = None
    quick_repeat: int | None = None
    #: Run each repetition in new processes on new databases, one per mode, and
    #: merge their figures (the sleepers case: DBOS cannot wake its sleeping
    #: threads, memory is read per process, and tracemalloc must not skew RSS).
    process_modes: tuple[str, ...] = ()
    description: str = field(default="", compare=False)


def _ratio(
    label: str,
    num: tuple[str, str],
    den: tuple[str, str],
    op: Literal["<=", ">="] | None = None,
    threshold: float | None = None,
    stores: tuple[str, ...] = STORES,
) -> Check:
    return Check(label, num, den, op, threshold, stores)


#: What each system's process and (when local) the PostgreSQL server spent per step.
_CPU_ROWS = (
    Row(
        "client CPU, us per step (floor: per insert)",
        {
            "replaykit": "client_cpu_us_per_step",
            "dbos": "client_cpu_us_per_step",
            "floor": "client_cpu_us_per_op",
        },
        "us",
    ),
    Row(
        "server CPU, us per step (local PostgreSQL)",
        {
            "replaykit": "server_cpu_us_per_step",
            "dbos": "server_cpu_us_per_step",
            "floor": "server_cpu_us_per_op",
        },
        "us",
    ),
)

CASES: tuple[Case, ...] = (
    Case(
        name="floor",
        title="Floor: the raw driver, one insert + commit per iteration",
        systems=("floor",),
        sizes={"ops": 2000},
        quick_sizes={"ops": 500},
        repeat=5,
        rows=(
            Row("ms per insert+commit", {"floor": "ms_per_op"}, "ms"),
            Row("inserts/s", {"floor": "ops_per_s"}, "/s"),
            Row("client CPU, us per insert", {"floor": "client_cpu_us_per_op"}, "us"),
            Row(
                "server CPU, us per insert (local PostgreSQL)",
                {"floor": "server_cpu_us_per_op"},
                "us",
            ),
        ),
    ),
    Case(
        name="sequential",
        title="Sequential steps: workflows of trivial steps, one after another",
        systems=("replaykit", "dbos", "floor"),
        sizes={"workflows": 200, "steps": 10},
        quick_sizes={"workflows": 50, "steps": 10},
        rows=(
            Row(
                "ms per step (floor: per insert)",
                {"replaykit": "ms_per_step", "dbos": "ms_per_step", "floor": "ms_per_op"},
                "ms",
            ),
            Row(
                "ms per workflow", {"replaykit": "ms_per_workflow", "dbos": "ms_per_workflow"}, "ms"
            ),
            *_CPU_ROWS,
        ),
        checks=(
            _ratio(
                "replaykit step / floor insert",
                ("replaykit", "ms_per_step"),
                ("floor", "ms_per_op"),
                "<=",
                1.3,
                stores=("postgres",),
            ),
            _ratio(
                "DBOS step / replaykit step",
                ("dbos", "ms_per_step"),
                ("replaykit", "ms_per_step"),
                ">=",
                5.0,
                stores=("postgres",),
            ),
        ),
    ),
    Case(
        name="long",
        title="Long workflow: one workflow of trivial steps, executed, then replayed",
        systems=("replaykit", "dbos"),
        sizes={"steps": 1000},
        quick_sizes={"steps": 300},
        rows=(
            Row("execute, s", {"replaykit": "execute_s", "dbos": "execute_s"}, "s"),
            Row(
                "replay: engine re-activation, s",
                {"replaykit": "replay_engine_s", "dbos": "replay_s"},
                "s",
            ),
            Row("replay: load log + interpreter, s", {"replaykit": "replay_interp_s"}, "s"),
            Row(
                "replay incl. dispatch (DBOS: queue poll), s",
                {"replaykit": "replay_engine_s", "dbos": "replay_e2e_s"},
                "s",
            ),
            Row(
                "copy the log to a new run (fork), s",
                {"replaykit": "fork_copy_s", "dbos": "fork_copy_s"},
                "s",
            ),
        ),
        checks=(
            _ratio(
                "DBOS execute / replaykit execute",
                ("dbos", "execute_s"),
                ("replaykit", "execute_s"),
            ),
            _ratio(
                "DBOS replay / replaykit engine replay",
                ("dbos", "replay_s"),
                ("replaykit", "replay_engine_s"),
                ">=",
                20.0,
            ),
            _ratio(
                "DBOS replay / replaykit interpreter replay",
                ("dbos", "replay_s"),
                ("replaykit", "replay_interp_s"),
            ),
        ),
    ),
    Case(
        name="concurrent",
        title="Concurrent workflows: all started at once in one engine",
        systems=("replaykit", "dbos", "floor"),
        sizes={"workflows": 100, "steps": 10},
        quick_sizes={"workflows": 50, "steps": 10},
        rows=(
            Row(
                "steps/s (floor: inserts/s, one connection)",
                {"replaykit": "steps_per_s", "dbos": "steps_per_s", "floor": "ops_per_s"},
                "/s",
            ),
            Row("total, s", {"replaykit": "total_s", "dbos": "total_s", "floor": "total_s"}, "s"),
            Row(
                "batched ceiling: rows/s, 100 per statement and commit, one connection",
                {"floor": "batched_ops_per_s"},
                "/s",
            ),
            *_CPU_ROWS,
        ),
        checks=(
            _ratio(
                "replaykit steps/s / floor inserts/s",
                ("replaykit", "steps_per_s"),
                ("floor", "ops_per_s"),
                ">=",
                3.0,
            ),
            _ratio(
                "replaykit steps/s / batched ceiling rows/s",
                ("replaykit", "steps_per_s"),
                ("floor", "batched_ops_per_s"),
                ">=",
                0.2,
            ),
            _ratio(
                "replaykit steps/s / DBOS steps/s",
                ("replaykit", "steps_per_s"),
                ("dbos", "steps_per_s"),
            ),
        ),
    ),
    Case(
        name="queue",
        title="Queue drain: one-step workflows enqueued, then drained by one engine",
        systems=("replaykit", "dbos"),
        sizes={"workflows": 500},
        quick_sizes={"workflows": 100},
        rows=(
            Row("enqueue + drain, s", {"replaykit": "total_s", "dbos": "total_s"}, "s"),
            Row("of which enqueueing, s", {"replaykit": "enqueue_s", "dbos": "enqueue_s"}, "s"),
            Row("workflows/s", {"replaykit": "workflows_per_s", "dbos": "workflows_per_s"}, "/s"),
        ),
        checks=(
            _ratio(
                "DBOS drain / replaykit drain",
                ("dbos", "total_s"),
                ("replaykit", "total_s"),
                ">=",
                5.0,
            ),
        ),
    ),
    Case(
        name="sleepers",
        title="Sleepers: workflows each sleeping an hour; what they hold",
        systems=("replaykit", "dbos"),
        sizes={
            "sleepers": 10_000,
            "traced_sleepers": 2000,
            "dbos_sleepers": 500,
            "dbos_traced_sleepers": 200,
        },
        quick_sizes={
            "sleepers": 2000,
            "traced_sleepers": 500,
            "dbos_sleepers": 200,
            "dbos_traced_sleepers": 100,
        },
        rows=(
            Row(
                "bytes per sleeper, Python heap (tracemalloc)",
                {"replaykit": "bytes_per_sleeper_py", "dbos": "bytes_per_sleeper_py"},
                "B",
            ),
            Row(
                "bytes per sleeper, RSS",
                {"replaykit": "bytes_per_sleeper_rss", "dbos": "bytes_per_sleeper_rss"},
                "B",
            ),
            Row(
                "threads per sleeper",
                {"replaykit": "threads_per_sleeper", "dbos": "threads_per_sleeper"},
                "",
            ),
            Row(
                "threads.active_count() with all asleep",
                {"replaykit": "threads_full", "dbos": "threads_full"},
                "",
            ),
            Row("sleepers (RSS run)", {"replaykit": "sleepers", "dbos": "sleepers"}, ""),
            Row(
                "sleepers (traced run)",
                {"replaykit": "traced_sleepers", "dbos": "traced_sleepers"},
                "",
            ),
            Row(
                "start + fall asleep, ms per sleeper",
                {"replaykit": "ms_per_start", "dbos": "ms_per_start"},
                "ms",
            ),
        ),
        checks=(
            Check(
                "replaykit bytes per sleeper (Python heap)",
                ("replaykit", "bytes_per_sleeper_py"),
                op="<=",
                threshold=2048,
                unit="B",
            ),
            Check(
                "replaykit bytes per sleeper (RSS)",
                ("replaykit", "bytes_per_sleeper_rss"),
                op="<=",
                threshold=2048,
                unit="B",
            ),
            Check(
                "replaykit threads per sleeper",
                ("replaykit", "threads_per_sleeper"),
                op="<=",
                threshold=0.01,  # a thread per sleeper is 1.0; a pool growing is ~0
                unit="threads",
            ),
        ),
        repeat=2,
        quick_repeat=1,
        process_modes=("rss", "traced"),
    ),
)


def case_named(name: str) -> Case:
    for case in CASES:
        if case.name == name:
            return case
    raise KeyError(name)

"""replaykit's own chaos suite (issue 13): scenarios that break things on purpose.

Each scenario is a module run as `python -m reliability.<name> [--smoke]`; it
prints its figures and the invariants it checked, and exits non-zero when one
broke (1), when it could not run (2: in CI, a missing PostgreSQL), or 3 when
parts needing PostgreSQL were skipped outside CI. `python -m reliability --all
[--smoke]` runs every scenario in turn. Step bodies count their executions in a
ledger file outside the store (`reliability._harness.Ledger`), which the
scenario checks against the store's logs (`reliability._check`). See
docs/reliability.md.
"""

__all__ = ["SCENARIOS"]

# name -> what it does; each is the module reliability.<name>
SCENARIOS = {
    "kill9": "kill -9 a worker at random moments, on SQLite and PostgreSQL",
    "pg_crash": "crash and restart a private PostgreSQL cluster under load",
    "lost_ack": "lose acknowledgements of committed writes through a cutting proxy",
    "recoverers": "several processes with one executor id recover the same runs at once",
    "idempotent_start": "P processes x T threads start the same ids at one instant",
    "queue_kills": "a queue's concurrency limit while its workers are SIGKILLed",
    "partition_kills": "a partitioned queue's per-key limit while its workers are SIGKILLed",
    "sigterm": "SIGTERM a replaykit worker mid-step and mid-All",
    "generations": "kill -9 while runs continue as new, generation after generation",
    "schedule_kills": "kill -9 the worker of a schedule that ticks every second",
    "stream_kills": "kill -9 while runs write streams that a client follows",
    "deadline_kills": "kill -9 while runs' deadlines expire",
    "batch_kills": "kill -9 an AsyncEngine inside a batch start: all or nothing",
    "failover": "kill -9 the primary of a pg_auto_failover cluster under load; fail back",
    "bad_input": "hostile and damaged rows, bad names and escapes, through engine and CLI",
}

"""`Patch(name)` gives one run one answer, whenever the patch ships.

Generated programs guard changes with a few patch names at several sites (in
sequence, in loops, nested in either branch), with sleeps between. The old code is
the same program with every patch absent (the old branch, nothing yielded). For
every position k of the old code's run, the patch is "deployed" there: the old
code runs live until its log holds k records (the last one possibly a sleep still
under way), then the new code replays that log and goes on live, rebuilt from its
log at drawn points as a restarted engine would be. Then:

1. no patch name answers both True and False in one run;
2. a run deployed at 0 answers True everywhere; a run whose log holds a command
   at a patch's first site answers False everywhere for that name;
3. replaying the resulting log from nothing gives the same answers and result,
   and asks for nothing (every position is answered from the log);
4. a warm run (one interpreter from deploy to end) and a run rebuilt at every
   drawn point write the same log.

The runtime is simulated by hand over the sans-IO interpreter: no engine, no store.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from replaykit import Patch, Sleep, Step
from replaykit.interpreter import Completed, Effect, Interpreter
from replaykit.log import Record, Value

PATCH_NAMES = ("p", "q", "r")


def stand_in(name: str) -> str:
    return name


def walk(body: list[dict[str, Any]], patched: bool, acc: list[Any]) -> Generator[Any, Any, None]:
    for node in body:
        op = node["op"]
        if op == "step":
            acc.append(("step", (yield Step(node["name"], stand_in, node["name"]))))
        elif op == "sleep":
            yield Sleep(60)
        elif op == "loop":
            for _ in range(node["count"]):
                yield from walk(node["body"], patched, acc)
        elif op == "patch":
            # The old code has no patch: it takes the old branch and yields nothing here.
            answer = (yield Patch(node["name"])) if patched else False
            if patched:
                acc.append(("patch", node["name"], answer))
            yield from walk(node["new"] if answer else node["old"], patched, acc)
        else:  # pragma: no cover - the strategy makes no other op
            raise ValueError(op)


def program(body: list[dict[str, Any]], patched: bool) -> Generator[Any, Any, list[Any]]:
    acc: list[Any] = []
    yield from walk(body, patched, acc)
    return acc


def _step() -> st.SearchStrategy[dict[str, Any]]:
    return st.integers(0, 20).map(lambda i: {"op": "step", "name": f"s{i}"})


def bodies(depth: int) -> st.SearchStrategy[list[dict[str, Any]]]:
    leaves = st.one_of(_step(), st.just({"op": "sleep"}))
    if depth == 0:
        return st.lists(leaves, max_size=3)
    inner = bodies(depth - 1)
    node = st.one_of(
        leaves,
        leaves,
        st.fixed_dictionaries(
            {
                "op": st.just("patch"),
                "name": st.sampled_from(PATCH_NAMES),
                "new": inner,
                "old": inner,
            }
        ),
        st.fixed_dictionaries({"op": st.just("loop"), "count": st.integers(0, 3), "body": inner}),
    )
    return st.lists(node, max_size=5)


def _outcome(effect: Effect) -> Record:
    command = effect.command
    value: Any = True if command.kind == "patch" else None
    if command.kind == "step":
        value = command.name
    return Record(effect.position, command.kind, command.name, Value(value), effect.digest)


def _interpreter(body: list[dict[str, Any]], patched: bool, log: list[Record]) -> Interpreter:
    return Interpreter(program(body, patched), log, workflow_name="prop.patch", workflow_id="r-1")


def old_run(body: list[dict[str, Any]]) -> list[Record]:
    """The old code's full log."""
    log: list[Record] = []
    interp = _interpreter(body, False, [])
    decision = interp.start()
    while isinstance(decision, Effect):
        log.append(_outcome(decision))
        decision = interp.resume(log[-1])
    return log


def continue_new(
    body: list[dict[str, Any]], log: list[Record], restarts: frozenset[int]
) -> tuple[Any, list[Record]]:
    """The new code from `log` on; rebuilt from the log before the commits in `restarts`."""
    log = list(log)
    interp = _interpreter(body, True, log)
    decision = interp.start()
    commits = 0
    while isinstance(decision, Effect):
        record = _outcome(decision)
        if decision.position < len(log):
            log[decision.position] = record  # the sleep under way at the deploy ends
        else:
            log.append(record)
        commits += 1
        if commits in restarts:
            interp.close()
            interp = _interpreter(body, True, log)
            decision = interp.start()
        else:
            decision = interp.resume(record)
    assert isinstance(decision, Completed), decision
    return decision.value, log


def first_sites(body: list[dict[str, Any]]) -> dict[str, int]:
    """Patch name -> the position of the old log where the new code first meets it,
    as far as that is a fixed point of the program (top-level sites only)."""
    sites: dict[str, int] = {}
    position = 0
    for node in body:
        if node["op"] == "patch":
            sites.setdefault(node["name"], position)
            if node["old"] or node["new"]:
                break  # what follows depends on the answer
            continue
        if node["op"] == "loop":
            break
        position += 1
    return sites


@given(body=bodies(2), restarts=st.frozensets(st.integers(1, 30), max_size=4), data=st.data())
def test_one_run_one_answer_per_patch_whatever_the_deploy_position(
    body: list[dict[str, Any]], restarts: frozenset[int], data: st.DataObject
) -> None:
    full = old_run(body)
    for k in range(len(full) + 1):
        prefix = list(full[:k])
        if prefix and prefix[-1].kind == "sleep" and data.draw(st.booleans(), label=f"wait@{k}"):
            # The old code was waiting in this sleep when the patch shipped.
            last = prefix[-1]
            prefix[-1] = Record(last.position, last.kind, last.name, None, last.digest)

        warm_result, warm_log = continue_new(body, prefix, frozenset())
        answers: dict[str, set[bool]] = {}
        for entry in warm_result:
            if entry[0] == "patch":
                answers.setdefault(entry[1], set()).add(entry[2])
        assert all(len(seen) == 1 for seen in answers.values()), (k, answers)

        if k == 0:
            assert all(seen == {True} for seen in answers.values()), answers
        for name, site in first_sites(body).items():
            if site < k:  # the log holds an old command at the first site: the old path
                assert answers[name] == {False}, (k, name, site)

        # Replay from nothing: the same answers, nothing asked of the runtime.
        replayed = _interpreter(body, True, warm_log).start()
        assert replayed == Completed(warm_result), k

        # Rebuilt from the log at drawn commits, as after restarts: the same run.
        rebuilt_result, rebuilt_log = continue_new(body, prefix, restarts)
        assert rebuilt_result == warm_result, k
        assert [(r.position, r.kind, r.name) for r in rebuilt_log] == [
            (r.position, r.kind, r.name) for r in warm_log
        ], k

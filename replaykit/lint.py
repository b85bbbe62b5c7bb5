"""`replaykit lint`: a static check of workflow bodies for what breaks replay.

A workflow body re-runs on every replay, so whatever it computes between two
commands must come out the same every time: anything read from the world (the
clock, randomness, the environment, files, the network) has to come in through
a recorded command instead. This module reads Python source with the standard
`ast` module, finds every `@workflow` function (and the functions of the same
module it `yield from`s), and reports what it finds in their bodies, each with
a stable code, what is wrong, and the fix.

Step bodies (functions passed to `Step` or `Transaction`) are not checked: they
run once per recorded outcome, and doing I/O is their purpose.

Nothing is imported or run: the check works on text, so it also sees code that
imports only in production (`from time import time` included).

    findings = lint_paths(["myapp/"])
    for finding in findings:
        print(finding.format())

A finding is silenced by `# replaykit: ignore[RK101]` (several codes separated
by commas) or `# replaykit: ignore` on the line it is reported at.
"""

from __future__ import annotations

import ast
import io
import os
import re
import tokenize
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs

from replaykit import commands

__all__ = ["RULES", "Finding", "Rule", "lint_file", "lint_paths", "lint_source", "python_files"]


@attrs.frozen
class Rule:
    """One kind of finding: its code, what it is about, and the general fix."""

    code: str
    title: str
    fix: str


#: Every rule, by code. Codes are stable: RK1xx read the world, RK2xx are slips.
RULES: dict[str, Rule] = {
    rule.code: rule
    for rule in (
        Rule("RK101", "reads the clock", "`now = yield Now()` (recorded once, replayed forever)"),
        Rule("RK102", "draws randomness", "`x = yield Random()`, or draw it inside a Step"),
        Rule("RK103", "makes a random UUID", "`uid = yield Uuid()`"),
        Rule(
            "RK104",
            "reads the environment",
            "read it inside a Step (its value is recorded), or pass it as a workflow argument",
        ),
        Rule("RK105", "does I/O", "move it into a function run by `yield Step('name', fn, ...)`"),
        Rule(
            "RK106",
            "starts threads, processes or event loops",
            "run concurrent work as `yield All(Step(...), Step(...))`, async code in a Step",
        ),
        Rule("RK107", "blocks in real time", "`yield Sleep(seconds)` (durable, holds no thread)"),
        Rule(
            "RK108",
            "iterates over a set",
            "iterate over `sorted(...)` of it: a set's order can change between processes",
        ),
        Rule(
            "RK109",
            "uses id() or hash() of an object",
            "derive keys from the values themselves (both change between processes)",
        ),
        Rule(
            "RK110",
            "mutates module globals",
            "keep the state in local variables; a replay re-runs this, and other runs share it",
        ),
        Rule(
            "RK201",
            "builds a command without yielding it",
            "`yield` it: `result = yield Step(...)`",
        ),
        Rule(
            "RK202",
            "calls a step's function directly",
            "`yield Step('name', fn, ...)`, so it runs once and its result is recorded",
        ),
        Rule(
            "RK203",
            "yields something that is not a command",
            "yield a replaykit command (Step, Sleep, Recv, Race, All, ...)",
        ),
        Rule(
            "RK204",
            "is an async def workflow",
            "make it a plain `def` that yields commands; run async code in a Step",
        ),
    )
}


@attrs.frozen
class Finding:
    """One problem at `path:line:col` (both from 1) in the body of `workflow`."""

    path: str
    line: int
    col: int
    code: str
    message: str
    fix: str
    workflow: str

    def format(self) -> str:
        return f"{self.path}:{self.line}:{self.col}: {self.code} {self.message}; fix: {self.fix}"

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self)


# -- what the rules look for --------------------------------------------------------------

# Qualified names, after import aliases are resolved (`import time as t`, `from
# time import time`, `from datetime import datetime` all end up here). A name
# ending in ".*" stands for everything under it.
_CALLS: dict[str, tuple[str, ...]] = {
    "RK101": (
        "time.time",
        "time.time_ns",
        "time.monotonic",
        "time.monotonic_ns",
        "time.perf_counter",
        "time.perf_counter_ns",
        "time.process_time",
        "time.process_time_ns",
        "time.thread_time",
        "time.thread_time_ns",
        "datetime.datetime.now",
        "datetime.datetime.utcnow",
        "datetime.datetime.today",
        "datetime.date.today",
        "pendulum.now",
        "pendulum.today",
        "arrow.now",
        "arrow.utcnow",
    ),
    "RK102": ("random.*", "numpy.random.*", "os.urandom", "os.getrandom", "secrets.*"),
    "RK103": ("uuid.uuid1", "uuid.uuid4"),
    "RK104": ("os.getenv", "os.getenvb", "os.putenv", "os.unsetenv", "dotenv.*"),
    "RK105": (
        "builtins.open",
        "builtins.input",
        "io.open",
        "os.system",
        "os.popen",
        "os.remove",
        "os.unlink",
        "os.rename",
        "os.replace",
        "os.mkdir",
        "os.makedirs",
        "os.rmdir",
        "os.listdir",
        "os.scandir",
        "os.walk",
        "os.stat",
        "os.path.exists",
        "os.path.isfile",
        "os.path.isdir",
        "os.path.getsize",
        "os.path.getmtime",
        "shutil.*",
        "glob.*",
        "tempfile.*",
        "requests.*",
        "httpx.*",
        "aiohttp.*",
        "urllib.request.*",
        "urllib3.*",
        "http.client.*",
        "socket.*",
        "subprocess.*",
        "smtplib.*",
        "ftplib.*",
        "sqlite3.*",
        "psycopg.*",
        "psycopg2.*",
        "redis.*",
        "boto3.*",
    ),
    "RK106": (
        "threading.Thread",
        "threading.Timer",
        "_thread.start_new_thread",
        "concurrent.futures.ThreadPoolExecutor",
        "concurrent.futures.ProcessPoolExecutor",
        "multiprocessing.*",
        "asyncio.run",
        "asyncio.create_task",
        "asyncio.ensure_future",
        "asyncio.get_event_loop",
        "asyncio.new_event_loop",
    ),
    "RK107": ("time.sleep", "asyncio.sleep"),
    "RK109": ("builtins.id", "builtins.hash"),
}

# Deterministic despite their module: a seeded generator, a constant-time compare.
_ALLOWED_CALLS = frozenset({"secrets.compare_digest"})

# These read the clock only when given no time to format.
_CLOCK_WITHOUT_ARGS = {"time.localtime": 0, "time.gmtime": 0, "time.ctime": 0, "time.asctime": 0}
_CLOCK_WITH_ONE_ARG = {"time.strftime": 1}

# Reading these at all is reading the environment.
_ENV_VALUES = frozenset({"os.environ", "os.environb"})

# `Path(...).read_text()` and friends: I/O through a path object built in the body.
_PATH_CLASSES = frozenset({"pathlib.Path", "pathlib.PosixPath", "pathlib.WindowsPath"})
_PATH_IO = frozenset(
    {
        "read_text",
        "write_text",
        "read_bytes",
        "write_bytes",
        "open",
        "exists",
        "is_file",
        "is_dir",
        "iterdir",
        "glob",
        "rglob",
        "stat",
        "touch",
        "mkdir",
        "unlink",
        "rmdir",
        "rename",
    }
)

# What a call of each family does wrong, after "name()".
_WHAT = {
    "RK101": "reads the clock in the workflow body: a replay reads another time",
    "RK102": "draws randomness in the workflow body: a replay draws other values",
    "RK103": "makes a random UUID in the workflow body: a replay makes another one",
    "RK104": "reads the environment in the workflow body: another process may see another value",
    "RK105": "does I/O in the workflow body: it runs again on every replay, unrecorded",
    "RK106": "starts concurrent work in the workflow body, outside the log",
    "RK107": "blocks the workflow's thread in real time and is not durable",
    "RK109": "differs between processes (and between runs of one process)",
}

_FIXES = {
    "time.monotonic": "measure durations inside a Step, or take two `yield Now()`",
    "time.perf_counter": "measure durations inside a Step, or take two `yield Now()`",
    "os.urandom": "draw the bytes inside a Step, or `yield Uuid()` for a random id",
    "secrets": "draw the secret inside a Step (its value is recorded)",
}

_BUILTIN_NAMES = frozenset(
    {"open", "input", "id", "hash", "set", "frozenset", "list", "tuple", "enumerate", "iter"}
)

# The names a workflow yields commands by: the Command classes `replaykit.commands`
# exports, but for the bases no workflow yields itself.
_COMMANDS = frozenset(
    name
    for name in commands.__all__
    if isinstance(kind := getattr(commands, name), type)
    and issubclass(kind, commands.Command)
    and kind not in (commands.Command, commands.Composite, commands.Yields)
)
_STEP_LIKE = frozenset({"Step", "Transaction"})
_SET_OPERATORS = (ast.BitOr, ast.BitAnd, ast.Sub, ast.BitXor)
_SET_METHODS = frozenset({"union", "intersection", "difference", "symmetric_difference", "copy"})
_ORDER_KEEPING = frozenset(
    {"builtins.list", "builtins.tuple", "builtins.enumerate", "builtins.iter"}
)
_MUTATORS = frozenset(
    {
        "append",
        "appendleft",
        "extend",
        "extendleft",
        "insert",
        "remove",
        "pop",
        "popitem",
        "popleft",
        "clear",
        "update",
        "setdefault",
        "add",
        "discard",
        "sort",
        "reverse",
    }
)
_NOT_COMMANDS = (
    ast.Constant,
    ast.JoinedStr,
    ast.List,
    ast.Tuple,
    ast.Set,
    ast.Dict,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
    ast.Lambda,
    ast.Compare,
)

_IGNORE = re.compile(r"#\s*replaykit:\s*ignore\b(?:\[([A-Za-z0-9_,\s]*)\])?")

Function = ast.FunctionDef | ast.AsyncFunctionDef


def _matches(name: str, patterns: Iterable[str]) -> bool:
    for pattern in patterns:
        if pattern.endswith(".*"):
            if name.startswith(pattern[:-1]):
                return True
        elif name == pattern:
            return True
    return False


def _fix_for(code: str, name: str) -> str:
    for key, fix in _FIXES.items():
        if name == key or name.startswith(key + "_") or name.startswith(key + "."):
            return fix
    return RULES[code].fix


# -- the module as a whole ------------------------------------------------------------------


class _Module:
    """What a module's top level says: its imports, functions, globals and step functions."""

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.aliases: dict[str, str] = {}
        self.functions: dict[str, Function] = {}
        self.globals: set[str] = set()  # names assigned at module level (not defs, imports)
        self.defined: set[str] = set()  # every name bound at module level
        self.star_from_replaykit = False
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        self.aliases[alias.asname] = alias.name
                    else:
                        top = alias.name.partition(".")[0]
                        self.aliases[top] = top
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    if alias.name == "*":
                        self.star_from_replaykit |= node.module.startswith("replaykit")
                        continue
                    self.aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        for stmt in tree.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions[stmt.name] = stmt
                self.defined.add(stmt.name)
            elif isinstance(stmt, ast.ClassDef):
                self.defined.add(stmt.name)
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                for target in targets:
                    for name in _bound_names(target):
                        self.globals.add(name)
                        self.defined.add(name)
        self.step_functions = self._step_functions()
        self.workflows = [
            node
            for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and self.is_workflow(node)
        ]
        self.workflow_names = {node.name for node in self.workflows}

    def qualify(self, node: ast.AST, local: frozenset[str] = frozenset()) -> str | None:
        """The dotted name an expression stands for, imports resolved; None if unknown."""
        if isinstance(node, ast.Name):
            name = node.id
            if name in local:
                return None
            if name in self.aliases:
                return self.aliases[name]
            if self.star_from_replaykit and name in _COMMANDS | {"workflow"}:
                return f"replaykit.{name}"
            if name in self.defined:
                # The module's own object, even when named like a module (`random =
                # Random(7)` at the top): nothing in the tables.
                return f"<module>.{name}"
            if name in _BUILTIN_NAMES:
                return f"builtins.{name}"
            return name
        if isinstance(node, ast.Attribute):
            base = self.qualify(node.value, local)
            return None if base is None else f"{base}.{node.attr}"
        return None

    def command_of(self, node: ast.AST, local: frozenset[str] = frozenset()) -> str | None:
        """'Step', 'Sleep', ... when `node` names a replaykit command class."""
        name = self.qualify(node, local)
        if name is None:
            return None
        for prefix in ("replaykit.commands.", "replaykit."):
            if name.startswith(prefix) and name[len(prefix) :] in _COMMANDS:
                return name[len(prefix) :]
        return None

    def is_workflow(self, node: Function) -> bool:
        for decorator in node.decorator_list:
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            # A bare `@workflow` counts whatever it was imported from (applications
            # re-export it; the linter follows no imports); `@x.workflow` only when x
            # is replaykit, since other libraries have decorators of that name.
            if isinstance(target, ast.Name) and target.id == "workflow":
                return True
            if self.qualify(target) in ("replaykit.workflow", "replaykit.registry.workflow"):
                return True
        return False

    def _step_functions(self) -> set[str]:
        """Source text of every function passed to Step/Transaction in this module."""
        found: set[str] = set()
        for node in ast.walk(self.tree):
            if not (isinstance(node, ast.Call) and self.command_of(node.func) in _STEP_LIKE):
                continue
            if len(node.args) < 2:
                continue
            fn = node.args[1]
            if isinstance(fn, ast.Call) and (self.qualify(fn.func) or "").endswith("partial"):
                fn = fn.args[0] if fn.args else fn
            if isinstance(fn, (ast.Name, ast.Attribute)):
                found.add(ast.unparse(fn))
        return found


def _bound_names(target: ast.AST) -> Iterator[str]:
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from _bound_names(element)
    elif isinstance(target, ast.Starred):
        yield from _bound_names(target.value)


def _local_names(func: Function) -> tuple[set[str], set[str]]:
    """(names bound locally in `func`, names it declares `global`); nested scopes aside."""
    local: set[str] = set()
    declared: set[str] = set()
    arguments = func.args
    every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    every += [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
    local.update(a.arg for a in every)
    for node in _walk_scope(func):
        if isinstance(node, ast.Global):
            declared.update(node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            local.add(node.id)
        elif isinstance(
            node, (ast.ExceptHandler, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
        ):
            local.add(node.name or "")
    return local - declared, declared


def _walk_scope(func: Function) -> Iterator[ast.AST]:
    """Every node of `func`'s own scope (not inside nested functions or classes)."""
    stack: list[ast.AST] = list(func.body)
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        stack.extend(ast.iter_child_nodes(node))


# -- one function body -------------------------------------------------------------------


class _BodyChecker(ast.NodeVisitor):
    """Visits one workflow body (or a helper it delegates to) and reports what it finds."""

    def __init__(self, linter: _Linter, func: Function, workflow: str) -> None:
        self.linter = linter
        self.module = linter.module
        self.func = func
        self.workflow = workflow
        local, self.declared_global = _local_names(func)
        self.local = frozenset(local)
        self.set_names = self._set_names()

    def check(self) -> None:
        for stmt in self.func.body:
            self.visit(stmt)

    def report(self, node: ast.AST, code: str, message: str, fix: str | None = None) -> None:
        self.linter.add(node, code, message, fix or RULES[code].fix, self.workflow)

    def qualify(self, node: ast.AST) -> str | None:
        return self.module.qualify(node, self.local)

    # -- nested scopes -----------------------------------------------------------

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._nested(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._nested(node)

    def _nested(self, node: Function) -> None:
        # A function defined in the body and run as a step is a step body: not ours.
        if node.name in self.module.step_functions or self.module.is_workflow(node):
            return
        for decorator in node.decorator_list:
            self.visit(decorator)
        _BodyChecker(self.linter, node, self.workflow).check()

    # -- calls and attribute reads -------------------------------------------------

    def visit_Call(self, node: ast.Call) -> None:
        command = self.module.command_of(node.func, self.local)
        if command in _STEP_LIKE and len(node.args) >= 2:
            # The step's function is its body, which may do anything; the other
            # arguments are computed here, in the workflow body.
            self.visit(node.args[0])
            for arg in node.args[2:]:
                self.visit(arg)
            for keyword in node.keywords:
                self.visit(keyword.value)
            return
        name = self.qualify(node.func)
        if name is not None:
            self._check_call(node, name)
        self._check_path_io(node)
        self._check_global_mutator(node)
        self.generic_visit(node)

    def _check_call(self, node: ast.Call, name: str) -> None:
        shown = name.removeprefix("builtins.")
        text = ast.unparse(node.func)
        if name in _ALLOWED_CALLS:
            return
        if name == "random.Random" and (node.args or node.keywords):
            return  # a generator seeded by the code is as deterministic as its seed
        arity = _CLOCK_WITHOUT_ARGS.get(name, _CLOCK_WITH_ONE_ARG.get(name))
        if arity is not None and len(node.args) + len(node.keywords) == arity:
            self.report(node, "RK101", f"{text}() reads the clock ({shown})")
            return
        for code, patterns in _CALLS.items():
            if not _matches(name, patterns):
                continue
            where = "" if shown == text else f" ({shown})"
            self.report(node, code, f"{text}(){where} {_WHAT[code]}", _fix_for(code, name))
            return
        if text in self.module.step_functions:
            self.report(
                node,
                "RK202",
                f"{text}(...) is a step's function (passed to Step elsewhere in this module), "
                "called directly: it runs again on every replay and its result is not recorded",
                f"`yield Step({text!r}, {text}, ...)`",
            )

    def _check_path_io(self, node: ast.Call) -> None:
        func = node.func
        if not (isinstance(func, ast.Attribute) and func.attr in _PATH_IO):
            return
        receiver = func.value
        if isinstance(receiver, ast.Call) and self.qualify(receiver.func) in _PATH_CLASSES:
            self.report(node, "RK105", f"{ast.unparse(func)}() does I/O in the workflow body")

    def _check_global_mutator(self, node: ast.Call) -> None:
        func = node.func
        if (
            isinstance(func, ast.Attribute)
            and func.attr in _MUTATORS
            and self._is_module_global(func.value)
        ):
            self.report(
                node,
                "RK110",
                f"{ast.unparse(func)}() mutates the module-level {ast.unparse(func.value)}",
            )

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if isinstance(node.ctx, ast.Load) and self.qualify(node) in _ENV_VALUES:
            self.report(node, "RK104", f"{ast.unparse(node)} reads the environment")
            return
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load) and self.qualify(node) in _ENV_VALUES:
            self.report(node, "RK104", f"{node.id} ({self.qualify(node)}) reads the environment")

    # -- statements -------------------------------------------------------------

    def visit_Expr(self, node: ast.Expr) -> None:
        value = node.value
        if isinstance(value, ast.Call):
            command = self.module.command_of(value.func, self.local)
            if command is not None:
                self.report(
                    value,
                    "RK201",
                    f"{command}(...) is built but not yielded: it does nothing",
                    f"`yield {ast.unparse(value.func)}(...)`",
                )
        self.generic_visit(node)

    def visit_For(self, node: ast.For) -> None:
        self._check_iteration(node.iter)
        self._check_global_store(node.target)
        self.generic_visit(node)

    def visit_AsyncFor(self, node: ast.AsyncFor) -> None:
        self._check_iteration(node.iter)
        self.generic_visit(node)

    def visit_comprehension(self, node: ast.comprehension) -> None:
        self._check_iteration(node.iter)
        self.generic_visit(node)

    def _visit_store(
        self, node: ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Delete | ast.NamedExpr
    ) -> None:
        """Every statement that binds or deletes names, checked for module globals."""
        if isinstance(node, (ast.Assign, ast.Delete)):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign) and node.value is None:
            targets = []  # an annotation alone stores nothing
        else:
            targets = [node.target]
        for target in targets:
            self._check_global_store(target)
        self.generic_visit(node)

    visit_Assign = visit_AugAssign = visit_AnnAssign = visit_Delete = visit_NamedExpr = _visit_store

    def _check_global_store(self, target: ast.AST) -> None:
        if isinstance(target, ast.Name) and target.id in self.declared_global:
            self.report(
                target,
                "RK110",
                f"assigns the module global {target.id!r} (declared `global`)",
            )
        elif isinstance(target, (ast.Subscript, ast.Attribute)) and self._is_module_global(
            target.value
        ):
            self.report(
                target,
                "RK110",
                f"{ast.unparse(target)} changes the module-level {ast.unparse(target.value)}",
            )
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self._check_global_store(element)

    def _is_module_global(self, node: ast.AST) -> bool:
        return (
            isinstance(node, ast.Name)
            and node.id in self.module.globals
            and (node.id not in self.local or node.id in self.declared_global)
        )

    # -- sets ---------------------------------------------------------------------

    def _set_names(self) -> set[str]:
        """Local names every assignment of which is a set (so iterating them is too)."""
        kinds: dict[str, bool] = {}
        for node in _walk_scope(self.func):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    for name in _bound_names(target):
                        is_set = isinstance(target, ast.Name) and self._is_set(node.value, set())
                        kinds[name] = kinds.get(name, True) and is_set
            elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and isinstance(
                node.target, ast.Name
            ):
                if isinstance(node, ast.AnnAssign) and node.value is None:
                    continue
                keeps = isinstance(node, ast.AugAssign) or (
                    node.value is not None and self._is_set(node.value, set())
                )
                kinds[node.target.id] = kinds.get(node.target.id, True) and keeps
            elif isinstance(node, (ast.For, ast.comprehension, ast.withitem)):
                bound: ast.expr | None = (
                    node.optional_vars if isinstance(node, ast.withitem) else node.target
                )
                for name in _bound_names(bound) if bound is not None else ():
                    kinds[name] = False
        return {name for name, is_set in kinds.items() if is_set}

    def _is_set(self, node: ast.AST, names: set[str]) -> bool:
        if isinstance(node, (ast.Set, ast.SetComp)):
            return True
        if isinstance(node, ast.Call):
            func = node.func
            if self.qualify(func) in ("builtins.set", "builtins.frozenset"):
                return True
            if isinstance(func, ast.Attribute) and func.attr in _SET_METHODS:
                return self._is_set(func.value, names)
            return False
        if isinstance(node, ast.BinOp) and isinstance(node.op, _SET_OPERATORS):
            return self._is_set(node.left, names) or self._is_set(node.right, names)
        if isinstance(node, ast.Name):
            return node.id in names
        return False

    def _check_iteration(self, node: ast.AST) -> None:
        inner = node
        # list(s), tuple(s), enumerate(s) keep the set's order; sorted(s) fixes it.
        while (
            isinstance(inner, ast.Call)
            and inner.args
            and self.qualify(inner.func) in _ORDER_KEEPING
        ):
            inner = inner.args[0]
        if self._is_set(inner, self.set_names):
            self.report(
                node,
                "RK108",
                f"iterates over the set {ast.unparse(inner)}: its order is not stable "
                "between processes (string hashes are salted per process)",
                f"`sorted({ast.unparse(inner)})`",
            )

    # -- yields -------------------------------------------------------------------

    def visit_Yield(self, node: ast.Yield) -> None:
        self._check_yielded(node)
        self.generic_visit(node)

    def _check_yielded(self, node: ast.Yield) -> None:
        value = node.value
        if value is None:
            self.report(node, "RK203", "a bare `yield` yields None, not a command")
            return
        if isinstance(value, (ast.List, ast.Tuple)) and value.elts:
            self.report(
                node,
                "RK203",
                f"yields a {type(value).__name__.lower()}, not a command",
                "`yield All(...)` to run commands concurrently (or Race(...) for the first)",
            )
            return
        if isinstance(value, _NOT_COMMANDS):
            self.report(node, "RK203", f"yields {ast.unparse(value)[:60]}, not a command")
            return
        if isinstance(value, (ast.Name, ast.Attribute)):
            text = ast.unparse(value)
            command = self.module.command_of(value, self.local)
            if command is not None:
                self.report(
                    node,
                    "RK203",
                    f"yields the class {command} itself",
                    f"call it: `yield {text}(...)`",
                )
            elif text in self.module.step_functions or (
                isinstance(value, ast.Name)
                and value.id not in self.local
                and value.id in self.module.functions
                and value.id not in self.module.workflow_names
            ):
                self.report(
                    node,
                    "RK203",
                    f"yields the function {text} itself",
                    f"`yield Step({text!r}, {text}, ...)`",
                )
            return
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
            name = value.func.id
            if name not in self.local and (
                name in self.module.workflow_names or self._is_generator_function(name)
            ):
                self.report(
                    node,
                    "RK203",
                    f"yields the generator {name}(...) instead of delegating to it",
                    f"`yield from {name}(...)` (or `yield Call({name}, ...)` for a child run)",
                )

    def _is_generator_function(self, name: str) -> bool:
        func = self.module.functions.get(name)
        return func is not None and any(
            isinstance(n, (ast.Yield, ast.YieldFrom)) for n in _walk_scope(func)
        )

    def visit_YieldFrom(self, node: ast.YieldFrom) -> None:
        value = node.value
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
            helper = self.module.functions.get(value.func.id)
            if (
                helper is not None
                and value.func.id not in self.local
                and value.func.id not in self.module.step_functions
                and not self.module.is_workflow(helper)
            ):
                self.linter.follow(helper, self.workflow)
        self.generic_visit(node)


# -- a module, a file, paths ------------------------------------------------------------


class _Linter:
    def __init__(self, source: str, path: str) -> None:
        self.path = path
        self.lines = source.splitlines()
        self.module = _Module(ast.parse(source, filename=path))
        self.findings: dict[tuple[int, int, str], Finding] = {}
        self.ignored = _ignore_comments(source)
        self._followed: set[str] = set()

    def run(self) -> list[Finding]:
        for func in self.module.workflows:
            name = func.name
            if isinstance(func, ast.AsyncFunctionDef):
                self.add(
                    func,
                    "RK204",
                    f"workflow {name!r} is an async def: replaykit drives generators, so it "
                    "cannot run (the engine refuses it when it is decorated)",
                    RULES["RK204"].fix,
                    name,
                )
                continue
            _BodyChecker(self, func, name).check()
        return sorted(self.findings.values(), key=lambda f: (f.line, f.col, f.code))

    def follow(self, helper: Function, workflow: str) -> None:
        """Check a helper a workflow delegates to with `yield from`, once."""
        if helper.name in self._followed:
            return
        self._followed.add(helper.name)
        _BodyChecker(self, helper, f"{helper.name} (via {workflow})").check()

    def add(self, node: ast.AST, code: str, message: str, fix: str, workflow: str) -> None:
        line = getattr(node, "lineno", 1)
        col = self._column(line, getattr(node, "col_offset", 0))
        codes = self.ignored.get(line)
        if codes is not None and (not codes or code in codes):
            return
        key = (line, col, code)
        if key not in self.findings:
            self.findings[key] = Finding(self.path, line, col, code, message, fix, workflow)

    def _column(self, line: int, offset: int) -> int:
        # ast counts UTF-8 bytes; editors count characters.
        if 0 < line <= len(self.lines):
            return len(self.lines[line - 1].encode("utf-8")[:offset].decode("utf-8", "ignore")) + 1
        return offset + 1


def _ignore_comments(source: str) -> dict[int, frozenset[str]]:
    """line -> the codes its `# replaykit: ignore[...]` silences (empty: all of them)."""
    found: dict[int, frozenset[str]] = {}
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):
        return found
    for token in tokens:
        if token.type != tokenize.COMMENT:
            continue
        match = _IGNORE.search(token.string)
        if match is None:
            continue
        codes = match.group(1)
        found[token.start[0]] = frozenset(
            c.strip().upper() for c in (codes or "").split(",") if c.strip()
        )
    return found


def lint_source(source: str, path: str = "<string>") -> list[Finding]:
    """Findings in one module's source, in line order. Raises `SyntaxError`."""
    return _Linter(source, path).run()


def lint_file(path: str | os.PathLike[str]) -> list[Finding]:
    """Findings in one file (read with the encoding it declares). Raises `SyntaxError`."""
    with tokenize.open(path) as handle:
        source = handle.read()
    return lint_source(source, os.fspath(path))


def python_files(paths: Sequence[str | os.PathLike[str]]) -> list[Path]:
    """The files to check: each file named, and the `*.py` files under each directory.

    Hidden directories and `__pycache__` are skipped. A path that does not
    exist raises `FileNotFoundError`.
    """
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            for found in sorted(path.rglob("*.py")):
                parts = found.relative_to(path).parts[:-1]
                if any(p.startswith(".") or p == "__pycache__" for p in parts):
                    continue
                files.append(found)
        elif path.exists():
            files.append(path)
        else:
            raise FileNotFoundError(f"{os.fspath(raw)}: no such file or directory")
    return files


def lint_paths(paths: Sequence[str | os.PathLike[str]]) -> list[Finding]:
    """Findings in every Python file of `paths` (files and directories).

    Raises `FileNotFoundError` for a path that does not exist and `SyntaxError`
    (with its `filename`) for a file that does not parse.
    """
    findings: list[Finding] = []
    for path in python_files(paths):
        findings.extend(lint_file(path))
    return findings

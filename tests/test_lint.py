"""replaykit.lint and `replaykit lint`: the corpus is caught, right workflows are not."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from replaykit.cli import cli
from replaykit.lint import RULES, Finding, lint_paths, lint_source, python_files

ROOT = Path(__file__).resolve().parent.parent
CORPUS = Path(__file__).resolve().parent / "lint_corpus"
EXPECT = re.compile(r"#\s*expect:\s*([A-Z0-9, ]+)$")


def expected(path: Path) -> set[tuple[int, str]]:
    marks = set()
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        match = EXPECT.search(line)
        if match:
            marks.update((number, code.strip()) for code in match.group(1).split(","))
    return marks


def lint(code: str) -> list[Finding]:
    return lint_source(textwrap.dedent(code), "example.py")


def codes(code: str) -> list[tuple[int, str]]:
    return [(f.line, f.code) for f in lint(code)]


@pytest.mark.parametrize("path", sorted(CORPUS.glob("*.py")), ids=lambda p: p.name)
def test_the_corpus_is_reported_line_by_line(path: Path) -> None:
    found = {(f.line, f.code) for f in lint_paths([path])}
    assert found == expected(path)


def test_the_corpus_covers_every_rule() -> None:
    covered = {code for path in CORPUS.glob("*.py") for _, code in expected(path)}
    assert covered == set(RULES)


def test_right_workflows_are_not_flagged() -> None:
    assert expected(CORPUS / "right.py") == set()
    assert lint_paths([CORPUS / "right.py"]) == []


def test_the_examples_are_clean() -> None:
    assert [f.format() for f in lint_paths([ROOT / "examples"])] == []


def test_a_finding_says_where_what_and_the_fix() -> None:
    [finding] = lint(
        """
        import time as clock
        from replaykit import workflow, Step

        @workflow
        def wf():
            started = clock.time()
            yield Step("s", print, started)
        """
    )
    assert (finding.path, finding.line, finding.col, finding.code) == ("example.py", 7, 15, "RK101")
    assert finding.workflow == "wf"
    assert "clock.time() (time.time) reads the clock" in finding.message
    assert "yield Now()" in finding.fix
    assert finding.format().startswith("example.py:7:15: RK101 clock.time() (time.time) ")
    assert json.loads(json.dumps(finding.to_json()))["code"] == "RK101"


def test_columns_count_characters_not_bytes() -> None:
    [finding] = lint(
        """
        import time
        from replaykit import workflow

        @workflow
        def wf():
            é = "ü"; t = time.time()
            yield t
        """
    )[:1]
    assert finding.col == len('    é = "ü"; t = ') + 1


def test_only_workflow_bodies_are_checked() -> None:
    assert (
        codes(
            """
        import time
        from replaykit import Step, workflow

        def not_a_workflow():
            return time.time()

        def step_body():
            return time.time()

        @workflow
        def wf():
            yield Step("stamp", step_body)
        """
        )
        == []
    )


def test_decorators_of_other_libraries_are_not_workflows() -> None:
    assert (
        codes(
            """
        import time
        from dbos import DBOS

        @DBOS.workflow()
        def theirs():
            return time.time()
        """
        )
        == []
    )
    assert codes(
        """
        import time
        import replaykit as rk

        @rk.workflow(name="ours")
        def ours():
            yield rk.Sleep(time.time())
        """
    ) == [(7, "RK101")]


def test_a_local_variable_shadows_an_import() -> None:
    assert (
        codes(
            """
        import random
        from replaykit import Random, workflow

        @workflow
        def wf():
            random = yield Random()
            return random.hex()
        """
        )
        == []
    )


def test_yield_from_is_followed_once_and_named() -> None:
    findings = lint(
        """
        import time
        from replaykit import Now, workflow

        def helper():
            stamp = time.time()
            yield Now()
            return stamp

        @workflow
        def a():
            yield from helper()

        @workflow
        def b():
            yield from helper()
        """
    )
    assert [(f.line, f.code, f.workflow) for f in findings] == [(6, "RK101", "helper (via a)")]


def test_a_set_variable_reassigned_to_a_list_is_not_a_set() -> None:
    assert (
        codes(
            """
        from replaykit import Step, workflow

        @workflow
        def wf(names):
            pending = set(names)
            pending = sorted(pending)
            for name in pending:
                yield Step("n", print, name)
        """
        )
        == []
    )


def test_ignore_comments_silence_their_codes_on_their_line_only() -> None:
    source = """
        import time
        from replaykit import workflow

        @workflow
        def wf():
            a = time.time()  # replaykit: ignore[RK101]
            b = time.time()  # replaykit: ignore[rk999]
            c = time.time()  # replaykit: ignore
            yield a + b + c
        """
    assert codes(source) == [(8, "RK101")]
    # The text of a string is not a comment.
    assert codes(
        """
        import time
        from replaykit import workflow

        @workflow
        def wf():
            a = (time.time(), "# replaykit: ignore")
            yield a
        """
    ) == [(7, "RK101")]


def test_a_syntax_error_is_raised_with_its_place() -> None:
    with pytest.raises(SyntaxError) as caught:
        lint_source("def broken(:\n", "broken.py")
    assert caught.value.filename == "broken.py"
    assert caught.value.lineno == 1


def test_python_files_walks_directories_and_refuses_missing_paths(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text("")
    (tmp_path / "pkg" / "notes.txt").write_text("")
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "b.py").write_text("")
    (tmp_path / "pkg" / "__pycache__").mkdir()
    (tmp_path / "pkg" / "__pycache__" / "c.py").write_text("")
    assert python_files([tmp_path]) == [tmp_path / "pkg" / "a.py"]
    with pytest.raises(FileNotFoundError, match=r"missing\.py: no such file"):
        python_files([tmp_path / "missing.py"])


# -- the command --------------------------------------------------------------------------


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["lint", *args])
    return result.exit_code, result.stdout, result.stderr


def test_cli_exits_0_on_clean_code() -> None:
    code, out, _ = invoke(str(ROOT / "examples"))
    assert code == 0
    assert out.startswith("no findings, ")


def test_cli_exits_1_and_prints_each_finding() -> None:
    code, out, _ = invoke(str(CORPUS / "slips.py"))
    assert code == 1
    lines = out.splitlines()
    assert len(lines) == len(expected(CORPUS / "slips.py")) + 1
    assert re.match(r".*slips\.py:25:5: RK201 Step\(\.\.\.\) is built but not yielded", lines[0])
    assert lines[-1] == f"{len(lines) - 1} finding(s), 1 file(s) checked"


def test_cli_json() -> None:
    code, out, _ = invoke("--json", str(CORPUS / "clock.py"), str(CORPUS / "right.py"))
    assert code == 1
    data = json.loads(out)
    assert data["files"] == 2
    assert data["errors"] == []
    assert {(f["line"], f["code"]) for f in data["findings"]} == expected(CORPUS / "clock.py")
    assert set(data["findings"][0]) == {"path", "line", "col", "code", "message", "fix", "workflow"}


def test_cli_exits_2_on_a_missing_path_or_a_syntax_error(tmp_path: Path) -> None:
    code, _, err = invoke(str(tmp_path / "nowhere"))
    assert code == 2
    assert "nowhere: no such file or directory" in err
    broken = tmp_path / "broken.py"
    broken.write_text("x = 1\ndef broken(:\n")
    code, out, err = invoke(str(broken), str(CORPUS / "clock.py"))
    assert code == 2
    assert f"Error: {broken}:2:12: syntax error:" in err
    assert "RK101" in out  # the files that parse are still reported
    assert "1 could not be read" in out


def test_cli_needs_a_path() -> None:
    code, _, err = invoke()
    assert code == 2
    assert "PATHS" in err


def test_cli_escapes_what_it_prints(tmp_path: Path) -> None:
    odd = tmp_path / "odd\x1b[31m.py"
    odd.write_text(
        "import time\nfrom replaykit import workflow\n@workflow\ndef w():\n    yield time.time()\n"
    )
    code, out, _ = invoke(str(odd))
    assert code == 1
    assert "\x1b" not in out
    assert "odd\\x1b[31m.py:5:11: RK101" in out


def test_the_docs_list_every_code() -> None:
    text = (ROOT / "docs" / "testing.md").read_text()
    assert set(re.findall(r"^\| (RK\d{3}) \|", text, flags=re.M)) == set(RULES)


def test_a_module_level_object_named_like_a_module_is_not_that_module() -> None:
    assert (
        codes(
            """
        from random import Random as Generator
        from replaykit import workflow

        random = Generator(7)

        def open(name):
            return name

        @workflow
        def wf():
            yield open(random.random())
        """
        )
        == []
    )

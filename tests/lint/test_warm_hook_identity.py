"""A warm pre-commit run reports exactly what a cold and a ``--no-cache`` run report, after every kind of edit.

What a warm hook run skips must not change its answer: summaries read from the cache decode their functions'
bulky fields only when resolution reads them (``model._Deferred``), and a run narrowed to the changed files
(``lint_paths(..., reachable_from=...)``) checks the fixes of those findings only. For each edit (a hazard added
to a helper another file's workflow calls, a comment-only edit, the hazard removed, a file with an offered fix
edited, the configuration changed, a file added, a file deleted) the hook's entry (``--whole-project
--force-exclude FILE``) writes the same stdout and stderr and exits the same whether the cache is warm from the
state before the edit, fresh, or off. Runs are in-process (the lean entry, as the console script runs it), with
the file index's ``SETTLE_SECONDS`` turned off so that unchanged files really come from the index. And the vetting
verdicts (``vetted.txt``), searched rather than parsed by a warm run, answer as the parsed list does."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from lintkit import CLOCK_WORKFLOW, write_files

from replaytest import cachedir
from replaytest.lint import cache as cache_module
from replaytest.lint import fix_scope
from replaytest.lint.model import (
    DEFERRED_FIELDS,
    PACKED,
    CallSite,
    Effect,
    FunctionSummary,
    ModuleSummary,
    Span,
    summary_from_entry,
    summary_from_json,
    summary_to_entry,
    summary_to_json,
)
from replaytest.lint_entry import run_lean

HELPER = "def label(name):\n    return name.upper()\n"
HELPER_WITH_CLOCK = "import time\n\n\ndef label(name):\n    return f'{name}{time.time()}'\n"
WORKFLOW = '''\
from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from app.labels import label


@workflow.defn
class Labelled:
    @workflow.run
    async def run(self, name: str) -> str:
        return label(name)
'''
# The clock read's fix (``workflow.now()``) would reach the local ``workflow`` here: not offered.
SHADOWED = CLOCK_WORKFLOW.replace('        return f"{name} at', '        workflow = name\n        return f"{workflow} at')


def _hook(project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
          *arguments: str) -> tuple[int, str, str]:
    """The pre-commit hook's lint, as the console script runs it: (exit code, stdout, stderr)."""
    monkeypatch.chdir(project)
    options = {"whole_project": True, "force_exclude": True, "no_cache": "--no-cache" in arguments,
               "exit_zero": False, "output_format": "json",
               "paths": tuple(Path(argument) for argument in arguments if not argument.startswith("-"))}
    capsys.readouterr()
    code = run_lean(options)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture()
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(cache_module, "SETTLE_SECONDS", -3600)  # trust the stat of files written just now
    return write_files(tmp_path / "proj", {
        "pyproject.toml": "[tool.replaytest]\n",
        "app/__init__.py": "",
        "app/labels.py": HELPER,
        "app/wf.py": WORKFLOW,
        "app/clock.py": CLOCK_WORKFLOW,
        "app/shadow.py": SHADOWED,
    })


def _edits(project: Path) -> list[tuple[str, object]]:
    app = project / "app"
    return [
        ("nothing edited", lambda: None),
        ("a hazard added to a helper another file imports", lambda: (app / "labels.py").write_text(HELPER_WITH_CLOCK)),
        ("a comment-only edit", lambda: (app / "labels.py").write_text(HELPER_WITH_CLOCK + "# reviewed\n")),
        ("the hazard removed", lambda: (app / "labels.py").write_text(HELPER)),
        ("a file with an offered fix edited", lambda: (app / "clock.py").write_text(CLOCK_WORKFLOW + "# touched\n")),
        ("the configuration changed",
         lambda: (project / "pyproject.toml").write_text('[tool.replaytest]\nexclude = ["app/shadow.py"]\n')),
        ("a file added", lambda: (app / "second.py").write_text(WORKFLOW.replace("Labelled", "Second"))),
        ("a hazard added with the new file reaching it", lambda: (app / "labels.py").write_text(HELPER_WITH_CLOCK)),
        ("a file deleted", lambda: (app / "second.py").unlink()),
    ]


@pytest.mark.parametrize("changed", [("app/labels.py",), ("app/shadow.py", "app/clock.py"), ("app/wf.py",)])
def test_warm_hook_run_equals_cold_and_no_cache_after_every_kind_of_edit(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], changed: tuple[str, ...],
) -> None:
    cache = project / ".replaytest_cache"
    _hook(project, monkeypatch, capsys, *changed)  # the cache warm before the first edit
    reported = set()
    for what, edit in _edits(project):
        edit()  # type: ignore[operator]
        warm = _hook(project, monkeypatch, capsys, *changed)
        off = _hook(project, monkeypatch, capsys, "--no-cache", *changed)
        shutil.rmtree(cache)
        cold = _hook(project, monkeypatch, capsys, *changed)
        assert warm == off == cold, f"after {what}: the warm run differs"
        reported.add((warm[0], warm[1]))
        assert warm[0] in (0, 1), warm
    # The edits changed what was reported (else the comparison would prove little).
    assert len(reported) >= 2


def test_a_narrowed_run_checks_the_fixes_of_the_reported_findings_only(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    parsed: list[int] = []
    original = fix_scope.FixSites.__init__

    def recording(self: fix_scope.FixSites, source: str | bytes) -> None:
        parsed.append(len(source))
        original(self, source)

    monkeypatch.setattr(fix_scope.FixSites, "__init__", recording)
    whole = _hook(project, monkeypatch, capsys, "--no-cache", ".")
    assert len(parsed) == 2  # clock.py and shadow.py hold a fix when every finding is reported
    findings = {(d["path"], d["fix"] is not None) for d in json.loads(whole[1])["diagnostics"]}
    assert findings == {("app/clock.py", True), ("app/shadow.py", False)}
    for changed, expected in (("app/shadow.py", ("app/shadow.py", False)), ("app/clock.py", ("app/clock.py", True))):
        parsed.clear()
        narrowed = _hook(project, monkeypatch, capsys, "--no-cache", changed)
        assert parsed == [len((project / changed).read_bytes())], "a file outside the reported findings was parsed"
        assert {(d["path"], d["fix"] is not None) for d in json.loads(narrowed[1])["diagnostics"]} == {expected}


def _summary() -> ModuleSummary:
    span = Span(3, 5, 3, 20)
    effect = Effect("RT101", "clock", "datetime.now()", "datetime.datetime.now", span, ("temporal",), "x")
    function = FunctionSummary(
        "Flow.run", "orchestration", "temporal", "ctx", (effect,),
        (CallSite("app.labels.label", span, "label(name)", ("name",), "a:0", True, (("0", "config"),)),),
        (effect,), True, "app.Model", (span,), (Span(2, 1, 9, 1),), True,
        (CallSite("app.tools.TOOLS", span, "TOOLS[name]"),), (("send", "app.tools.send"),),
        (("the run's config", CallSite("tool", span, "tool.invoke(x)")),),
    )
    return ModuleSummary("app.wf", "/p/app/wf.py", functions={"Flow.run": function, "Flow.helper": FunctionSummary("Flow.helper")})


def test_a_summary_read_from_the_cache_decodes_a_functions_fields_when_first_read() -> None:
    written = _summary()
    read = summary_from_json(json.loads(json.dumps(summary_to_json(written))))
    function = read.functions["Flow.run"]
    assert PACKED in function.__dict__ and not set(DEFERRED_FIELDS) & set(function.__dict__)
    assert function.calls == written.functions["Flow.run"].calls  # the first read decodes every deferred field
    assert PACKED not in function.__dict__ and set(DEFERRED_FIELDS) <= set(function.__dict__)
    assert PACKED in read.functions["Flow.helper"].__dict__  # a function nothing read stays encoded
    assert read == written and repr(read) == repr(written) and hash(read.functions["Flow.helper"]) == hash(
        written.functions["Flow.helper"])
    assert summary_to_json(read) == summary_to_json(written)
    for field in DEFERRED_FIELDS:  # whichever field is read first, it is the function's own
        fresh = summary_from_json(json.loads(json.dumps(summary_to_json(written)))).functions["Flow.run"]
        assert getattr(fresh, field) == getattr(written.functions["Flow.run"], field) != (), field
    assert FunctionSummary.calls == () and FunctionSummary("f").effects == ()


def test_a_vetting_verdict_is_a_line_of_the_file_that_is_exactly_its_key(tmp_path: Path) -> None:
    """The verdicts file is searched, not parsed, by a run that saves none: the same answers as the parsed list."""
    keys = [f"{index:032x}" for index in range(50_000)]
    cachedir.claim(tmp_path / "cache")  # a cache folder replaytest made, which it writes to
    folder = tmp_path / "cache" / "lint"
    folder.mkdir()
    damaged = ["0" * 31, "f" * 33, "x" + "a" * 31, "b" * 32 + " trailing", "C" * 32, "d" * 32]
    (folder / cache_module.VETTED_FILE).write_text("\n".join([*keys, *damaged]) + "\n", encoding="ascii")
    searched = cache_module.SummaryCache(tmp_path / "cache")
    parsed = set(cache_module.SummaryCache(tmp_path / "cache")._read_vetted())
    probes = [keys[0], keys[25_000], keys[-1], f"{50_000:032x}", "0" * 31, "f" * 32, "a" * 31, "c" * 32, "d" * 32, ""]
    assert [searched.is_vetted(key) for key in probes] == [key in parsed for key in probes]
    assert searched.is_vetted("d" * 32)
    # A line holding more than the key is no verdict (the parsed list takes its first word): stricter, so at
    # worst a file is vetted again.
    assert "b" * 32 in parsed and not searched.is_vetted("b" * 32)
    # Saving a new verdict keeps the earlier ones, which are then answered from the parsed list.
    searched.add_vetted("e" * 32)
    searched.save_vetted()
    assert searched.is_vetted("e" * 32) and searched.is_vetted(keys[25_000])
    again = cache_module.SummaryCache(tmp_path / "cache")
    assert again.is_vetted("e" * 32) and again.is_vetted(keys[0]) and not again.is_vetted("b" * 32)


def test_a_cache_entry_keeps_each_functions_deferred_fields_as_its_own_json() -> None:
    written = _summary()
    data, bodies = summary_to_entry(written)
    read = summary_from_entry(json.loads(json.dumps(data)), [body.encode() for body in bodies])
    assert [json.loads(body) for body in bodies][0][1][0][0] == "app.labels.label"  # Flow.run's call, as JSON
    assert all(isinstance(function.__dict__[PACKED], bytes) for function in read.functions.values())
    assert read == written and summary_to_json(read) == summary_to_json(written)
    with pytest.raises(ValueError):
        summary_from_entry(json.loads(json.dumps(data)), [bodies[0].encode()])


def test_a_warm_run_misses_an_entry_whose_deferred_fields_were_altered(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    (project / "app" / "labels.py").write_text(HELPER_WITH_CLOCK)
    reference = _hook(project, monkeypatch, capsys, "--no-cache", "app/labels.py")
    assert json.loads(reference[1])["diagnostics"], "the helper's clock read is reported at the workflow"
    _hook(project, monkeypatch, capsys, "app/labels.py")
    pack = project / ".replaytest_cache" / "lint" / "pack.txt"
    lines = pack.read_bytes().split(b"\n")
    altered = []
    for line in lines:  # the call to the helper renamed inside the deferred JSON only: still valid JSON
        head, tab, rest = line.partition(b"\t")
        altered.append(head + tab + rest.replace(b'"app.labels.label"', b'"app.labels.lab3l"'))
    assert altered != lines
    pack.write_bytes(b"\n".join(altered))
    assert _hook(project, monkeypatch, capsys, "app/labels.py") == reference

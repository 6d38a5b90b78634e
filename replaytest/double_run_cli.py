"""``replaytest double-run``: a determinism check for orchestration code that has no history yet (a face).

Each case (a recorded history's workflow and input, or one of a declared inputs file) is run three times
with every step stubbed by its engine's tracer (``FrameworkPlugin.double_run_tracer``): twice in this
process (state left over from the first run parts them) and once in a child process started with another
``PYTHONHASHSEED``, random seed, uuid source and clock (``replay.double_run.OTHER_PROCESS_RUN``). The first
difference is reported as a replay divergence; the output formats and exit codes are ``check``'s (text,
json, and the CI formats github, sarif and junit through ``check``'s reporters).
The child is this module run with ``-m``: it reads its cases from a JSON file and writes its traces to one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from replaytest.replay.adapter import WorkflowSet
    from replaytest.replay.divergence import ReplayResult
    from replaytest.replay.double_run import DoubleRunCase, RunConditions, Trace

# How long the second process may take: its start and imports, then each case's run.
CHILD_TIMEOUT_S = 120.0
CHILD_TIMEOUT_PER_CASE_S = 30.0

TracerFunction = Callable[["WorkflowSet", "DoubleRunCase", "RunConditions"], "Trace"]


class DoubleRunSetupError(Exception):
    """The double run could not start: configuration, plugins, the current code, or no cases (exit 2)."""


def tracers() -> dict[str, TracerFunction]:
    """The tracer of every installed engine that has one, by engine name."""
    import importlib

    from replaytest.plugins import load_plugins

    found: dict[str, TracerFunction] = {}
    for plugin in load_plugins():
        if plugin.double_run_tracer is not None:
            module_name, _, attribute = plugin.double_run_tracer.partition(":")
            found[plugin.name] = getattr(importlib.import_module(module_name), attribute)
    return found


def other_hash_seed() -> str:
    """A ``PYTHONHASHSEED`` other than this process's: one more than a fixed one; 0 (no randomisation)
    when this process's is random. Another seed is no promise that a hash-ordered collection comes out in
    another order: a few strings can fall in the same order under both, so a pass is agreement under these
    two seeds only."""
    own = os.environ.get("PYTHONHASHSEED", "random")
    return str((int(own) + 1) % 4294967296) if own.isdigit() else "0"


def run_cases(
    cases: Sequence[DoubleRunCase], workflow_specs: Sequence[str], base: Path, workflows: WorkflowSet,
    import_roots: Sequence[Path] = (),
) -> list[ReplayResult]:
    """Every case run twice here and once in a child process; one result per case, in order.
    ``import_roots``: folders the child puts on ``sys.path`` first, so it imports ``workflow_specs`` as this
    process did (a test module pytest imported from its own folder)."""
    from replaytest.replay.divergence import ReplayResult
    from replaytest.replay.double_run import FIRST_RUN, OTHER_PROCESS_RUN, REPEAT_RUN, compare

    available = tracers()
    results: list[ReplayResult | None] = []
    firsts: dict[int, Trace] = {}
    for index, case in enumerate(cases):
        tracer = available.get(case.engine)
        if tracer is None:
            results.append(ReplayResult(case.origin, case.engine, case.workflow, case.workflow_id, status="error", error=(
                f"no double run for engine {case.engine!r}: supported engines: {', '.join(sorted(available)) or 'none'}")))
            continue
        first = tracer(workflows, case, FIRST_RUN)
        repeat = tracer(workflows, case, REPEAT_RUN)
        result = compare(case, first, repeat, REPEAT_RUN)
        results.append(result if result.status != "passed" else None)
        firsts[index] = first
    pending = [index for index, result in enumerate(results) if result is None]
    if pending:
        others = _child_traces([cases[index] for index in pending], workflow_specs, base, import_roots)
        for index, other in zip(pending, others):
            results[index] = compare(cases[index], firsts[index], other, OTHER_PROCESS_RUN)
    return [result for result in results if result is not None]


def _child_traces(
    cases: Sequence[DoubleRunCase], workflow_specs: Sequence[str], base: Path, import_roots: Sequence[Path] = (),
) -> list[Trace]:
    """The cases' traces from one child process under ``OTHER_PROCESS_RUN`` (JSON in files, never pickles)."""
    from replaytest.replay.double_run import Trace

    with tempfile.TemporaryDirectory(prefix="replaytest-double-run-") as folder:
        request, answer = Path(folder, "cases.json"), Path(folder, "traces.json")
        request.write_text(json.dumps({"workflows": list(workflow_specs), "base": str(base),
                                       "import_roots": [str(root) for root in import_roots],
                                       "cases": [case.to_json() for case in cases]}), encoding="utf-8")
        env = {**os.environ, "PYTHONHASHSEED": other_hash_seed()}
        limit = CHILD_TIMEOUT_S + CHILD_TIMEOUT_PER_CASE_S * len(cases)
        try:
            done = subprocess.run([sys.executable, "-m", "replaytest.double_run_cli", str(request), str(answer)],
                                  env=env, capture_output=True, text=True, check=False, timeout=limit)
        except subprocess.TimeoutExpired:
            return [Trace(error=f"the second process did not finish within {limit:.0f} s (a workflow that never "
                                "ends under the stubs?)") for _ in cases]
        if done.returncode != 0 or not answer.exists():
            why = (done.stderr.strip().splitlines() or ["no output"])[-1]
            return [Trace(error=f"the second process failed (exit {done.returncode}): {why}") for _ in cases]
        data = json.loads(answer.read_text(encoding="utf-8"))
    return [Trace.from_json(item) for item in data]


def _child_main(request: Path, answer: Path) -> None:
    from replaytest.replay.double_run import OTHER_PROCESS_RUN, DoubleRunCase
    from replaytest.replay.runner import load_workflows

    data = json.loads(request.read_text(encoding="utf-8"))
    for root in reversed(data.get("import_roots", [])):
        if root not in sys.path:
            sys.path.insert(0, root)
    workflows = load_workflows(data["workflows"], Path(data["base"]))
    available = tracers()
    traces = [available[case.engine](workflows, case, OTHER_PROCESS_RUN)
              for case in map(DoubleRunCase.from_json, data["cases"])]
    answer.write_text(json.dumps([trace.to_json() for trace in traces]), encoding="utf-8")


CaseReader = Callable[[Path, bytes], "DoubleRunCase | None"]


def case_readers() -> list[CaseReader]:
    """The readers of every installed engine that takes cases from its own history files."""
    import importlib

    from replaytest.plugins import load_plugins

    found: list[CaseReader] = []
    for plugin in load_plugins():
        if plugin.double_run_case_reader is not None:
            module_name, _, attribute = plugin.double_run_case_reader.partition(":")
            found.append(getattr(importlib.import_module(module_name), attribute))
    return found


def case_from_file(path: Path, readers: Sequence[CaseReader]) -> DoubleRunCase:
    """The case of one history file: a neutral history (any engine's import), else an engine's own history
    file one of ``readers`` recognises; ``DoubleRunInputError`` when none can be taken."""
    from replaytest.history.sniff import neutral_engine
    from replaytest.replay.double_run import DoubleRunInputError, case_from_history
    from replaytest.replay.runner import read_head

    try:
        head = read_head(path)
    except OSError as error:
        raise DoubleRunInputError(f"cannot read it: {error.strerror or error}") from None
    if neutral_engine(head) is None:
        for reader in readers:
            case = reader(path, head)
            if case is not None:
                return case
    return case_from_history(path)


def collect_cases(paths: Sequence[Path], inputs: Sequence[Path]) -> tuple[list[DoubleRunCase], list[ReplayResult]]:
    """The cases of the history files under ``paths`` (neutral histories, and the engines' own files their
    plugins read: Temporal's JSON) and of the inputs files; a history that cannot be read is an error result
    (its file named), an inputs file that cannot be used a setup error."""
    from replaytest.replay.divergence import ReplayResult
    from replaytest.replay.double_run import DoubleRunInputError, cases_from_inputs_file
    from replaytest.replay.runner import iter_history_files

    cases: list[DoubleRunCase] = []
    errors: list[ReplayResult] = []
    readers = case_readers()
    for path in iter_history_files(paths):
        try:
            cases.append(case_from_file(path, readers))
        except DoubleRunInputError as error:
            errors.append(ReplayResult(path, "?", "?", status="error", error=f"cannot take a case from it: {error}"))
    for path in inputs:
        try:
            cases.extend(cases_from_inputs_file(path))
        except DoubleRunInputError as error:
            raise DoubleRunSetupError(str(error)) from None
    return cases, errors


@click.command("double-run")
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option("--inputs", "inputs", multiple=True, type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="A declared inputs file (format in the README); repeatable. Histories under PATHS give cases too.")
@click.option("--workflows", "-w", "workflow_specs", multiple=True, metavar="MODULE:ATTR",
              help="Current code (default: the configured replay workflows).")
@click.option("--output-format", "--format", "output_format", type=click.Choice(["text", "json", "github", "sarif", "junit"]),
              default="text", show_default=True, help="As check's: github annotations, SARIF and junit at each difference's line.")
@click.option("--details", is_flag=True, help="Longer reports: more context.")
@click.option("--quiet", "-q", is_flag=True, help="Only report cases that did not pass.")
def double_run(paths: tuple[Path, ...], inputs: tuple[Path, ...], workflow_specs: tuple[str, ...], output_format: str,
               details: bool, quiet: bool) -> None:
    """Run each workflow twice with every step stubbed, here and in a second process under another
    PYTHONHASHSEED, clock, random seed and uuid source, and report the first command where the runs part.

    Cases come from recorded histories under PATHS (their input; their recorded results feed the stubs) and
    from --inputs files. Exit 0 every case ran alike, 1 a difference, 2 usage error or a case that could not run."""
    from replaytest.replay.report import render_text, report_data, summary_counts

    try:
        results = _run(paths, inputs, workflow_specs)
    except DoubleRunSetupError as error:
        click.echo(f"error: {error}", err=True)
        sys.exit(2)
    if output_format == "json":
        click.echo(json.dumps(report_data(results), indent=2, ensure_ascii=False))
    elif output_format in ("github", "sarif", "junit"):
        click.echo(render_ci(results, output_format, details), nl=False)
    else:
        for result in results:
            if not (quiet and result.status == "passed" and not result.notes):
                click.echo(render_text(result, details))
                for note in result.notes:
                    click.echo(f"  note: {note}")
        counts = summary_counts(results)
        click.echo(f"double-ran {counts['histories']} workflow case(s): {counts['passed']} alike, "
                   f"{counts['diverged']} diverged, {counts['error'] + counts['stale']} error")
    counts = summary_counts(results)
    sys.exit(2 if counts["error"] or counts["stale"] else 1 if counts["diverged"] else 0)


def render_ci(results: Sequence[ReplayResult], output_format: str, details: bool) -> str:
    """The results in one of ``check``'s CI formats, rendered by its reporters: a ``double-run`` suite, one
    annotation per case at the line where the runs part (no lint ran, so junit has no lint suite)."""
    from replaytest.lint.model import LintResult
    from replaytest.lint.reporters import CI_REPORTERS
    from replaytest.replay.annotations import replay_annotations

    options = {"lint_suite": False} if output_format == "junit" else {}
    return str(CI_REPORTERS[output_format](LintResult(diagnostics=[], files_checked=0), {},
                                           extra=replay_annotations(results, details, suite="double-run"),
                                           cwd=Path.cwd(), **options))


def _run(paths: Sequence[Path], inputs: Sequence[Path], workflow_specs: Sequence[str]) -> list[ReplayResult]:
    from replaytest.config import ConfigError, load_config
    from replaytest.plugins import PluginError
    from replaytest.replay.runner import WorkflowImportError, load_workflows
    from replaytest.replay.settings import replay_plan

    if not paths and not inputs:
        raise DoubleRunSetupError("nothing to run: give history files or folders, or --inputs FILE")
    try:
        plan = replay_plan(load_config(), Path.cwd())
        specs = tuple(workflow_specs) or tuple(plan.workflows)
        base = Path.cwd() if workflow_specs else (plan.workflows_base or Path.cwd())
        if not specs:
            raise DoubleRunSetupError("no current code to run: give --workflows MODULE:ATTR, or set workflows in "
                                      "[tool.replaytest.replay]")
        workflows = load_workflows(specs, base)
        cases, errors = collect_cases(paths, inputs)
        if not cases and not errors:
            raise DoubleRunSetupError(f"no *.json history files under {', '.join(map(str, paths))}")
        return errors + run_cases(cases, specs, base, workflows)
    except (ConfigError, PluginError, WorkflowImportError) as error:
        raise DoubleRunSetupError(str(error)) from error


if __name__ == "__main__":
    _child_main(Path(sys.argv[1]), Path(sys.argv[2]))

"""Patch retirement: the version guards already in the code and whether each may be deprecated or removed.

``find_patch_calls`` reads the workflow source files with libcst and lists every ``patched("…")``,
``workflow.patched``/``workflow.deprecate_patch`` (Temporal), ``DBOS.patch``/``DBOS.patch_async``/
``DBOS.deprecate_patch`` (DBOS) and ``ctx.patched``/``ctx.deprecate_patch`` (the journal) call, with its
engine, line and — from the decorated function or class around it — its workflow type.
``attach_patches`` then reads the replays' patch decisions (``ReplayResult.patch_decisions``) at those
calls and fills ``WorkflowImpact.patches``: the in-flight runs that took the old branch there
(``needed_by``, oldest first) and the retained runs that took the new one (``marked_by``), from which
``PatchUse.verdict`` follows.

A call is tied to a workflow type by the decisions made at its line first (the replayed run says which
type it is), else by its enclosing ``@workflow``/``@workflow.defn``/``@DBOS.workflow``. What cannot be
tied, and an id that is not a string literal, is a note (``WorkflowImpact.notes``), never skipped in
silence: its retirement was not checked.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from replaytest.impact.model import UNKNOWN_WORKFLOW_TYPE, PatchUse, WorkflowImpact
from replaytest.replay.divergence import PatchDecision, ReplayResult

# (receiver, method) -> (engine, deprecated). A receiver of None is a bare name imported from
# ``temporalio.workflow``; "*" any other receiver (a journal workflow's context parameter).
_PATCH_CALLS: dict[tuple[str | None, str], tuple[str, bool]] = {
    ("workflow", "patched"): ("temporal", False),
    ("workflow", "deprecate_patch"): ("temporal", True),
    (None, "patched"): ("temporal", False),
    (None, "deprecate_patch"): ("temporal", True),
    ("DBOS", "patch"): ("dbos", False),
    ("DBOS", "patch_async"): ("dbos", False),
    ("DBOS", "deprecate_patch"): ("dbos", True),
    ("DBOS", "deprecate_patch_async"): ("dbos", True),
    ("*", "patched"): ("journal", False),
    ("*", "deprecate_patch"): ("journal", True),
}


@dataclass(frozen=True)
class PatchSite:
    """One patch call as written in the source. ``patch_id`` is None when the id is not a string literal;
    ``workflow_type`` None when no decorated workflow encloses the call; ``line``..``end_line`` the
    lines the call spans (a decision made on any of them is made at this call)."""

    patch_id: str | None
    engine: str
    deprecated: bool
    path: Path
    line: int
    end_line: int
    workflow_type: str | None
    text: str  # the call as written, for notes

    def covers(self, path: Path, line: int) -> bool:
        return path == self.path and self.line <= line <= self.end_line


def find_patch_calls(files: Iterable[Path]) -> tuple[list[PatchSite], list[str]]:
    """Every patch call in ``files`` (see the module docstring), and a note per file that could not be
    read or parsed (its patches were not checked)."""
    calls: list[PatchSite] = []
    notes: list[str] = []
    for path in files:
        try:
            source = path.read_text(encoding="utf-8")
            tree = cst.parse_module(source)
        except (OSError, UnicodeDecodeError, cst.ParserSyntaxError) as error:
            notes.append(f"{path}: not read for patch calls ({type(error).__name__}): its patches were not checked")
            continue
        if not any(name in source for name in ("patched", "patch(", "patch_async", "deprecate_patch")):
            continue
        wrapper = MetadataWrapper(tree, unsafe_skip_copy=True)
        finder = _PatchCallFinder(path.resolve(), wrapper)
        wrapper.visit(finder)
        calls.extend(finder.calls)
    return calls, notes


class _PatchCallFinder(cst.CSTVisitor):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, path: Path, wrapper: MetadataWrapper) -> None:
        super().__init__()
        self.path = path
        self.module = wrapper.module
        self.calls: list[PatchSite] = []
        self.bare_temporal: set[str] = set()  # names imported from temporalio.workflow
        self.enclosing: list[tuple[str | None, str | None]] = []  # (engine, workflow type) per def/class
        self.names: list[str] = []  # the qualified name parts of the current scope

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if node.module is not None and _dotted(node.module) == "temporalio.workflow" and not isinstance(
            node.names, cst.ImportStar
        ):
            for alias in node.names:
                if isinstance(alias.name, cst.Name) and alias.name.value in ("patched", "deprecate_patch"):
                    local = alias.asname.name if alias.asname is not None else alias.name
                    if isinstance(local, cst.Name) and local.value == alias.name.value:
                        self.bare_temporal.add(alias.name.value)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.enclosing.append(_workflow_of(node.decorators, node.name.value, class_=True))
        self.names.append(node.name.value)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.enclosing.pop()
        self.names.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        # The default workflow name of the journal and DBOS is the function's ``__qualname__``.
        qualname = ".".join([*self.names, node.name.value])
        self.enclosing.append(_workflow_of(node.decorators, qualname, class_=False))
        self.names.extend((node.name.value, "<locals>"))

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.enclosing.pop()
        del self.names[-2:]

    def visit_Call(self, node: cst.Call) -> None:
        found = self._kind(node.func)
        if found is None:
            return
        engine, deprecated = found
        workflow_type = None
        for enclosing_engine, enclosing_type in reversed(self.enclosing):
            if enclosing_type is not None:
                if enclosing_engine == engine:
                    workflow_type = enclosing_type
                break
        position = self.get_metadata(PositionProvider, node)
        first = node.args[0].value if node.args else None
        patch_id = first.evaluated_value if isinstance(first, cst.SimpleString) else None
        if isinstance(patch_id, bytes):
            patch_id = None
        self.calls.append(
            PatchSite(
                patch_id=patch_id,
                engine=engine,
                deprecated=deprecated,
                path=self.path,
                line=position.start.line,
                end_line=position.end.line,
                workflow_type=workflow_type,
                text=self.module.code_for_node(node),
            )
        )

    def _kind(self, func: cst.BaseExpression) -> tuple[str, bool] | None:
        if isinstance(func, cst.Name):
            if func.value in self.bare_temporal:
                return _PATCH_CALLS[(None, func.value)]
            return None
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
            receiver, method = func.value.value, func.attr.value
            return _PATCH_CALLS.get((receiver, method)) or _PATCH_CALLS.get(("*", method))
        return None


def _dotted(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_dotted(node.value)}.{node.attr.value}"
    return ""


def _workflow_of(decorators: Sequence[cst.Decorator], default: str, *, class_: bool) -> tuple[str | None, str | None]:
    """(engine, workflow type) a def or class declares by its decorator, (None, None) when none does.

    ``@workflow.defn`` (Temporal, classes; default: the class name), ``@DBOS.workflow`` (default: the
    function's name) and the journal's ``@workflow`` (default: the function's name); the name is the
    ``name=`` keyword (or the journal's first positional argument) when it is a string literal."""
    for decorator in decorators:
        expression = decorator.decorator
        call = expression if isinstance(expression, cst.Call) else None
        target = _dotted(call.func if call is not None else expression)
        if target in ("workflow.defn", "temporalio.workflow.defn") and class_:
            engine = "temporal"
        elif target == "DBOS.workflow" and not class_:
            engine = "dbos"
        elif target in ("workflow", "replaytest.journal.workflow", "journal.workflow") and not class_:
            engine = "journal"
        else:
            continue
        name: str | None = default
        if call is not None:
            for index, argument in enumerate(call.args):
                is_name = (argument.keyword is not None and argument.keyword.value == "name") or (
                    argument.keyword is None and index == 0 and engine == "journal"
                )
                if is_name:
                    value = argument.value
                    literal = value.evaluated_value if isinstance(value, cst.SimpleString) else None
                    name = literal if isinstance(literal, str) else None
        return engine, name
    return None, None


def attach_patches(
    impacts: list[WorkflowImpact], results: Sequence[ReplayResult], files: Sequence[Path]
) -> list[WorkflowImpact]:
    """Fill ``WorkflowImpact.patches`` for every patch call in ``files`` from the patch decisions of
    ``results`` (one replay per history, in file order). A workflow type with patches but no divergence
    group gets a ``WorkflowImpact`` of its own; calls that cannot be tied to a type go to one for
    ``UNKNOWN_WORKFLOW_TYPE`` as notes. Returns ``impacts`` (changed in place), new ones appended."""
    calls, file_notes = find_patch_calls(files)
    by_type = {impact.workflow_type: impact for impact in impacts}

    def impact_for(workflow_type: str, engine: str) -> WorkflowImpact:
        impact = by_type.get(workflow_type)
        if impact is None:
            impact = by_type[workflow_type] = WorkflowImpact(workflow_type=workflow_type, engine=engine)
            impacts.append(impact)
        return impact

    # Which workflow types made decisions at each call: a replay that reached the call names its type.
    reached: dict[int, dict[str, list[tuple[ReplayResult, PatchDecision]]]] = {}
    for result in results:
        for decision in result.patch_decisions:
            call_index = _call_at(calls, decision, result)
            if call_index is not None:
                reached.setdefault(call_index, {}).setdefault(result.workflow_type, []).append((result, decision))
    for note in file_notes:
        impact_for(UNKNOWN_WORKFLOW_TYPE, "").notes.append(note)
    for index, call in enumerate(calls):
        where = f"{call.path}:{call.line}"
        types = sorted(reached.get(index, {}))
        if call.workflow_type is not None and call.workflow_type not in types:
            types.append(call.workflow_type)
        if call.patch_id is None:
            owner = impact_for(types[0], call.engine) if types else impact_for(UNKNOWN_WORKFLOW_TYPE, call.engine)
            owner.notes.append(
                f"{where}: {call.text} has no string literal id: which runs need it was not checked "
                f"(write the id as a literal)"
            )
            continue
        if not types:
            impact_for(UNKNOWN_WORKFLOW_TYPE, call.engine).notes.append(
                f"{where}: {call.text} is in no decorated workflow and no replayed history reached it: its "
                f"workflow type, and so its retirement, was not checked"
            )
            continue
        for workflow_type in types:
            impact = impact_for(workflow_type, call.engine)
            impact.patches.append(_use(call, workflow_type, reached.get(index, {}).get(workflow_type, []), results))
            _note_unchecked(impact, call, workflow_type, results)
    # A history that could not even be read names no workflow type: it may be a run of any of them.
    unread = [result for result in results if result.status == "error" and result.workflow_type in ("", "?")]
    if unread:
        for impact in impacts:
            if impact.patches:
                impact.notes.append(
                    f"{len(unread)} history(ies) could not be read ({unread[0].history_path}: {unread[0].error}); "
                    "their workflow type is unknown and the patch verdicts do not count them"
                )
    return impacts


def _call_at(calls: Sequence[PatchSite], decision: PatchDecision, result: ReplayResult) -> int | None:
    """The index of the call a decision was made at: by its source line, else (no line recorded) the
    only call with that id and the run's workflow type."""
    if decision.source is not None:
        path = Path(decision.source.path).resolve()
        for index, call in enumerate(calls):
            if call.patch_id == decision.patch_id and call.covers(path, decision.source.line):
                return index
        return None
    matching = [
        index
        for index, call in enumerate(calls)
        if call.patch_id == decision.patch_id and call.workflow_type in (result.workflow_type, None)
    ]
    return matching[0] if len(matching) == 1 else None


def _use(
    call: PatchSite, workflow_type: str, decisions: list[tuple[ReplayResult, PatchDecision]], results: Sequence[ReplayResult]
) -> PatchUse:
    """A ``PatchUse`` from the decisions made at ``call``: a run is ``needed_by`` when it is in flight and
    any of its decisions there took the old branch, ``marked_by`` when one consumed the marker."""
    order = {id(result): index for index, result in enumerate(results)}
    needed: dict[int, ReplayResult] = {}
    marked: dict[int, ReplayResult] = {}
    replayed_old: dict[int, ReplayResult] = {}
    for result, decision in decisions:
        if decision.taken:
            marked.setdefault(id(result), result)
        elif call.deprecated:  # deprecate_patch has no old branch to need
            continue
        elif result.in_flight:
            needed.setdefault(id(result), result)
        elif result.status in ("passed", "diverged"):
            replayed_old.setdefault(id(result), result)
    use = PatchUse(
        patch_id=call.patch_id or "",
        engine=call.engine,
        path=call.path,
        line=call.line,
        deprecated=call.deprecated,
        needed_by=sorted(needed.values(), key=lambda result: _age(result, order)),
        marked_by=sorted(marked.values(), key=lambda result: order.get(id(result), 0)),
        replayed_old_by=sorted(replayed_old.values(), key=lambda result: order.get(id(result), 0)),
    )
    return use


def _age(result: ReplayResult, order: dict[int, int]) -> tuple[int, str, int]:
    """Oldest first: runs with a recorded start time by it, then those without in file order."""
    started = result.run_started_at
    return (0, started, 0) if started is not None else (1, "", order.get(id(result), 0))


def _note_unchecked(impact: WorkflowImpact, call: PatchSite, workflow_type: str, results: Sequence[ReplayResult]) -> None:
    """Say when the verdict of ``call`` rests on less than every history of its type."""
    of_type = [result for result in results if result.workflow_type == workflow_type]
    where = f"{call.path}:{call.line}"
    if not of_type:
        impact.notes.append(
            f"{where}: no history of workflow type {workflow_type!r} was replayed: the verdict on patch "
            f"{call.patch_id!r} rests on no run"
        )
        return
    unread = [result for result in of_type if result.status in ("error", "stale")]
    if unread:
        impact.notes.append(
            f"{where}: {len(unread)} history(ies) of workflow type {workflow_type!r} could not be replayed "
            f"({unread[0].history_path}: {unread[0].error}); the verdict on patch {call.patch_id!r} does not count them"
        )
    unknown = [result for result in of_type if result.in_flight is None and result.status not in ("error", "stale")]
    if unknown:
        impact.notes.append(
            f"{where}: {len(unknown)} run(s) of workflow type {workflow_type!r} have no known run status "
            f"({unknown[0].history_path}); whether they need patch {call.patch_id!r} was not counted"
        )

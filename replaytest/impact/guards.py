"""Version guards for a deploy-impact report: from the code at the base revision and the code now, the
``if <patched>: <new> else: <old>`` that keeps recorded runs on their old path; patch ids; applying.

- ``default_base(root)``: the revision ``<old>`` comes from by default (the merge base of HEAD with the
  default branch, as ``check --diff-base`` compares against);
- ``attach_guards(impacts, results, …)``: a guard (or a ``guard_note`` saying why there is none) for every
  group, then verification by replay (``impact.verify``);
- ``guards_diff(impacts)`` / ``apply_guards(impacts)``: the verified guards as one ``git apply``-able patch,
  or written into the files.

How a guard is found: the function enclosing the group's source line, in the current file and in the file
at the base revision (``git show REV:path``), is diffed statement by statement (libcst). A compound
statement whose header is the same on both sides (an ``if`` with the same test, a ``for`` over the same
iterable) is diffed inside, suite by suite, so a changed ``else:`` body is guarded alone. A block deleted
in one place and inserted in another of the same suite (a reorder) is one change. The group's change is
the changed block at its source line, else the one naming its command. The guard replaces that block:
``if <patched>: <new block> else: <old block>``; a pure insertion has no ``else``, a pure removal keeps the
old block under ``if not <patched>:``. Every guard of one file is applied in one pass over one tree, so
several guards compose and the file keeps its formatting (``module.code``).
"""

from __future__ import annotations

import difflib
import re
import subprocess
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from replaytest.fileio import read_regular
from replaytest.impact.guard_imports import carry_imports
from replaytest.impact.model import GUARD_ENGINES, Guard, ImpactGroup, WorkflowImpact
from replaytest.replay.divergence import ReplayResult
from replaytest.replay.report import display_path

# The engine's own advice when it has no patch API (LangGraph's functional API), shown instead of a guard.
LANGGRAPH_GUIDANCE = (
    "LangGraph's functional API has no patch marker: stamp a version into the thread's input (or state) when a "
    "thread starts, and branch on it in the entrypoint, so threads started before the change keep the old path"
)
# AWS Lambda durable functions have no patch API either; what keeps an execution on its old code is the
# function version it was invoked on (Lambda replays an execution on the version it started on).
AWS_DURABLE_GUIDANCE = (
    "AWS durable functions have no patch API: the executions named here need the old code. Lambda replays an "
    "execution on the function version it started on when it was invoked by a qualified ARN (a published "
    "version, or an alias resolved to one), so publish this change as a new version and leave them on theirs; "
    "an execution started on $LATEST (the history's code_version) replays whatever $LATEST is after the "
    "deploy, this change included, so let those finish before deploying to $LATEST, or branch on an input "
    "set when the execution started"
)
# DBOS recovers a pending workflow only under its own application version; patching lets one version
# serve runs started before and after a change (dbos/_dbos_config.py, ``enable_patching``).
DBOS_GUARD_NOTE = (
    "DBOS recovers a pending run only on its own application version: for this guard to reach runs started "
    "before the deploy, keep one application version across deploys (application_version in the DBOS config); "
    "dbos releases whose DBOS.patch still requires it need enable_patching=True instead, which pins the version "
    "to PATCHING_ENABLED"
)
# Calls whose first argument names the command they issue (Temporal's activity and child-workflow starts).
_NAMED_BY_FIRST_ARGUMENT = frozenset(
    {"execute_activity", "start_activity", "execute_local_activity", "start_local_activity",
     "execute_child_workflow", "start_child_workflow", "execute_activity_method", "start_activity_method"}
)
_EXISTING_PATCH_ID = re.compile(r"""\b(?:patched|patch|patch_async|deprecate_patch)\(\s*(?:r|u)?(["'])(.+?)\1""")


class GuardSetupError(Exception):
    """No guard can be looked for: git is missing, or the base revision does not exist."""


# --- git --------------------------------------------------------------------------------------------


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=False)
    except OSError as error:
        raise GuardSetupError(f"version guards need git to read the code at the base revision: {error}") from error


def git_toplevel(root: Path) -> Path:
    run = _git(root, "rev-parse", "--show-toplevel")
    if run.returncode != 0:
        where = display_path(root)
        where = "the current folder" if where == "." else where
        raise GuardSetupError(f"{where} is not in a git repository, and version guards take the old code from git")
    return Path(run.stdout.strip())


# What a shallow clone (a CI checkout's default) is told when its history cannot give the base revision.
SHALLOW_ADVICE = "fetch more history (git fetch --unshallow) or pass --base REV"


def _shallow(root: Path) -> bool:
    run = _git(root, "rev-parse", "--is-shallow-repository")
    return run.returncode == 0 and run.stdout.strip() == "true"


def _what_to_do(root: Path, problem: str) -> str:
    """``problem`` and what to do about it: pass --base, or, in a shallow clone (its history cut off, where
    the problem may only be that), fetch more history first."""
    return f"{problem}: this is a shallow clone: {SHALLOW_ADVICE}" if _shallow(root) else f"{problem}: pass --base REV"


def default_base(root: Path) -> str:
    """The merge base of HEAD with the default branch (``origin/HEAD``, else ``main``, ``master``,
    ``origin/main``, ``origin/master``):
    the code the deployed runs were recorded with, as far as a branch can tell. On the default branch
    itself that is HEAD. ``GuardSetupError`` (exit 2 at the command line with --base, --diff or --fix) when
    there is none, and in a shallow clone when it is HEAD: there HEAD is all the history there is, whatever
    the runs were recorded with (``--base HEAD`` says HEAD is meant)."""
    git_toplevel(root)
    branch = None
    remote = _git(root, "symbolic-ref", "--quiet", "--short", "refs/remotes/origin/HEAD")
    if remote.returncode == 0 and remote.stdout.strip():
        branch = remote.stdout.strip()
    else:
        # A CI checkout often has the remote branch only (no local main, no origin/HEAD).
        for name in ("main", "master", "origin/main", "origin/master"):
            ref = f"refs/remotes/{name}" if name.startswith("origin/") else f"refs/heads/{name}"
            if _git(root, "rev-parse", "--verify", "--quiet", ref).returncode == 0:
                branch = name
                break
    if branch is None:
        raise GuardSetupError(_what_to_do(root, (
            "no default branch to take the base revision from (neither origin/HEAD, main, master, origin/main nor "
            "origin/master)")))
    merge_base = _git(root, "merge-base", "HEAD", branch)
    if merge_base.returncode != 0:
        why = f" ({merge_base.stderr.strip()})" if merge_base.stderr.strip() else ""
        raise GuardSetupError(_what_to_do(root, f"no merge base of HEAD and {branch}{why}"))
    base = merge_base.stdout.strip()
    if _shallow(root) and base == _git(root, "rev-parse", "HEAD").stdout.strip():
        raise GuardSetupError(
            f"the base revision (the merge base of HEAD and {branch}) is HEAD itself, {base[:12]}, in a shallow clone, "
            f"so the code the runs were recorded with is not in it: {SHALLOW_ADVICE} (--base HEAD if HEAD is meant)")
    return base


def resolve_revision(root: Path, rev: str) -> str:
    """``rev`` as a commit id; ``GuardSetupError`` naming it when git does not know it."""
    run = _git(root, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    if run.returncode != 0:
        git_toplevel(root)
        message = f"--base {rev}: no such revision in {root}"
        raise GuardSetupError(f"{message}: this is a shallow clone: fetch more history (git fetch --unshallow)"
                              if _shallow(root) else message)
    return run.stdout.strip()


def file_at_revision(root: Path, rev: str, path: Path) -> str | None:
    """The text of ``path`` at ``rev``; None when the file did not exist there."""
    top = git_toplevel(root)
    try:
        relative = path.resolve().relative_to(top.resolve()).as_posix()
    except ValueError:
        return None
    run = _git(top, "show", f"{rev}:{relative}")
    return run.stdout if run.returncode == 0 else None


# --- statement-level diff ---------------------------------------------------------------------------


@dataclass(eq=False)
class _Change:
    """One changed block: ``new`` replaces ``container.body[start:end]`` of the current tree; ``old`` is
    what the base revision had there. Line ranges are 1-based and inclusive."""

    container: cst.IndentedBlock
    start: int
    end: int
    new: tuple[cst.BaseStatement, ...]
    old: tuple[cst.BaseStatement, ...]
    new_range: tuple[int, int] | None
    old_range: tuple[int, int] | None
    insert_line: int  # where the block is (or, for a pure removal, where the old block goes back)

    def same_block(self, other: _Change) -> bool:
        return self.container is other.container and (self.start, self.end) == (other.start, other.end)


class _Source:
    """A parsed file and the positions of its nodes."""

    def __init__(self, text: str) -> None:
        wrapper = MetadataWrapper(cst.parse_module(text))
        self.module = wrapper.module
        self.positions = wrapper.resolve(PositionProvider)
        self.text = text

    def lines(self, node: cst.CSTNode) -> tuple[int, int]:
        where = self.positions[node]
        return where.start.line, where.end.line

    def code(self, statement: cst.BaseStatement) -> str:
        """The statement's code without the comments and blank lines above it (they do not make a change)."""
        return self.module.code_for_node(statement.with_changes(leading_lines=()))

    def functions(self) -> list[tuple[str, cst.FunctionDef]]:
        """Every function with its qualified name (``ShipOrder.run``, ``outer.<locals>.inner``)."""
        found: list[tuple[str, cst.FunctionDef]] = []
        scope: list[str] = []

        class Finder(cst.CSTVisitor):
            def visit_ClassDef(self, node: cst.ClassDef) -> None:
                scope.append(node.name.value)

            def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
                scope.pop()

            def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
                found.append((".".join([*scope, node.name.value]), node))
                scope.extend((node.name.value, "<locals>"))

            def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
                del scope[-2:]

        self.module.visit(Finder())
        return found

    def named(self, qualname: str) -> list[cst.FunctionDef]:
        return [node for name, node in self.functions() if name == qualname]

    def function_at(self, line: int, name: str | None) -> tuple[str, cst.FunctionDef] | None:
        """The innermost function named ``name`` (any, if None) whose lines hold ``line``, with its
        qualified name; else the one function of that name in the file."""
        best: tuple[str, cst.FunctionDef] | None = None
        every = self.functions()
        for qualname, node in every:
            first, last = self.lines(node)
            if first <= line <= last and (name is None or name in (qualname, node.name.value)):
                if best is None or self.lines(best[1])[0] <= first:
                    best = (qualname, node)
        if best is None and name is not None:
            # A divergence names the function as the engine reports it: a bare name (journal, DBOS) or a
            # qualified one (Temporal's ``Workflow.run``).
            same = [(qualname, node) for qualname, node in every if name in (qualname, node.name.value)]
            best = same[0] if len(same) == 1 else None
        return best


class _BlankSuites(cst.CSTTransformer):
    def leave_IndentedBlock(self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock) -> cst.IndentedBlock:
        return cst.IndentedBlock(body=[cst.SimpleStatementLine([cst.Pass()])])


class _OuterSuites(cst.CSTVisitor):
    def __init__(self) -> None:
        self.suites: list[cst.IndentedBlock] = []
        self._depth = 0

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> bool:
        if self._depth == 0:
            self.suites.append(node)
        self._depth += 1
        return True

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock) -> None:
        self._depth -= 1


def _header_and_suites(source: _Source, statement: cst.BaseStatement) -> tuple[str, list[cst.IndentedBlock]] | None:
    """A compound statement's code with every suite blanked (its header: ``if``/``elif`` tests, loop targets,
    ``with`` items, handlers), and its outermost suites in order; None for a simple statement."""
    if not isinstance(statement, cst.BaseCompoundStatement):
        return None
    collector = _OuterSuites()
    statement.visit(collector)
    if not collector.suites:
        return None
    blanked = statement.with_changes(leading_lines=()).visit(_BlankSuites())
    return source.module.code_for_node(blanked), collector.suites  # type: ignore[arg-type]


def _merge_moves(opcodes: Sequence[tuple[str, int, int, int, int]], old: list[str], new: list[str]) -> list[tuple[str, int, int, int, int]]:
    """Join changed blocks of one suite when a statement deleted in one reappears in another (a reorder):
    the statements between them move too, so they are one change."""
    merged = list(opcodes)
    changed = True
    while changed:
        changed = False
        for index in range(len(merged) - 1):
            first, second = merged[index], merged[index + 1]
            first_old, first_new = set(old[first[1]:first[2]]), set(new[first[3]:first[4]])
            second_old, second_new = set(old[second[1]:second[2]]), set(new[second[3]:second[4]])
            if first_old & second_new or first_new & second_old:
                merged[index:index + 2] = [("replace", first[1], second[2], first[3], second[4])]
                changed = True
                break
    return merged


def _diff_suites(current: _Source, base: _Source, now: cst.IndentedBlock, then: cst.IndentedBlock) -> list[_Change]:
    new_code = [current.code(statement) for statement in now.body]
    old_code = [base.code(statement) for statement in then.body]
    opcodes = [op for op in difflib.SequenceMatcher(a=old_code, b=new_code, autojunk=False).get_opcodes() if op[0] != "equal"]
    changes: list[_Change] = []
    for _tag, old_start, old_end, new_start, new_end in _merge_moves(opcodes, old_code, new_code):
        if old_end - old_start == 1 and new_end - new_start == 1:
            inner = _diff_compound(current, base, now.body[new_start], then.body[old_start])
            if inner is not None:
                changes.extend(inner)
                continue
        changes.append(_change(current, base, now, then, old_start, old_end, new_start, new_end))
    return changes


def _diff_compound(current: _Source, base: _Source, now: cst.BaseStatement, then: cst.BaseStatement) -> list[_Change] | None:
    """The changes inside two compound statements with the same header, suite by suite; None otherwise."""
    now_parts, then_parts = _header_and_suites(current, now), _header_and_suites(base, then)
    if now_parts is None or then_parts is None or type(now) is not type(then):
        return None
    if now_parts[0] != then_parts[0] or len(now_parts[1]) != len(then_parts[1]):
        return None
    changes: list[_Change] = []
    for now_suite, then_suite in zip(now_parts[1], then_parts[1]):
        changes.extend(_diff_suites(current, base, now_suite, then_suite))
    return changes


def _change(current: _Source, base: _Source, now: cst.IndentedBlock, then: cst.IndentedBlock,
            old_start: int, old_end: int, new_start: int, new_end: int) -> _Change:
    new = tuple(now.body[new_start:new_end])
    old = tuple(then.body[old_start:old_end])
    new_range = (current.lines(new[0])[0], current.lines(new[-1])[1]) if new else None
    old_range = (base.lines(old[0])[0], base.lines(old[-1])[1]) if old else None
    if new_range is not None:
        insert_line = new_range[0]
    elif new_start < len(now.body):
        insert_line = current.lines(now.body[new_start])[0]
    else:
        insert_line = current.lines(now.body[-1])[1] + 1 if now.body else current.lines(now)[0]
    return _Change(now, new_start, new_end, new, old, new_range, old_range, insert_line)


# --- command names and patch ids --------------------------------------------------------------------


def _dotted(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        head = _dotted(node.value)
        return f"{head}.{node.attr.value}" if head else None
    return None


def _call_names(statements: Iterable[cst.BaseStatement]) -> list[str]:
    """The name of the command each call in ``statements`` would issue, in source order: its first argument
    when that is a string (``ctx.step("charge card", …)``) or, for Temporal's activity and child starts, a
    function; else the called name's last part (a DBOS step called directly)."""
    names: list[str] = []

    class Calls(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            callee = _dotted(node.func) or ""
            method = callee.rpartition(".")[2]
            first = node.args[0].value if node.args and node.args[0].keyword is None else None
            if isinstance(first, cst.SimpleString):
                value = first.evaluated_value
                names.append(value if isinstance(value, str) else method)
            elif first is not None and method in _NAMED_BY_FIRST_ARGUMENT and _dotted(first):
                names.append((_dotted(first) or "").rpartition(".")[2])
            elif method:
                names.append(method)

    for statement in statements:
        statement.visit(Calls())
    return names


def _group_names(group: ImpactGroup) -> set[str]:
    names = {view.name for view in group.recorded if view is not None and view.name}
    if group.issued is not None and group.issued.name:
        names.add(group.issued.name)
    if group.key.command is not None:
        names.add(group.key.command[1])
    return names


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "change"


def existing_patch_ids(text: str) -> set[str]:
    """Every id in a ``patched(…)``/``patch(…)``/``patch_async(…)``/``deprecate_patch(…)`` string literal."""
    return {match.group(2) for match in _EXISTING_PATCH_ID.finditer(text)}


# Engine calls that name no step of their own (the id names the step a change is about, never the API).
_ENGINE_VERBS = frozenset({
    "execute_activity", "start_activity", "execute_local_activity", "start_local_activity", "execute_child_workflow",
    "start_child_workflow", "execute_activity_method", "start_activity_method", "wait_condition", "patched",
    "deprecate_patch", "patch", "patch_async", "recv", "recv_async", "send", "send_async", "set_event",
    "get_event", "start_workflow", "start_workflow_async", "step", "run_step", "run_tx_step", "await", "gather",
})
_TIMER_VERBS = frozenset({"sleep", "sleep_async", "timer", "new_timer"})


def workflow_slug(workflow_type: str) -> str:
    """``OrderWorkflow`` → ``order``, ``resolve_dispute`` → ``resolve-dispute``: the workflow part of a patch id."""
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "-", workflow_type)
    slug = _slug(words)
    trimmed = re.sub(r"-?workflow$", "", slug)
    return trimmed or slug or "workflow"


def step_name(change_names: Sequence[str], group_names: set[str]) -> str:
    """The step a change is about: the first of its commands the runs break at, else its first named step;
    a timer is ``timer``; an engine call naming nothing is passed over."""
    named = [name for name in change_names if name not in _ENGINE_VERBS]
    chosen = next((name for name in named if name in group_names), named[0] if named else "change")
    return "timer" if chosen in _TIMER_VERBS else chosen


def patch_id_for(workflow_type: str, change_names: Sequence[str], group_names: set[str], taken: set[str]) -> str:
    """``<workflow>-<step>`` (``order-fraud-check``): the same change gets the same id on every run; a
    ``-2``, ``-3`` … suffix keeps it apart from ``taken`` (ids in the file and of other guards)."""
    stem = f"{workflow_slug(workflow_type)}-{_slug(step_name(change_names, group_names))}"
    candidate, number = stem, 2
    while candidate in taken:
        candidate, number = f"{stem}-{number}", number + 1
    return candidate


# --- the guard expression per engine ----------------------------------------------------------------


def _import_alias(module: cst.Module, package: str, name: str) -> str | None:
    """How ``module`` spells ``package.name`` (``from temporalio import workflow as wf`` → ``wf``)."""
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, cst.ImportFrom) and not small.relative and small.module is not None:
                if _dotted(small.module) == package and not isinstance(small.names, cst.ImportStar):
                    for alias in small.names:
                        if _dotted(alias.name) == name:
                            return alias.asname.name.value if alias.asname else name  # type: ignore[union-attr]
            if isinstance(small, cst.Import):
                for alias in small.names:
                    dotted = _dotted(alias.name)
                    if dotted == f"{package}.{name}":
                        return alias.asname.name.value if alias.asname else dotted  # type: ignore[union-attr]
                    if dotted == package:
                        head = alias.asname.name.value if alias.asname else dotted  # type: ignore[union-attr]
                        return f"{head}.{name}"
    return None


def _context_name(function: cst.FunctionDef) -> str:
    params = [param.name.value for param in function.params.params]
    if params and params[0] in ("self", "cls"):
        params = params[1:]
    return params[0] if params else "ctx"


def guard_expression(engine: str, patch_id: str, module: cst.Module, function: cst.FunctionDef) -> str:
    """The code that asks the engine whether this run takes the new path."""
    quoted = '"' + patch_id.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if engine == "temporal":
        return f"{_import_alias(module, 'temporalio', 'workflow') or 'workflow'}.patched({quoted})"
    if engine == "dbos":
        dbos = _import_alias(module, "dbos", "DBOS") or "DBOS"
        if function.asynchronous is not None:
            return f"await {dbos}.patch_async({quoted})"
        return f"{dbos}.patch({quoted})"
    return f"{_context_name(function)}.patched({quoted})"


def _guard_statement(change: _Change, test: str) -> cst.If:
    """``if <test>: <new> else: <old>`` (no else for an insertion; ``if not <test>: <old>`` for a removal).
    The comments above the block stay above the guard."""
    if change.new:
        leading = _leading_lines(change.new[0])
        new = (change.new[0].with_changes(leading_lines=()), *change.new[1:])
        orelse = None
        if change.old:
            old = (change.old[0].with_changes(leading_lines=_comments_only(_leading_lines(change.old[0]))), *change.old[1:])
            orelse = cst.Else(body=cst.IndentedBlock(body=old))
        return cst.If(test=cst.parse_expression(test), body=cst.IndentedBlock(body=new), orelse=orelse,
                      leading_lines=leading)
    old = (change.old[0].with_changes(leading_lines=_comments_only(_leading_lines(change.old[0]))), *change.old[1:])
    return cst.If(test=cst.parse_expression(f"not {test}"), body=cst.IndentedBlock(body=old))


def _leading_lines(statement: cst.BaseStatement) -> Sequence[cst.EmptyLine]:
    # Every statement node (simple line or compound) has them; BaseStatement does not declare them.
    lines: Sequence[cst.EmptyLine] = getattr(statement, "leading_lines", ())
    return lines


def _comments_only(lines: Sequence[cst.EmptyLine]) -> tuple[cst.EmptyLine, ...]:
    kept = list(lines)
    while kept and kept[0].comment is None:
        kept.pop(0)
    return tuple(kept)


# --- composing guards of one file -------------------------------------------------------------------


@dataclass(eq=False)
class GuardEdit:
    """What a ``Guard`` changes in its file, kept so that every guard of one file applies in one pass."""

    file: _FileGuards
    change: _Change
    statement: cst.If


@dataclass(eq=False)
class RenameEdit:
    """A renamed activity or step keeps its recorded name: ``function``'s decorator at ``index`` becomes
    ``decorator`` (the same call with ``name="<recorded name>"``)."""

    file: _FileGuards
    function: cst.FunctionDef
    index: int
    decorator: cst.Decorator


class _ApplyEdits(cst.CSTTransformer):
    def __init__(self, edits: Sequence[GuardEdit | RenameEdit]) -> None:
        self.by_container: dict[int, list[GuardEdit]] = {}
        self.by_function: dict[int, RenameEdit] = {}
        for edit in edits:
            if isinstance(edit, RenameEdit):
                self.by_function[id(edit.function)] = edit
            else:
                self.by_container.setdefault(id(edit.change.container), []).append(edit)

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef) -> cst.FunctionDef:
        edit = self.by_function.get(id(original_node))
        if edit is None:
            return updated_node
        decorators = list(updated_node.decorators)
        decorators[edit.index] = edit.decorator
        return updated_node.with_changes(decorators=decorators)

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock) -> cst.IndentedBlock:
        edits = self.by_container.get(id(original_node))
        if not edits:
            return updated_node
        body = list(updated_node.body)
        for edit in sorted(edits, key=lambda e: e.change.start, reverse=True):
            body[edit.change.start:edit.change.end] = [edit.statement]
        return updated_node.with_changes(body=body)


@dataclass(eq=False)
class _FileGuards:
    """One current file, its text at the base revision, and the guards found in it so far."""

    path: Path
    display: str  # the path in diffs, relative to the repository root
    current: _Source
    base: _Source | None
    taken: set[str] = field(default_factory=set)
    guards: dict[int, Guard | str] = field(default_factory=dict)  # by id() of the change; a str says why none
    diffs: dict[str, _FunctionDiff] = field(default_factory=dict)  # by the function's qualified name

    def compose(self, edits: Sequence[GuardEdit | RenameEdit]) -> str:
        # The old branch may use names the change stopped importing: carry the base revision's imports back.
        guarded = self.current.module.visit(_ApplyEdits(edits))
        return carry_imports(guarded, None if self.base is None else self.base.module).code

    def unified_diff(self, text: str) -> str:
        return "".join(difflib.unified_diff(
            self.current.text.splitlines(keepends=True), text.splitlines(keepends=True),
            fromfile=f"a/{self.display}", tofile=f"b/{self.display}",
        ))


def _compose(guards: Iterable[Guard]) -> list[tuple[_FileGuards, str]]:
    by_file: dict[int, tuple[_FileGuards, list[GuardEdit | RenameEdit]]] = {}
    for guard in guards:
        edit = guard.edit
        if not isinstance(edit, (GuardEdit, RenameEdit)):
            continue
        entry = by_file.setdefault(id(edit.file), (edit.file, []))
        if all(known is not edit for known in entry[1]):
            entry[1].append(edit)
    return [(file, file.compose(edits)) for file, edits in by_file.values()]


def compose_guards(guards: Iterable[Guard]) -> dict[Path, str]:
    """Each file's text with all of ``guards`` that apply to it, applied together in one pass."""
    return {file.path: text for file, text in _compose(guards)}


# --- synthesis --------------------------------------------------------------------------------------


class _Synthesizer:
    def __init__(self, root: Path, base_rev: str) -> None:
        self.root = root
        self.base_rev = base_rev
        self.files: dict[Path, _FileGuards | str] = {}  # a str says why the file cannot be guarded

    def _file(self, path: Path) -> _FileGuards | str:
        resolved = path.resolve()
        if resolved not in self.files:
            self.files[resolved] = self._load(resolved)
        return self.files[resolved]

    def _load(self, path: Path) -> _FileGuards | str:
        top = git_toplevel(self.root).resolve()
        if not path.is_relative_to(self.root.resolve()) or not path.is_relative_to(top):
            return f"{path} is outside the project ({self.root}): replaytest guards only the project's own code"
        try:
            text = read_regular(path).decode("utf-8")
            current = _Source(text)
        except (OSError, UnicodeDecodeError, cst.ParserSyntaxError) as error:
            return f"{path} cannot be read or parsed: {error}"
        base_text = file_at_revision(self.root, self.base_rev, path)
        base = None
        if base_text is not None:
            try:
                base = _Source(base_text)
            except cst.ParserSyntaxError as error:
                return f"{path} at {self.base_rev[:12]} does not parse: {error}"
        display = path.relative_to(top).as_posix()
        return _FileGuards(path, display, current, base, taken=existing_patch_ids(text))

    def _function_diff(self, file: _FileGuards, qualname: str, function: cst.FunctionDef,
                       old_function: cst.FunctionDef) -> _FunctionDiff:
        """The function's changes since the base, computed once: every group of one change then gets the same
        ``_Change`` and so the same guard (one change, one id)."""
        known = file.diffs.get(qualname)
        if known is None:
            now, then = function.body, old_function.body
            assert isinstance(now, cst.IndentedBlock) and isinstance(then, cst.IndentedBlock)
            changes = _diff_suites(file.current, file.base, now, then) if file.base is not None else []
            known = file.diffs[qualname] = _FunctionDiff(changes, _wider_changes(file, now, then) if changes else [])
        return known

    def guards(self, workflow_type: str, engine: str, group: ImpactGroup) -> list[Guard] | str:
        """The guards for ``group``, narrowest first (the changed block; then the span of every changed
        statement of the function; then its whole body), each shared with earlier groups of the same change,
        or why there is none. Verification takes the first that holds."""
        source = group.source
        if source is None:
            return "the divergence names no source line in the current code, so there is no block to guard"
        path = Path(source.path)
        path = path if path.is_absolute() else self.root / path
        file = self._file(path)
        if isinstance(file, str):
            return file
        where = f"{file.display}:{source.line}"
        if engine not in GUARD_ENGINES:
            return f"the {engine} engine has no version-guard API"
        found = file.current.function_at(source.line, source.function)
        if found is None:
            return f"no function {source.function or ''} encloses {where}: no block to guard".replace("  ", " ")
        qualname, function = found
        if file.base is None:
            return f"{file.display} did not exist at {self.base_rev[:12]}: there is no old code to keep recorded runs on"
        old_functions = file.base.named(qualname)
        if len(old_functions) != 1:
            why = "is new since" if not old_functions else "is defined more than once at"
            return f"{qualname} ({where}) {why} {self.base_rev[:12]}: there is no old code to keep recorded runs on"
        if not isinstance(function.body, cst.IndentedBlock) or not isinstance(old_functions[0].body, cst.IndentedBlock):
            return f"{qualname} ({where}) is a one-line function here or at {self.base_rev[:12]}: guard it by hand"
        diff = self._function_diff(file, qualname, function, old_functions[0])
        renamed = self._keep_name(engine, group, file)
        if not diff.changes:
            return (f"{qualname} is the same as at {self.base_rev[:12]}: the change these runs break at is outside it "
                    "(code it calls, configuration, or a dependency), so replaytest cannot write its guard")
        change = self._pick(diff.changes, source.line, _group_names(group))
        if change is None:
            return (f"change not found: {len(diff.changes)} changed blocks in {qualname} since {self.base_rev[:12]}, "
                    f"none at {where} or issuing the command these runs break at; guard it by hand")
        first = file.guards.get(id(change))
        if isinstance(first, str):
            return first
        patch_id = first.patch_id if first is not None else None
        if patch_id is None:
            names = _call_names(change.new) + _call_names(change.old)
            patch_id = patch_id_for(workflow_type, names, _group_names(group), file.taken)
            file.taken.add(patch_id)
        candidates: list[Guard] = []
        # The span and the whole body hold every change of the function, this one included.
        for level, candidate in enumerate((change, *diff.wider)):
            if any(isinstance(known.edit, GuardEdit) and known.edit.change.same_block(candidate) for known in candidates):
                continue
            guard = file.guards.get(id(candidate))
            if guard is None:
                guard = file.guards[id(candidate)] = self._write(file, engine, patch_id, qualname, function, candidate, where)
            if isinstance(guard, str):
                if level == 0:
                    return guard
                continue
            candidates.append(guard)
        # A rename keeps every run on one name: tried before any patch guard of the same change.
        return [renamed, *candidates] if renamed is not None else candidates

    def _keep_name(self, engine: str, group: ImpactGroup, file: _FileGuards) -> Guard | None:
        """For a renamed Temporal activity or DBOS step (the code now issues ``new`` where the runs recorded
        ``old``, and ``old`` is defined nowhere beside ``new``): the guard that gives ``new``'s definition its
        recorded name back through its decorator's ``name=``."""
        names = _renamed(group)
        decorators = _NAMING_DECORATORS.get(engine)
        if names is None or decorators is None:
            return None
        old, new = names
        folder = file.path.parent
        places = [file.path, *sorted(path for path in folder.glob("*.py") if path != file.path)][:_MAX_RENAME_FILES]
        found: tuple[_FileGuards, cst.FunctionDef, int] | None = None
        for path in places:
            other = self._file(path)
            if isinstance(other, str):
                continue
            defined = {node.name.value: node for _qualname, node in other.current.functions()}
            if old in defined:
                return None  # both are defined: a change of which one is called, not a rename
            if new in defined and found is None:
                index = _naming_decorator(defined[new], decorators)
                if index is not None:
                    found = (other, defined[new], index)
        if found is None:
            return None
        owner, function, index = found
        key = id(function)
        known = owner.guards.get(key)
        if isinstance(known, Guard):
            return known
        decorator = _named(function.decorators[index], old)
        edit = RenameEdit(owner, function, index, decorator)
        text = owner.compose([edit])
        first, last = owner.current.lines(function)
        guard = Guard(engine=engine, patch_id=old, path=owner.path, function=new, new_range=(first, last),
                      old_range=None, guarded_text=text, diff=owner.unified_diff(text), edit=edit, kind="keep-name")
        owner.guards[key] = guard
        return guard

    @staticmethod
    def _write(file: _FileGuards, engine: str, patch_id: str, qualname: str, function: cst.FunctionDef,
               change: _Change, where: str) -> Guard | str:
        test = guard_expression(engine, patch_id, file.current.module, function)
        edit = GuardEdit(file, change, _guard_statement(change, test))
        text = file.compose([edit])
        try:
            cst.parse_module(text)
        except cst.ParserSyntaxError as error:  # a bug in the synthesis: say so rather than offer it
            return f"the guard written for {where} does not parse ({error}); please report this as a replaytest bug"
        return Guard(engine=engine, patch_id=patch_id, path=file.path, function=qualname,
                     new_range=change.new_range, old_range=change.old_range, guarded_text=text,
                     diff=file.unified_diff(text), edit=edit)

    @staticmethod
    def _pick(changes: list[_Change], line: int, names: set[str]) -> _Change | None:
        for change in changes:
            if change.new_range is not None and change.new_range[0] <= line <= change.new_range[1]:
                return change
        naming = [c for c in changes if names & set(_call_names(c.new) + _call_names(c.old))]
        if naming:
            return naming[0]
        return changes[0] if len(changes) == 1 else None


# Decorators whose ``name=`` is the name an engine records an activity or step under (dotted endings).
_NAMING_DECORATORS: dict[str, tuple[str, ...]] = {
    "temporal": ("activity.defn",),
    "dbos": ("DBOS.step", "DBOS.transaction"),
}
_MAX_RENAME_FILES = 200


def _renamed(group: ImpactGroup) -> tuple[str, str] | None:
    """(recorded name, name now) when the group's runs recorded one command where the code now issues another
    of the same kind, both plain identifiers: the shape of a rename."""
    issued = group.issued
    if group.key.kind != "command-mismatch" or issued is None or not issued.name.isidentifier():
        return None
    olds = {view.name for view in group.recorded if view is not None and view.kind == issued.kind}
    if len(olds) != 1:
        return None
    [old] = olds
    return (old, issued.name) if old != issued.name and old.isidentifier() else None


def _naming_decorator(function: cst.FunctionDef, endings: tuple[str, ...]) -> int | None:
    """The index of ``function``'s engine decorator that sets no ``name=`` yet (None: none, or it already does)."""
    for index, decorator in enumerate(function.decorators):
        expression = decorator.decorator
        call = expression if isinstance(expression, cst.Call) else None
        dotted = _dotted(call.func if call is not None else expression) or ""
        if any(dotted == ending or dotted.endswith("." + ending) for ending in endings):
            if call is not None and any(arg.keyword is not None and arg.keyword.value == "name" for arg in call.args):
                return None
            return index
    return None


def _named(decorator: cst.Decorator, name: str) -> cst.Decorator:
    """The decorator called with ``name="<name>"`` (first, before its other arguments)."""
    expression = decorator.decorator
    argument = cst.Arg(keyword=cst.Name("name"), value=cst.SimpleString(_quoted(name)),
                       equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")))
    if isinstance(expression, cst.Call):
        others = list(expression.args)
        if others:
            argument = argument.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        return decorator.with_changes(decorator=expression.with_changes(args=[argument, *others]))
    return decorator.with_changes(decorator=cst.Call(func=expression, args=[argument]))


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


@dataclass(eq=False)
class _FunctionDiff:
    """One function's changes since the base revision (``changes``, narrowest blocks) and the wider blocks a
    guard may take when a narrow one does not verify (``wider``: the span from the first changed statement of
    the body to the last, then the whole body; each only where it differs from the one before)."""

    changes: list[_Change]
    wider: list[_Change]


def _wider_changes(file: _FileGuards, now: cst.IndentedBlock, then: cst.IndentedBlock) -> list[_Change]:
    current, base = file.current, file.base
    assert base is not None
    new_code = [current.code(statement) for statement in now.body]
    old_code = [base.code(statement) for statement in then.body]
    shortest = min(len(new_code), len(old_code))
    prefix = 0
    while prefix < shortest and new_code[prefix] == old_code[prefix]:
        prefix += 1
    suffix = 0
    while suffix < shortest - prefix and new_code[-1 - suffix] == old_code[-1 - suffix]:
        suffix += 1
    # The docstring stays the function's docstring: it is never put under a guard.
    first = 1 if prefix and _is_docstring(now.body[0]) else 0
    blocks = [(prefix, len(old_code) - suffix, prefix, len(new_code) - suffix), (first, len(old_code), first, len(new_code))]
    wider: list[_Change] = []
    for old_start, old_end, new_start, new_end in dict.fromkeys(blocks):
        if old_end > old_start or new_end > new_start:
            wider.append(_change(current, base, now, then, old_start, old_end, new_start, new_end))
    return wider


def _is_docstring(statement: cst.BaseStatement) -> bool:
    return (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1
            and isinstance(statement.body[0], cst.Expr) and isinstance(statement.body[0].value, cst.SimpleString))


def attach_guards(
    impacts: Sequence[WorkflowImpact],
    results: Sequence[ReplayResult],
    *,
    root: Path,
    base_rev: str | None,
    workflow_specs: Sequence[str],
    workflows_base: Path | None = None,
    verify: bool = True,
    timeout_s: float | None = None,
    reads: Collection[str] = (),
) -> None:
    """Fill every group's ``guard`` (groups broken by one change share one) or ``guard_note`` (why there is
    none: LangGraph's guidance, no base file, a function new since the base, change not found, an engine
    without guards), then replay every history of each workflow type against a temporary copy of the code
    with its guards applied (``impact.verify``; ``reads``: the files the replay of ``results`` read, which the
    copy takes too). ``base_rev`` None means ``default_base(root)``. ``GuardSetupError`` when git or the
    revision is missing."""
    rev = resolve_revision(root, base_rev) if base_rev else default_base(root)
    synthesizer = _Synthesizer(root, rev)
    for impact in impacts:
        if impact.engine == "langgraph":
            _langgraph_guidance(impact)
            continue
        if impact.engine == "aws_durable":
            _no_patch_guidance(impact, AWS_DURABLE_GUIDANCE, "executions")
            _aws_resume_guidance(impact)
            continue
        for group in impact.groups:
            outcome = synthesizer.guards(impact.workflow_type, impact.engine, group)
            if isinstance(outcome, list):
                group.guard, group.wider_guards = outcome[0], outcome[1:]
                if impact.engine == "dbos":
                    group.guard_note = DBOS_GUARD_NOTE
            else:
                group.guard_note = outcome
    if verify:
        from replaytest.impact.verify import verify_impacts

        verify_impacts(impacts, results, root=root, workflow_specs=workflow_specs,
                       workflows_base=workflows_base or root, timeout_s=timeout_s, reads=reads)


def _no_patch_guidance(impact: WorkflowImpact, guidance_text: str, runs: str) -> None:
    """For an engine without a patch API: its guidance, and the ``runs`` that need the old code (in-flight
    ones resume by replaying it; finished ones matter only if replayed again)."""

    def names(results: Iterable[ReplayResult]) -> list[str]:
        return list(dict.fromkeys(r.workflow_id or r.history_path.name for r in results))

    def guidance(in_flight: list[str], finished: list[str]) -> str:
        text = f"{guidance_text}; in-flight {runs} that need it: {', '.join(in_flight) or 'none'}"
        if finished:
            text += f"; finished {runs}: {', '.join(finished)}"
        return text

    for group in impact.groups:
        group.guard_note = guidance(names((*group.in_flight, *group.unknown_status)), names(group.finished))
    every_in_flight = names(r for group in impact.groups for r in (*group.in_flight, *group.unknown_status))
    impact.guidance = guidance(every_in_flight, names(r for group in impact.groups for r in group.finished))


def _aws_resume_guidance(impact: WorkflowImpact) -> None:
    """Add to the AWS guidance the in-flight executions that replay green but that the SDK's rehearsed resume
    refuses or sends down the new path: no guard in the code can keep those on the old path either."""
    from replaytest.impact.resume import resume_groups

    def names(path: str) -> list[str]:
        return list(dict.fromkeys(r.workflow_id or r.history_path.name for verdict, results in resume_groups(impact)
                                  if verdict.path == path for r in results))

    refused, new = names("breaks"), names("new")
    if refused:
        impact.guidance = (impact.guidance or "") + ("; in-flight executions the SDK refuses to resume on this code (they replay green, the "
                            f"rehearsed resume breaks): {', '.join(refused)}")
    if new:
        impact.guidance = (impact.guidance or "") + ("; in-flight executions that take the new path when they resume (the SDK rehearsed "
                            f"it; nothing in the code can keep them on the old one, only the function version "
                            f"they run on): {', '.join(new)}")


def _langgraph_guidance(impact: WorkflowImpact) -> None:
    """The engine's guidance, and the threads that need the old path: in-flight ones resume by replaying it;
    finished ones only when forked or replayed from a checkpoint."""

    def names(results: Iterable[ReplayResult]) -> list[str]:
        return list(dict.fromkeys(r.workflow_id or r.history_path.name for r in results))

    def guidance(in_flight: list[str], finished: list[str]) -> str:
        text = f"{LANGGRAPH_GUIDANCE}; in-flight threads that need it: {', '.join(in_flight) or 'none'}"
        if finished:
            text += f"; finished threads (for forks and replays from a checkpoint): {', '.join(finished)}"
        return text

    for group in impact.groups:
        group.guard_note = guidance(names((*group.in_flight, *group.unknown_status)), names(group.finished))
    every_in_flight = names(r for group in impact.groups for r in (*group.in_flight, *group.unknown_status))
    impact.guidance = guidance(every_in_flight, names(r for group in impact.groups for r in group.finished))


def verified_guards(impacts: Iterable[WorkflowImpact]) -> list[Guard]:
    """Each verified guard once, in report order."""
    seen: list[Guard] = []
    for impact in impacts:
        for group in impact.groups:
            guard = group.guard
            if guard is not None and guard.verification is not None and guard.verification.verified:
                if all(known is not guard for known in seen):
                    seen.append(guard)
    return seen


def guards_diff(impacts: Iterable[WorkflowImpact]) -> str:
    """The verified guards as one unified diff from the current files (``git apply``-able at the
    repository root); empty when no guard verified."""
    return "".join(file.unified_diff(text) for file, text in _compose(verified_guards(impacts)))


class GuardApplyError(Exception):
    """A guarded file changed since the guards were computed; nothing of it was written."""


def apply_guards(impacts: Sequence[WorkflowImpact]) -> list[Path]:
    """Write the verified guards into their files (each file at once, atomically: a temporary file then a
    rename; its mode kept) and return the files written. A file that changed since the guards were made is
    refused (``GuardApplyError``) before anything is written."""
    from replaytest.history.io import write_text_atomically

    composed = _compose(verified_guards(impacts))
    for file, _text in composed:
        try:
            now = read_regular(file.path).decode("utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise GuardApplyError(f"{file.path}: cannot read it again before writing the guard: {error}") from error
        if now != file.current.text:
            raise GuardApplyError(f"{file.path} changed since the guards were computed; run replaytest impact again")
    for file, text in composed:
        write_text_atomically(file.path, text)
    return [file.path for file, _text in composed]

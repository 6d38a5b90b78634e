"""Prompt versions on the journal runtime: a model-calling workflow with one completed run and one run
parked on a signal, replayed after each kind of edit (issue acceptance 2).

Each variant of the application is written as real modules (a prompts module and a workflow module
that uses its prompts directly and through a helper), imported, recorded or replayed — the same edit a
user makes to their code. Prompt versions are explicit here ("v1", "v2") so reports can be checked word
for word; content-derived versions are tested with the ``Prompt`` type below.
"""

from __future__ import annotations

import importlib
import importlib.util
import itertools
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from replaykit import record, replay

from replaytest.history import load_history
from replaytest.prompts import Prompt, prompt_manifest, uses_prompts

PROMPTS = '''
from replaytest.prompts import Prompt

DRAFTER = Prompt("drafter", "Draft a plan for: {{ticket}}", version="{drafter}")
WRITER = Prompt("writer", "Write the reply to: {{ticket}}", version="{writer}")
UNUSED = Prompt("unused", "No workflow uses this one", version="v1")
'''

WORKFLOW = '''
import {prompts} as prompts
from replaytest.journal import workflow


def call_model(text, temperature=0.0):
    return "model: " + text


def write_reply(ctx, ticket):
    # The prompt used after the wait is reached through this helper only.
    return ctx.model("write", call_model, prompts.WRITER.render(ticket=ticket), prompt=prompts.WRITER)


@workflow(name="agent")
def agent(ctx, ticket):
    plan = ctx.model("draft", call_model, prompts.DRAFTER.render(ticket=ticket), {temperature}, prompt=prompts.DRAFTER)
    approver = ctx.wait_signal("approve")
    return {{"plan": plan, "reply": write_reply(ctx, ticket), "approver": approver}}
'''

_COUNTER = itertools.count()


def _load(folder: Path, name: str, source: str) -> ModuleType:
    path = folder / f"{name}.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def app(folder: Path, drafter: str = "v1", writer: str = "v1", temperature: str = "0.0") -> Any:
    """One version of the application (fresh module names, so every variant is its own import)."""
    number = next(_COUNTER)
    prompts = f"agent_prompts_{number}"
    _load(folder, prompts, PROMPTS.format(drafter=drafter, writer=writer))
    return _load(folder, f"agent_workflow_{number}", WORKFLOW.format(prompts=prompts, temperature=temperature)).agent


@pytest.fixture()
def histories(tmp_path: Path) -> dict[str, Path]:
    original = app(tmp_path)
    done = record(tmp_path, original, "refund", name="completed", signals=[("approve", "ops")])
    waiting = record(tmp_path, original, "refund", name="waiting")
    return {"completed": done, "waiting": waiting}


def test_runs_record_the_manifest_of_prompts_their_workflow_can_use(histories: dict[str, Path]) -> None:
    waiting = load_history(histories["waiting"])
    assert waiting.status == "parked"
    # Both prompts, the one behind the helper too; the module's unused prompt is not among them.
    assert waiting.prompt_manifest == {"drafter": "v1", "writer": "v1"}
    assert load_history(histories["completed"]).prompt_manifest == {"drafter": "v1", "writer": "v1"}


def test_unchanged_code_passes_both_runs_without_warnings(histories: dict[str, Path], tmp_path: Path) -> None:
    current = app(tmp_path)
    for path in histories.values():
        result = replay(path, current)
        assert (result.status, result.warnings, result.notes) == ("passed", [], []), path.name


def test_bumped_prompt_before_the_wait_fails_the_waiting_run_and_warns_on_the_completed(
    histories: dict[str, Path], tmp_path: Path
) -> None:
    current = app(tmp_path, drafter="v2")
    waiting = replay(histories["waiting"], current)
    assert waiting.status == "diverged"
    assert waiting.divergence is not None and waiting.divergence.kind == "prompt-drift"
    assert waiting.divergence.position == 1
    assert "model 'draft' now uses prompt version v2 but the history recorded v1" in waiting.divergence.message
    completed = replay(histories["completed"], current)
    assert completed.status == "passed"
    assert [w.kind for w in completed.warnings][:1] == ["prompt-drift"]
    assert "prompt version v2 but the history recorded v1" in completed.warnings[0].message


def test_bumped_prompt_after_the_wait_fails_the_waiting_run_naming_it(histories: dict[str, Path], tmp_path: Path) -> None:
    current = app(tmp_path, writer="v2")
    waiting = replay(histories["waiting"], current)
    assert waiting.status == "diverged"
    assert waiting.divergence is not None and waiting.divergence.kind == "prompt-drift"
    assert "will use writer v2, started under v1" in waiting.divergence.message
    assert "drafter" not in waiting.divergence.message
    # The completed run passes; it did call the writer prompt, at v1, which its warning documents.
    completed = replay(histories["completed"], current)
    assert completed.status == "passed"
    assert [w.kind for w in completed.warnings] == ["prompt-drift"]
    assert "model 'write'" in completed.warnings[0].message


def test_pending_prompt_policy_warn_and_ignore(histories: dict[str, Path], tmp_path: Path) -> None:
    current = app(tmp_path, writer="v2")
    warned = replay(histories["waiting"], current, prompts_pending="warn")
    assert warned.status == "passed"
    assert [w.kind for w in warned.warnings] == ["prompt-drift"]
    assert "will use writer v2, started under v1" in warned.warnings[0].message
    ignored = replay(histories["waiting"], current, prompts_pending="ignore")
    assert (ignored.status, ignored.warnings) == ("passed", [])


def test_changed_argument_warns_and_fails_with_strict_args(histories: dict[str, Path], tmp_path: Path) -> None:
    current = app(tmp_path, temperature="0.7")
    for name, path in histories.items():
        warned = replay(path, current)
        assert warned.status == "passed", name
        assert [w.kind for w in warned.warnings] == ["args-mismatch"], name
        strict = replay(path, current, strict_args=True)
        assert strict.status == "diverged", name
        assert strict.divergence is not None and strict.divergence.kind == "args-mismatch"


def test_history_from_before_manifests_loads_and_says_what_was_not_checked(
    histories: dict[str, Path], tmp_path: Path
) -> None:
    path = histories["waiting"]
    data = json.loads(path.read_text())
    del data["prompt_manifest"]  # as written before manifests existed
    path.write_text(json.dumps(data))
    assert load_history(path).prompt_manifest is None
    result = replay(path, app(tmp_path, writer="v2"))
    assert result.status == "passed"
    assert any(note.startswith("no prompt manifest recorded") for note in result.notes)


def test_prompt_version_is_the_template_hash_unless_given() -> None:
    derived = Prompt("p", "Hello {name}")
    assert derived.version.startswith("sha256:") and derived.version == Prompt("p", "Hello {name}").version
    assert Prompt("p", "Hello, {name}").version != derived.version
    assert Prompt("p", "Hello {name}", version="v7").version == "v7"


def test_manifest_follows_closures_defaults_containers_and_declarations() -> None:
    a, b, c, d = (Prompt(name, name) for name in "abcd")
    table = {"first": a}

    def with_closure() -> Any:
        return b

    def with_default(prompt: Prompt = c) -> Any:
        return table, with_closure, prompt

    @uses_prompts(d)
    def declared() -> Any:
        return with_default()

    assert prompt_manifest(declared) == {"a": a.version, "b": b.version, "c": c.version, "d": d.version}


def test_pending_policy_from_the_command_line_and_the_config(histories: dict[str, Path], tmp_path: Path) -> None:
    module = app(tmp_path, writer="v2").__module__

    def cli(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "replaytest", "replay", str(histories["waiting"]), "-w", f"{module}:agent", *extra],
            cwd=tmp_path, capture_output=True, text=True, timeout=120,
        )

    failed = cli()
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "will use writer v2, started under v1" in failed.stdout
    warned = cli("--prompts-pending", "warn")
    assert warned.returncode == 0, warned.stdout + warned.stderr
    assert "1 warning(s)" in warned.stdout
    (tmp_path / "pyproject.toml").write_text('[tool.replaytest.replay]\nprompts-pending = "ignore"\n', encoding="utf-8")
    ignored = cli()
    assert ignored.returncode == 0 and "0 warning(s)" in ignored.stdout, ignored.stdout + ignored.stderr
    (tmp_path / "pyproject.toml").write_text('[tool.replaytest.replay]\nprompts-pending = "sometimes"\n', encoding="utf-8")
    assert cli().returncode == 2


def test_content_version_is_the_history_digest_of_the_template() -> None:
    from replaytest.history.digest import sha256_text

    assert Prompt("p", "Grüße, {name}").version == sha256_text("Grüße, {name}")


def test_manifest_follows_submodule_attributes_and_inherited_methods(tmp_path: Path) -> None:
    package = tmp_path / "manifest_pkg_a"
    (package / "prompts").mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "prompts" / "__init__.py").write_text("", encoding="utf-8")
    (package / "prompts" / "texts.py").write_text(
        "from replaytest.prompts import Prompt\nDEEP = Prompt('deep', 'x', version='v3')\n", encoding="utf-8")
    (package / "flows.py").write_text(
        "import manifest_pkg_a.prompts.texts\n\n\n"
        "class Base:\n    def helper(self):\n        return manifest_pkg_a.prompts.texts.DEEP\n\n\n"
        "class Flow(Base):\n    def run(self):\n        return self.helper()\n",
        encoding="utf-8",
    )
    sys.path.insert(0, str(tmp_path))
    try:
        flows = importlib.import_module("manifest_pkg_a.flows")
        assert prompt_manifest(flows.Flow) == {"deep": "v3"}
    finally:
        sys.path.remove(str(tmp_path))
        for name in [name for name in sys.modules if name.startswith("manifest_pkg_a")]:
            del sys.modules[name]

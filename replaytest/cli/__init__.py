"""The ``replaytest`` command line (click): lint, fix, rules, clean, replay, import, diff, redact, check, impact,
corpus, double-run (its own module, ``double_run_cli``).

Commands stay thin: they parse options, load configuration and plugins once, call into ``lint``,
``replay``, ``history`` or a plugin, and map the outcome to an exit code (0 clean, 1 findings or
divergences, 2 usage/configuration error or input that could not be checked).

One module per command or group of commands that belong together, each registering on the click group of
``shared``, which imports a command's module when that command is asked for (``replaytest lint`` loads no
other command's module). ``main`` runs the pre-commit hook's lint without click where ``replaytest.lint_entry``
can (output captured, the hook's options); the other names are imported on first use. Each command imports what it runs only when it runs, so ``lint`` never loads the replay side or an
engine package.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

# Where each name this package offers lives; importing one loads its module (and so registers its command).
_LAZY_NAMES = {
    "EXIT_CLEAN": "replaytest.cli.shared",
    "EXIT_ERROR": "replaytest.cli.shared",
    "EXIT_FINDINGS": "replaytest.cli.shared",
    "_exit_code": "replaytest.cli.process",
    "cli": "replaytest.cli.shared",
    "build_impact": "replaytest.cli.impact_command",
    "check": "replaytest.cli.check_commands",
    "clean": "replaytest.cli.clean_command",
    "corpus": "replaytest.cli.corpus_command",
    "diff": "replaytest.cli.history_commands",
    "double_run": "replaytest.double_run_cli",
    "fix": "replaytest.cli.fix_command",
    "impact": "replaytest.cli.impact_command",
    "import_group": "replaytest.cli.import_commands",
    "lint": "replaytest.cli.lint_command",
    "merge_results": "replaytest.cli.check_commands",
    "redact": "replaytest.cli.history_commands",
    "replay": "replaytest.cli.replay_command",
    "rules": "replaytest.cli.rules_command",
    "wants_color": "replaytest.cli.lint_command",
}


def main() -> None:
    """The console script: the pre-commit hook's ``lint`` without click when ``lint_entry`` can run it (same
    output, same exit code), else the click group (``process.main``)."""
    from replaytest.lint_entry import lean_arguments, run_lean

    lean = lean_arguments(sys.argv[1:])
    if lean is not None:
        sys.exit(run_lean(lean))
    from replaytest.cli.process import main as run_click

    run_click()


def __getattr__(name: str) -> Any:
    module = _LAZY_NAMES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if name == "double_run":
        from replaytest.cli.shared import load_command

        load_command("double-run")
    return getattr(importlib.import_module(module), name)


__all__ = [
    "EXIT_CLEAN", "EXIT_ERROR", "EXIT_FINDINGS", "_exit_code", "build_impact", "check", "clean", "cli", "corpus",
    "diff", "double_run", "fix", "impact", "import_group", "lint", "main", "merge_results", "redact", "replay", "rules",
    "wants_color",
]

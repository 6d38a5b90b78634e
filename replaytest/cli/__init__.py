"""The ``replaytest`` command line (click): lint, fix, rules, clean, replay, import, diff, redact, check, impact,
corpus, double-run (its own module, ``double_run_cli``).

Commands stay thin: they parse options, load configuration and plugins once, call into ``lint``,
``replay``, ``history`` or a plugin, and map the outcome to an exit code (0 clean, 1 findings or
divergences, 2 usage/configuration error or input that could not be checked).

One module per command or group of commands that belong together, each registering on the click group of
``shared``; importing this package registers them all. Each command imports what it runs only when it runs,
so ``lint`` never loads the replay side or an engine package.
"""

from __future__ import annotations

from replaytest.cli.check_commands import check, merge_results
from replaytest.cli.clean_command import clean
from replaytest.cli.corpus_command import corpus
from replaytest.cli.fix_command import fix
from replaytest.cli.history_commands import diff, redact
from replaytest.cli.impact_command import build_impact, impact
from replaytest.cli.import_commands import import_group
from replaytest.cli.lint_command import lint, wants_color
from replaytest.cli.process import _exit_code, main
from replaytest.cli.replay_command import replay
from replaytest.cli.rules_command import rules
from replaytest.cli.shared import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS, cli
from replaytest.double_run_cli import double_run  # its own module (issue 36)

cli.add_command(double_run)

__all__ = [
    "EXIT_CLEAN", "EXIT_ERROR", "EXIT_FINDINGS", "_exit_code", "build_impact", "check", "clean", "cli", "corpus",
    "diff", "double_run", "fix", "impact", "import_group", "lint", "main", "merge_results", "redact", "replay", "rules",
    "wants_color",
]

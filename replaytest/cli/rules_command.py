"""``replaytest rules``: list every rule, or print one rule's documentation."""

from __future__ import annotations

import sys

import click

from replaytest.cli.shared import EXIT_ERROR, _safe, cli


@cli.command()
@click.argument("code", required=False)
def rules(code: str | None) -> None:
    """List every rule (code, category, name), or print one rule's documentation."""
    from replaytest.lint.rules import RuleLoadError, load_rules

    try:
        available = load_rules()
    except RuleLoadError as error:
        click.echo(f"error: {_safe(str(error))}", err=True)
        sys.exit(EXIT_ERROR)
    if code is None:
        for rule in available:
            click.echo(f"{rule.code}  {rule.category:<16} {rule.name:<36} {rule.summary}")
        return
    for rule in available:
        if rule.code.upper() == code.upper():
            click.echo(f"# {rule.code} {rule.name} ({rule.category})\n")
            click.echo(rule.documentation())
            return
    click.echo(f"error: unknown rule {code!r}; run `replaytest rules` for the list", err=True)
    sys.exit(EXIT_ERROR)

"""A release a user can pin: the licence file the package metadata declares, a changelog with a heading for
the current version, and every git ref an install or pre-commit snippet of the documentation names
(``rev: …``, ``git+…@…``) either a commit or tag of this repository or ``v<version>``, the tag the README's
release steps create (before the release it cannot exist yet, and any other name is a snippet that fails as
typed: ``pathspec 'v0.0.9' did not match``)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import replaytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - 3.10
    import tomli as tomllib

REPO_ROOT = Path(__file__).resolve().parents[1]
RELEASE_TAG = f"v{replaytest.__version__}"
DOCUMENTS = ("README.md", "CHANGELOG.md", "docs/ci.md", "docs/design.md", "docs/engines.md")

# ``rev: X`` of a pre-commit repository, and ``…replaytest.git@X`` (or ``…/replaytest@X``) of a pip URL.
_REV = re.compile(r"^\s*rev:\s*['\"]?([^\s'\"#]+)", re.M)
_GIT_URL = re.compile(r"git\+\S*?replaytest(?:\.git)?@([^\s'\"#]+)")


def snippet_refs(text: str) -> list[str]:
    return [*_REV.findall(text), *_GIT_URL.findall(text)]


def _resolves(ref: str) -> bool:
    done = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], cwd=REPO_ROOT,
                          capture_output=True, text=True)
    return done.returncode == 0


def test_the_snippet_ref_patterns_find_what_the_readme_shows() -> None:
    assert snippet_refs("    rev: v9.9.9   # a tag\npip install 'replaytest @ git+https://h/o/replaytest.git@abc123'") \
        == ["v9.9.9", "abc123"]


@pytest.mark.skipif(not (REPO_ROOT / ".git").exists(), reason="needs the git checkout to resolve refs")
def test_every_pinned_ref_resolves_or_is_the_release_tag() -> None:
    found: dict[str, list[str]] = {}
    for name in DOCUMENTS:
        for ref in snippet_refs((REPO_ROOT / name).read_text(encoding="utf-8")):
            found.setdefault(ref, []).append(name)
    assert found, "the documentation should show at least one pinned install or pre-commit rev"
    wrong = {ref: names for ref, names in found.items() if ref != RELEASE_TAG and not _resolves(ref)}
    assert not wrong, (f"snippets name refs that neither exist in the repository nor are {RELEASE_TAG} "
                       f"(the tag the release steps create): {wrong}")


@pytest.mark.skipif(not (REPO_ROOT / ".git").exists(), reason="needs the git checkout to resolve refs")
def test_a_ref_that_does_not_exist_is_not_taken_for_one_that_does() -> None:
    # The check above is only as good as this: a made-up tag must not resolve.
    assert not _resolves("v0.0.0-no-such-release")
    assert _resolves("HEAD")


def test_the_licence_file_is_the_licence_the_metadata_declares() -> None:
    with open(REPO_ROOT / "pyproject.toml", "rb") as handle:
        project = tomllib.load(handle)["project"]
    assert project["license"] == "MIT"
    licence = (REPO_ROOT / "LICENSE").read_text(encoding="utf-8")
    assert licence.startswith("MIT License\n")
    assert "Permission is hereby granted, free of charge" in licence


def test_the_changelog_has_a_heading_for_the_current_version() -> None:
    changelog = (REPO_ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert re.search(rf"^## {re.escape(replaytest.__version__)}\b", changelog, re.M)
    assert "## Unreleased" in changelog

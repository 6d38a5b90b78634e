"""Which diagnostics survive: rule selection (select / ignore / per-file-ignores), suppression comments
and the baseline file.

Selectors are rule codes or code prefixes (``RT101``, ``RT1``), category names (``clock``) or ``ALL``.
A ``# replaytest: ignore``, ``# replaytest: ignore[RT101]`` or ``# replaytest: ignore[clock, uuid]``
comment suppresses findings on its own line, or on the next line when the comment stands alone.
A baseline records findings by path, rule and a line-independent fingerprint (with a count), so code
added above a known finding, or around it on its line, does not make it new.
"""

from __future__ import annotations

import fnmatch
import hashlib
import io
import json
import re
import tokenize
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path

from replaytest.lint.model import Diagnostic

_IGNORE_COMMENT = re.compile(r"#\s*replaytest:\s*ignore\b(?:\[([^\]]*)\])?", re.IGNORECASE)
BASELINE_VERSION = 1


class BaselineError(Exception):
    """The baseline file is unreadable or not a replaytest baseline."""


def selector_matches(selector: str, diagnostic: Diagnostic) -> bool:
    selector = selector.strip()
    if selector == "ALL" or selector == diagnostic.category:
        return True
    return bool(selector) and selector[0].isupper() and diagnostic.rule.startswith(selector)


class Selection:
    """select / ignore / per-file-ignores, decided per diagnostic."""

    def __init__(
        self, select: Sequence[str], ignore: Sequence[str], per_file_ignores: Mapping[str, Sequence[str]], root: Path,
        cwd: Path,
    ) -> None:
        self.select = tuple(select)
        self.ignore = tuple(ignore)
        self.per_file_ignores = {glob: tuple(codes) for glob, codes in per_file_ignores.items()}
        self.root = root
        self.cwd = cwd

    def keeps(self, diagnostic: Diagnostic) -> bool:
        if diagnostic.category == "syntax":
            return True  # a file that could not be checked is never filtered away
        if self.select and not any(selector_matches(s, diagnostic) for s in self.select):
            return False
        if any(selector_matches(s, diagnostic) for s in self.ignore):
            return False
        if self.per_file_ignores:
            relative = self._root_relative(diagnostic.path)
            for glob, selectors in self.per_file_ignores.items():
                if _glob_matches(relative, glob) and any(selector_matches(s, diagnostic) for s in selectors):
                    return False
        return True

    def _root_relative(self, display: str) -> str:
        absolute = (self.cwd / display).resolve()
        try:
            return absolute.relative_to(self.root).as_posix()
        except ValueError:
            return display


def _glob_matches(relative: str, glob: str) -> bool:
    if fnmatch.fnmatchcase(relative, glob):
        return True
    if glob.startswith("**/") and fnmatch.fnmatchcase(relative, glob[3:]):
        return True
    return "/" not in glob and fnmatch.fnmatchcase(relative.rsplit("/", 1)[-1], glob)


def _comments(text: str) -> Iterator[tuple[int, str, bool]]:
    """(line, comment text, comment stands alone on its line) for every real comment; text inside
    string literals is not a comment. Falls back to a line scan when the file does not tokenize."""
    lines = text.splitlines()
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                row = token.start[0]
                yield row, token.string, lines[row - 1][: token.start[1]].strip() == ""
        return
    except (tokenize.TokenError, SyntaxError, IndexError):
        pass
    for number, line in enumerate(lines, start=1):
        if "#" in line:
            yield number, line[line.index("#"):], line.lstrip().startswith("#")


def suppressions(text: str) -> dict[int, tuple[str, ...] | None]:
    """Line number -> suppressed selectors (None: everything) for one file's text."""
    found: dict[int, tuple[str, ...] | None] = {}
    if "replaytest" not in text:
        return found
    for number, comment, alone in _comments(text):
        match = _IGNORE_COMMENT.search(comment)
        if match is None:
            continue
        selectors = None if match.group(1) is None else tuple(s.strip() for s in match.group(1).split(",") if s.strip())
        lines = [number]
        if alone:
            lines.append(number + 1)  # a comment on its own line covers the line below
        for target in lines:
            previous = found.get(target, ())
            if previous is None or selectors is None:
                found[target] = None
            else:
                found[target] = previous + selectors
    return found


def is_suppressed(diagnostic: Diagnostic, by_line: Mapping[int, tuple[str, ...] | None]) -> bool:
    if diagnostic.category == "syntax" or diagnostic.line not in by_line:
        return False
    selectors = by_line[diagnostic.line]
    return selectors is None or any(selector_matches(s, diagnostic) for s in selectors)


def fingerprint(path: str, rule: str, message: str, trace: Iterable[str], scope: str = "") -> str:
    """Stable across line shifts and edits elsewhere on the line: the path, the rule, the message (which
    names the flagged call), the trace and the enclosing orchestration function."""
    digest = hashlib.sha256()
    for part in (path, rule, message, "|".join(trace), scope):
        digest.update(part.encode("utf-8", "replace"))
        digest.update(b"\0")
    return digest.hexdigest()[:32]


def write_baseline(path: Path, diagnostics: Sequence[Diagnostic]) -> None:
    counts = Counter((d.path, d.rule, d.fingerprint) for d in diagnostics if d.category != "syntax")
    entries = [{"path": p, "rule": r, "fingerprint": f, "count": n} for (p, r, f), n in sorted(counts.items())]
    path.write_text(json.dumps({"version": BASELINE_VERSION, "findings": entries}, indent=2) + "\n", encoding="utf-8")


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not a JSON value")


def read_baseline(path: Path) -> Counter:
    try:
        document = json.loads(path.read_text(encoding="utf-8"), parse_constant=_no_constant)
    except OSError as error:
        raise BaselineError(f"{path}: cannot be read: {error.strerror or error}") from None
    except ValueError as error:
        raise BaselineError(f"{path}: is not valid JSON: {str(error).splitlines()[0][:200]}") from None
    except RecursionError:
        raise BaselineError(f"{path}: is not a replaytest baseline (nested too deeply)") from None
    if not isinstance(document, dict) or document.get("version") != BASELINE_VERSION or not isinstance(
        document.get("findings"), list
    ):
        raise BaselineError(f"{path}: is not a replaytest baseline (expected version {BASELINE_VERSION} with findings)")
    known: Counter = Counter()
    for entry in document["findings"]:
        try:
            known[(entry["path"], entry["rule"], entry["fingerprint"])] += int(entry.get("count", 1))
        except (KeyError, TypeError, ValueError):
            raise BaselineError(f"{path}: malformed entry {entry!r}") from None
    return known


def new_findings(diagnostics: Sequence[Diagnostic], known: Counter) -> list[Diagnostic]:
    """Diagnostics beyond what the baseline already records (syntax problems always count)."""
    remaining = Counter(known)
    fresh = []
    for diagnostic in diagnostics:
        key = (diagnostic.path, diagnostic.rule, diagnostic.fingerprint)
        if diagnostic.category != "syntax" and remaining[key] > 0:
            remaining[key] -= 1
            continue
        fresh.append(diagnostic)
    return fresh

"""Which diagnostics survive: rule selection (select / ignore / per-file-ignores), suppression comments
and the baseline file.

Selectors are rule codes or code prefixes (``RT101``, ``RT1``), category names (``clock``) or ``ALL``;
one that names no installed rule is a configuration error (``unknown_selectors``), never a rule set that
silently matches nothing.
A ``# replaytest: ignore``, ``# replaytest: ignore[RT101]`` or ``# replaytest: ignore[clock, uuid]``
comment suppresses findings on its own line, or on the next line when the comment stands alone. ruff's
spelling ``# noqa: RT101`` works too (its own line only, and only for codes of installed rules' prefixes:
``# noqa: E501, RT101`` leaves ``E501`` to the other linter; a bare ``# noqa`` is the other linters' and
suppresses nothing here). A ``# replaytest: noqa`` comment on a line of its own, anywhere in a file, exempts the whole file, ``# replaytest: noqa: RT101,
clock`` those codes or categories in the whole file, as ruff's ``# ruff: noqa`` (the other spelling of
ruff's, ``# flake8: noqa``, is left to flake8). A suppression that suppressed nothing is reported as RT003;
like ruff, a file-level exemption is not (it states a decision about the file, not about one finding).
One after code on its line is ignored with a warning naming ``file:line``, as ruff ignores a ``# ruff: noqa``
there: it reads like a line's ``# noqa`` but would exempt the whole file, so it does neither.
A baseline records findings by path, rule and a line-independent fingerprint (with a count), so code
added above a known finding, or around it on its line, does not make it new.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path

from replaytest.lint.model import Diagnostic
from replaytest.path_patterns import glob_matches
from replaytest.records import Record, factory

# Compiled on first use (``re`` keeps them): a run whose files hold no suppression comment never needs them.
_IGNORE_COMMENT = r"(?i)#\s*replaytest:\s*ignore\b(?:\[([^\]]*)\])?"
# The file-level exemption, ruff's file-level "ruff: noqa" comment spelt for replaytest (see the module
# docstring): on a line of its own anywhere in the file; bare it exempts the whole file, with codes those
# codes in the whole file.
_FILE_NOQA_COMMENT = r"(?i)#\s*replaytest\s*:\s*noqa\b(?:\s*:\s*([^#]*))?"
_NOQA_COMMENT = r"(?i)#\s*noqa\s*:\s*([A-Za-z]+[0-9]+(?:\s*,?\s*[A-Za-z]+[0-9]+)*)"
_CODE = r"[A-Za-z]+[0-9]+"
BASELINE_VERSION = 1
UNUSED_SUPPRESSION_RULE = "RT003"


class BaselineError(Exception):
    """The baseline file is unreadable or not a replaytest baseline."""


def selector_matches(selector: str, diagnostic: Diagnostic) -> bool:
    selector = selector.strip()
    if selector == "ALL" or selector == diagnostic.category:
        return True
    return bool(selector) and selector[0].isupper() and diagnostic.rule.startswith(selector)


def may_fix(diagnostic: Diagnostic, fixable: Sequence[str], unfixable: Sequence[str]) -> bool:
    """Whether ``fix`` may apply ``diagnostic``'s fix under ruff's ``fixable``/``unfixable``: its rule is
    matched by a ``fixable`` selector (default ``ALL``) and by no ``unfixable`` one."""
    return (any(selector_matches(s, diagnostic) for s in fixable)
            and not any(selector_matches(s, diagnostic) for s in unfixable))


def is_known_selector(selector: str, codes: Iterable[str], categories: Iterable[str]) -> bool:
    """A category, ``ALL``, or a rule code or code prefix that at least one installed rule has."""
    if selector == "ALL" or selector in categories:
        return True
    letters = selector.rstrip("0123456789")
    if not (letters and letters.isalpha() and letters.isupper()):
        return False
    return any(code.startswith(selector) for code in codes)


def unknown_selectors(selectors: Iterable[str], codes: Iterable[str], categories: Iterable[str]) -> list[str]:
    codes, categories = tuple(codes), tuple(categories)
    return [s for s in selectors if not is_known_selector(s.strip(), codes, categories)]


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
    """A ``per-file-ignores`` key against a root-relative path: git's wildmatch, as every glob setting
    (``path_patterns``), ``!glob`` meaning every file ``glob`` does not match (as in ruff)."""
    return glob_matches(relative, glob)


def _comments(text: str) -> Iterator[tuple[int, int, str, bool]]:
    """(line, 1-based column, comment text, comment stands alone on its line) for every real comment;
    text inside string literals is not a comment. Falls back to a line scan when the file does not tokenize."""
    import tokenize  # only for a file with suppression comments: not imported by a warm run that reads none

    lines = text.splitlines()
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                row = token.start[0]
                yield row, token.start[1] + 1, token.string, lines[row - 1][: token.start[1]].strip() == ""
        return
    except (tokenize.TokenError, SyntaxError, IndexError):
        pass
    for number, line in enumerate(lines, start=1):
        if "#" in line:
            yield number, line.index("#") + 1, line[line.index("#"):], line.lstrip().startswith("#")


class Suppression(Record):
    """One suppression comment: where it is, which lines it covers, what it names (None: everything)."""

    line: int
    column: int
    targets: tuple[int, ...]
    selectors: tuple[str, ...] | None
    spelling: str  # "replaytest: ignore", "noqa" or "replaytest: noqa" (the whole file)
    used: set[str] = factory(set)  # selectors that suppressed something ("" for a bare one)
    whole_file: bool = False  # a file-level exemption: covers every line
    misplaced: bool = False  # a file-level exemption after code on its line: covers nothing, a warning

    def __init__(
        self, line: int, column: int, targets: tuple[int, ...], selectors: tuple[str, ...] | None, spelling: str,
        used: set[str] | None = None, whole_file: bool = False, misplaced: bool = False,
    ) -> None:
        self.line = line
        self.column = column
        self.targets = targets
        self.selectors = selectors
        self.spelling = spelling
        self.used = set() if used is None else used
        self.whole_file = whole_file
        self.misplaced = misplaced

    def covers(self, line: int) -> bool:
        return self.whole_file or line in self.targets


def parse_suppressions(text: str, code_prefixes: Iterable[str] = ("RT",)) -> list[Suppression]:
    """Every suppression comment of one file's text. ``code_prefixes`` are the letter prefixes of installed
    rules' codes: in a ``# noqa:`` list only those codes are replaytest's."""
    found: list[Suppression] = []
    if "replaytest" not in text and "noqa" not in text.lower():
        return found
    prefixes = tuple(p.upper() for p in code_prefixes)
    if not _may_suppress(text, prefixes):
        return found
    for number, column, comment, alone in _comments(text):
        exemption = re.match(_FILE_NOQA_COMMENT, comment)
        if exemption is not None:
            selectors = None if exemption.group(1) is None else tuple(
                s.strip() for s in re.split(r"[,\s]+", exemption.group(1)) if s.strip()
            )
            # After code it reads like a line-level "noqa" comment but would exempt the whole file: ignored
            # (``misplaced``, a warning) rather than guessing which was meant, as ruff does.
            found.append(Suppression(number, column, (), selectors or None, "replaytest: noqa", whole_file=alone,
                                     misplaced=not alone))
            continue
        match = re.search(_IGNORE_COMMENT, comment)
        if match is not None:
            selectors = None if match.group(1) is None else tuple(
                s.strip() for s in match.group(1).split(",") if s.strip()
            )
            targets = (number, number + 1) if alone else (number,)  # alone on its line: covers the line below
            found.append(Suppression(number, column, targets, selectors, "replaytest: ignore"))
            continue
        noqa = re.search(_NOQA_COMMENT, comment)
        if noqa is not None:
            ours = tuple(
                code.upper() for code in re.findall(_CODE, noqa.group(1)) if code.upper().rstrip("0123456789") in prefixes
            )
            if ours:
                found.append(Suppression(number, column, (number,), ours, "noqa"))
    return found


def _may_suppress(text: str, prefixes: tuple[str, ...]) -> bool:
    """Whether the comments of ``text`` can hold a suppression, judged on the whole text without
    tokenizing it: a comment is part of the text and the patterns are unanchored, so a text where no
    match names one of ours has no such comment. ``# noqa: F401`` alone (another tool's) then costs no
    tokenizer (whose first use compiles its patterns: about 10 ms a run)."""
    if re.search(_IGNORE_COMMENT, text) or re.search(_FILE_NOQA_COMMENT, text):
        return True
    return any(code.upper().rstrip("0123456789") in prefixes
               for noqa in re.finditer(_NOQA_COMMENT, text) for code in re.findall(_CODE, noqa.group(1)))


def suppressions(text: str) -> dict[int, tuple[str, ...] | None]:
    """Line number -> suppressed selectors (None: everything) for one file's text."""
    found: dict[int, tuple[str, ...] | None] = {}
    for suppression in parse_suppressions(text):
        for target in suppression.targets:  # file-level exemptions are honoured by ``suppress``
            previous = found.get(target, ())
            if previous is None or suppression.selectors is None:
                found[target] = None
            else:
                found[target] = previous + suppression.selectors
    return found


def is_suppressed(diagnostic: Diagnostic, by_line: Mapping[int, tuple[str, ...] | None]) -> bool:
    if diagnostic.category == "syntax" or diagnostic.line not in by_line:
        return False
    selectors = by_line[diagnostic.line]
    return selectors is None or any(selector_matches(s, diagnostic) for s in selectors)


def suppress(diagnostic: Diagnostic, comments: Sequence[Suppression]) -> bool:
    """Whether a comment suppresses ``diagnostic``; every comment selector that does is marked used."""
    if diagnostic.category == "syntax":
        return False
    suppressed = False
    for comment in comments:
        if not comment.covers(diagnostic.line):
            continue
        if comment.selectors is None:
            comment.used.add("")
            suppressed = True
            continue
        for selector in comment.selectors:
            if selector_matches(selector, diagnostic):
                comment.used.add(selector)
                suppressed = True
    return suppressed


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
    path.parent.mkdir(parents=True, exist_ok=True)  # as ``--output-file`` does
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

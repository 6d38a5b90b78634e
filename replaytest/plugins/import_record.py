"""How each import into a history folder was made, and ``replaytest import refresh``, which makes it again.

A history is what the engine recorded, so refreshing a folder means importing again from the engine with
the commands that made it. Every ``replaytest import <engine> … --out FOLDER`` that succeeds (exit 0)
therefore writes down in ``FOLDER/.replaytest-imports`` (JSON; a hidden file, which replay never reads as a
history) the engine, the options given on the command line (rebuilt from click's parsed values, so
``--x=y`` and ``--x y`` read the same), the folder it ran from (relative to FOLDER: relative paths and
``sqlite:///`` URLs are relative to it, and so is the configuration found) and the files it wrote. An entry
with the same engine, options and folder is replaced, not repeated.

No credential is stored. An option whose name says it holds one (``--api-key``, ``--sas-token``,
``--connection-string``, anything ``password``/``secret``/``token``/``credential``) is left out, and so
are the password of a URL (``postgresql://user:PASSWORD@host/db``) and its query parameters that name a
secret; values taken from the environment or left at their default are not stored either (they are read
again). ``refresh`` gives a left-out option from ``REPLAYTEST_IMPORT_<NAME>`` (``REPLAYTEST_IMPORT_SAS_TOKEN``)
when that is set; libpq reads a left-out Postgres password from ``PGPASSWORD`` or ``~/.pgpass`` itself.

``refresh`` re-runs each recorded import, read-only as every import is, into an empty hidden folder inside
FOLDER (so it lands on the same file system), and only when that import exits 0 moves its histories into
place, each with one rename: a file whose bytes did not change is left alone, and a run the engine no longer
has ("gone": retention expired, a database trimmed) keeps its file, since the history is the only copy
left. A failed import, a secret it cannot be given, or a new file whose name another history in the folder
already holds changes nothing of that import. Histories no entry lists get a note saying how to import
them so that a refresh includes them.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import click

RECORD_NAME = ".replaytest-imports"
RECORD_FORMAT = "replaytest-imports"
SECRET_ENV_PREFIX = "REPLAYTEST_IMPORT_"
_SECRET_NAME = re.compile(r"(^|_)(api_key|key|token|secret|password|passwd|connection_string|credentials?|sig)($|_)",
                          re.IGNORECASE)
_STAGING_PREFIX = ".replaytest-refresh-"
_BLOBS = "blobs"


class RecordError(Exception):
    """The folder's import record cannot be read or written; the message says which file and why."""


@dataclass
class ImportEntry:
    """One recorded import: ``command`` is what follows ``replaytest import <engine>`` (without ``--out``),
    run from ``cwd`` (relative to the folder); ``left_out`` names the options whose secrets were not stored;
    ``files`` are the folder's files it wrote (POSIX paths relative to the folder)."""

    engine: str
    command: list[str]
    cwd: str
    left_out: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)

    def shown(self) -> str:
        return " ".join(["replaytest", "import", self.engine, *(_quoted(part) for part in self.command)])

    def to_json(self) -> dict[str, Any]:
        return {"engine": self.engine, "command": self.command, "cwd": self.cwd, "left_out": self.left_out,
                "files": sorted(self.files)}


def _quoted(part: str) -> str:
    import shlex

    return shlex.quote(part)


def read_record(folder: Path) -> list[ImportEntry] | None:
    """The folder's recorded imports; None when it has no record. ``RecordError`` when it cannot be read."""
    path = folder / RECORD_NAME
    if not path.exists():
        return None
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(document, dict) or document.get("format") != RECORD_FORMAT:
            raise ValueError(f"not a {RECORD_FORMAT} document")
        return [
            ImportEntry(str(item["engine"]), [str(part) for part in item["command"]], str(item["cwd"]),
                        [str(name) for name in item.get("left_out", [])], [str(name) for name in item.get("files", [])])
            for item in document["imports"]
        ]
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as error:
        raise RecordError(f"{path}: cannot read the import record ({error}); it was left as it is") from error


def write_record(folder: Path, entries: list[ImportEntry]) -> None:
    from replaytest.history.io import write_text_atomically

    document = {"format": RECORD_FORMAT, "version": 1, "imports": [entry.to_json() for entry in entries]}
    write_text_atomically(folder / RECORD_NAME, json.dumps(document, indent=2) + "\n")


# --- recording an import as it runs ---------------------------------------------------------------------

def out_option(command: click.Command) -> click.Option | None:
    """The command's ``--out`` option (where it writes), or None: an import without one is not recorded."""
    for param in command.params:
        if isinstance(param, click.Option) and "--out" in param.opts:
            return param
    return None


def recording(command: click.Command, engine: str) -> click.Command:
    """A copy of the import ``command`` that records itself in its folder when it exits 0."""
    import copy

    out = out_option(command)
    original = command.callback
    if out is None or original is None:
        return command

    def run(**params: Any) -> Any:
        context = click.get_current_context()
        folder = Path(params[out.name or ""])
        before = _snapshot(folder)
        try:
            result = context.invoke(original, **params)
        except SystemExit as stop:
            if stop.code in (0, None):
                _record(context, command, engine, folder, before)
            raise
        _record(context, command, engine, folder, before)
        return result

    wrapped = copy.copy(command)
    wrapped.callback = run
    return wrapped


def _record(context: click.Context, command: click.Command, engine: str, folder: Path,
            before: dict[str, tuple[int, int, int]]) -> None:
    written = sorted(name for name, stat in _snapshot(folder).items() if before.get(name) != stat)
    if not folder.is_dir():
        return
    arguments, left_out = command_line(context, command)
    cwd = _relative_cwd(folder)
    entry = ImportEntry(engine, arguments, cwd, left_out, written)
    try:
        entries = read_record(folder) or []
        for earlier in entries:
            if (earlier.engine, earlier.command, earlier.cwd) == (engine, arguments, cwd):
                # What this import did not write again stays listed while its file is there (a gone run).
                entry.files = sorted(set(written) | {name for name in earlier.files if (folder / name).exists()})
        entries = [e for e in entries if (e.engine, e.command, e.cwd) != (engine, arguments, cwd)] + [entry]
        write_record(folder, entries)
    except (RecordError, OSError) as error:
        click.echo(f"warning: the import was not recorded for `replaytest import refresh`: {error}", err=True)


def _relative_cwd(folder: Path) -> str:
    cwd = os.getcwd()
    try:
        return Path(os.path.relpath(cwd, folder.resolve())).as_posix()
    except ValueError:  # another drive (Windows): only the absolute path reaches it
        return cwd


def command_line(context: click.Context, command: click.Command) -> tuple[list[str], list[str]]:
    """(the options given on the command line, rebuilt without ``--out`` and without secrets; the options
    whose secret was left out). Values from the environment or defaults are not stored: they are read again."""
    from click.core import ParameterSource

    options: list[str] = []
    arguments: list[str] = []
    left_out: list[str] = []
    out = out_option(command)
    for param in command.params:
        name = param.name or ""
        if param is out or context.get_parameter_source(name) is not ParameterSource.COMMANDLINE:
            continue
        value: Any = context.params.get(name)
        if isinstance(param, click.Argument):
            arguments.extend(str(item) for item in (value if param.nargs != 1 else (value,)))
            continue
        if not isinstance(param, click.Option):
            continue
        flag = next((opt for opt in param.opts if opt.startswith("--")), param.opts[0])
        if _SECRET_NAME.search(name):
            left_out.append(flag)
            continue
        if param.is_flag:
            if param.secondary_opts and not value:
                options.append(param.secondary_opts[0])
            elif value:
                options.append(flag)
            continue
        if param.count:
            options.extend([flag] * int(value or 0))
            continue
        items: Any = value if param.multiple else (value,)
        for item in items:
            text, secret = _without_secret(str(item))
            if secret:
                left_out.append(f"the {secret} in {flag}")
            options.extend([flag, text])
    return options + (["--", *arguments] if arguments else []), left_out


def _without_secret(value: str) -> tuple[str, str]:
    """A URL without its password and secret query parameters, and what was taken out ('' when nothing)."""
    if "://" not in value:
        return value, ""
    try:
        parts = urlsplit(value)
        password = parts.password
    except ValueError:
        return value, ""
    taken = []
    netloc = parts.netloc
    if password is not None:
        user = parts.username or ""
        host = netloc.rpartition("@")[2]
        netloc = f"{user}@{host}" if user else host
        taken.append("password")
    query = parse_qsl(parts.query, keep_blank_values=True)
    kept = [(key, item) for key, item in query if not _SECRET_NAME.search(key)]
    if len(kept) != len(query):
        taken.append("secret query parameters")
    if not taken:
        return value, ""
    return urlunsplit((parts.scheme, netloc, parts.path, urlencode(kept), parts.fragment)), " and ".join(taken)


def _snapshot(folder: Path) -> dict[str, tuple[int, int, int]]:
    """(inode, mtime, size) of every file under ``folder`` but hidden ones: what an import changes."""
    found: dict[str, tuple[int, int, int]] = {}
    for path in _files(folder):
        try:
            stat = path.stat()
        except OSError:
            continue
        found[path.relative_to(folder).as_posix()] = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
    return found


def _files(folder: Path) -> Iterator[Path]:
    if not folder.is_dir():
        return
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if not name.startswith("."):
                yield Path(root, name)


def _is_history(name: str) -> bool:
    return name.endswith(".json") and not name.startswith(f"{_BLOBS}/") and f"/{_BLOBS}/" not in name


# --- refresh ----------------------------------------------------------------------------------------------

@dataclass
class Outcome:
    """What one refreshed import changed in the folder (history file names), or why it changed nothing."""

    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    gone: list[str] = field(default_factory=list)
    failure: str = ""


def refresh_folder(folder: Path, commands: dict[str, click.Command]) -> int:
    """``replaytest import refresh FOLDER``: each recorded import again, one report line each; the exit
    code (2 when the folder has no record or any import failed, else 0)."""
    try:
        entries = read_record(folder)
    except RecordError as error:
        click.echo(f"error: {error}", err=True)
        return 2
    unrecorded = _unrecorded(folder, entries or [])
    if not entries:
        click.echo(f"error: {folder} has no record of how its histories were imported ({RECORD_NAME}), so there is "
                   "nothing to refresh: import them once with `replaytest import <engine> … --out "
                   f"{folder}` (every import since this release records itself), then refresh", err=True)
        return 2
    failed = 0
    as_read = [entry.to_json() for entry in entries]
    for entry in entries:
        outcome = _refresh_one(folder, entry, commands)
        if outcome.failure:
            failed += 1
            click.echo(f"{entry.shown()}: not refreshed, nothing changed: {outcome.failure}")
            continue
        entry.files = sorted(set(outcome.added + outcome.changed + outcome.unchanged + outcome.gone)
                             | {name for name in entry.files if not _is_history(name) and (folder / name).exists()})
        line = (f"{entry.shown()}: {len(outcome.added)} added, {len(outcome.changed)} changed, "
                f"{len(outcome.unchanged)} unchanged, {len(outcome.gone)} gone")
        if outcome.gone:
            line += f" (kept, the engine no longer has them: {_some(outcome.gone)})"
        click.echo(line)
    try:
        if [entry.to_json() for entry in entries] != as_read:
            write_record(folder, entries)
    except OSError as error:
        click.echo(f"error: cannot update {folder / RECORD_NAME}: {error}", err=True)
        failed += 1
    if unrecorded:
        click.echo(f"note: {len(unrecorded)} histor{'y' if len(unrecorded) == 1 else 'ies'} in {folder} no recorded "
                   f"import wrote ({_some(unrecorded)}), left as they are: import them with `replaytest import "
                   f"<engine> … --out {folder}` so that a refresh includes them", err=True)
    return 2 if failed else 0


def _some(names: list[str]) -> str:
    return ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")


def _unrecorded(folder: Path, entries: list[ImportEntry]) -> list[str]:
    listed = {name for entry in entries for name in entry.files}
    return [name for name in (p.relative_to(folder).as_posix() for p in _files(folder))
            if _is_history(name) and name not in listed]


def _refresh_one(folder: Path, entry: ImportEntry, commands: dict[str, click.Command]) -> Outcome:
    command = commands.get(entry.engine)
    if command is None:
        return Outcome(failure=f"no installed plugin imports from {entry.engine!r} (install its extra)")
    given: list[str] = []
    for flag in entry.left_out:
        option = flag if flag.startswith("--") else flag.rsplit(" in ", 1)[-1]
        variable = SECRET_ENV_PREFIX + option.lstrip("-").replace("-", "_").upper()
        if os.environ.get(variable):
            given += [option, os.environ[variable]]
        elif flag.startswith("--") and not _reads_environment(command, option):
            return Outcome(failure=f"{option} holds a secret, which is never stored: set {variable} to give it")
    arguments = _with_given(entry.command, given)
    cwd = Path(entry.cwd) if Path(entry.cwd).is_absolute() else folder.resolve() / entry.cwd
    # Absolute: the import runs from its recorded folder, which need not be the one refresh was started from.
    staging = Path(tempfile.mkdtemp(prefix=_STAGING_PREFIX, dir=folder.resolve()))
    try:
        end = arguments.index("--") if "--" in arguments else len(arguments)  # before FILES arguments
        code = _run_import(command, entry.engine, [*arguments[:end], "--out", str(staging), *arguments[end:]], cwd,
                           shown=(str(staging), str(folder)))
        if code != 0:
            return Outcome(failure=f"the import exited {code} (its messages are above)")
        try:
            return _move_into_place(folder, staging, entry)
        except OSError as error:  # each file moved is the engine's newer copy of the same run: nothing is lost
            return Outcome(failure=f"moving its histories into {folder} stopped: {error}; run the refresh again")
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _reads_environment(command: click.Command, flag: str) -> bool:
    """Whether the option reads its value from an environment variable itself (``--api-key``)."""
    return any(isinstance(param, click.Option) and flag in param.opts and param.envvar for param in command.params)


def _with_given(command: list[str], given: list[str]) -> list[str]:
    """The recorded options with the secrets given: an option recorded without its secret is replaced."""
    replaced = {given[index] for index in range(0, len(given), 2)}
    result: list[str] = []
    parts = iter(command)
    for part in parts:
        if part == "--":
            result += given
            given = []
            result += ["--", *parts]
            break
        if part in replaced:
            next(parts, None)
            continue
        result.append(part)
    return result + given


class _Renaming(io.TextIOBase):
    """A text stream writing to ``stream`` with ``old`` replaced by ``new`` in what is written."""

    def __init__(self, stream: Any, old: str, new: str) -> None:
        self._stream, self._old, self._new = stream, old, new

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self._stream.write(text.replace(self._old, self._new))
        return len(text)

    def flush(self) -> None:
        self._stream.flush()


def _run_import(command: click.Command, engine: str, arguments: list[str], cwd: Path, *,
                shown: tuple[str, str]) -> int:
    """Run the import in this process from ``cwd`` (a secret given to it is never on a command line another
    process can read); its stdout is kept but for the summary naming the hidden folder, its stderr shown.
    ``shown`` is (the hidden folder, the history folder): what the import says of a file it wrote names the
    place the refresh moves it to, not the hidden folder, which is gone when the refresh ends."""
    captured = io.StringIO()
    previous = os.getcwd()
    try:
        os.chdir(cwd)
    except OSError as error:
        click.echo(f"error: cannot run the import from {cwd}: {error.strerror or error}", err=True)
        return 2
    try:
        with contextlib.redirect_stdout(captured), contextlib.redirect_stderr(_Renaming(sys.stderr, *shown)):
            command.main(arguments, prog_name=f"replaytest import {engine}", standalone_mode=False)
        code = 0
    except SystemExit as stop:
        code = 0 if stop.code is None else stop.code if isinstance(stop.code, int) else 1
    except click.exceptions.Exit as stop:
        code = stop.exit_code
    except click.ClickException as error:
        click.echo(f"error: {error.format_message()}", err=True)
        code = 2
    finally:
        os.chdir(previous)
    for line in captured.getvalue().splitlines():
        if not line.startswith("imported "):
            click.echo(line.replace(*shown))
    return code


def _move_into_place(folder: Path, staging: Path, entry: ImportEntry) -> Outcome:
    outcome = Outcome()
    written = [path.relative_to(staging).as_posix() for path in _files(staging)]
    histories = [name for name in written if _is_history(name)]
    mine = set(entry.files)
    for name in histories:
        if (folder / name).exists() and name not in mine:
            return Outcome(failure=f"{folder / name} is there and this import did not write it: move it away "
                                   "(or import that run again with this command), then refresh")
        if (folder / name).is_symlink():
            return Outcome(failure=f"{folder / name} is a symbolic link; remove it, then refresh")
    for name in written:
        target = folder / name
        if not _is_history(name):  # a content-addressed blob: the same name holds the same bytes
            if not target.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(staging / name, target)
            continue
        if not target.exists():
            outcome.added.append(name)
        elif target.read_bytes() == (staging / name).read_bytes():
            outcome.unchanged.append(name)
            continue
        else:
            outcome.changed.append(name)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(staging / name, target)
    outcome.gone = sorted(name for name in entry.files
                          if _is_history(name) and name not in histories and (folder / name).exists())
    return outcome

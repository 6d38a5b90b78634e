"""What the verification copy (``impact.project_copy.ProjectCopy``) holds: Python files, configuration, package
data and the files the replay read; never secrets files, version control, tools' folders, the histories, a file
over the size cap (a sparse one included) or a FIFO; symlinks to what is copied stay relative and resolve in the
copy, every other link is left out; a left-out file the replay read is named in a note."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from guardkit import make_repo
from test_guards_journal_claims import INSERTED_AFTER_WAIT, _version_2

from replaytest.impact.project_copy import COPY_SIZE_CAP, NEVER_COPIED, ProjectCopy, never_copied

SECRETS = [".env", ".env.production", "app/.env.local", "certs/server.pem", "certs/server.key", "certs/client.p12",
           "id_rsa", "id_rsa.pub", ".netrc", ".pypirc", "app/credentials.json", "APP/Credentials.yaml"]


def _write(root: Path, relative: str, text: str = "x") -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _files(folder: Path) -> set[str]:
    """Every file and link under ``folder``, relative, links not followed."""
    found = set()
    for parent, folders, names in os.walk(folder):
        for name in names + [f for f in folders if os.path.islink(os.path.join(parent, f))]:
            found.add(Path(parent, name).relative_to(folder).as_posix())
    return found


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "service"
    _write(root, "pyproject.toml", "[project]\nname = 'service'\n")
    _write(root, "setup.cfg")
    _write(root, "main.py", "import app\n")
    _write(root, "app/__init__.py", "")
    _write(root, "app/flow.py", "def flow(): ...\n")
    _write(root, "app/templates/prompt.txt", "Hello {name}")  # package data, in a folder without __init__.py
    _write(root, "app/templates/rates.json", "{}")
    _write(root, "docs/guide.md", "# Guide")  # nobody's code reads it
    _write(root, "data/rates.csv", "eur,1")  # read by the replay (below)
    _write(root, "data/dump.csv", "a,b")  # not read
    for secret in SECRETS:
        _write(root, secret, "KEY=do-not-copy")
    _write(root, ".git/config", "[remote]\nurl = https://token@example.com/repo")
    _write(root, ".venv/pyvenv.cfg", "home = /usr")
    _write(root, "env2/pyvenv.cfg", "home = /usr")
    _write(root, "env2/lib/site.py", "")
    _write(root, "node_modules/x/index.js")
    _write(root, "app/__pycache__/flow.cpython-311.pyc")
    _write(root, "histories/run-1.json", "{}")
    _write(root, "histories/blobs/sha256/ab", "{}")
    with open(root / "app" / "huge.bin", "wb") as handle:  # a sparse GiB: no disk, 1 GiB of apparent size
        handle.truncate(1 << 30)
    os.mkfifo(root / "app" / "pipe")
    return root


def test_the_copy_holds_code_configuration_package_data_and_read_files_only(project: Path) -> None:
    copy = ProjectCopy(project, [project / "histories" / "run-1.json"], [str(project / "data" / "rates.csv")])
    try:
        assert copy.path.name == "service" and copy.path.parent.name.startswith("replaytest-impact-")
        assert _files(copy.path) == {
            "pyproject.toml", "setup.cfg", "main.py", "app/__init__.py", "app/flow.py", "app/templates/prompt.txt",
            "app/templates/rates.json", "data/rates.csv",
        }
        assert (copy.path / "app" / "templates" / "prompt.txt").read_text() == "Hello {name}"
        why = copy.left_out
        assert why[project / "app" / "huge.bin"] == "1 GiB, over the 8 MiB copy size cap"
        assert why[project / ".env"] == why[project / "certs" / "server.pem"] == "never copied: it may hold secrets"
        assert why[project / ".git"] == "never copied: it may hold secrets"
        assert "virtual environment" in why[project / "env2"] and "virtual environment" in why[project / ".venv"]
        assert why[project / "app" / "pipe"].startswith("not a regular file")
        assert copy.notes() == []  # the one read file is in the copy
    finally:
        copy.close()
    assert not copy.path.exists()


@pytest.mark.parametrize("name", SECRETS + [".git", "id_ed25519", "deploy.KEY", ".Env"])
def test_secrets_names_are_never_copied(name: str) -> None:
    assert never_copied(Path(name).name), f"{name} matches none of {NEVER_COPIED}"


@pytest.mark.parametrize("name", ["flow.py", "environment.py", "keys.py", "prompt.txt", "pyproject.toml"])
def test_ordinary_names_are_not_taken_for_secrets(name: str) -> None:
    assert not never_copied(name)


def test_a_file_over_the_cap_is_left_out_even_when_read_and_a_note_names_it(project: Path) -> None:
    big = project / "data" / "table.bin"
    with open(big, "wb") as handle:
        handle.truncate(COPY_SIZE_CAP + 1)
    small = _write(project, "data/small.bin", "y" * 100)
    reads = [str(big), str(small), str(project / ".env"), str(project / "app" / "flow.py")]
    copy = ProjectCopy(project, [], reads)
    try:
        assert not (copy.path / "data" / "table.bin").exists()
        assert (copy.path / "data" / "small.bin").read_text() == "y" * 100
        assert copy.notes() == [
            "not in the verification copy: .env (never copied: it may hold secrets), which the replay read: the "
            "guarded code was replayed without it",
            "not in the verification copy: data/table.bin (8.1 MiB, over the 8 MiB copy size cap), which the replay "
            "read: the guarded code was replayed without it",
        ]
    finally:
        copy.close()


def test_symlinks_to_copied_files_stay_relative_and_every_other_link_is_left_out(project: Path, tmp_path: Path) -> None:
    outside = _write(tmp_path, "shared/settings.json", "{}")
    app = project / "app"
    (app / "prompt.txt").symlink_to("templates/prompt.txt")
    (app / "tpl").symlink_to("templates", target_is_directory=True)
    (project / "current.py").symlink_to("app/flow.py")
    (app / "settings.json").symlink_to(outside)  # absolute, outside the project
    (app / "shared").symlink_to(os.path.relpath(outside.parent, app), target_is_directory=True)  # relative, outside
    (app / "config.txt").symlink_to("../.env")  # to a secrets file
    (app / "big").symlink_to("huge.bin")  # to a file over the cap
    (app / "guide.md").symlink_to("../docs/guide.md")  # to a file the rules do not take
    (app / "gone.txt").symlink_to("missing.txt")  # dangling
    (app / "loop").symlink_to("loop")
    copy = ProjectCopy(project, [], [str(app / "shared" / "settings.json")])
    try:
        copied = copy.path / "app"
        for link, target in [(copied / "prompt.txt", "templates/prompt.txt"), (copied / "tpl", "templates"),
                             (copy.path / "current.py", "app/flow.py")]:
            assert link.is_symlink() and os.readlink(link) == target
            assert Path(os.path.realpath(link)).is_relative_to(copy.path.resolve())
        assert (copied / "prompt.txt").read_text() == "Hello {name}"
        assert (copied / "tpl" / "prompt.txt").read_text() == "Hello {name}"
        for name in ["settings.json", "shared", "config.txt", "big", "guide.md", "gone.txt", "loop"]:
            assert not os.path.lexists(copied / name), name
        why = copy.left_out
        assert why[app / "settings.json"] == why[app / "shared"] == "a symlink to outside the project, not copied"
        assert why[app / "config.txt"] == "a symlink to .env, which is not copied"
        assert why[app / "big"] == "a symlink to app/huge.bin, which is not copied"
        assert why[app / "gone.txt"] == why[app / "loop"] == (
            "a symlink that does not resolve (dangling, or a loop), not copied")
        # Nothing in the copy points outside it.
        for parent, folders, names in os.walk(copy.path):
            for name in folders + names:
                path = Path(parent, name)
                if path.is_symlink():
                    assert Path(os.path.realpath(path)).is_relative_to(copy.path.resolve()), path
        assert copy.notes() == [
            "not in the verification copy: app/shared (a symlink to outside the project, not copied), which the "
            "replay read: the guarded code was replayed without it",
        ]
    finally:
        copy.close()


def test_guarded_files_are_written_and_undone_in_the_copy_only(project: Path) -> None:
    copy = ProjectCopy(project, [])
    try:
        flow = project / "app" / "flow.py"
        copy.write({flow: "def flow(): 'guarded'\n"})
        assert (copy.path / "app" / "flow.py").read_text() == "def flow(): 'guarded'\n"
        assert flow.read_text() == "def flow(): ...\n"
        copy.write({})
        assert (copy.path / "app" / "flow.py").read_text() == "def flow(): ...\n"
    finally:
        copy.close()


# --- through `replaytest impact`: the copy the child replay sees ---------------------------------------------

# The expense-claim package, reading a rates table at import from a folder that is not a package (so only the
# read rule takes it into the copy), and, imported from the copy, listing what the copy holds.
READING_PACKAGE = '''\
import json
import os
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
RATES = json.loads((PROJECT / "rates" / "eur.json").read_text())
if os.environ.get("EXTRA_READ"):
    EXTRA = (PROJECT / os.environ["EXTRA_READ"]).open("rb").read(16)

if "replaytest-impact-" in __file__:
    listing = sorted(path.relative_to(PROJECT).as_posix() for path in PROJECT.rglob("*"))
    Path(os.environ["COPY_LISTING"]).write_text("\\n".join(listing))
'''


def _impact_with_copy(tmp_path: Path, extra_read: str | None = None) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    repo = make_repo(tmp_path)
    _version_2(repo, INSERTED_AFTER_WAIT)
    _write(repo.root, "rates/eur.json", '{"eur": 1}')
    _write(repo.root, ".env", "PAYMENTS_KEY=sk_live_do_not_copy")
    (repo.root / "data").mkdir()
    with open(repo.root / "data" / "huge.bin", "wb") as handle:
        handle.truncate(1 << 30)
    with open(repo.root / "data" / "table.bin", "wb") as handle:
        handle.truncate(COPY_SIZE_CAP + 1)
    (repo.root / "expenses" / "__init__.py").write_text(READING_PACKAGE)
    listing = tmp_path / "listing.txt"
    env = {"PYTHONPATH": str(repo.root), "PATH": "/usr/bin:/bin", "COPY_LISTING": str(listing)}
    if extra_read:
        env["EXTRA_READ"] = extra_read
    run = subprocess.run([sys.executable, "-m", "replaytest", "impact", "--quiet"], cwd=repo.root, env=env,
                         capture_output=True, text=True, timeout=300)
    return run, listing.read_text().splitlines() if listing.exists() else []


def test_the_child_replay_sees_the_files_it_reads_and_no_secret_or_big_file(tmp_path: Path) -> None:
    run, listing = _impact_with_copy(tmp_path)
    assert run.returncode == 1, run.stderr
    assert "verified: 4 of 4 histories replay green" in run.stdout, run.stdout
    assert "rates/eur.json" in listing, "read by the replay (at import), so copied though not in a package"
    assert {"expenses/__init__.py", "expenses/claims.py", "pyproject.toml"} <= set(listing)
    for absent in [".env", ".git", "data", "data/huge.bin", "data/table.bin", "histories"]:
        assert absent not in listing, absent
    assert "not in the verification copy" not in run.stdout


def test_a_file_the_replay_reads_over_the_cap_is_named_in_the_verification(tmp_path: Path) -> None:
    run, _listing = _impact_with_copy(tmp_path, extra_read="data/table.bin")
    assert run.returncode == 1, run.stderr
    lines = run.stdout.splitlines()
    assert ("    verify    not in the verification copy: data/table.bin (8.1 MiB, over the 8 MiB copy size cap), which "
            "the replay read: the guarded code was replayed without it") in lines, run.stdout
    # Here the replay cannot do without it: the guard is not called verified.
    assert "NOT verified" in run.stdout and "FileNotFoundError" in run.stdout


def test_a_temporary_folder_inside_the_project_is_not_copied_into_itself(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    scratch = project / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    copy = ProjectCopy(project, [])
    try:
        assert copy.path.parent.parent == scratch
        assert "main.py" in _files(copy.path)
        assert not any(name.startswith("tmp/") for name in _files(copy.path))
    finally:
        copy.close()


def test_a_file_that_cannot_be_copied_is_left_out_with_why(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy_file = shutil.copy2

    def refusing(source: Path, target: Path) -> object:
        if Path(source).name == "flow.py":
            Path(target).write_text("half")
            raise PermissionError(13, "Permission denied")
        return copy_file(source, target)

    monkeypatch.setattr(shutil, "copy2", refusing)
    copy = ProjectCopy(project, [], [str(project / "app" / "flow.py")])
    try:
        assert not (copy.path / "app" / "flow.py").exists(), "no half-copied file stays"
        assert (copy.path / "app" / "__init__.py").exists()
        assert copy.notes() == [
            "not in the verification copy: app/flow.py (cannot be copied: Permission denied), which the replay read: "
            "the guarded code was replayed without it",
        ]
    finally:
        copy.close()


@pytest.mark.parametrize("name", ["pytest.ini", ".pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml",
                                  "replaytest.toml", ".replaytest.toml"])
def test_every_file_replay_settings_are_read_from_is_copied(tmp_path: Path, name: str) -> None:
    """The child replay finds its settings as the parent did: from the pytest ini files (``.pytest.ini``
    among them) and replaytest's own configuration files, wherever the project keeps them."""
    from replaytest.config import CONFIG_FILE_NAMES
    from replaytest.replay.settings import PYTEST_INI_NAMES

    assert name in (*PYTEST_INI_NAMES, *CONFIG_FILE_NAMES)
    root = tmp_path / "service"
    _write(root, "app/flow.py", "def flow(): ...\n")
    _write(root, name, "[pytest]\nreplay_paths = histories\n")
    _write(root, f"service_b/{name}", "[pytest]\n")  # in a folder that is no package
    copy = ProjectCopy(root)
    try:
        assert {name, f"service_b/{name}"} <= _files(copy.path)
    finally:
        copy.close()

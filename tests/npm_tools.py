"""Servers the tests take from the npm registry (the Restate server, Azurite): ``npm_tool`` installs one pinned
package into ``.test-tools/npm/<package>@<version>`` in the checkout on first use and returns the path of one
of its executables, so the README's test command needs nothing installed by hand beyond ``node``/``npm``.

Installs are serialised with a file lock: under ``pytest -n auto`` several workers ask for the same package
at once, and two ``npm install`` runs into one folder corrupt it. A finished install leaves a marker file; a
folder without it (an install that was interrupted) is removed and installed again."""

from __future__ import annotations

import fcntl
import shutil
import subprocess
from pathlib import Path

TOOLS = Path(__file__).resolve().parent.parent / ".test-tools" / "npm"
_DONE = ".installed"
_INSTALL_TIMEOUT_SECONDS = 600


class NpmToolMissing(Exception):
    """npm is not installed, or the package could not be installed; the message says which and why."""


def npm_tool(package: str, version: str, executable: str) -> Path:
    """The path of ``executable`` from ``package@version``, installing the package on first use."""
    folder = TOOLS / f"{package.replace('/', '+')}@{version}"
    binary = folder / "node_modules" / ".bin" / executable
    if (folder / _DONE).is_file() and binary.exists():
        return binary
    npm = shutil.which("npm")
    if npm is None:
        raise NpmToolMissing(f"the tests need {package}@{version} from the npm registry, and npm is not on PATH")
    TOOLS.mkdir(parents=True, exist_ok=True)
    with open(TOOLS / f".{folder.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (folder / _DONE).is_file() and binary.exists():
            return binary
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        completed = subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", "--no-save", "--prefix", str(folder), f"{package}@{version}"],
            capture_output=True,
            text=True,
            timeout=_INSTALL_TIMEOUT_SECONDS,
        )
        if completed.returncode != 0 or not binary.exists():
            raise NpmToolMissing(
                f"npm install {package}@{version} failed (exit {completed.returncode}); "
                f"no {executable} in {binary.parent}:\n{completed.stdout[-2000:]}\n{completed.stderr[-2000:]}"
            )
        (folder / _DONE).write_text(f"{package}@{version}\n")
    return binary

"""The command line ends a process that loaded temporalio's native runtime without finalising the interpreter
(temporalio/sdk-python#300: its threads can abort finalisation with SIGABRT), and still exits with the
command's own code after the shutdown and exit hooks ran and the streams were flushed."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from replaytest.cli import _exit_code


def _run(argv: list[str], *, load_runtime: bool) -> subprocess.CompletedProcess[str]:
    script = textwrap.dedent(
        f"""
        import atexit, sys, threading
        if {load_runtime!r}:
            import temporalio.bridge.temporal_sdk_bridge  # what a Temporal import or replay loads
        atexit.register(lambda: print("atexit hook ran", flush=True))
        class Sentinel:  # freed only if the interpreter finalises (module globals cleared)
            def __del__(self):
                sys.stdout.write("finalised\\n")
                sys.stdout.flush()
        kept = Sentinel()
        # A non-daemon thread still working when the command returns: finalisation waits for it.
        threading.Thread(target=lambda: (__import__("time").sleep(0.3), print("thread finished"))).start()
        from replaytest.cli import main
        sys.argv = ["replaytest", *{argv!r}]
        main()
        """
    )
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("load_runtime", [False, True])
def test_exit_code_hooks_and_output_survive_the_early_exit(load_runtime: bool) -> None:
    done = _run(["--version"], load_runtime=load_runtime)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("replaytest, version ")
    assert lines[1:3] == ["thread finished", "atexit hook ran"]
    # Finalisation is skipped exactly when the native runtime was loaded.
    assert ("finalised" in lines) is (not load_runtime)


def test_a_failing_command_keeps_its_exit_code_and_message() -> None:
    done = _run(["import", "temporal", "--address", "127.0.0.1:1", "--out", "unused"], load_runtime=True)
    assert done.returncode == 2
    assert "127.0.0.1:1" in done.stderr
    assert "atexit hook ran" in done.stdout


def test_exit_codes_are_those_sys_exit_gives() -> None:
    assert _exit_code(None) == 0
    assert _exit_code(3) == 3
    assert _exit_code("a message") == 1

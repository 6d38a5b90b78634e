"""``main()``, the console script: runs the click group as a process and ends it with the command's exit
code, past engines' native runtimes that could abort a finalising interpreter."""

from __future__ import annotations

import sys

from replaytest.cli.shared import cli

# temporalio's native runtime keeps Rust threads that may take the GIL while the interpreter finalises, which
# aborts a process whose command had already finished and printed its result (SIGABRT instead of the exit
# code; temporalio/sdk-python#300, seen once in CI after a refused connection). A command that loaded it
# ends without finalising, after running the exit hooks and flushing the standard streams itself.
_NATIVE_RUNTIME_MODULES = ("temporalio.bridge.temporal_sdk_bridge",)


def _exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)  # sys.exit("message"): what the interpreter would print, and exit 1
    return 1


def _end_past_native_runtimes(code: object) -> None:
    if not any(name in sys.modules for name in _NATIVE_RUNTIME_MODULES):
        return
    import atexit
    import os
    import threading

    status = _exit_code(code)
    # What finalisation would do before the native threads can bite: wait for non-daemon threads and run
    # threading's shutdown hooks (the Temporal replayer closes its Replayers there), then the atexit hooks.
    shutdown_threads = getattr(threading, "_shutdown", None)
    if shutdown_threads is not None:
        shutdown_threads()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can be said there
            pass
    os._exit(status)


def main() -> None:
    try:
        cli.main(prog_name="replaytest")
    except KeyboardInterrupt:  # pragma: no cover - interactive only
        sys.exit(130)
    except SystemExit as stop:
        _end_past_native_runtimes(stop.code)
        raise

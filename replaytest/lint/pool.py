"""Summarising many files at once: serially, or in a process pool when that finishes sooner. ``default_workers``
weighs the estimated work against the CPUs idle while the run screened its files (``CpuMeter``); forked workers
inherit the collector and the run's context instead of building their own."""

from __future__ import annotations

import gc
import math
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from replaytest.config import Config
from replaytest.lint import summarise
from replaytest.lint.context import LintContext
from replaytest.lint.discovery import SourceFile
from replaytest.lint.model import (
    ModuleSummary,
)
from replaytest.lint.profile import FrameworkProfile
from replaytest.lint.rule import Rule

_WORKER_CONTEXT: LintContext | None = None


def _init_worker(config: Config, profiles: Sequence[FrameworkProfile], rules: Sequence[type[Rule]]) -> None:
    global _WORKER_CONTEXT
    _WORKER_CONTEXT = LintContext(config, profiles, rules)


def _summarise_job(job: tuple[str, str, bool, bytes]) -> ModuleSummary:
    assert _WORKER_CONTEXT is not None
    return summarise.summarise_source(_WORKER_CONTEXT, *job)


def summarise_all(
    context: LintContext, pending: list[tuple[SourceFile, str, bytes]], jobs: int | None, notes: list[str],
    progress: Callable[[int, int], None] | None = None, meter: CpuMeter | None = None,
) -> list[ModuleSummary]:
    """Summaries of the files to parse, in order; ``progress(done, total)`` after each one. ``meter``
    says how much CPU was idle while the run got here (``default_workers``)."""
    total = len(pending)

    def counted(summaries: Iterable[ModuleSummary]) -> list[ModuleSummary]:
        done: list[ModuleSummary] = []
        for summary in summaries:
            done.append(summary)
            if progress is not None:
                progress(len(done), total)
        return done

    job_args = [(str(source.path), source.module, source.is_package, data) for source, _, data in pending]
    if jobs is not None:
        # The user asked for this many workers: honour it whenever there are two files to share out.
        workers = min(jobs, len(job_args))
    elif len(job_args) < 2:
        workers = 1
    else:
        spare = meter.spare() if meter is not None else None
        capacity = 1 + spare if spare is not None else float(idle_cpus())
        workers = default_workers(sum(len(job[3]) for job in job_args), len(job_args), capacity)
    if workers > 1:
        try:
            return counted(_pooled(context, job_args, workers))
        except Exception as error:  # a worker died or pools are unavailable here: finish serially, same results
            notes.append(f"process pool failed ({error!r}); continuing serially")
    return counted(summarise.summarise_source(context, *job) for job in job_args)


def _pooled(context: LintContext, job_args: list[tuple[str, str, bool, bytes]], workers: int) -> Iterator[ModuleSummary]:
    """The summaries of ``job_args`` from a pool of ``workers`` processes, in order, as they arrive.

    Where processes fork (and no other thread runs, which forking would not copy safely), the workers
    inherit this run's context (frozen for the garbage collector) and the collector's modules instead of
    importing them and building a context each (with the libcst parser this cost 0.2 s CPU per worker).
    The largest files go first, so the last chunk to finish is a small one."""
    global _WORKER_CONTEXT
    import multiprocessing
    import threading  # only a pool needs it: a serial run never imports it

    order = sorted(range(len(job_args)), key=lambda index: -len(job_args[index][3]))
    chunk = max(1, len(job_args) // (workers * 8))
    inherit = "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1
    froze = False
    options: dict[str, Any]
    if inherit:
        import replaytest.lint.collector  # noqa: F401  (loaded once here, inherited by every worker)

        _WORKER_CONTEXT = context
        options = {"mp_context": multiprocessing.get_context("fork")}
        # Frozen, the objects the workers inherit are never visited by their garbage collector, so the
        # pages holding them stay shared instead of being copied into every worker: --jobs 2 on 785 files
        # took 1.64 s CPU without, 1.52 s with (serial: 1.48 s). A host program's own freeze is left alone.
        froze = gc.get_freeze_count() == 0
        if froze:
            gc.freeze()
    else:
        rule_classes = [type(rule) for rule in context.rules.values()]
        options = {"initializer": _init_worker, "initargs": (context.config, context.given_profiles, rule_classes)}
    try:
        with process_pool(max_workers=workers, **options) as pool:
            results: dict[int, ModuleSummary] = {}
            arrived = pool.map(_summarise_job, [job_args[index] for index in order], chunksize=chunk)
            next_index = 0
            for index, summary in zip(order, arrived):
                results[index] = summary
                while next_index in results:
                    yield results.pop(next_index)
                    next_index += 1
    finally:
        if inherit:
            _WORKER_CONTEXT = None
            if froze:
                gc.unfreeze()


def process_pool(**options: Any) -> Any:
    """A ``concurrent.futures.ProcessPoolExecutor``, imported only by runs that start one."""
    from concurrent.futures import ProcessPoolExecutor

    return ProcessPoolExecutor(**options)


# What summarising costs, and what a worker costs, for ``default_workers`` (measured on Temporal's samples,
# two cores at load 2-3): CPython's parse and the collector take 0.27-0.33 microseconds of CPU a byte (0.13 s
# for the 482,310 bytes of its 228 orchestration modules; with libcst's parse it was 2.0). A forked worker
# costs about 0.023 s (fork, copy-on-write pages, queue traffic, its exit), counted here at twice that; so a
# pool only pays from about a megabyte of orchestration code.
SECONDS_PER_BYTE = 0.3e-6


WORKER_COST_S = 0.05


# A pool must promise to save this share of the serial estimate: the estimate can be off, serial cannot lose.
POOL_MARGIN = 0.2


def default_workers(total_bytes: int, files: int, capacity: float) -> int:
    """How many processes summarise ``files`` files of ``total_bytes`` soonest, given ``capacity`` CPUs
    (the one this run is using plus the idle ones). Serially that takes E = bytes x SECONDS_PER_BYTE; with
    w workers taking chunks as they come, about E / min(w, capacity) + w x WORKER_COST_S. One worker
    (in-process, no pool) unless a pool saves at least POOL_MARGIN of E."""
    estimate = total_bytes * SECONDS_PER_BYTE
    best, best_time = 1, estimate
    for workers in range(2, min(files, math.ceil(capacity)) + 1):
        elapsed = estimate / min(workers, capacity) + workers * WORKER_COST_S
        if elapsed < best_time:
            best, best_time = workers, elapsed
    return best if best_time <= (1 - POOL_MARGIN) * estimate else 1


class CpuMeter:
    """Idle time of the CPUs this process may run on, between its creation and ``spare()`` (Linux,
    ``/proc/stat``): how many CPUs a pool could have now without taking them from anyone. The run is busy
    on one CPU meanwhile, so that one counts as busy. The load average is no substitute: it trails the
    last minute and counts this process and its own previous runs (measured: a default run chose serial at
    load 1.6 on two idle-but-for-us cores)."""

    STAT_PATH = "/proc/stat"
    MIN_WINDOW_S = 0.05  # /proc/stat counts in ticks of 10 ms: shorter windows say too little

    def __init__(self) -> None:
        self._cpus = {f"cpu{index}".encode() for index in _affinity()}
        self._started = time.monotonic()
        self._idle_at_start = self._idle_seconds()

    def _idle_seconds(self) -> float | None:
        try:
            with open(self.STAT_PATH, "rb") as handle:
                lines = handle.read().splitlines()
            ticks = 0
            for line in lines[1:]:
                fields = line.split()
                if not fields or not fields[0].startswith(b"cpu"):
                    break
                if fields[0] in self._cpus:
                    ticks += int(fields[4]) + int(fields[5])  # idle, iowait
            return ticks / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError, AttributeError):
            return None

    def spare(self) -> float | None:
        """Idle CPUs since creation (0.0 up to the number of CPUs); None when not measurable."""
        elapsed = time.monotonic() - self._started
        idle = self._idle_seconds()
        if idle is None or self._idle_at_start is None or elapsed < self.MIN_WINDOW_S:
            return None
        return max(0.0, min(float(len(self._cpus)), (idle - self._idle_at_start) / elapsed))


def idle_cpus() -> int:
    """Without ``/proc/stat``: the CPUs this process may run on, less the load already on them (a worker on a
    busy core only adds start-up and pickling to the same CPU time: measured 7.7 s parallel against 4.7 s
    serial on two cores at load 11)."""
    cpus = _available_cpus()
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # not on Unix: no load figure, assume idle
        return cpus
    return max(1, min(cpus, int(cpus - load + 0.5)))


def _available_cpus() -> int:
    return len(_affinity())


def _affinity() -> list[int]:
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return list(range(os.cpu_count() or 1))

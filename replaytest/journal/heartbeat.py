"""``Heartbeat``: keeps a worker's leases alive while its executions run, from one daemon thread.

Without it a lease is extended only when a command is committed, so a step that runs longer than
``lease_s`` (retries and backoff pauses included) lets another worker claim the run and perform the
step again, and the slow worker's result is fenced off. With it, a lease means "this worker is alive",
not "this step is short": it lapses only when the worker process dies, is stopped or stalls (GIL held
by a C extension, the whole process paused) for longer than two thirds of ``lease_s``.

One thread per worker, started at the worker's first execution, renews every held lease every
``lease_s / 3`` through its own connection (``Journal.reopen``: a SQLite connection is not shared by
threads that each run transactions; WAL lets the renewal commit while the worker reads). A renewal is
fenced exactly like an append (``Journal.renew``). When it finds that another worker has claimed the
run, the lease is marked lost and no longer renewed; the worker gives the run up with
``StaleLeaseError`` before it starts another step's effect (``Lease.check``) or, at the latest, when its
next append is rejected.

Releasing a lease waits for a renewal in flight, so no renewal lands after the worker has parked or
finished the run. The thread exits after a few idle seconds (the next ``hold`` starts it again), on
``close`` and when its worker is garbage-collected; a killed process simply stops renewing and its
leases run out as before.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from typing import TYPE_CHECKING

from replaytest.journal.errors import StaleLeaseError

if TYPE_CHECKING:
    from replaytest.journal.store import Claim, Journal

IDLE_EXIT_S = 5.0  # how long the thread outlives the last lease it held (saves restarts between executions)


class Lease:
    """One execution's hold on its run's lease, renewed by a ``Heartbeat`` until released.

    ``lost`` is the ``StaleLeaseError`` a renewal met (another worker claimed the run), else None;
    ``renewals`` counts the renewals that succeeded.
    """

    def __init__(self, owner: Heartbeat, claim: Claim, lease_s: float, interval: float) -> None:
        self.claim = claim
        self.lease_s = lease_s
        self.interval = interval
        self.next_beat = time.monotonic() + interval
        self.lost: StaleLeaseError | None = None
        self.renewals = 0
        self._owner = owner

    def check(self) -> None:
        """Raise ``StaleLeaseError`` if the heartbeat found the run taken over: called before a step's
        effect, so a worker that already knows it lost the run does not perform one more effect."""
        lost = self.lost
        if lost is not None:
            raise StaleLeaseError(lost.run_id, lost.epoch, lost.current)

    def release(self) -> None:
        """Stop renewing; returns once no renewal of this lease can happen any more."""
        self._owner._release(self)

    def __enter__(self) -> Lease:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


class Heartbeat:
    """Renews held leases of ``journal``'s runs every ``lease_s / 3`` from a daemon thread.

    ``journal`` must be ``shareable`` (a file): the thread opens its own connection with
    ``journal.reopen()``, lazily, at the first renewal that falls due. ``last_error`` is the last
    database error a renewal met (it is retried at the next beat; the lease may run out meanwhile,
    and fencing then stops the worker as it would without a heartbeat).
    """

    def __init__(self, journal: Journal, *, idle_exit_s: float = IDLE_EXIT_S) -> None:
        if not journal.shareable:
            raise ValueError("a heartbeat needs a journal file: an in-memory journal has no second connection")
        self.journal = journal
        self.idle_exit_s = idle_exit_s
        self.last_error: Exception | None = None
        # Reentrant: a garbage-collected worker's finalizer may call close() on the thread that holds it.
        self._cond = threading.Condition(threading.RLock())
        self._held: list[Lease] = []  # one per execution in flight: one entry, rarely more
        self._thread: threading.Thread | None = None
        self._idle = False  # the thread waits with nothing held: a new lease must wake it
        self._closed = False

    @property
    def running(self) -> bool:
        """Whether the heartbeat thread is alive."""
        thread = self._thread
        return thread is not None and thread.is_alive()

    @property
    def holding(self) -> int:
        """How many leases are being renewed (a lost or released one is not)."""
        return len(self._held)

    def hold(self, claim: Claim, lease_s: float) -> Lease:
        """Start renewing ``claim``'s lease (the first renewal after ``lease_s / 3``); release the
        returned ``Lease`` (it is a context manager) when the execution ends, however it ends."""
        lease = Lease(self, claim, lease_s, lease_s / 3)
        with self._cond:
            if self._closed:
                raise RuntimeError("the heartbeat is closed")
            self._held.append(lease)
            if not self.running:
                self._thread = threading.Thread(target=self._run, name=f"replaytest-heartbeat-{id(self):x}", daemon=True)
                self._thread.start()
            elif self._idle:
                self._cond.notify()
        return lease

    def _release(self, lease: Lease) -> None:
        # Taking the lock waits for a renewal in flight: after this, the lease is never renewed again.
        with self._cond:
            if lease in self._held:
                self._held.remove(lease)

    def close(self, timeout: float | None = 10.0) -> None:
        """Stop the thread (leases still held are no longer renewed) and wait for it up to ``timeout``."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
            thread = self._thread
        if timeout is not None and thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def _run(self) -> None:
        connection: Journal | None = None
        idle_since: float | None = None
        try:
            with self._cond:
                while not self._closed:
                    now = time.monotonic()
                    if not self._held:
                        idle_since = now if idle_since is None else idle_since
                        if now - idle_since >= self.idle_exit_s:
                            # Under the lock, so a hold() from now on starts a new thread.
                            self._thread = None
                            break
                        self._idle = True
                        self._cond.wait(idle_since + self.idle_exit_s - now)
                        self._idle = False
                        continue
                    idle_since = None
                    due = min(lease.next_beat for lease in self._held)
                    if due > now:
                        self._cond.wait(due - now)
                        continue
                    for lease in [lease for lease in self._held if lease.next_beat <= now]:
                        connection = self._renew(connection, lease)
        finally:
            with self._cond:
                if self._thread is threading.current_thread():
                    self._thread = None
            if connection is not None:
                connection.close()

    def _renew(self, connection: Journal | None, lease: Lease) -> Journal | None:
        """One fenced renewal, under the lock (see ``_release``). Returns the connection to keep using."""
        started = time.monotonic()
        lease.next_beat = started + lease.interval
        try:
            if connection is None:
                connection = self.journal.reopen()
            renewed = connection.renew(lease.claim, lease.lease_s)
        except StaleLeaseError as error:
            lease.lost = error
            self._held.remove(lease)
            return connection
        except sqlite3.Error as error:
            self.last_error = error
            return connection
        if renewed:
            lease.renewals += 1
        else:
            # The run was released under this claim without releasing the lease first: nothing to keep.
            self._held.remove(lease)
        return connection

"""The job runner: provisions reservations at their start and releases them at their end.

It keeps no schedule of its own. The database is the schedule: each round the runner
asks the service what is due, hands each job to a worker, and sleeps until the next
start or end. A change tells the runner when it may make work due (`note`); the runner
looks at the database again only then, so a booking for next week costs it nothing now.

After a restart there is nothing to rebuild: whatever passed while longhaul was down is
simply due (a late start, an end to release, a slot missed entirely), and reservations
left in provisioning or releasing by a crash are taken up again (drivers are
idempotent). A driver call that hangs is given up after `call_timeout_s` and recorded
as a failure, so nothing stays in provisioning forever.

When several processes serve one database, only the one holding `leader_lock` (an
exclusive lock on a file) runs jobs; the others keep trying to take it, so one takes
over if the leader dies. The others pass on the changes they make through a doorbell
(a Unix datagram socket beside the lock that the leader listens on), so a reservation
booked in any process starts on time; should a ring be lost, the leader still looks at
the database every `max_sleep_s`.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import socket
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO

from longhaul.control.drivers import Circuit, DriverError
from longhaul.control.service import Service
from longhaul.control.work import Job

log = logging.getLogger(__name__)


class JobRunner:
    def __init__(
        self,
        service: Service,
        max_sleep_s: float = 5.0,
        workers: int = 4,
        call_timeout_s: float = 120.0,
        leader_lock: Path | None = None,
    ) -> None:
        self.service = service
        self.leader_lock = leader_lock
        self._lock_file: IO[bytes] | None = None
        self.max_sleep_s = max_sleep_s
        self.call_timeout_s = call_timeout_s
        self._workers = ThreadPoolExecutor(workers, thread_name_prefix="longhaul-job")
        self._calls = ThreadPoolExecutor(workers, thread_name_prefix="longhaul-driver")
        self._busy: set[int] = set()
        self._busy_lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._noted: datetime | None = None
        """The earliest instant a change said may bring due work, since the last round."""
        self._next_look: datetime | None = None
        self._note_lock = threading.Lock()
        self._thread = threading.Thread(target=self._loop, name="longhaul-jobs", daemon=True)
        self._doorbell: Doorbell | None = None
        if leader_lock is not None:
            self._doorbell = Doorbell(leader_lock.with_suffix(".sock"), self.note)
        service.on_change = self.note_here_or_at_leader

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)
        self._workers.shutdown(wait=True, cancel_futures=True)
        self._calls.shutdown(wait=False, cancel_futures=True)
        self.service.driver.close()
        if self._doorbell is not None:
            self._doorbell.close()
        if self._lock_file is not None:
            self._lock_file.close()  # and with it the lock
            self._lock_file = None

    def note(self, due_at: datetime | None = None) -> None:
        """Something changed that may make work due at `due_at` (None: now)."""
        at = due_at or datetime.min.replace(tzinfo=UTC)
        with self._note_lock:
            self._noted = at if self._noted is None else min(self._noted, at)
        self._wake.set()

    def note_here_or_at_leader(self, due_at: datetime | None = None) -> None:
        """`note`, in this process if it runs the jobs, else in the one that does."""
        if self._doorbell is not None and not self.leading:
            self._doorbell.ring(due_at)
        else:
            self.note(due_at)

    def run_due(self) -> list[Future[None]]:
        """Start every job due now; the futures finish when the jobs do."""
        now = self.service.clock()
        with self._busy_lock:
            jobs = self.service.work.due(now, set(self._busy))
            self._busy.update(rid for rid, _ in jobs)
        return [self._workers.submit(self._run, rid, job) for rid, job in jobs]

    @property
    def leading(self) -> bool:
        """Whether this runner runs jobs (always, without a leader lock)."""
        return self.leader_lock is None or self._lock_file is not None

    def _lead(self) -> bool:
        """Take the leader lock if it is free; whether this runner now leads."""
        if self.leading:
            return True
        assert self.leader_lock is not None
        handle = self.leader_lock.open("ab")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            return False
        self._lock_file = handle
        if self._doorbell is not None:
            self._doorbell.listen()
        log.info("this process runs the jobs (pid %s)", os.getpid())
        return True

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._wake.clear()
            now = self.service.clock()
            with self._note_lock:
                noted, self._noted = self._noted, None
            try:
                if self._lead() and self._looks_due(now, noted):
                    self.run_due()
                    upcoming = self.service.work.next_due(now)
                    patience = now + timedelta(seconds=self.max_sleep_s)
                    self._next_look = min(upcoming, patience) if upcoming else patience
                elif noted is not None and self._next_look is not None:
                    self._next_look = min(self._next_look, noted)
            except Exception:
                log.exception("job round failed; trying again shortly")
                self._next_look = now + timedelta(seconds=self.max_sleep_s)
            wait_s = self.max_sleep_s
            if self._next_look is not None:
                wait_s = (self._next_look - self.service.clock()).total_seconds()
            self._wake.wait(max(0.0, min(self.max_sleep_s, wait_s)))

    def _looks_due(self, now: datetime, noted: datetime | None) -> bool:
        return (
            self._next_look is None
            or self._next_look <= now
            or (noted is not None and noted <= now)
        )

    def _run(self, reservation_id: int, job: Job) -> None:
        try:
            circuit = self.service.work.begin(reservation_id, job)
            if circuit is not None:
                error = self._call(job, circuit)
                self.service.work.finish(reservation_id, job, error)
        except Exception:
            log.exception("job %s for reservation %s failed", job, reservation_id)
        finally:
            with self._busy_lock:
                self._busy.discard(reservation_id)
            # What this job did may make more work due (a release after a late start).
            self.note()

    def _call(self, job: Job, circuit: Circuit) -> str | None:
        """Run the job's driver call; the error to record, or None when it worked."""
        driver = self.service.driver
        future = self._calls.submit(job.call, driver, circuit)
        try:
            future.result(timeout=self.call_timeout_s)
        except FutureTimeout:
            return f"the {driver.name} driver did not answer within {self.call_timeout_s:g} s"
        except DriverError as exc:
            return f"the {driver.name} driver failed: {exc}"
        except Exception as exc:
            log.exception("driver %s raised", driver.name)
            return f"the {driver.name} driver raised {type(exc).__name__}: {exc}"
        return None


class Doorbell:
    """How processes that do not run the jobs tell the one that does about a change.

    The leader binds a Unix datagram socket and, on a thread of its own, hands each
    datagram (the instant work may fall due, or empty for now) to `on_ring`. Ringing never
    blocks and never fails: with no leader listening, the datagram is simply dropped.
    """

    def __init__(self, path: Path, on_ring: Callable[[datetime | None], None]) -> None:
        self.path = path
        self.on_ring = on_ring
        self._socket: socket.socket | None = None
        self._sender = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._sender.setblocking(False)

    def ring(self, due_at: datetime | None) -> None:
        message = b"" if due_at is None else due_at.isoformat().encode()
        with contextlib.suppress(OSError):  # no leader yet, or its queue is full
            self._sender.sendto(message, str(self.path))

    def listen(self) -> None:
        """Answer rings from now on. Only the leader calls it, holding the lock, so a socket
        file left by an earlier leader is stale and can go."""
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            self.path.unlink(missing_ok=True)
            listener.bind(str(self.path))
        except OSError as exc:
            listener.close()
            why = "changes made in other processes wait for the next look at the database"
            log.warning("no doorbell at %s (%s): %s", self.path, exc, why)
            return
        self._socket = listener
        threading.Thread(
            target=self._answer, args=(listener,), name="longhaul-doorbell", daemon=True
        ).start()

    def close(self) -> None:
        self._sender.close()
        listener, self._socket = self._socket, None
        if listener is not None:
            # shutdown wakes the thread blocked in recv; close alone would not.
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()
            self.path.unlink(missing_ok=True)

    def _answer(self, listener: socket.socket) -> None:
        while True:
            try:
                message = listener.recv(64)
            except OSError:
                return
            if self._socket is not listener:
                return  # closed
            try:
                due_at = datetime.fromisoformat(message.decode()) if message else None
            except ValueError:
                continue  # not ours
            self.on_ring(due_at)

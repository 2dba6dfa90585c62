"""The audit log's writer: events queued by requests reach the table, in batches."""

import time

from longhaul.control import audit_log
from longhaul.control.audit_log import Entry, Writer

from .conftest import T0


def test_queued_events_are_written_by_the_thread_by_flush_and_by_stop(service):
    writer = Writer(service.db, interval_s=3600)  # the thread alone would wait an hour
    writer.start()
    writer.put(T0, Entry("alice", "POST /api/v1/reservations", "/api/v1/reservations", "::1"))
    writer.flush()
    assert [e.actor for e in audit_log.events(service.db)] == ["alice"]
    writer.put(T0, Entry("-", "GET /api/v1/reservations", "/api/v1/reservations", "::1", "401"))
    writer.stop()
    assert [e.outcome for e in audit_log.events(service.db)] == ["401", "ok"]


def test_the_thread_writes_what_queued_without_being_asked(service):
    writer = Writer(service.db, interval_s=0.01)
    writer.start()
    try:
        writer.put(T0, Entry("bob", "token.rotate", "bob", "cli"))
        for _ in range(500):  # bounded: at most 5 s
            if audit_log.events(service.db):
                break
            time.sleep(0.01)
        assert [e.action for e in audit_log.events(service.db)] == ["token.rotate"]
    finally:
        writer.stop()

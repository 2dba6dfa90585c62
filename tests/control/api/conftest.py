import threading

import pytest
from fastapi.testclient import TestClient

from longhaul.control.api.app import create_app
from longhaul.control.drivers import LogDriver
from longhaul.topology import usn


@pytest.fixture
def api(service):
    with TestClient(create_app(service)) as client:
        yield client


def auth(account):
    return {"Authorization": f"Bearer {account.token}"}


def slow_down_changes(service) -> tuple[threading.Event, threading.Event]:
    """Give `service` a device that, asked to change a circuit, sets the first event and
    waits (up to 30 s) for the test to set the second before it answers."""
    asked, answer = threading.Event(), threading.Event()

    class SlowDevice(LogDriver):
        def modify(self, circuit, previous):
            asked.set()
            assert answer.wait(30)
            super().modify(circuit, previous)

    service.driver = SlowDevice(usn(), service.driver.log_file)
    return asked, answer

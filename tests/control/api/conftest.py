import pytest
from fastapi.testclient import TestClient

from longhaul.control.api.app import create_app


@pytest.fixture
def api(service):
    with TestClient(create_app(service)) as client:
        yield client


def auth(account):
    return {"Authorization": f"Bearer {account.token}"}

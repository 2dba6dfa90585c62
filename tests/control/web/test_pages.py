"""The web pages in headless Chromium (Debian's, driven by Playwright) against a real server:
sign in, book through the form, see a refusal with its suggestions and take one, see the
availability view, cancel. No page may fetch anything from another host."""

import os
import shutil
from datetime import UTC, datetime, timedelta
from urllib.parse import urlparse

import pytest
from playwright.sync_api import Page, expect, sync_playwright

from ..live import LiveServer

CHROMIUM = shutil.which("chromium")
# Skipped only outside CI: there, `make test` installs chromium, and a missing one must fail.
pytestmark = pytest.mark.skipif(
    CHROMIUM is None and not os.environ.get("CI"),
    reason="Debian's chromium is missing (make setup-test installs it)",
)

# Flags for a headless, sandbox-less (we are root) Chromium that never calls home.
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]  # fmt: skip


@pytest.fixture
def server(tmp_path):
    with LiveServer(tmp_path) as live:
        yield live


@pytest.fixture
def page(server):
    outside: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        context = browser.new_context(viewport={"width": 1100, "height": 900})
        page = context.new_page()

        def only_local(route):
            if urlparse(route.request.url).hostname != "127.0.0.1":
                outside.append(route.request.url)
                route.abort()
            else:
                route.continue_()

        page.route("**/*", only_local)
        yield page
        browser.close()
    assert outside == [], f"the pages fetched from elsewhere: {outside}"


def sign_in(page: Page, server: LiveServer, token: str) -> None:
    page.goto(f"{server.url}/reserve")
    expect(page).to_have_url(f"{server.url}/login?next=/reserve")
    page.fill("input[name=token]", "not a token")
    page.click("button[type=submit]")
    expect(page.get_by_role("alert")).to_contain_text("That token matches no user.")
    page.fill("input[name=token]", token)
    page.click("button[type=submit]")
    expect(page).to_have_url(f"{server.url}/reserve")


def fill_reservation(page: Page, start: datetime, mbps: int) -> None:
    page.select_option("select[name=src_node]", "ornl-e300")
    page.select_option("select[name=src_port]", "1/0")
    page.select_option("select[name=dst_node]", "sunnyvale-e300")
    page.fill("input[name=bandwidth_mbps]", str(mbps))
    page.fill("input[name=start]", start.strftime("%Y-%m-%dT%H:%M:%S"))
    page.fill("input[name=duration]", "2h")
    page.fill("input[name=description]", "browser test")


def test_book_through_the_form_and_follow_it(page, server, tmp_path):
    token = server.add_user("alice")
    sign_in(page, server, token)
    # The port list keeps to the chosen switch.
    page.select_option("select[name=src_node]", "chicago-cdci")
    assert (
        page.locator("select[name=src_port] option[data-node=ornl-e300]").first.get_attribute(
            "hidden"
        )
        is not None
    )

    start = (datetime.now(UTC) + timedelta(days=1)).replace(minute=0, second=0, microsecond=0)
    fill_reservation(page, start, 9000)
    page.click("button.primary")
    expect(page.locator("#state")).to_have_text("scheduled")
    expect(page.locator("#history tbody tr")).to_have_count(2)
    expect(page.locator("dl.facts")).to_contain_text("ornl-host1 → ornl-e300")
    page.screenshot(path=str(tmp_path / "reservation.png"), full_page=True)
    assert (tmp_path / "reservation.png").stat().st_size > 10_000

    # The same again does not fit behind that port: the refusal offers the earliest start.
    page.goto(f"{server.url}/reserve")
    fill_reservation(page, start, 9000)
    page.click("button.primary")
    alert = page.get_by_role("alert")
    expect(alert).to_contain_text("is not free")
    later = (start + timedelta(hours=2)).strftime("%Y-%m-%d %H:%M UTC")
    suggestion = page.get_by_role("button", name=f"Book it at the earliest start, {later}")
    suggestion.click()
    expect(page.locator("#state")).to_have_text("scheduled")
    expect(page.locator("dl.facts")).to_contain_text(later)

    page.goto(f"{server.url}/reservations")
    expect(page.locator("tbody tr")).to_have_count(2)
    page.click("a[href='/reservations/1']")
    page.click("button.danger")
    expect(page.locator("#state")).to_have_text("cancelled")
    expect(page.locator("button.danger")).to_have_count(0)


def test_the_network_map_and_the_availability_view(page, server, tmp_path):
    token = server.add_user("bob")
    sign_in(page, server, token)
    page.goto(f"{server.url}/")
    expect(page.locator("svg.map line.link")).to_have_count(16)
    expect(page.locator("svg.map text.site")).to_have_count(5)

    start = (datetime.now(UTC) + timedelta(days=1)).replace(minute=0, second=0, microsecond=0)
    page.goto(f"{server.url}/availability?src=ORNL&dst=SUNNYVALE&bandwidth_mbps=9600&duration=2h"
              f"&start={start.strftime('%Y-%m-%dT%H:%M')}&window_days=2")  # fmt: skip
    chart = page.locator("#availability-chart")
    expect(chart).to_be_visible()
    expect(chart.locator("path.free")).to_have_count(1)
    expect(chart.locator("rect.feasible")).to_have_count(1)
    expect(page.locator("#widest")).to_have_text("9,600 Mb/s")
    chart.screenshot(path=str(tmp_path / "availability.png"))
    assert (tmp_path / "availability.png").stat().st_size > 5_000

    bad = page.goto(f"{server.url}/availability?src=NOWHERE&dst=SUNNYVALE&bandwidth_mbps=10")
    assert bad is not None and bad.status == 200
    expect(page.get_by_role("alert")).to_contain_text("no node or site named 'NOWHERE'")


def test_the_api_page_works_offline_and_sends_a_token(page, server):
    token = server.add_user("carol")
    page.goto(f"{server.url}/api/docs")
    # Swagger UI, from longhaul's own copy (the fixture refuses other hosts), reads the
    # OpenAPI document and offers the bearer token.
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("longhaul")
    expect(
        page.locator("#operations-reservations-list_reservations_api_v1_reservations_get")
    ).to_be_visible()
    page.click(".swagger-ui .auth-wrapper button.authorize")
    dialog = page.locator(".modal-ux")
    dialog.locator("input").fill(token)
    dialog.locator("button.authorize").click()
    dialog.locator("button.btn-done").click()
    page.click(
        "#operations-reservations-list_reservations_api_v1_reservations_get .opblock-summary"
    )
    page.get_by_role("button", name="Execute").click()
    expect(page.locator(".live-responses-table tbody .response-col_status")).to_have_text("200")

"""In Chromium against a real stack (tests/browser harness): /usage/ draws its chart and table for a job that ran,
and /notifications/ adds an endpoint, shows its secret once, and a ping reaches a real receiver, signed."""

from __future__ import annotations

import re
import time

import httpx

from notifications.signing import SIGNATURE_HEADER, TIMESTAMP_HEADER, verify
from tests.browser.conftest import browser, console, log_in, page, screenshot, stack  # noqa: F401  (fixtures)
from tests.e2e.stack import wait_for
from tests.notifications.receiver import Receiver


def _finished_job(stack) -> int:  # noqa: F811
    token = stack.manage("create_token", "alice", "--scopes", "read,write").stdout.strip().splitlines()[-1]
    headers = {"Authorization": f"Bearer {token}"}
    body = {"group": "acme-research", "name": "usage-chart", "nodes": 1, "accelerators_per_node": 2,
            "time_limit": "5", "command": "sleep 2"}  # fmt: skip
    job = httpx.post(stack.url("/api/v1/jobs/"), json=body, headers=headers, timeout=10).json()

    def done():
        state = httpx.get(stack.url(f"/api/v1/jobs/{job['id']}/"), headers=headers, timeout=10).json()["state"]
        return state == "COMPLETED"

    wait_for(done, timeout=60)
    return job["id"]


def test_usage_page_draws_the_chart_and_the_table(page, stack):  # noqa: F811
    from playwright.sync_api import expect

    _finished_job(stack)
    stack.manage("sacctmgr", "modify", "group", "acme-research", "set", "GrpTRESMins=accelerator=100000")
    log_in(page, "alice")
    page.goto("/usage/?start=-1h&by=user&step=hour")
    row = page.locator('#usage-table tr[data-name="alice"]')
    expect(row).to_be_visible()
    expect(row.locator("td").last).to_have_text("1")
    expect(page.locator("#usage-chart canvas").first).to_be_visible()
    expect(page.locator("#usage-chart .u-legend")).to_contain_text("acme-research")
    expect(page.locator(".budget-chart canvas").first).to_be_visible()
    expect(page.locator("#budget-table")).to_contain_text("acme-research")
    screenshot(page, "h11b-usage")
    assert page.locator("a", has_text="Export CSV").get_attribute("href").startswith("/usage/export.csv?")


def test_a_ping_from_the_notifications_page_reaches_a_receiver_signed(page, stack):  # noqa: F811
    from playwright.sync_api import expect

    receiver = Receiver().start()
    try:
        log_in(page, "bob")
        page.goto("/notifications/")
        page.get_by_label("URL").fill(receiver.url)
        page.get_by_role("button", name="Add endpoint").click()
        secret = page.locator("#new-secret").input_value()
        assert secret.startswith("whsec_")
        page.goto("/notifications/")
        assert secret not in page.content()
        page.get_by_role("button", name="Ping").click()
        wait_for(lambda: receiver.requests, timeout=30)
        (request,) = receiver.requests
        headers = {k.lower(): v for k, v in request.headers.items()}
        assert verify(
            secret, headers[TIMESTAMP_HEADER.lower()], headers[SIGNATURE_HEADER.lower()], request.body, time.time()
        )
        deadline = time.monotonic() + 15
        while "delivered" not in page.locator("#delivery-log").inner_text() and time.monotonic() < deadline:
            page.wait_for_timeout(300)
            page.reload()
        expect(page.locator("#delivery-log")).to_contain_text(re.compile(r"ping[\s\S]*delivered"))
        screenshot(page, "h11b-notifications")
    finally:
        receiver.stop()

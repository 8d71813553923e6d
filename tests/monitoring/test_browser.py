"""The job page in Chromium against a real stack: the health panel refreshes itself to flag a sleeping job's idle
accelerators, and uPlot draws its charts — with no console errors. Skips without Chromium (see tests/browser)."""

from __future__ import annotations

import os

import pytest

from tests.browser.conftest import browser, console, log_in, page, screenshot  # noqa: F401  (fixtures)
from tests.browser.test_portal import submit_job, watch_states
from tests.e2e.stack import Stack

pytestmark = pytest.mark.slow
PORT = 18311  # h11a's range: several stacks run on this machine at once


@pytest.fixture(scope="module")
def stack(browser, tmp_path_factory):  # noqa: F811
    stack = Stack(tmp_path_factory.mktemp("monitoring-stack"))
    stack.env.update({"AIPOOL_MONITOR_SECONDS": "1", "AIPOOL_IDLE_MINUTES": "0.05"})
    stack.port = int(os.environ.get("AIPOOL_TEST_MONITORING_PORT", PORT))
    try:
        yield stack.serve_demo(static=True)
    finally:
        stack.close()


def test_a_sleeping_job_is_flagged_idle_on_its_page_with_charts(page):  # noqa: F811
    from playwright.sync_api import expect

    log_in(page, "alice")
    job_id = submit_job(page, group="acme-research", nodes=1, accelerators=1, command="sleep 60", name="idle-probe")
    watch_states(page, "RUNNING")
    health = page.locator("#job-health")
    expect(health).to_contain_text("Idle accelerators:", timeout=30_000)
    expect(health.locator('[data-rule="utilisation"]')).to_have_attribute("data-status", "bad")
    expect(health).to_contain_text("CPU utilisation stands in")
    page.reload()
    expect(page.locator(".mon-charts canvas").first).to_be_visible(timeout=15_000)
    screenshot(page, "monitoring-idle-job")
    page.get_by_role("button", name="Cancel job").click()
    expect(page.locator("#job-state")).to_have_text("CANCELLED")
    assert job_id > 0

"""/simulate/ in a real browser against the README's stack: upload a workload, the worker replays it, HTMX shows it."""

import re

from tests.browser.conftest import browser, console, log_in, page, screenshot, stack  # noqa: F401 - fixtures
from tests.simulation.helpers import DATA


def test_staff_upload_a_workload_and_watch_the_report_arrive(page):  # noqa: F811
    log_in(page, "admin")
    page.get_by_role("link", name="Simulate").click()
    page.wait_for_url(re.compile(r"/simulate/$"))
    page.get_by_label("Source").select_option("csv")
    page.get_by_label("Upload").set_input_files(str(DATA / "jobs.csv"))
    page.get_by_role("button", name="Run replay").click()
    page.wait_for_url(re.compile(r"/simulate/\d+/$"))
    table = page.locator("table.sim-table")
    table.wait_for(timeout=60_000)  # HTMX polls until the worker has finished
    assert table.locator("tbody tr").count() == 4
    plot = page.locator("img[alt^='times plot']")
    plot.scroll_into_view_if_needed()  # lazy: it loads when seen
    page.wait_for_function(
        "() => { const img = document.querySelector(\"img[alt^='times plot']\"); "
        "return img && img.complete && img.naturalWidth > 0 }",
        timeout=30_000,
    )
    screenshot(page, "simulation-report")

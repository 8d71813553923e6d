"""Browser tests: Playwright driving Debian's Chromium against a real aipool stack (gunicorn + Celery worker).

Without Chromium (or the playwright package) they skip, unless AIPOOL_REQUIRE_BROWSER=1 (CI), where they fail.
Install Chromium with ``bash scripts/install-chromium``. Screenshots land in test-artifacts/screenshots/.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.e2e.stack import ROOT, Stack

# Debian's Chromium; AIPOOL_CHROMIUM points elsewhere (another distribution's path).
CHROMIUM = os.environ.get("AIPOOL_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SCREENSHOTS = ROOT / "test-artifacts" / "screenshots"
DEMO_PASSWORD = "aipool-demo"


def missing_browser(chromium: str = CHROMIUM) -> str | None:
    """Why the browser tests cannot run here, or None."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (pip install -e '.[test]')"
    if not os.access(chromium, os.X_OK):
        return f"{chromium} is missing (bash scripts/install-chromium)"
    return None


def skip_or_fail(missing: str) -> None:
    """A developer without Chromium skips; CI (AIPOOL_REQUIRE_BROWSER=1) fails rather than pass without testing."""
    if os.environ.get("AIPOOL_REQUIRE_BROWSER") == "1":
        pytest.fail(f"browser tests are required here (AIPOOL_REQUIRE_BROWSER=1) but {missing}", pytrace=False)
    pytest.skip(missing)


# Module scope, not session: Playwright's sync API keeps an event loop running in the main thread while it is open,
# and other apps' page tests (and the gateway's asyncio tests) share the session; each module opens and closes its own.
@pytest.fixture(scope="module")
def browser():
    missing = missing_browser()
    if missing:
        skip_or_fail(missing)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def stack(browser, tmp_path_factory):
    """The README's embedded default: demo data, a worker that schedules and runs jobs, gunicorn serving pages."""
    stack = Stack(tmp_path_factory.mktemp("browser-stack"))
    try:
        yield stack.serve_demo(static=True)
    finally:
        stack.close()


class Console:
    """Console errors and uncaught exceptions of every page; a test fails on any it did not expect."""

    def __init__(self):
        self.errors: list[str] = []
        self.allowed: list[re.Pattern] = []

    def record(self, text: str) -> None:
        if not any(pattern.search(text) for pattern in self.allowed):
            self.errors.append(text)

    def allow(self, pattern: str) -> None:
        self.allowed.append(re.compile(pattern))


@pytest.fixture
def console():
    return Console()


@pytest.fixture
def page(browser, stack, console):
    context = browser.new_context(viewport={"width": 1440, "height": 900}, base_url=stack.url(""))
    context.set_default_timeout(15_000)
    page = context.new_page()
    page.on("console", lambda message: console.record(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: console.record(f"uncaught: {error}"))
    page.on("dialog", lambda dialog: dialog.accept())
    yield page
    context.close()
    assert console.errors == [], f"browser console errors: {console.errors}"


def screenshot(page, name: str, **kwargs) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True, animations="disabled", **kwargs)
    return path


def log_in(page, username: str, password: str = DEMO_PASSWORD) -> None:
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(re.compile(r"/$"))

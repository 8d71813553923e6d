"""The services pages in a real browser (Playwright + Chromium) against a real stack: a YAML with a mistake shows the
field's error and keeps the text; the fixed YAML creates the service, whose page then shows its replicas coming up
(HTMX polling) and a new key exactly once."""

from __future__ import annotations

import re

import pytest

from tests.browser.conftest import browser, console, log_in, page, screenshot, stack  # noqa: F401 (fixtures)
from tests.inference.helpers import seed_yaml

pytestmark = pytest.mark.slow

MAKE_MODEL = """
from django.contrib.auth.models import User
from tenants.models import Group
from tests.inference.helpers import make_model
make_model(User.objects.get(username="alice"), Group.objects.get(name="acme-research"))
"""


@pytest.fixture(scope="module")
def model(stack):  # noqa: F811
    stack.manage("shell", "-c", MAKE_MODEL)
    yield
    # Replica jobs outlive the stack's worker (the local backend's runs are detached): stop them here.
    from tests.conftest import _stop_leftover_jobs

    _stop_leftover_jobs(stack.data_dir / "cluster")


def document(**replace) -> str:
    return seed_yaml(**{"  name: image-classifier\n": "  name: image-classifier\n  group: acme-research\n", **replace})


def test_apply_from_the_browser_and_watch_it_come_up(page, model, console):  # noqa: F811
    console.allow(r"status of 400")  # the refused document is answered 400, with the form and its errors
    log_in(page, "alice")
    page.goto("/services/")
    page.get_by_role("link", name="New service").click()
    page.get_by_label("InferenceService YAML").fill(document(**{"memory: 32Gi": "memory: 32Gx"}))
    page.get_by_role("button", name="Apply").click()
    alert = page.get_by_role("alert")
    assert "spec.resources.memory" in alert.inner_text() and "32Gx" in alert.inner_text()
    assert "memory: 32Gx" in page.get_by_label("InferenceService YAML").input_value()
    page.get_by_label("InferenceService YAML").fill(document())
    page.get_by_role("button", name="Apply").click()
    page.wait_for_url(re.compile(r"/services/\d+/$"))
    page.get_by_text("Service image-classifier created").wait_for()
    # The live part refreshes itself: the replica jobs appear without a reload.
    page.locator("#isvc-live").get_by_role("link", name=re.compile(r"^\d+$")).first.wait_for(timeout=60_000)
    page.get_by_label("New key").fill("browser")
    page.get_by_role("button", name="Create key").click()
    raw = page.locator(".isvc-raw-key").inner_text()
    assert raw.startswith("isk_")
    screenshot(page, "inference-service")
    page.reload()
    assert page.locator(".isvc-raw-key").count() == 0 and "browser" in page.content()

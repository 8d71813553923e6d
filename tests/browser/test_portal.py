"""The data scientist's day in a real Chromium: log in, submit, watch, read the log, wait on quota, cancel, tokens.

Each test logs in on its own page; they share one stack (module scope), so jobs of earlier tests may still hold
accelerators: every test makes the state it needs and cleans up the jobs it leaves running.
"""

from __future__ import annotations

import re
import time

import pytest

from tests.browser.conftest import log_in, screenshot

pytestmark = pytest.mark.slow

STATE = re.compile(r"^(PENDING|RUNNING|COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY)$")


def expect(locator):
    from playwright.sync_api import expect as playwright_expect

    return playwright_expect(locator)


def fill_job_form(
    page, *, group: str, nodes: int, accelerators: int, command: str, time_limit: str = "10", name: str = "train"
) -> None:
    page.goto("/jobs/new/")
    page.get_by_label("Group (account)").select_option(group)
    page.get_by_label("Name", exact=True).fill(name)
    page.get_by_label("Nodes", exact=True).fill(str(nodes))
    page.get_by_label("Accelerators per node").fill(str(accelerators))
    page.get_by_label("Time limit").fill(time_limit)
    page.get_by_label("Command line").fill(command)


def submit_job(page, **fields) -> int:
    fill_job_form(page, **fields)
    page.get_by_role("button", name="Submit job").click()
    page.wait_for_url(re.compile(r"/jobs/\d+/$"))
    return int(page.url.rstrip("/").rsplit("/", 1)[1])


def watch_states(page, until: str, timeout: float = 60) -> list[str]:
    """The states the job page's badge shows, in order, until `until` (the page updates itself; no reloads)."""
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    badge = page.locator("#job-state")
    while time.monotonic() < deadline:
        text = badge.inner_text().strip()
        if STATE.match(text) and (not seen or seen[-1] != text):
            seen.append(text)
        if text == until:
            return seen
        time.sleep(0.1)
    raise AssertionError(f"job page never showed {until}; saw {seen}")


def cancel_from_its_page(page, job_id: int) -> None:
    page.goto(f"/jobs/{job_id}/")
    page.get_by_role("button", name="Cancel job").click()
    expect(page.locator("#job-state")).to_have_text("CANCELLED")


def test_login_shows_the_dashboard_with_pool_availability(page):
    page.goto("/")
    expect(page).to_have_url(re.compile(r"/accounts/login/"))
    screenshot(page, "01-login")
    log_in(page, "alice")
    expect(page.get_by_role("heading", name="Dashboard")).to_be_visible()
    expect(page.get_by_role("heading", name="Pool availability")).to_be_visible()
    expect(page.get_by_label("Leaf switch leaf0")).to_be_visible()
    expect(page.get_by_role("heading", name="acme-vision · acme")).to_be_visible()
    screenshot(page, "02-dashboard-empty")


def test_submitted_job_goes_from_pending_to_completed_and_its_log_streams(page):
    log_in(page, "alice")
    fill_job_form(
        page,
        group="acme-research",
        nodes=1,
        accelerators=2,
        command="echo hello from aipool; sleep 4; echo training done >&2; echo bye",
        name="resnet-finetune",
    )
    expect(page.locator("#verdict")).to_contain_text("Would start now")
    screenshot(page, "03-submit-form")
    page.get_by_role("button", name="Submit job").click()
    page.wait_for_url(re.compile(r"/jobs/\d+/$"))
    seen = watch_states(page, "RUNNING")
    screenshot(page, "04-job-running")
    seen += watch_states(page, "COMPLETED")[1:] if seen[-1] != "COMPLETED" else []
    assert seen[-1] == "COMPLETED" and "RUNNING" in seen, seen
    timeline = page.locator(".timeline")
    for state in ("PENDING", "RUNNING", "COMPLETED"):
        expect(timeline).to_contain_text(state)
    expect(page.locator("#log-stdout")).to_contain_text("hello from aipool")
    expect(page.locator("#log-stdout")).to_contain_text("bye")
    page.get_by_role("tab", name="stderr").click()
    expect(page.locator("#log-stderr")).to_contain_text("training done")
    expect(page.get_by_role("button", name="Cancel job")).to_have_count(0)
    screenshot(page, "05-job-completed")


def test_over_quota_job_waits_on_assoc_grp_gres_and_explains_why(page):
    log_in(page, "alice")
    # acme-vision's GrpTRES is 16 accelerators: a 2 x 8 job fills it.
    blocker = submit_job(
        page,
        group="acme-vision",
        nodes=2,
        accelerators=8,
        command="sleep 300",
        name="llm-pretrain",
        time_limit="4:00:00",
    )
    expect(page.locator("#job-state")).to_have_text("RUNNING", timeout=30_000)
    fill_job_form(page, group="acme-vision", nodes=1, accelerators=4, command="python train.py", name="vit-eval")
    verdict = page.locator("#verdict")
    expect(verdict).to_contain_text("Would wait: AssocGrpGRES")
    expect(verdict).to_contain_text("16 of 16")
    expect(verdict).to_contain_text("Estimated start")
    screenshot(page, "06-submit-would-wait")
    page.get_by_role("button", name="Submit job").click()
    page.wait_for_url(re.compile(r"/jobs/\d+/$"))
    waiting = int(page.url.rstrip("/").rsplit("/", 1)[1])
    expect(page.locator("#job-state")).to_have_text("PENDING")
    explanation = page.locator("#job-explain")
    expect(explanation).to_contain_text("Why is it pending?")
    expect(explanation).to_contain_text("AssocGrpGRES", timeout=20_000)
    expect(page.locator("#job-live")).to_contain_text("AssocGrpGRES", timeout=20_000)  # the pass recorded it too
    screenshot(page, "07-job-pending-explained")

    page.goto("/")
    expect(page.locator("#dashboard-usage")).to_contain_text("16 / 16")
    expect(page.locator("#dashboard-usage .level-critical").first).to_be_visible()
    screenshot(page, "08-dashboard-busy")
    page.goto("/quota/")
    expect(page.get_by_role("heading", name=re.compile("acme-vision"))).to_be_visible()
    screenshot(page, "09-quota")
    page.goto("/jobs/?state=PENDING,RUNNING")
    expect(page.locator("#job-rows")).to_contain_text("AssocGrpGRES")
    screenshot(page, "10-jobs-list")

    cancel_from_its_page(page, waiting)
    cancel_from_its_page(page, blocker)


def test_a_suggestion_opens_a_prefilled_submission(page):
    log_in(page, "alice")
    blocker = submit_job(page, group="acme-vision", nodes=2, accelerators=8, command="sleep 300")
    expect(page.locator("#job-state")).to_have_text("RUNNING", timeout=30_000)
    waiting = submit_job(page, group="acme-vision", nodes=1, accelerators=4, command="python train.py --epochs 3")
    expect(page.locator("#job-state")).to_have_text("PENDING")
    page.goto(f"/jobs/new/?from={waiting}&accelerators_per_node=2")
    expect(page.get_by_label("Command line")).to_have_value("python train.py --epochs 3")
    expect(page.get_by_label("Accelerators per node")).to_have_value("2")
    expect(page.get_by_label("Group (account)")).to_have_value("acme-vision")
    suggestion = page.locator("#job-explain .suggestion a")
    page.goto(f"/jobs/{waiting}/")
    if suggestion.count():  # the scheduler's explanation offers changes once it computes them
        suggestion.first.click()
        page.wait_for_url(re.compile(r"/jobs/new/\?from="))
        expect(page.get_by_label("Command line")).to_have_value("python train.py --epochs 3")
    cancel_from_its_page(page, waiting)
    cancel_from_its_page(page, blocker)


def test_token_is_shown_once_with_a_copy_button_and_can_be_revoked(page):
    log_in(page, "alice")
    page.goto("/tokens/")
    expect(page.get_by_text("No tokens yet")).to_be_visible()
    page.get_by_label("Name").fill("ci-pipeline")
    page.get_by_role("button", name="Create token").click()
    secret = page.get_by_label("Your new token")
    expect(secret).to_have_value(re.compile(r"^aip_"))
    expect(page.get_by_role("button", name="Copy")).to_be_visible()
    screenshot(page, "11-token-created")
    page.get_by_role("button", name="Copy").click()
    page.goto("/tokens/")
    expect(page.get_by_label("Your new token")).to_have_count(0)
    page.get_by_role("button", name="Revoke token ci-pipeline").click()
    expect(page.locator("table")).to_contain_text("revoked")


def test_tenant_admin_manages_members_and_groups(page):
    log_in(page, "ada")
    page.get_by_role("link", name="Manage acme").click()
    expect(page.get_by_role("heading", name="Members")).to_be_visible()
    expect(page.get_by_role("form", name="Membership of alice")).to_be_visible()
    page.get_by_label("Name", exact=True).fill("acme-nlp")
    page.get_by_role("button", name="Create group").click()
    expect(page.get_by_role("heading", name="acme-nlp", exact=True)).to_be_visible()
    page.get_by_label("GrpTRES", exact=True).fill("gres/accelerator=8")
    page.get_by_role("button", name="Save limits").click()
    expect(page.get_by_text("Limits of acme-nlp saved.")).to_be_visible()
    page.goto("/tenants/acme/")
    screenshot(page, "12-tenant-admin")


def test_another_tenants_job_is_not_found_in_the_browser(page, console):
    log_in(page, "alice")
    job_id = submit_job(page, group="acme-research", nodes=1, accelerators=1, command="echo secret-acme-output")
    page.get_by_role("button", name="Log out").click()
    log_in(page, "bob")
    console.allow(r"status of 404")  # the page itself answers 404, which Chromium logs as a failed load
    response = page.goto(f"/jobs/{job_id}/")
    assert response.status == 404
    expect(page.get_by_role("heading", name="Nothing here")).to_be_visible()
    expect(page.locator("body")).not_to_contain_text("secret-acme-output")
    screenshot(page, "13-not-found")


def test_pages_fit_a_phone(page):
    log_in(page, "alice")
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto("/")
    page.get_by_role("button", name="Menu").click()
    expect(page.get_by_role("navigation", name="Main").get_by_role("link", name="Quota")).to_be_visible()
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, f"the dashboard scrolls sideways on a phone ({width}px)"
    screenshot(page, "14-dashboard-phone")

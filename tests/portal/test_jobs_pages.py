"""The jobs list (the API's FilterSet), a job's page and its live parts, cancel."""

import pytest

from jobs.models import Job
from tests.jobs.helpers import drive_until, ended, submit, tick
from vocab.states import JobState

pytestmark = pytest.mark.django_db


def _rows(page: str) -> str:
    return page.split("<tbody>", 1)[1].split("</tbody>", 1)[0] if "<tbody>" in page else ""


def test_jobs_list_shows_the_jobs_of_my_groups_newest_first(client, world):
    first = submit(world.bob, world.ai_team, name="first-job")
    second = submit(world.alice, world.ai_team, name="second-job")
    submit(world.mallory, world.rivals, name="rival-job")
    client.force_login(world.alice)
    rows = _rows(client.get("/jobs/").content.decode())
    assert rows.index(f"/jobs/{second.pk}/") < rows.index(f"/jobs/{first.pk}/")
    assert "rival-job" not in rows


def test_jobs_list_filters_with_the_shared_filterset(client, world):
    running = submit(world.alice, world.ai_team, name="runs", command="sleep 30")
    tick()
    pending = submit(world.bob, world.ai_team, name="waits", nodes=2, accelerators_per_node=8)
    client.force_login(world.alice)
    assert "waits" in _rows(client.get("/jobs/?state=PENDING").content.decode())
    assert "runs" not in _rows(client.get("/jobs/?state=PENDING").content.decode())
    both = _rows(client.get("/jobs/?state=PENDING,RUNNING").content.decode())
    assert f"/jobs/{running.pk}/" in both and f"/jobs/{pending.pk}/" in both
    mine = _rows(client.get("/jobs/?user=me").content.decode())
    assert "runs" in mine and "waits" not in mine


def test_an_invalid_filter_is_an_error_not_an_empty_list(client, world):
    submit(world.alice, world.ai_team)
    client.force_login(world.alice)
    page = client.get("/jobs/?state=SLEEPING").content.decode()
    assert 'role="alert"' in page and "state:" in page
    assert "No jobs yet" not in page


def test_another_tenants_group_in_the_filter_reads_like_an_unknown_group(client, world):
    submit(world.alice, world.ai_team)
    client.force_login(world.mallory)
    page = client.get("/jobs/?group=ai-team").content.decode()
    assert 'role="alert"' in page and "<tbody>" not in page


def test_jobs_list_rows_partial_is_what_htmx_polls(client, world):
    job = submit(world.alice, world.ai_team, name="polled")
    client.force_login(world.alice)
    page = client.get("/jobs/?state=PENDING").content.decode()
    assert 'hx-get="/jobs/?state=PENDING&partial=rows"' in page and 'hx-trigger="every 3s"' in page
    partial = client.get("/jobs/?state=PENDING&partial=rows", HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in partial and f"/jobs/{job.pk}/" in partial


def test_empty_jobs_list_invites_a_first_submission(client, world):
    client.force_login(world.alice)
    assert "Submit your first job" in client.get("/jobs/").content.decode()


def test_job_page_shows_spec_timeline_nodes_and_switches(client, world):
    job = submit(world.alice, world.ai_team, name="shape", nodes=2, accelerators_per_node=4, command="sleep 30")
    tick()
    job.refresh_from_db()
    assert job.state == JobState.RUNNING
    client.force_login(world.alice)
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert "2 × 4" in page and "sleep 30" in page and "00:10:00" in page
    assert "submitted by alice" in page and "allocated" in page
    for node in job.nodelist:
        assert f'<span class="name">{node}</span>' in page
    for switch in job.switches:
        assert switch in page
    assert page.count('<i class="slot used"></i>') == 8


def test_running_job_page_polls_and_an_ended_one_does_not(client, world):
    job = submit(world.alice, world.ai_team, command="true")
    client.force_login(world.alice)
    assert f'hx-get="/jobs/{job.pk}/live/" hx-trigger="every 2s"' in client.get(f"/jobs/{job.pk}/").content.decode()
    drive_until(ended(job))
    assert f'hx-get="/jobs/{job.pk}/live/"' not in client.get(f"/jobs/{job.pk}/").content.decode()


def test_live_part_carries_the_new_state_and_the_side_panel(client, world):
    job = submit(world.alice, world.ai_team, command="sleep 30")
    client.force_login(world.alice)
    assert ">PENDING<" in client.get(f"/jobs/{job.pk}/live/").content.decode()
    tick()
    live = client.get(f"/jobs/{job.pk}/live/").content.decode()
    assert 'id="job-state" aria-live="polite">RUNNING<' in live
    assert '<div id="job-side" class="stack" hx-swap-oob="true">' in live
    assert '<div id="job-explain" hx-swap-oob="true"></div>' in live


def test_environment_is_shown_to_the_owner_only(client, world):
    job = submit(world.alice, world.ai_team, environment={"WANDB_KEY": "hunter2"})
    client.force_login(world.alice)
    assert "hunter2" in client.get(f"/jobs/{job.pk}/").content.decode()
    client.force_login(world.bob)
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert "hunter2" not in page and "Only the job's owner and tenant admins" in page


def test_pending_job_page_explains_why_it_waits(client, world):
    submit(world.alice, world.ai_team, nodes=2, accelerators_per_node=8, command="sleep 30")
    tick()
    waiting = submit(world.alice, world.ai_team, nodes=1, accelerators_per_node=4)
    tick()
    waiting.refresh_from_db()
    assert waiting.reason == "AssocGrpGRES"
    client.force_login(world.alice)
    page = client.get(f"/jobs/{waiting.pk}/").content.decode()
    assert "Why is it pending?" in page and '<span class="code">AssocGrpGRES</span>' in page
    assert f'hx-get="/jobs/{waiting.pk}/explain/" hx-trigger="every 10s"' in page


def test_explain_part_stops_polling_once_the_job_runs(client, world):
    job = submit(world.alice, world.ai_team, command="sleep 30")
    client.force_login(world.alice)
    assert client.get(f"/jobs/{job.pk}/explain/").status_code == 200
    tick()
    response = client.get(f"/jobs/{job.pk}/explain/")
    assert response.status_code == 286 and b"Why is it pending" not in response.content


def test_suggestions_link_to_a_prefilled_submission(client, world, monkeypatch):
    import portal.views.jobs as job_views

    job = submit(world.alice, world.ai_team, nodes=1, accelerators_per_node=4)

    def explanation(job):
        return {
            "state": "PENDING",
            "reason": "AssocGrpGRES",
            "causes": [],
            "estimated_start": None,
            "suggestions": [{"message": "ask for 2 accelerators", "change": {"accelerators_per_node": 2}}],
        }

    monkeypatch.setattr(job_views, "job_explanation", explanation)
    client.force_login(world.alice)
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert f'href="/jobs/new/?from={job.pk}&amp;accelerators_per_node=2"' in page
    form = client.get(f"/jobs/new/?from={job.pk}&accelerators_per_node=2").content.decode()
    assert 'name="accelerators_per_node" value="2"' in form


def test_log_tail_reads_what_the_job_printed(client, world):
    job = submit(world.alice, world.ai_team, command="echo hello-from-the-log; echo oops >&2")
    drive_until(ended(job))
    client.force_login(world.alice)
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert "hello-from-the-log" in page and "oops" in page
    chunk = client.get(f"/jobs/{job.pk}/log/stdout/?offset=0").content.decode()
    assert chunk.startswith("hello-from-the-log\n")
    assert "hx-trigger" not in chunk  # the job ended and everything was read: polling stops


def test_log_poll_from_an_offset_returns_only_new_output(client, world):
    job = submit(world.alice, world.ai_team, command="echo 0123456789")
    drive_until(ended(job))
    client.force_login(world.alice)
    assert client.get(f"/jobs/{job.pk}/log/stdout/?offset=5").content.decode().startswith("56789\n")


def test_log_of_a_pending_job_keeps_polling(client, world):
    job = submit(world.alice, world.ai_team)
    client.force_login(world.alice)
    chunk = client.get(f"/jobs/{job.pk}/log/stdout/?offset=0").content.decode()
    assert 'hx-trigger="every 1s"' in chunk and "Waiting for the job to start" in chunk


def test_log_of_an_unknown_stream_is_404(client, world):
    job = submit(world.alice, world.ai_team)
    client.force_login(world.alice)
    assert client.get(f"/jobs/{job.pk}/log/secrets/").status_code == 404


def test_log_text_is_escaped(client, world):
    job = submit(world.alice, world.ai_team, command="echo '<script>alert(1)</script>'")
    drive_until(ended(job))
    client.force_login(world.alice)
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_owner_cancels_a_job(client, world):
    job = submit(world.alice, world.ai_team, command="sleep 30")
    client.force_login(world.alice)
    response = client.post(f"/jobs/{job.pk}/cancel/", follow=True)
    assert Job.objects.get(pk=job.pk).state == JobState.CANCELLED
    assert f"Job {job.pk} cancelled." in response.content.decode()


def test_tenant_admin_cancels_a_members_job(client, world):
    job = submit(world.alice, world.ai_team)
    client.force_login(world.ada)
    client.post(f"/jobs/{job.pk}/cancel/")
    assert Job.objects.get(pk=job.pk).state == JobState.CANCELLED


def test_another_member_may_not_cancel(client, world):
    job = submit(world.alice, world.ai_team)
    client.force_login(world.bob)
    assert client.post(f"/jobs/{job.pk}/cancel/").status_code == 403
    assert Job.objects.get(pk=job.pk).state == JobState.PENDING
    assert "Cancel job" not in client.get(f"/jobs/{job.pk}/").content.decode()


def test_cancelling_an_ended_job_says_it_has_ended(client, world):
    job = submit(world.alice, world.ai_team, command="true")
    drive_until(ended(job))
    client.force_login(world.alice)
    response = client.post(f"/jobs/{job.pk}/cancel/", follow=True)
    assert "has already ended" in response.content.decode()


def test_cancel_needs_post(client, world):
    job = submit(world.alice, world.ai_team)
    client.force_login(world.alice)
    assert client.get(f"/jobs/{job.pk}/cancel/").status_code == 405
    assert Job.objects.get(pk=job.pk).state == JobState.PENDING


def test_resubmit_opens_the_form_with_the_jobs_request(client, world):
    job = submit(world.alice, world.ai_team, name="again", nodes=2, accelerators_per_node=3, command="python x.py")
    client.force_login(world.alice)
    assert f'href="/jobs/new/?from={job.pk}"' in client.get(f"/jobs/{job.pk}/").content.decode()
    form = client.get(f"/jobs/new/?from={job.pk}").content.decode()
    assert 'name="name" value="again"' in form and 'name="nodes" value="2"' in form
    assert 'value="python x.py"' in form


def test_job_page_of_a_job_that_does_not_exist_is_404(client, world):
    client.force_login(world.alice)
    assert client.get("/jobs/999999/").status_code == 404

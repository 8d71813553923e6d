"""Celery tasks of the repository: thin, idempotent, acks_late (style.md §3)."""

from __future__ import annotations

import logging
from datetime import timedelta

from celery import shared_task
from django.db.models import Min

from portal.env import env_int
from registry import replicas
from registry.models import ArtifactFile

log = logging.getLogger(__name__)


def scrub_bytes_per_run() -> int:
    return env_int("AIPOOL_SCRUB_MAX_GB_PER_RUN", 200) * (1 << 30)


def scrub_seconds() -> int:
    return env_int("AIPOOL_SCRUB_SECONDS", 3600)


def scrub_files(files) -> dict:
    """Verify and repair `files` in order; stops once the byte budget of one run is read."""
    available = replicas.locations()
    budget = scrub_bytes_per_run()
    summary = {"files": 0, "verified": 0, "damaged": 0, "repaired": 0, "removed": 0, "lost": 0}
    for file in files:
        check = replicas.check_and_repair(file, available)
        summary["files"] += 1
        summary["verified"] += check.verified
        summary["damaged"] += len(check.damaged)
        summary["repaired"] += len(check.repaired)
        summary["removed"] += len(check.removed)
        summary["lost"] += int(check.lost)
        budget -= check.bytes_read
        if budget <= 0:
            break
    return summary


@shared_task(acks_late=True, ignore_result=True)
def scrub() -> dict:
    """Periodic: the files checked longest ago (or never) first, so every replica is read within a few runs."""
    files = (
        ArtifactFile.objects.select_related("version__collection")
        .annotate(oldest_check=Min("replica_set__checked_at"))
        .order_by("oldest_check", "pk")
    )
    summary = scrub_files(files.iterator(chunk_size=200))
    from registry.services import expire_uploads

    summary["expired_uploads"] = expire_uploads(older_than=timedelta(hours=env_int("AIPOOL_UPLOAD_EXPIRE_HOURS", 24)))
    summary["stale_views"] = remove_stale_views()
    if summary["damaged"] or summary["lost"]:
        log.warning("replica scrub: %s", summary)
    return summary


def remove_stale_views() -> int:
    """Input directories of versions since deleted (their links point at nothing any more)."""
    import shutil

    from registry.models import Version
    from registry.storage import views_dir

    removed = 0
    for path in views_dir().glob("version-*"):
        pk = path.name.removeprefix("version-")
        if pk.isdigit() and not Version.objects.filter(pk=int(pk)).exists():
            shutil.rmtree(path, ignore_errors=True)
            removed += 1
    return removed


@shared_task(acks_late=True, ignore_result=True)
def repair_file(file_id: int) -> dict:
    """After a reader found a bad copy: verify and repair that one file now rather than at the next scrub."""
    files = ArtifactFile.objects.select_related("version__collection").filter(pk=file_id)
    return scrub_files(files)


@shared_task(acks_late=True, ignore_result=True)
def scrub_collection(collection_id: int) -> dict:
    """After a collection's replica count changed: add or drop copies of each of its files."""
    files = ArtifactFile.objects.select_related("version__collection").filter(version__collection_id=collection_id)
    return scrub_files(files.iterator(chunk_size=200))


@shared_task(acks_late=True, ignore_result=True)
def publish_job_outputs(job_id: int) -> int:
    from registry.jobio import publish_outputs

    return len(publish_outputs(job_id))


@shared_task(acks_late=True, ignore_result=True)
def publish_pending_outputs() -> int:
    """Periodic safety net: outputs of ended jobs whose publish task was lost (worker died, broker down)."""
    from django.utils import timezone

    from registry.jobio import publish_outputs
    from registry.models import JobOutput, OutputState
    from vocab.states import FINAL_STATES

    # A worker killed mid-publish leaves PUBLISHING behind; after an hour it is somebody else's turn.
    JobOutput.objects.filter(state=OutputState.PUBLISHING, updated_at__lt=timezone.now() - timedelta(hours=1)).update(
        state=OutputState.PENDING
    )
    job_ids = (
        JobOutput.objects.filter(state=OutputState.PENDING, job__state__in=[s.value for s in FINAL_STATES])
        .values_list("job_id", flat=True)
        .distinct()
    )
    return sum(len(publish_outputs(job_id)) for job_id in list(job_ids))

"""Jobs that read from and publish to the repository, plugged into ``jobs.hooks`` by ``RegistryConfig.ready``.

A job request may carry

    "inputs":  ["model:acme/llama@production", {"dataset": "acme/corpus", "version": "3", "as": "TRAIN"}]
    "outputs": [{"model": "acme/llama-ft", "checkpoint": "final", "aliases": ["staging"]}]

Inputs are resolved to version numbers at submit time, so the job reads what was named then, whatever an alias
points at later. At launch each input is a read-only directory of its files, ``AIPOOL_MODEL_<NAME>_PATH`` (or
``AIPOOL_DATASET_<NAME>_PATH``); each output is an empty directory ``AIPOOL_OUTPUT_<NAME>_PATH``. When the job
COMPLETES, what it left there (or in its ``checkpoint`` subdirectory) becomes a new published version whose
lineage records the job, its input versions and the checkpoint.
"""

from __future__ import annotations

import logging
import os
import shutil
import uuid
from pathlib import Path

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models.signals import post_save
from django.utils import timezone

from registry.models import (
    Alias,
    ArtifactFile,
    Collection,
    JobInput,
    JobOutput,
    OutputState,
    ReplicaState,
    Version,
    Visibility,
)
from registry.names import NameError_, Ref, check_alias, check_path, env_token, parse_ref
from registry.storage import by_name, outputs_dir, views_dir
from tenants.scoping import CHANGE, VIEW
from vocab.states import FINAL_STATES, JobState

log = logging.getLogger(__name__)

MAX_ITEMS = 32


# --- parsing (at the edge, no database) -------------------------------------------------------------------------------


def _items(raw) -> list:
    if not isinstance(raw, list):
        raise ValueError('expected a list, e.g. ["model:acme/llama@production"]')
    if len(raw) > MAX_ITEMS:
        raise ValueError(f"at most {MAX_ITEMS} entries")
    return raw


def _ref_of(item) -> tuple[Ref, dict]:
    if isinstance(item, str):
        return parse_ref(item), {}
    if not isinstance(item, dict):
        raise NameError_("each entry is a reference string or an object")
    kinds = [k for k in ("model", "dataset", "ref") if k in item]
    if len(kinds) != 1:
        raise NameError_('name exactly one of "model", "dataset" or "ref"')
    key = kinds[0]
    text = item[key]
    if not isinstance(text, str):
        raise NameError_(f'"{key}" must be text such as acme/llama')
    ref = parse_ref(text if key == "ref" else f"{key}:{text}")
    version = item.get("version")
    if version not in (None, ""):
        if ref.version:
            raise NameError_('give the version either after @ or in "version", not both')
        ref = parse_ref(f"{ref}@{version}")
    return ref, item


def _as(item: dict, default: str) -> str:
    name = item.get("as")
    if name in (None, ""):
        return default
    if not isinstance(name, str):
        raise NameError_('"as" must be text')
    return env_token(name)


def parse_inputs(raw) -> list[dict]:
    parsed, problems = [], []
    for index, item in enumerate(_items(raw)):
        try:
            ref, extra = _ref_of(item)
            parsed.append({"ref": str(ref), "as": _as(extra, env_token(ref.name))})
        except NameError_ as exc:
            problems.append(f"entry {index + 1}: {exc}")
    _unique([f"{p['ref'].split(':')[0]}:{p['as']}" for p in parsed], problems)
    if problems:
        raise ValidationError(problems)
    return parsed


def parse_outputs(raw) -> list[dict]:
    parsed, problems = [], []
    for index, item in enumerate(_items(raw)):
        try:
            ref, extra = _ref_of(item)
            if ref.version:
                raise NameError_("an output becomes a new version: name the collection without @version")
            checkpoint = extra.get("checkpoint") or ""
            if checkpoint:
                checkpoint = check_path(str(checkpoint))
            aliases = extra.get("aliases") or []
            if not isinstance(aliases, list) or any(a == Alias.LATEST for a in aliases):
                raise NameError_('"aliases" is a list of names other than latest (which moves by itself)')
            parsed.append(
                {
                    "ref": str(ref),
                    "as": _as(extra, env_token(ref.name)),
                    "checkpoint": checkpoint,
                    "aliases": [check_alias(a) for a in aliases],
                }
            )
        except NameError_ as exc:
            problems.append(f"entry {index + 1}: {exc}")
    _unique([p["as"] for p in parsed], problems)
    if problems:
        raise ValidationError(problems)
    return parsed


def _unique(names: list[str], problems: list[str]) -> None:
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        problems.append(f'two entries would use the same variable ({", ".join(repeated)}): set "as" on one')


def input_variable(kind: str, token: str) -> str:
    return f"AIPOOL_{kind.upper()}_{token}_PATH"


def output_variable(token: str) -> str:
    return f"AIPOOL_OUTPUT_{token}_PATH"


# --- submit: resolve and record ---------------------------------------------------------------------------------------


def resolve_version(ref: Ref, user) -> Version:
    """The published version `ref` names, among collections `user` may see; anything else reads as unknown."""
    collection = (
        Collection.objects.visible_to(user, VIEW).filter(kind=ref.kind, namespace=ref.namespace, name=ref.name).first()
    )
    if collection is None:
        raise NameError_(f"unknown {ref.kind} {ref.full_name}")
    published = collection.versions.published()
    wanted = ref.version or Alias.LATEST
    if wanted.isdigit():
        version = published.filter(number=int(wanted)).first()
    else:
        version = published.filter(aliases__name=wanted).first()
    if version is None:
        what = "has no published version" if not ref.version else f"has no published version {wanted}"
        raise NameError_(f"{ref.kind} {ref.full_name} {what}")
    return version


def record_job_io(*, job, spec, user) -> None:
    extensions = getattr(spec, "extensions", None) or {}
    problems: dict[str, list[str]] = {}
    inputs = _record_inputs(job, extensions.get("inputs") or [], user, problems)
    _record_outputs(job, extensions.get("outputs") or [], user, inputs, problems)
    if problems:
        raise ValidationError(problems)


def _record_inputs(job, items: list[dict], user, problems: dict) -> list[Version]:
    versions = []
    for item in items:
        ref = parse_ref(item["ref"])
        try:
            version = resolve_version(ref, user)
        except NameError_ as exc:
            problems.setdefault("inputs", []).append(str(exc))
            continue
        JobInput.objects.create(
            job=job, version=version, ref=item["ref"], env_name=input_variable(ref.kind, item["as"])
        )
        versions.append(version)
    return versions


def _record_outputs(job, items: list[dict], user, inputs: list[Version], problems: dict) -> None:
    for item in items:
        ref = parse_ref(item["ref"])
        try:
            collection = _output_collection(job, ref, user)
        except NameError_ as exc:
            problems.setdefault("outputs", []).append(str(exc))
            continue
        JobOutput.objects.create(
            job=job,
            collection=collection,
            env_name=output_variable(item["as"]),
            checkpoint=item["checkpoint"],
            aliases=item["aliases"],
        )


def _output_collection(job, ref: Ref, user) -> Collection:
    """The collection an output goes to: one the user may write, or a new one in the job's group (private)."""
    writable = Collection.objects.visible_to(user, CHANGE).filter(kind=ref.kind, namespace=ref.namespace, name=ref.name)
    found = writable.first()
    if found is not None:
        return found
    exists = Collection.objects.visible_to(user, VIEW).filter(kind=ref.kind, namespace=ref.namespace, name=ref.name)
    if exists.exists():
        raise NameError_(f"you may not publish to {ref.kind} {ref.full_name}")
    if ref.namespace != job.tenant.name:
        raise NameError_(f"unknown {ref.kind} {ref.full_name} (new ones are created in {job.tenant.name}/ only)")
    from registry.services import collection_create

    return collection_create(actor=user, kind=ref.kind, name=ref.name, group=job.group, visibility=Visibility.GROUP)


# --- launch: paths in the environment ---------------------------------------------------------------------------------


def launch_environment(job) -> dict[str, str]:
    environment = {}
    for item in JobInput.objects.filter(job=job).select_related("version"):
        if item.version is not None:
            environment[item.env_name] = str(materialise(item.version))
    for output in JobOutput.objects.filter(job=job):
        path = output_path(job.pk, output.env_name)
        path.mkdir(parents=True, exist_ok=True)
        environment[output.env_name] = str(path)
    return environment


def output_path(job_id: int, env_name: str) -> Path:
    return outputs_dir() / f"job-{job_id}" / env_name.removeprefix("AIPOOL_OUTPUT_").removesuffix("_PATH")


def materialise(version: Version) -> Path:
    """A directory with the version's files under their own names: links to verified local replicas, built once
    per version (published versions never change) and swapped in whole."""
    target = views_dir() / f"version-{version.pk}"
    if target.is_dir():
        return target
    building = views_dir() / f".building-{version.pk}-{uuid.uuid4().hex[:8]}"
    building.mkdir()
    local = {name: loc for name, loc in by_name().items() if loc.root is not None}
    files = ArtifactFile.objects.filter(version=version).prefetch_related("replica_set")
    for file in files:
        replicas = sorted(file.replica_set.all(), key=lambda r: (r.state != ReplicaState.OK, r.location))
        source = next((local[r.location].local_path(file.storage_name) for r in replicas if r.location in local), None)
        if source is None:
            log.warning("no local replica of %s for version %s", file.path, version)
            continue
        link = building / file.path
        link.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(source, link)
    try:
        building.rename(target)
    except OSError:
        shutil.rmtree(building, ignore_errors=True)  # another launch built it first
    return target


# --- end of a job: publish outputs ------------------------------------------------------------------------------------


def connect_signals() -> None:
    from jobs.models import JobEvent

    post_save.connect(_on_job_event, sender=JobEvent, dispatch_uid="registry.publish_outputs")


def _on_job_event(sender, instance, created, **kwargs) -> None:
    if not created or instance.to_state not in FINAL_STATES:
        return
    if not JobOutput.objects.filter(job_id=instance.job_id, state=OutputState.PENDING).exists():
        return
    from registry.tasks import publish_job_outputs

    job_id = instance.job_id
    transaction.on_commit(lambda: publish_job_outputs.delay(job_id))


def publish_outputs(job_id: int) -> list[JobOutput]:
    """Publish each pending output of an ended job, once (a conditional UPDATE claims it)."""
    from jobs.models import Job

    job = Job.objects.select_related("user", "tenant").get(pk=job_id)
    if job.state not in FINAL_STATES:
        return []
    done = []
    for output in JobOutput.objects.filter(job=job, state=OutputState.PENDING).select_related("collection"):
        if not JobOutput.objects.filter(pk=output.pk, state=OutputState.PENDING).update(
            state=OutputState.PUBLISHING, updated_at=timezone.now()
        ):
            continue  # another worker has it
        if job.state != JobState.COMPLETED:
            _finish(output, OutputState.SKIPPED, f"the job ended {job.state}; nothing published")
            continue
        try:
            version = _publish(job, output)
        except Exception as exc:  # any failure is recorded on the output for its owner to read, not retried
            detail = "; ".join(exc.messages) if isinstance(exc, ValidationError) else str(exc)
            log.warning("publishing output %s of job %s failed: %s", output.env_name, job.pk, detail)
            _finish(output, OutputState.FAILED, detail[:300])
            continue
        _finish(output, OutputState.PUBLISHED, f"version {version.number}", version=version)
        done.append(output)
    return done


def _finish(output: JobOutput, state: str, detail: str, version: Version | None = None) -> None:
    JobOutput.objects.filter(pk=output.pk, state=OutputState.PUBLISHING).update(
        state=state, detail=detail, version=version, updated_at=timezone.now()
    )


def _publish(job, output: JobOutput) -> Version:
    from registry.services import file_ingest, version_create, version_delete, version_publish

    root = output_path(job.pk, output.env_name)
    source = root / output.checkpoint if output.checkpoint else root
    if not source.is_dir():
        raise ValidationError(f"the job left no directory {source.relative_to(outputs_dir())}")
    files = sorted(p for p in source.rglob("*") if p.is_file() and not p.is_symlink())
    if not files:
        raise ValidationError(f"the job left nothing in {source.relative_to(outputs_dir())}")
    version = version_create(
        actor=job.user, collection=output.collection, message=f"published by job {job.pk} ({job.name})"
    )
    try:
        for path in files:
            file_ingest(actor=job.user, version=version, path=path.relative_to(source).as_posix(), source=path)
        with transaction.atomic():
            Version.objects.filter(pk=version.pk).update(source_job=job, checkpoint=output.checkpoint)
            inputs = Version.objects.filter(job_inputs__job=job)
            version.parents.add(*inputs)
        return version_publish(actor=job.user, version=version, aliases=output.aliases)
    except BaseException:
        version_delete(actor=job.user, version=version)
        raise

"""Reads over the repository (style.md §2): search, references, lineage, the fit check, storage usage.

Every function starts from ``visible_to(user, …)``; what a user may not see reads as unknown.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Count, Prefetch, Q, Sum

from jobs.models import Job
from jobs.selectors import group_usage
from portal.env import env_int
from registry import fit
from registry.models import Alias, ArtifactFile, Collection, StorageQuota, Version
from registry.names import NameError_, Ref
from tenants.models import Group, Tenant
from tenants.scoping import VIEW
from vocab.tres import ACCEL

SEARCH_FIELDS = ("name", "namespace", "summary", "organisation", "task", "license", "library")


def search(queryset, text: str):
    """Every word must match one of the card's fields (or a tag): ``llama instruct`` finds Llama-3.1-8B-Instruct."""
    for word in (text or "").split()[:8]:
        match = Q()
        for name in SEARCH_FIELDS:
            match |= Q(**{f"{name}__icontains": word})
        match |= Q(tags__icontains=word)
        queryset = queryset.filter(match)
    return queryset


def collections_for(user, kind: str):
    return (
        Collection.objects.visible_to(user, VIEW)
        .filter(kind=kind)
        .select_related("tenant", "group")
        .annotate(version_count=Count("versions", filter=Q(versions__state="published"), distinct=True))
    )


def collection_by_name(user, kind: str, namespace: str, name: str) -> Collection | None:
    return collections_for(user, kind).filter(namespace=namespace, name=name).first()


def version_by_ref(user, ref: Ref) -> Version:
    """The version a reference names (a number, an alias; latest when empty), drafts included by number."""
    collection = collection_by_name(user, ref.kind, ref.namespace, ref.name)
    if collection is None:
        raise NameError_(f"unknown {ref.kind} {ref.full_name}")
    wanted = ref.version or Alias.LATEST
    versions = collection.versions.all()
    version = (
        versions.filter(number=int(wanted)).first()
        if wanted.isdigit()
        else versions.filter(aliases__name=wanted).first()
    )
    if version is None:
        raise NameError_(f"{ref.kind} {ref.full_name} has no version {wanted}")
    return version


def versions_of(collection: Collection):
    return (
        collection.versions.all()
        .annotate(file_count=Count("files", distinct=True), total_size=Sum("files__size"))
        .prefetch_related(Prefetch("aliases", queryset=Alias.objects.order_by("name")))
        .select_related("created_by", "source_job")
    )


def files_of(version: Version):
    return ArtifactFile.objects.filter(version=version).prefetch_related("replica_set").order_by("path")


@dataclass
class Lineage:
    job: Job | None = None  # the job that produced the version, when the reader may see it
    job_hidden: bool = False  # produced by a job the reader may not see
    checkpoint: str = ""
    parents: list[Version] = field(default_factory=list)
    hidden_parents: int = 0
    children: list[Version] = field(default_factory=list)
    base_models: list[str] = field(default_factory=list)


def lineage(version: Version, user) -> Lineage:
    visible = Collection.objects.visible_to(user, VIEW)
    parents = list(version.parents.select_related("collection"))
    shown = [p for p in parents if visible.filter(pk=p.collection_id).exists()]
    children = list(version.children.filter(collection__in=visible).select_related("collection"))
    job = None
    if version.source_job_id:
        job = Job.objects.visible_to(user, VIEW).filter(pk=version.source_job_id).first()
    return Lineage(
        job=job,
        job_hidden=bool(version.source_job_id and job is None),
        checkpoint=version.checkpoint,
        parents=shown,
        hidden_parents=len(parents) - len(shown),
        children=children,
        base_models=list(version.collection.base_models or []),
    )


# --- fit check --------------------------------------------------------------------------------------------------------


def accelerator_memory_gb() -> int:
    return env_int("AIPOOL_ACCELERATOR_MEMORY_GB", 80)


@dataclass
class GroupFit:
    group: str
    partition: str | None
    partition_accelerators: int
    accelerators_per_node: int
    limit: int | None
    limited_by: str
    in_use: int
    allowed: bool
    allowed_now: bool
    message: str


def _chain(group: Group) -> list:
    names = [n for n in group.path.strip("/").split("/") if n]
    by_name = {g.name: g for g in Group.objects.filter(name__in=names)}
    return [group.tenant, *[by_name[n] for n in names if n in by_name]]


def _accelerator_limit(chain) -> tuple[int | None, str]:
    """The smallest accelerator limit a single job of the group meets: GrpTRES and MaxTRESPerJob up the tree."""
    best, source = None, ""
    for assoc in chain:
        kind = "tenant" if isinstance(assoc, Tenant) else "group"
        for label, tres in (("GrpTRES", assoc.grp_tres), ("MaxTRESPerJob", assoc.max_tres_per_job)):
            value = (tres or {}).get(ACCEL)
            if value is not None and (best is None or value < best):
                best, source = value, f"{label} of {kind} {assoc.name}"
    return best, source


def _partition_shape(group: Group) -> tuple[str | None, int, int]:
    partition = group.default_partition or group.allowed_partitions.first()
    if partition is None:
        return None, 0, 8
    counts = list(partition.nodes.values_list("accelerators", flat=True))
    return partition.name, sum(counts), max(counts or [8])


def group_fit(group: Group, needed: int) -> GroupFit:
    chain = _chain(group)
    limit, source = _accelerator_limit(chain)
    partition, total, per_node = _partition_shape(group)
    usage = group_usage([group])[group.pk].running_tres.get(ACCEL, 0)
    tenant_usage = Job.objects.running().filter(tenant=group.tenant).tres_totals()[ACCEL]
    in_use = max(usage, tenant_usage if source.startswith("GrpTRES of tenant") else 0)
    allowed = (limit is None or needed <= limit) and needed <= total
    allowed_now = allowed and (limit is None or needed <= limit - in_use)
    if needed > total:
        message = f"{needed} accelerators needed, partition {partition or '-'} has {total}"
    elif limit is not None and needed > limit:
        message = f"{needed} accelerators needed, {source} allows {limit}"
    elif not allowed_now:
        message = f"fits {source} ({limit}), but {in_use} are in use now: it would pend (AssocGrpGRES)"
    else:
        message = "fits the group's limits" + (f" ({source}: {limit})" if limit is not None else " (no limit)")
    return GroupFit(
        group=group.name,
        partition=partition,
        partition_accelerators=total,
        accelerators_per_node=per_node,
        limit=limit,
        limited_by=source,
        in_use=in_use,
        allowed=allowed,
        allowed_now=allowed_now,
        message=message,
    )


def fit_check(collection: Collection, user, *, mode: str, precision: str, group: Group | None = None) -> dict:
    if not collection.parameters:
        raise NameError_(f"{collection.full_name} has no parameter count on its card")
    groups = (
        [group]
        if group is not None
        else list(
            Group.objects.visible_to(user).filter(members__user=user).select_related("tenant", "default_partition")
        )
    )
    per_node = max([_partition_shape(g)[2] for g in groups] or [8])
    result = fit.estimate(
        parameters=collection.parameters,
        mode=mode,
        precision=precision,
        accelerator_memory_gb=accelerator_memory_gb(),
        accelerators_per_node=per_node,
    )
    return {"estimate": result, "groups": [group_fit(g, result.accelerators) for g in groups]}


# --- storage ----------------------------------------------------------------------------------------------------------


def storage_groups(user):
    """Groups the user sees, each with its storage quota row (absent until the group first stores something)."""
    quotas = StorageQuota.objects.visible_to(user, VIEW)
    return (
        Group.objects.visible_to(user, VIEW)
        .select_related("tenant")
        .prefetch_related(Prefetch("storage_quota", queryset=quotas))
    )


def storage_of(group: Group) -> dict:
    from registry.quota import default_limit

    try:
        quota = group.storage_quota
    except StorageQuota.DoesNotExist:
        quota = None
    if quota is None:
        return {"limit_bytes": default_limit(), "used_bytes": 0, "reserved_bytes": 0}
    return {"limit_bytes": quota.limit_bytes, "used_bytes": quota.used_bytes, "reserved_bytes": quota.reserved_bytes}

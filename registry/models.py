"""The model and dataset repository: collections (a model or a dataset), versions, aliases, files and their replicas.

Who sees what is decided once, in :class:`CollectionQuerySet`; everything below a collection delegates to it.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from tenants.models import Role
from tenants.scoping import CHANGE, TenantScopedQuerySet, member_group_ids, member_tenant_ids


class Kind(models.TextChoices):
    MODEL = "model", "model"
    DATASET = "dataset", "dataset"


class Visibility(models.TextChoices):
    PUBLIC = "public", "public (every user of the pool)"
    TENANT = "tenant", "tenant (every member of the owning tenant)"
    GROUP = "group", "group (members of the owning group, and tenant admins)"


class CollectionQuerySet(TenantScopedQuerySet):
    def _restrict(self, user, action):
        admin_of = Q(tenant__in=member_tenant_ids(user, roles=(Role.ADMIN,)))
        in_group = Q(group__in=member_group_ids(user))
        if action == CHANGE:
            # Writers are charged to the owning group's storage quota, so they must belong to it. Viewers never write;
            # the staff-curated catalog (no tenant) is written by staff only.
            member = Q(tenant__in=member_tenant_ids(user, roles=(Role.MEMBER,)))
            return self.filter(admin_of | (member & in_group))
        tenant_member = Q(tenant__in=member_tenant_ids(user))
        return self.filter(
            Q(visibility=Visibility.PUBLIC)
            | (Q(visibility=Visibility.TENANT) & tenant_member)
            | (Q(visibility=Visibility.GROUP) & tenant_member & in_group)
            | admin_of
        )

    def models(self):
        return self.filter(kind=Kind.MODEL)

    def datasets(self):
        return self.filter(kind=Kind.DATASET)


class Collection(models.Model):
    """A model or a dataset: a card (markdown and Hugging Face-style metadata) and numbered versions of files."""

    kind = models.CharField(max_length=8, choices=Kind.choices)
    namespace = models.CharField(
        max_length=64, help_text="The owning tenant's name, or an organisation for the catalog"
    )
    name = models.CharField(max_length=128)
    # No tenant: the pool's staff-curated catalog, public and written by staff only.
    tenant = models.ForeignKey(
        "tenants.Tenant", null=True, blank=True, on_delete=models.PROTECT, related_name="collections"
    )
    group = models.ForeignKey(
        "tenants.Group",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="collections",
        help_text="Owning group: its storage quota pays for the files; group visibility means its members",
    )
    visibility = models.CharField(max_length=8, choices=Visibility.choices, default=Visibility.GROUP)
    replicas = models.PositiveSmallIntegerField(default=1, help_text="Copies of every file, each in its own location")

    summary = models.CharField(max_length=300, blank=True)
    card = models.TextField(blank=True, help_text="Markdown; raw HTML is shown as text")
    organisation = models.CharField(max_length=128, blank=True)
    license = models.CharField(max_length=64, blank=True, db_index=True, help_text="e.g. apache-2.0, mit, llama3.1")
    task = models.CharField(max_length=64, blank=True, db_index=True, help_text="Pipeline tag, e.g. text-generation")
    library = models.CharField(max_length=64, blank=True, help_text="e.g. transformers")
    parameters = models.BigIntegerField(null=True, blank=True, help_text="Parameter count (all experts for MoE)")
    active_parameters = models.BigIntegerField(null=True, blank=True, help_text="Per token, for mixture-of-experts")
    context_length = models.PositiveIntegerField(null=True, blank=True, help_text="Tokens")
    base_models = models.JSONField(default=list, blank=True, help_text="Lineage: names of the models this derives from")
    datasets = models.JSONField(default=list, blank=True, help_text="Names of the datasets used")
    languages = models.JSONField(default=list, blank=True)
    metrics = models.JSONField(default=dict, blank=True, help_text='e.g. {"mmlu": 68.4}')
    tags = models.JSONField(default=list, blank=True)
    size_description = models.CharField(max_length=100, blank=True, help_text="Datasets: e.g. 15T tokens, 52K rows")
    source_url = models.URLField(max_length=300, blank=True)
    from_catalog = models.BooleanField(default=False, help_text="Loaded by load_catalog")

    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = CollectionQuerySet.as_manager()

    class Meta:
        ordering = ["namespace", "name"]
        constraints = [
            models.UniqueConstraint(fields=["kind", "namespace", "name"], name="one_collection_per_name"),
            models.CheckConstraint(
                condition=Q(tenant__isnull=False) | Q(visibility="public"), name="catalog_entries_are_public"
            ),
            models.CheckConstraint(condition=Q(replicas__gte=1), name="collection_replicas_at_least_one"),
        ]
        indexes = [models.Index(fields=["kind", "task"]), models.Index(fields=["kind", "license"])]

    def __str__(self) -> str:
        return f"{self.kind}:{self.full_name}"

    @property
    def full_name(self) -> str:
        return f"{self.namespace}/{self.name}"


class ScopedThroughCollection(TenantScopedQuerySet):
    """Rows below a collection: visible and changeable exactly when their collection is."""

    collection_path = "collection"

    def _restrict(self, user, action):
        return self.filter(**{f"{self.collection_path}__in": Collection.objects.visible_to(user, action)})


class VersionState(models.TextChoices):
    DRAFT = "draft", "draft (files may be added)"
    PUBLISHED = "published", "published (immutable)"


class VersionQuerySet(ScopedThroughCollection):
    tenant_field = "collection__tenant"

    def published(self):
        return self.filter(state=VersionState.PUBLISHED)


class Version(models.Model):
    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    state = models.CharField(max_length=10, choices=VersionState.choices, default=VersionState.DRAFT)
    message = models.CharField(max_length=300, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    published_at = models.DateTimeField(null=True, blank=True)
    # Lineage: the job that produced it, from which inputs, at which checkpoint.
    source_job = models.ForeignKey(
        "jobs.Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="published_versions"
    )
    checkpoint = models.CharField(max_length=256, blank=True)
    parents = models.ManyToManyField("self", symmetrical=False, blank=True, related_name="children")

    objects = VersionQuerySet.as_manager()

    class Meta:
        ordering = ["collection", "-number"]
        constraints = [models.UniqueConstraint(fields=["collection", "number"], name="one_version_per_number")]

    def __str__(self) -> str:
        return f"{self.collection.full_name} v{self.number}"


class AliasQuerySet(ScopedThroughCollection):
    tenant_field = "collection__tenant"


class Alias(models.Model):
    """A movable name for a version: ``latest`` (kept up to date on publish), ``production``, ``staging``, …"""

    LATEST = "latest"

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="aliases")
    name = models.CharField(max_length=64)
    version = models.ForeignKey(Version, on_delete=models.CASCADE, related_name="aliases")
    updated_at = models.DateTimeField(auto_now=True)

    objects = AliasQuerySet.as_manager()

    class Meta:
        ordering = ["collection", "name"]
        constraints = [models.UniqueConstraint(fields=["collection", "name"], name="one_alias_per_name")]

    def __str__(self) -> str:
        return f"{self.collection.full_name}@{self.name} → v{self.version.number}"


class FileQuerySet(ScopedThroughCollection):
    tenant_field = "version__collection__tenant"
    collection_path = "version__collection"


class ArtifactFile(models.Model):
    version = models.ForeignKey(Version, on_delete=models.CASCADE, related_name="files")
    path = models.CharField(
        max_length=1024, help_text="Relative path inside the version, e.g. weights/model.safetensors"
    )
    size = models.BigIntegerField()
    sha256 = models.CharField(max_length=64)
    # Opaque name in every replica location; never derived from user input.
    storage_name = models.CharField(max_length=200, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = FileQuerySet.as_manager()

    class Meta:
        ordering = ["version", "path"]
        constraints = [models.UniqueConstraint(fields=["version", "path"], name="one_file_per_path")]

    def __str__(self) -> str:
        return f"{self.version} {self.path}"


class ReplicaState(models.TextChoices):
    OK = "ok", "ok (checksum verified)"
    MISSING = "missing", "missing"
    CORRUPT = "corrupt", "corrupt (checksum mismatch)"


class ReplicaQuerySet(ScopedThroughCollection):
    tenant_field = "file__version__collection__tenant"
    collection_path = "file__version__collection"

    def damaged(self):
        return self.exclude(state=ReplicaState.OK)


class Replica(models.Model):
    """One copy of a file in one storage location, with what the last check found."""

    file = models.ForeignKey(ArtifactFile, on_delete=models.CASCADE, related_name="replica_set")
    location = models.CharField(max_length=64, help_text="Name of the storage location (AIPOOL_REPLICA_LOCATIONS)")
    state = models.CharField(max_length=8, choices=ReplicaState.choices, default=ReplicaState.OK)
    verified_at = models.DateTimeField(null=True, blank=True, help_text="Last time its checksum matched")
    checked_at = models.DateTimeField(null=True, blank=True)
    repaired_at = models.DateTimeField(null=True, blank=True)
    detail = models.CharField(max_length=300, blank=True)

    objects = ReplicaQuerySet.as_manager()

    class Meta:
        ordering = ["file", "location"]
        constraints = [models.UniqueConstraint(fields=["file", "location"], name="one_replica_per_location")]
        indexes = [models.Index(fields=["state"]), models.Index(fields=["checked_at"])]

    def __str__(self) -> str:
        return f"{self.file.storage_name} @ {self.location}: {self.state}"


class UploadState(models.TextChoices):
    OPEN = "open", "open (waiting for bytes)"
    RECEIVING = "receiving", "receiving a chunk"
    COMPLETE = "complete", "complete"
    ABORTED = "aborted", "aborted"


class UploadQuerySet(ScopedThroughCollection):
    tenant_field = "version__collection__tenant"
    collection_path = "version__collection"

    def _restrict(self, user, action):
        # An upload is a write in progress: only those who may write the collection see it.
        return self.filter(version__collection__in=Collection.objects.visible_to(user, CHANGE))

    def unfinished(self):
        return self.filter(state__in=[UploadState.OPEN, UploadState.RECEIVING])


class Upload(models.Model):
    """A resumable upload of one file: bytes are appended at ``offset`` until ``size``, then checked and stored.

    Its quota reservation (``reserved_bytes``) is held from creation until it completes, is aborted or expires.
    """

    version = models.ForeignKey(Version, on_delete=models.CASCADE, related_name="uploads")
    path = models.CharField(max_length=1024)
    size = models.BigIntegerField()
    sha256 = models.CharField(max_length=64, blank=True, help_text="Declared by the client; checked on completion")
    offset = models.BigIntegerField(default=0)
    state = models.CharField(max_length=10, choices=UploadState.choices, default=UploadState.OPEN)
    reserved_bytes = models.BigIntegerField(default=0)
    file = models.ForeignKey(ArtifactFile, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = UploadQuerySet.as_manager()

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["state", "updated_at"])]

    def __str__(self) -> str:
        return f"upload {self.pk} of {self.path} ({self.offset}/{self.size})"


class StorageQuotaQuerySet(TenantScopedQuerySet):
    tenant_field = "group__tenant"

    def _restrict(self, user, action):
        # Like a tenant's GrpTRES: the pool's operators set it; the tenant's members read it, as they read its groups.
        if action == CHANGE:
            return self.none()
        return super()._restrict(user, action)


class StorageQuota(models.Model):
    """A group's repository storage: limit, bytes stored (size × replicas) and bytes reserved by running uploads.

    The counters only change with conditional UPDATEs (``registry.quota``), so concurrent uploads never overrun it.
    """

    group = models.OneToOneField("tenants.Group", on_delete=models.CASCADE, related_name="storage_quota")
    limit_bytes = models.BigIntegerField(null=True, blank=True, help_text="Empty: no limit")
    used_bytes = models.BigIntegerField(default=0)
    reserved_bytes = models.BigIntegerField(default=0)

    objects = StorageQuotaQuerySet.as_manager()

    class Meta:
        ordering = ["group__name"]
        constraints = [
            models.CheckConstraint(condition=Q(used_bytes__gte=0), name="storage_used_not_negative"),
            models.CheckConstraint(condition=Q(reserved_bytes__gte=0), name="storage_reserved_not_negative"),
        ]

    def __str__(self) -> str:
        return f"storage of {self.group}"


class JobIOQuerySet(TenantScopedQuerySet):
    tenant_field = "job__tenant"

    def _restrict(self, user, action):
        from jobs.models import Job

        return self.filter(job__in=Job.objects.visible_to(user, action))


class JobInput(models.Model):
    """A model or dataset version a job reads, resolved at submit time (an alias then is a number for good)."""

    job = models.ForeignKey("jobs.Job", on_delete=models.CASCADE, related_name="registry_inputs")
    version = models.ForeignKey(Version, null=True, on_delete=models.SET_NULL, related_name="job_inputs")
    ref = models.CharField(max_length=300, help_text="As written in the job request, e.g. model:acme/llama@production")
    env_name = models.CharField(max_length=128)

    objects = JobIOQuerySet.as_manager()

    class Meta:
        ordering = ["job", "env_name"]
        constraints = [models.UniqueConstraint(fields=["job", "env_name"], name="one_job_input_per_variable")]

    def __str__(self) -> str:
        return f"job {self.job_id} reads {self.ref}"


class OutputState(models.TextChoices):
    PENDING = "pending", "pending (job not ended)"
    PUBLISHING = "publishing", "publishing"
    PUBLISHED = "published", "published"
    SKIPPED = "skipped", "skipped (job did not complete)"
    FAILED = "failed", "failed"


class JobOutput(models.Model):
    """A directory a job fills, published as a new version of ``collection`` when the job completes."""

    job = models.ForeignKey("jobs.Job", on_delete=models.CASCADE, related_name="registry_outputs")
    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="job_outputs")
    env_name = models.CharField(max_length=128)
    checkpoint = models.CharField(max_length=256, blank=True, help_text="Subdirectory to publish; empty: all of it")
    aliases = models.JSONField(default=list, blank=True)
    state = models.CharField(max_length=10, choices=OutputState.choices, default=OutputState.PENDING)
    version = models.ForeignKey(Version, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    detail = models.CharField(max_length=300, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = JobIOQuerySet.as_manager()

    class Meta:
        ordering = ["job", "env_name"]
        constraints = [models.UniqueConstraint(fields=["job", "env_name"], name="one_job_output_per_variable")]

    def __str__(self) -> str:
        return f"job {self.job_id} publishes {self.collection}"

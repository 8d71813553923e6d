"""The repository's API edge (models, datasets, versions, files, uploads, storage): explicit fields in and out."""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.utils import extend_schema_field, extend_schema_serializer
from rest_framework import serializers

from api import serializers_registry_examples as examples
from api.serializers import ScopedSlugField
from registry import fit
from registry.models import (
    Alias,
    ArtifactFile,
    Collection,
    Replica,
    ReplicaState,
    Upload,
    UploadState,
    Version,
    Visibility,
)
from registry.names import NameError_, check_alias, check_path, format_count, format_size, parse_ref, parse_size
from tenants.models import Group
from tenants.scoping import is_pool_admin

MAX_BIG = 2**63 - 1


def page_path(collection: Collection) -> str:
    return f"/{collection.kind}s/{collection.namespace}/{collection.name}/"


# --- collections ------------------------------------------------------------------------------------------------------


class CardFieldsSerializer(serializers.Serializer):
    """The card: markdown and Hugging Face-style metadata."""

    summary = serializers.CharField(max_length=300, required=False, allow_blank=True)
    card = serializers.CharField(required=False, allow_blank=True, max_length=200_000, help_text="Markdown")
    organisation = serializers.CharField(max_length=128, required=False, allow_blank=True)
    license = serializers.CharField(max_length=64, required=False, allow_blank=True, help_text="e.g. apache-2.0")
    task = serializers.CharField(max_length=64, required=False, allow_blank=True, help_text="Pipeline tag")
    library = serializers.CharField(max_length=64, required=False, allow_blank=True)
    parameters = serializers.IntegerField(min_value=1, max_value=MAX_BIG, required=False, allow_null=True)
    active_parameters = serializers.IntegerField(min_value=1, max_value=MAX_BIG, required=False, allow_null=True)
    context_length = serializers.IntegerField(min_value=1, max_value=2**31 - 1, required=False, allow_null=True)
    base_models = serializers.ListField(child=serializers.CharField(max_length=200), required=False, max_length=50)
    datasets = serializers.ListField(child=serializers.CharField(max_length=200), required=False, max_length=50)
    languages = serializers.ListField(child=serializers.CharField(max_length=16), required=False, max_length=200)
    metrics = serializers.DictField(child=serializers.FloatField(), required=False, help_text='e.g. {"mmlu": 68.4}')
    tags = serializers.ListField(child=serializers.CharField(max_length=64), required=False, max_length=50)
    size_description = serializers.CharField(max_length=100, required=False, allow_blank=True)
    source_url = serializers.URLField(max_length=300, required=False, allow_blank=True)


@extend_schema_serializer(examples=examples.COLLECTION)
class CollectionSerializer(serializers.ModelSerializer):
    full_name = serializers.CharField()
    tenant = serializers.CharField(source="tenant.name", allow_null=True, default=None)
    group = serializers.CharField(source="group.name", allow_null=True, default=None)
    parameters_display = serializers.SerializerMethodField(help_text="As cards write it, e.g. 8.03B")
    aliases = serializers.SerializerMethodField(help_text="Alias name → version number")
    versions = serializers.SerializerMethodField(help_text="Published versions")
    page = serializers.SerializerMethodField(help_text="The browser page")

    class Meta:
        model = Collection
        fields = [
            "id",
            "kind",
            "full_name",
            "namespace",
            "name",
            "tenant",
            "group",
            "visibility",
            "replicas",
            "summary",
            "organisation",
            "license",
            "task",
            "library",
            "parameters",
            "parameters_display",
            "active_parameters",
            "context_length",
            "base_models",
            "datasets",
            "languages",
            "metrics",
            "tags",
            "size_description",
            "source_url",
            "from_catalog",
            "aliases",
            "versions",
            "page",
            "created_at",
            "updated_at",
        ]

    def get_parameters_display(self, collection) -> str:
        return format_count(collection.parameters)

    @extend_schema_field(serializers.DictField(child=serializers.IntegerField()))
    def get_aliases(self, collection) -> dict:
        return {a.name: a.version.number for a in collection.aliases.all()}

    def get_versions(self, collection) -> int:
        count = getattr(collection, "version_count", None)
        return count if count is not None else collection.versions.published().count()

    def get_page(self, collection) -> str:
        return page_path(collection)


@extend_schema_serializer(examples=examples.COLLECTION_DETAIL)
class CollectionDetailSerializer(CollectionSerializer):
    class Meta(CollectionSerializer.Meta):
        fields = [*CollectionSerializer.Meta.fields, "card"]


@extend_schema_serializer(examples=examples.COLLECTION_CREATE)
class CollectionCreateSerializer(CardFieldsSerializer):
    name = serializers.CharField(max_length=128, help_text="e.g. llama-ft; the full name is <tenant>/<name>")
    group = ScopedSlugField(
        Group, required=False, allow_null=True, help_text="Owning group (its storage quota pays); staff may omit it"
    )
    namespace = serializers.CharField(max_length=64, required=False, help_text="Catalog entries (staff, no group)")
    visibility = serializers.ChoiceField(choices=Visibility.choices, default=Visibility.GROUP)
    replicas = serializers.IntegerField(min_value=1, max_value=32, default=1)


@extend_schema_serializer(examples=examples.COLLECTION_UPDATE)
class CollectionUpdateSerializer(CardFieldsSerializer):
    visibility = serializers.ChoiceField(choices=Visibility.choices, required=False)
    replicas = serializers.IntegerField(min_value=1, max_value=32, required=False)


# --- versions ---------------------------------------------------------------------------------------------------------


class VersionRefSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    ref = serializers.CharField(help_text="e.g. model:acme/llama@3")


def version_ref(version: Version) -> dict:
    collection = version.collection
    return {"id": version.pk, "ref": f"{collection.kind}:{collection.full_name}@{version.number}"}


class LineageSerializer(serializers.Serializer):
    job = serializers.IntegerField(allow_null=True, help_text="The job that produced it (null if none or not yours)")
    checkpoint = serializers.CharField(allow_blank=True)
    parents = VersionRefSerializer(many=True, help_text="Input versions of that job, or the copied version")


@extend_schema_serializer(examples=examples.VERSION)
class VersionSerializer(serializers.ModelSerializer):
    collection = serializers.IntegerField(source="collection_id")
    ref = serializers.SerializerMethodField(help_text="model:NAMESPACE/NAME@NUMBER")
    aliases = serializers.SerializerMethodField()
    file_count = serializers.SerializerMethodField()
    size = serializers.SerializerMethodField(help_text="Bytes, all files")
    created_by = serializers.CharField(source="created_by.username", allow_null=True, default=None)
    lineage = serializers.SerializerMethodField()

    class Meta:
        model = Version
        fields = [
            "id",
            "collection",
            "ref",
            "number",
            "state",
            "message",
            "aliases",
            "file_count",
            "size",
            "created_by",
            "created_at",
            "published_at",
            "lineage",
        ]

    def get_ref(self, version) -> str:
        return version_ref(version)["ref"]

    def get_aliases(self, version) -> list[str]:
        return sorted(a.name for a in version.aliases.all())

    def get_file_count(self, version) -> int:
        count = getattr(version, "file_count", None)
        return count if count is not None else version.files.count()

    def get_size(self, version) -> int:
        size = getattr(version, "total_size", None)
        if size is None and not hasattr(version, "file_count"):
            size = sum(version.files.values_list("size", flat=True))
        return size or 0

    @extend_schema_field(LineageSerializer)
    def get_lineage(self, version) -> dict:
        visible = self.context.get("visible_jobs", set())
        parents = self.context.get("parents", {}).get(version.pk, [])
        return {
            "job": version.source_job_id if version.source_job_id in visible else None,
            "checkpoint": version.checkpoint,
            "parents": [version_ref(p) for p in parents],
        }


@extend_schema_serializer(examples=examples.VERSION_CREATE)
class VersionCreateSerializer(serializers.Serializer):
    message = serializers.CharField(max_length=300, required=False, allow_blank=True, default="")


class AliasListField(serializers.ListField):
    child = serializers.CharField(max_length=64)

    def to_internal_value(self, data):
        names = super().to_internal_value(data)
        problems = []
        for name in names:
            try:
                check_alias(name)
            except NameError_ as exc:
                problems.append(f"{name}: {exc}")
            if name == Alias.LATEST:
                problems.append("latest moves by itself to the newest published version")
        if problems:
            raise serializers.ValidationError(problems)
        return names


@extend_schema_serializer(examples=examples.VERSION_PUBLISH)
class VersionPublishSerializer(serializers.Serializer):
    aliases = AliasListField(required=False, default=list, max_length=20, help_text='e.g. ["production"]')


@extend_schema_serializer(examples=examples.ALIAS_SET)
class AliasSetSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=64, help_text="e.g. production")
    version = serializers.IntegerField(
        min_value=1, max_value=2**31 - 1, allow_null=True, help_text="Version number; null removes it"
    )

    def validate_name(self, value):
        try:
            return check_alias(value)
        except NameError_ as exc:
            raise serializers.ValidationError(str(exc)) from exc


@extend_schema_serializer(examples=examples.VERSION_COPY)
class VersionCopySerializer(serializers.Serializer):
    to = serializers.CharField(max_length=300, help_text="model:NAMESPACE/NAME or dataset:NAMESPACE/NAME")
    message = serializers.CharField(max_length=300, required=False, allow_blank=True, default="")
    aliases = AliasListField(required=False, default=list, max_length=20)

    def validate_to(self, value):
        try:
            ref = parse_ref(value)
        except NameError_ as exc:
            raise serializers.ValidationError(str(exc)) from exc
        if ref.version:
            raise serializers.ValidationError("the copy becomes a new version: name the collection without @version")
        return ref


# --- files and uploads ------------------------------------------------------------------------------------------------


class ReplicaSerializer(serializers.ModelSerializer):
    class Meta:
        model = Replica
        fields = ["location", "state", "verified_at", "checked_at", "repaired_at", "detail"]


@extend_schema_serializer(examples=examples.FILE)
class FileSerializer(serializers.ModelSerializer):
    version = serializers.IntegerField(source="version_id")
    download = serializers.SerializerMethodField(help_text="Download URL (Range requests supported)")
    replicas = serializers.SerializerMethodField(help_text="Replica states (pool staff only; null for others)")
    replicas_ok = serializers.SerializerMethodField(help_text="Copies whose checksum matched at the last check")

    class Meta:
        model = ArtifactFile
        fields = ["id", "version", "path", "size", "sha256", "created_at", "download", "replicas_ok", "replicas"]

    def get_download(self, file) -> str:
        return reverse("api:file-download", kwargs={"pk": file.pk})

    def get_replicas_ok(self, file) -> int:
        return sum(1 for r in file.replica_set.all() if r.state == ReplicaState.OK)

    @extend_schema_field(ReplicaSerializer(many=True, allow_null=True))
    def get_replicas(self, file):
        request = self.context.get("request")
        if request is None or not is_pool_admin(request.user):
            return None
        return ReplicaSerializer(file.replica_set.all(), many=True).data


class Sha256Field(serializers.RegexField):
    def __init__(self, **kwargs):
        kwargs.setdefault("help_text", "SHA-256 of the whole file, 64 hexadecimal digits")
        super().__init__(r"^[0-9a-fA-F]{64}$", max_length=64, min_length=64, **kwargs)

    def to_internal_value(self, data):
        return super().to_internal_value(data).lower()


class PathField(serializers.CharField):
    def __init__(self, **kwargs):
        kwargs.setdefault("max_length", 1024)
        kwargs.setdefault("help_text", "Relative path in the version, e.g. weights/model.safetensors")
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        try:
            return check_path(value)
        except NameError_ as exc:
            raise serializers.ValidationError(str(exc)) from exc


class FilePutQuerySerializer(serializers.Serializer):
    path = PathField()
    sha256 = Sha256Field()


@extend_schema_serializer(examples=examples.UPLOAD_CREATE)
class UploadCreateSerializer(serializers.Serializer):
    path = PathField()
    size = serializers.IntegerField(min_value=0, max_value=MAX_BIG, help_text="Bytes the upload will carry")
    sha256 = Sha256Field()


@extend_schema_serializer(examples=examples.UPLOAD)
class UploadSerializer(serializers.ModelSerializer):
    version = serializers.IntegerField(source="version_id")
    state = serializers.ChoiceField(choices=UploadState.choices)
    file = serializers.IntegerField(source="file_id", allow_null=True, help_text="The stored file, once complete")

    class Meta:
        model = Upload
        fields = ["id", "version", "path", "size", "sha256", "offset", "state", "file", "created_at", "updated_at"]


# --- fit check --------------------------------------------------------------------------------------------------------


class FitQuerySerializer(serializers.Serializer):
    mode = serializers.ChoiceField(choices=fit.MODES, default="serve")
    precision = serializers.ChoiceField(choices=list(fit.BYTES_PER_PARAMETER), default="bf16")
    group = ScopedSlugField(Group, required=False, help_text="Check this group only (default: all of yours)")


class EstimateSerializer(serializers.Serializer):
    mode = serializers.CharField()
    precision = serializers.CharField()
    memory_gb = serializers.FloatField(help_text="Accelerator memory needed, GB")
    accelerators = serializers.IntegerField()
    nodes = serializers.IntegerField()
    accelerator_memory_gb = serializers.FloatField(help_text="Per accelerator (AIPOOL_ACCELERATOR_MEMORY_GB)")
    method = serializers.CharField()


class GroupFitSerializer(serializers.Serializer):
    group = serializers.CharField()
    partition = serializers.CharField(allow_null=True)
    partition_accelerators = serializers.IntegerField()
    accelerators_per_node = serializers.IntegerField()
    limit = serializers.IntegerField(allow_null=True, help_text="Accelerators one job of the group may hold")
    limited_by = serializers.CharField(allow_blank=True)
    in_use = serializers.IntegerField()
    allowed = serializers.BooleanField(help_text="The limits allow it at all")
    allowed_now = serializers.BooleanField(help_text="It would start now as far as the limits go")
    message = serializers.CharField()


@extend_schema_serializer(examples=examples.FIT)
class FitSerializer(serializers.Serializer):
    model = serializers.CharField()
    parameters = serializers.IntegerField()
    estimate = EstimateSerializer()
    groups = GroupFitSerializer(many=True)


# --- storage quota ----------------------------------------------------------------------------------------------------


@extend_schema_serializer(examples=examples.STORAGE)
class StorageSerializer(serializers.Serializer):
    id = serializers.IntegerField(help_text="The group's id")
    group = serializers.CharField()
    tenant = serializers.CharField()
    limit_bytes = serializers.IntegerField(allow_null=True, help_text="null: no limit")
    used_bytes = serializers.IntegerField(help_text="Stored: file sizes × replica count")
    reserved_bytes = serializers.IntegerField(help_text="Held by uploads in progress")
    display = serializers.CharField(help_text="e.g. 1.2 GiB of 500.0 GiB")


def storage_row(group, numbers: dict) -> dict:
    return {
        "id": group.pk,
        "group": group.name,
        "tenant": group.tenant.name,
        **numbers,
        "display": f"{format_size(numbers['used_bytes'])} of {format_size(numbers['limit_bytes'])}",
    }


@extend_schema_serializer(examples=examples.STORAGE_UPDATE)
class StorageUpdateSerializer(serializers.Serializer):
    limit = serializers.CharField(allow_null=True, max_length=32, help_text='e.g. "500G", "2T"; null: no limit')

    def validate_limit(self, value):
        if value is None:
            return None
        try:
            return parse_size(value)
        except NameError_ as exc:
            raise serializers.ValidationError(str(exc)) from exc

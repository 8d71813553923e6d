"""The model and dataset repository: collections, versions, files (streamed in and out), uploads, storage quota.

Large files never pass through memory: ``PUT versions/{id}/upload/`` and ``PATCH uploads/{id}/`` read the request
body in 1 MiB chunks straight to disk, and downloads stream from a replica whose checksum was verified first.
"""

from __future__ import annotations

import re
from contextlib import contextmanager

from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import exceptions, mixins, status
from rest_framework.decorators import action
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.parsers import BaseParser
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response

from api.errors import Conflict
from api.permissions import require_change
from api.serializers import ErrorSerializer
from api.serializers_registry import (
    AliasSetSerializer,
    CollectionCreateSerializer,
    CollectionDetailSerializer,
    CollectionSerializer,
    CollectionUpdateSerializer,
    FilePutQuerySerializer,
    FileSerializer,
    FitQuerySerializer,
    FitSerializer,
    StorageSerializer,
    StorageUpdateSerializer,
    UploadCreateSerializer,
    UploadSerializer,
    VersionCopySerializer,
    VersionCreateSerializer,
    VersionPublishSerializer,
    VersionSerializer,
    storage_row,
)
from api.views.base import ApiViewSet
from jobs.models import Job
from registry import replicas, selectors, services
from registry.filters import CollectionFilter
from registry.models import ArtifactFile, Collection, Kind, Upload, Version
from registry.names import NameError_
from tenants.models import Group
from tenants.scoping import VIEW, is_pool_admin

OFFSET_HEADER = "Upload-Offset"
_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")
IN_USE = {204: None, 409: OpenApiResponse(ErrorSerializer, description="conflict: still in use, or frozen")}


class OctetStreamParser(BaseParser):
    """Declares raw bodies; the views read ``request.stream`` themselves, chunk by chunk, and never call it."""

    media_type = "application/octet-stream"

    def parse(self, stream, media_type=None, parser_context=None):
        raise exceptions.UnsupportedMediaType(media_type)


class JSONForErrors(BaseContentNegotiation):
    """A file download answers bytes, and errors in JSON whatever the Accept header asked for."""

    def select_parser(self, request, parsers):
        return parsers[0] if parsers else None

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


@contextmanager
def conflicts():
    try:
        yield
    except services.Conflict as exc:
        raise Conflict(str(exc)) from exc


def _content_length(request) -> int:
    raw = request.META.get("CONTENT_LENGTH") or ""
    if not raw.isdigit():
        raise exceptions.ValidationError({"Content-Length": ["required: the size of the body in bytes"]})
    return int(raw)


def _body(request):
    return request.stream or _Empty()


class _Empty:
    def read(self, size=-1):
        return b""


def _valid(serializer_class, data, context, **kwargs) -> dict:
    serializer = serializer_class(data=data, context=context, **kwargs)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


# --- models and datasets ----------------------------------------------------------------------------------------------


class CollectionViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.UpdateModelMixin,
    mixins.DestroyModelMixin,
    ApiViewSet,
):
    kind = Kind.MODEL
    queryset = Collection.objects.none()  # for the schema only; get_queryset() scopes every request
    serializer_class = CollectionSerializer
    filterset_class = CollectionFilter
    cursor_ordering = "id"
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    def get_queryset(self):
        return selectors.collections_for(self.request.user, self.kind).prefetch_related("aliases__version")

    def get_serializer_class(self):
        return CollectionDetailSerializer if self.action == "retrieve" else CollectionSerializer

    def _writable(self, collection: Collection) -> Collection:
        require_change(
            self.request,
            collection,
            f"only members of group {collection.group or '-'} and admins of its tenant may change {collection}",
        )
        return collection

    def _detail(self, collection: Collection):
        return CollectionDetailSerializer(
            self.get_queryset().get(pk=collection.pk), context=self.get_serializer_context()
        )

    def create(self, request, *args, **kwargs):
        data = _valid(CollectionCreateSerializer, request.data, self.get_serializer_context())
        collection = services.collection_create(actor=request.user, kind=self.kind, **data)
        return Response(self._detail(collection).data, status=status.HTTP_201_CREATED)

    def partial_update(self, request, *args, **kwargs):
        collection = self._writable(self.get_object())
        data = _valid(CollectionUpdateSerializer, request.data, self.get_serializer_context(), partial=True)
        collection = services.collection_update(actor=request.user, collection=collection, **data)
        return Response(self._detail(collection).data)

    def destroy(self, request, *args, **kwargs):
        collection = self._writable(self.get_object())
        with conflicts():
            services.collection_delete(actor=request.user, collection=collection)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        methods=["GET"],
        summary="Versions, newest first",
        responses=VersionSerializer(many=True),
        filters=False,
    )
    @extend_schema(
        methods=["POST"],
        summary="Start a new version (a draft: upload files, then publish)",
        request=VersionCreateSerializer,
        responses={201: VersionSerializer},
    )
    @action(detail=True, methods=["get", "post"], filter_backends=[])
    def versions(self, request, pk=None):
        collection = self.get_object()
        context = self.get_serializer_context()
        if request.method == "POST":
            self._writable(collection)
            data = _valid(VersionCreateSerializer, request.data, context)
            version = services.version_create(actor=request.user, collection=collection, **data)
            return Response(VersionSerializer(version, context=context).data, status=status.HTTP_201_CREATED)
        queryset = selectors.versions_of(collection).prefetch_related("parents__collection")
        self.cursor_ordering = "-number"
        page = self.paginate_queryset(queryset)
        context.update(lineage_context(request.user, page))
        return self.get_paginated_response(VersionSerializer(page, many=True, context=context).data)

    @extend_schema(
        summary="Point an alias (production, staging, …) at a published version, or remove it (version null)",
        request=AliasSetSerializer,
        responses=CollectionDetailSerializer,
    )
    @action(detail=True, methods=["post"], filter_backends=[])
    def aliases(self, request, pk=None):
        collection = self._writable(self.get_object())
        data = _valid(AliasSetSerializer, request.data, self.get_serializer_context())
        version = None
        if data["version"] is not None:
            version = collection.versions.filter(number=data["version"]).first()
            if version is None:
                raise exceptions.ValidationError(
                    {"version": [f"{collection.full_name} has no version {data['version']}"]}
                )
        services.alias_set(actor=request.user, collection=collection, name=data["name"], version=version)
        return Response(self._detail(collection).data)


def lineage_context(user, versions) -> dict:
    """What the lineage of `versions` may show `user`: jobs and parent versions they may see. Three queries."""
    versions = list(versions)
    job_ids = {v.source_job_id for v in versions if v.source_job_id}
    visible = set(Job.objects.visible_to(user, VIEW).filter(pk__in=job_ids).values_list("pk", flat=True))
    parents = {v.pk: list(v.parents.all()) for v in versions}
    wanted = {p.collection_id for rows in parents.values() for p in rows}
    readable = set(Collection.objects.visible_to(user, VIEW).filter(pk__in=wanted).values_list("pk", flat=True))
    return {
        "visible_jobs": visible,
        "parents": {pk: [p for p in rows if p.collection_id in readable] for pk, rows in parents.items()},
    }


@extend_schema_view(
    list=extend_schema(summary="Models you may see: the pool's catalog, your tenant's, your groups'"),
    retrieve=extend_schema(summary="One model with its card"),
    create=extend_schema(
        summary="Create a model", request=CollectionCreateSerializer, responses={201: CollectionDetailSerializer}
    ),
    partial_update=extend_schema(
        summary="Change a model's card, visibility or replica count",
        request=CollectionUpdateSerializer,
        responses=CollectionDetailSerializer,
    ),
    destroy=extend_schema(summary="Delete a model with all its versions and files", responses=IN_USE),
)
@extend_schema(tags=["models"])
class ModelViewSet(CollectionViewSet):
    kind = Kind.MODEL

    @extend_schema(
        summary="Fit check: accelerators needed to serve or fine-tune it, and whether your groups' limits allow it",
        parameters=[FitQuerySerializer],
        responses={200: FitSerializer, 400: OpenApiResponse(ErrorSerializer, description="No parameter count")},
    )
    @action(detail=True, methods=["get"], filter_backends=[], pagination_class=None)
    def fit(self, request, pk=None):
        collection = self.get_object()
        params = _valid(FitQuerySerializer, request.query_params, self.get_serializer_context())
        try:
            result = selectors.fit_check(
                collection, request.user, mode=params["mode"], precision=params["precision"], group=params.get("group")
            )
        except NameError_ as exc:
            raise exceptions.ValidationError({"parameters": [str(exc)]}) from exc
        data = {"model": collection.full_name, "parameters": collection.parameters, **result}
        return Response(FitSerializer(data).data)


@extend_schema_view(
    list=extend_schema(summary="Datasets you may see: the pool's catalog, your tenant's, your groups'"),
    retrieve=extend_schema(summary="One dataset with its card"),
    create=extend_schema(
        summary="Create a dataset", request=CollectionCreateSerializer, responses={201: CollectionDetailSerializer}
    ),
    partial_update=extend_schema(
        summary="Change a dataset's card, visibility or replica count",
        request=CollectionUpdateSerializer,
        responses=CollectionDetailSerializer,
    ),
    destroy=extend_schema(summary="Delete a dataset with all its versions and files", responses=IN_USE),
)
@extend_schema(tags=["datasets"])
class DatasetViewSet(CollectionViewSet):
    kind = Kind.DATASET


# --- versions ---------------------------------------------------------------------------------------------------------


UPLOAD_QUERY = [
    OpenApiParameter("path", OpenApiTypes.STR, required=True, description="Relative path in the version"),
    OpenApiParameter("sha256", OpenApiTypes.STR, required=True, description="SHA-256 of the body, 64 hex digits"),
]


@extend_schema_view(
    retrieve=extend_schema(summary="One version with its lineage"),
    destroy=extend_schema(
        summary="Delete a version and its files (not while a running job reads it)", responses=IN_USE
    ),
)
@extend_schema(tags=["versions"])
class VersionViewSet(mixins.RetrieveModelMixin, mixins.DestroyModelMixin, ApiViewSet):
    queryset = Version.objects.none()  # for the schema only; get_queryset() scopes every request
    serializer_class = VersionSerializer
    http_method_names = ["get", "post", "put", "delete", "head", "options"]

    def get_queryset(self):
        return (
            Version.objects.visible_to(self.request.user, VIEW)
            .select_related("collection", "created_by")
            .prefetch_related("aliases", "parents__collection")
        )

    def get_serializer_context(self):
        context = super().get_serializer_context()
        if self.kwargs.get("pk") and self.action == "retrieve":
            context.update(lineage_context(self.request.user, self.get_queryset().filter(pk=self.kwargs["pk"])))
        return context

    def _writable(self, version: Version) -> Version:
        collection = version.collection
        require_change(
            self.request,
            collection,
            f"only members of group {collection.group or '-'} and admins of its tenant may change {collection}",
        )
        return version

    def _represent(self, version: Version, code=status.HTTP_200_OK) -> Response:
        version = self.get_queryset().get(pk=version.pk)
        context = {**super().get_serializer_context(), **lineage_context(self.request.user, [version])}
        return Response(VersionSerializer(version, context=context).data, status=code)

    def destroy(self, request, *args, **kwargs):
        version = self._writable(self.get_object())
        with conflicts():
            services.version_delete(actor=request.user, version=version)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        summary="Publish a draft: its files freeze, 'latest' moves to it, optional aliases point at it",
        request=VersionPublishSerializer,
        responses={200: VersionSerializer, 409: OpenApiResponse(ErrorSerializer, description="Already published")},
    )
    @action(detail=True, methods=["post"])
    def publish(self, request, pk=None):
        version = self._writable(self.get_object())
        data = _valid(VersionPublishSerializer, request.data, self.get_serializer_context())
        with conflicts():
            version = services.version_publish(actor=request.user, version=version, aliases=data["aliases"])
        return self._represent(version)

    @extend_schema(
        summary="Files of the version",
        responses=FileSerializer(many=True),
        parameters=[OpenApiParameter("path", OpenApiTypes.STR, description="Only the file with this path")],
    )
    @action(detail=True, methods=["get"], filter_backends=[])
    def files(self, request, pk=None):
        version = self.get_object()
        queryset = selectors.files_of(version)
        if request.query_params.get("path"):
            queryset = queryset.filter(path=request.query_params["path"])
        self.cursor_ordering = "id"
        page = self.paginate_queryset(queryset)
        return self.get_paginated_response(FileSerializer(page, many=True, context=self.get_serializer_context()).data)

    @extend_schema(
        summary="Upload one file in one request: the raw body, streamed to disk and checked against ?sha256=",
        request={"application/octet-stream": OpenApiTypes.BINARY},
        parameters=UPLOAD_QUERY,
        responses={
            201: FileSerializer,
            400: OpenApiResponse(ErrorSerializer, description="Bad path, checksum mismatch, over the storage quota"),
            409: OpenApiResponse(ErrorSerializer, description="The version is published"),
        },
    )
    @action(detail=True, methods=["put"], parser_classes=[OctetStreamParser], filter_backends=[])
    def upload(self, request, pk=None):
        version = self._writable(self.get_object())
        query = _valid(FilePutQuerySerializer, request.query_params, self.get_serializer_context())
        size = _content_length(request)
        with conflicts():
            file = services.file_put(actor=request.user, version=version, stream=_body(request), size=size, **query)
        return Response(
            FileSerializer(file, context=self.get_serializer_context()).data, status=status.HTTP_201_CREATED
        )

    @extend_schema(
        summary="Start a resumable upload of a large file: send its bytes with PATCH uploads/{id}/, then complete",
        request=UploadCreateSerializer,
        responses={
            201: UploadSerializer,
            400: OpenApiResponse(ErrorSerializer, description="Bad path or size, over the storage quota"),
            409: OpenApiResponse(ErrorSerializer, description="The version is published"),
        },
    )
    @action(detail=True, methods=["post"], filter_backends=[])
    def uploads(self, request, pk=None):
        version = self._writable(self.get_object())
        data = _valid(UploadCreateSerializer, request.data, self.get_serializer_context())
        with conflicts():
            upload = services.upload_start(actor=request.user, version=version, **data)
        return Response(UploadSerializer(upload).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        summary="Copy the version's files into a new published version of another model or dataset (aipool cp)",
        request=VersionCopySerializer,
        responses={201: VersionSerializer, 409: OpenApiResponse(ErrorSerializer, description="Source is a draft")},
    )
    @action(detail=True, methods=["post"], filter_backends=[])
    def copy(self, request, pk=None):
        source = self.get_object()
        data = _valid(VersionCopySerializer, request.data, self.get_serializer_context())
        ref = data["to"]
        target = (
            Collection.objects.visible_to(request.user, VIEW)
            .filter(kind=ref.kind, namespace=ref.namespace, name=ref.name)
            .first()
        )
        if target is None:
            raise exceptions.ValidationError({"to": [f"unknown {ref.kind} {ref.full_name}"]})
        require_change(request, target, f"you may not add versions to {target}")
        with conflicts():
            copy = services.version_copy(
                actor=request.user, source=source, target=target, message=data["message"], aliases=data["aliases"]
            )
        return self._represent(copy, status.HTTP_201_CREATED)


# --- files ------------------------------------------------------------------------------------------------------------


@extend_schema_view(
    retrieve=extend_schema(summary="One file: size, SHA-256, replica states (staff)"),
    destroy=extend_schema(summary="Remove a file from a draft version", responses=IN_USE),
)
@extend_schema(tags=["versions"])
class FileViewSet(mixins.RetrieveModelMixin, mixins.DestroyModelMixin, ApiViewSet):
    queryset = ArtifactFile.objects.none()  # for the schema only; get_queryset() scopes every request
    serializer_class = FileSerializer
    http_method_names = ["get", "delete", "head", "options"]

    def get_queryset(self):
        return (
            ArtifactFile.objects.visible_to(self.request.user, VIEW)
            .select_related("version__collection")
            .prefetch_related("replica_set")
        )

    def destroy(self, request, *args, **kwargs):
        file = self.get_object()
        require_change(request, file, f"you may not change {file.version.collection}")
        with conflicts():
            services.file_delete(actor=request.user, file=file)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        summary="Download: streamed from a replica whose SHA-256 was verified first (never a corrupt copy)",
        parameters=[
            OpenApiParameter("Range", OpenApiTypes.STR, OpenApiParameter.HEADER, description="bytes=START-[END]")
        ],
        responses={
            (200, "application/octet-stream"): OpenApiResponse(OpenApiTypes.BINARY, description="The file"),
            (206, "application/octet-stream"): OpenApiResponse(OpenApiTypes.BINARY, description="The range asked"),
            416: OpenApiResponse(ErrorSerializer, description="Range not satisfiable"),
            503: OpenApiResponse(ErrorSerializer, description="replicas_unavailable: no replica verifies now"),
        },
    )
    @action(
        detail=True,
        methods=["get"],
        filter_backends=[],
        pagination_class=None,
        renderer_classes=[JSONRenderer],
        content_negotiation_class=JSONForErrors,
    )
    def download(self, request, pk=None):
        return file_response(self.get_object(), request.headers.get("Range"))


class RangeNotSatisfiable(exceptions.APIException):
    status_code = status.HTTP_416_REQUESTED_RANGE_NOT_SATISFIABLE
    default_detail = "range not satisfiable"
    default_code = "range_not_satisfiable"


class ReplicasUnavailable(exceptions.APIException):
    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_detail = "no replica of this file verifies now; the pool's operators have been told"
    default_code = "replicas_unavailable"


def parse_range(header: str | None, size: int) -> tuple[int, int] | None:
    """``bytes=START-END`` / ``bytes=START-`` / ``bytes=-SUFFIX`` → inclusive (start, end); None: the whole file."""
    if not header:
        return None
    match = _RANGE.match(header.strip())
    if not match or (not match.group(1) and not match.group(2)):
        raise RangeNotSatisfiable(f"unsupported Range {header!r}: use bytes=START-END")
    if match.group(1):
        start = int(match.group(1))
        end = min(int(match.group(2)), size - 1) if match.group(2) else size - 1
    else:
        start, end = max(0, size - int(match.group(2))), size - 1
    if start >= size or start > end:
        raise RangeNotSatisfiable(f"range {header} is outside the file's {size} bytes")
    return start, end


def file_response(file: ArtifactFile, range_header: str | None = None) -> StreamingHttpResponse:
    """The file's bytes from a replica verified just now (shared by the API and the browser pages)."""
    window = parse_range(range_header, file.size) if file.size else None
    try:
        location = replicas.pick_verified(file)
    except replicas.NoVerifiedReplica as exc:
        raise ReplicasUnavailable() from exc
    start, end = window or (0, max(file.size - 1, 0))
    body = replicas.stream(location, file, start, end) if file.size else iter(())
    response = StreamingHttpResponse(body, content_type="application/octet-stream")
    response["Content-Length"] = str(end - start + 1 if file.size else 0)
    response["Accept-Ranges"] = "bytes"
    response["ETag"] = f'"{file.sha256}"'
    response["X-Checksum-SHA256"] = file.sha256
    filename = file.path.rsplit("/", 1)[-1]
    response["Content-Disposition"] = f'attachment; filename="{filename.replace(chr(34), "")}"'
    if window is not None:
        response.status_code = status.HTTP_206_PARTIAL_CONTENT
        response["Content-Range"] = f"bytes {start}-{end}/{file.size}"
    return response


# --- uploads ----------------------------------------------------------------------------------------------------------


@extend_schema_view(
    retrieve=extend_schema(summary="An upload's state and offset: where to resume"),
    destroy=extend_schema(summary="Abort an upload and give its quota reservation back", responses=IN_USE),
)
@extend_schema(tags=["versions"])
class UploadViewSet(mixins.RetrieveModelMixin, mixins.DestroyModelMixin, ApiViewSet):
    queryset = Upload.objects.none()  # for the schema only; get_queryset() scopes every request
    serializer_class = UploadSerializer
    parser_classes = [OctetStreamParser]  # PATCH carries raw bytes; nothing here reads a JSON body
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    def get_queryset(self):
        return Upload.objects.visible_to(self.request.user, VIEW).select_related("version__collection__group")

    def destroy(self, request, *args, **kwargs):
        with conflicts():
            services.upload_abort(actor=request.user, upload=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        summary="Append bytes at Upload-Offset (resume after a broken connection from the offset GET reports)",
        request={"application/octet-stream": OpenApiTypes.BINARY},
        parameters=[
            OpenApiParameter(
                OFFSET_HEADER,
                OpenApiTypes.INT,
                OpenApiParameter.HEADER,
                required=True,
                description="Where these bytes go",
            )
        ],
        responses={
            200: UploadSerializer,
            409: OpenApiResponse(ErrorSerializer, description="Wrong offset (the detail says where to resume)"),
        },
    )
    def partial_update(self, request, *args, **kwargs):
        upload = self.get_object()
        raw = request.headers.get(OFFSET_HEADER, "")
        if not raw.isdigit():
            raise exceptions.ValidationError({OFFSET_HEADER: ["required: the byte offset of this chunk"]})
        with conflicts():
            upload = services.upload_append(
                upload=upload, offset=int(raw), stream=_body(request), length=_content_length(request)
            )
        return Response(UploadSerializer(upload).data)

    @extend_schema(
        summary="Finish: check the SHA-256 of all bytes received and store them in every replica",
        request=None,
        responses={
            201: FileSerializer,
            400: OpenApiResponse(ErrorSerializer, description="Bytes missing, or checksum mismatch (upload aborted)"),
            409: OpenApiResponse(ErrorSerializer, description="Already complete or aborted"),
        },
    )
    @action(detail=True, methods=["post"], filter_backends=[])
    def complete(self, request, pk=None):
        upload = self.get_object()
        with conflicts():
            file = services.upload_complete(actor=request.user, upload=upload)
        file = ArtifactFile.objects.prefetch_related("replica_set").get(pk=file.pk)
        return Response(
            FileSerializer(file, context=self.get_serializer_context()).data, status=status.HTTP_201_CREATED
        )


# --- storage quota ----------------------------------------------------------------------------------------------------


@extend_schema_view(
    list=extend_schema(summary="Repository storage of the groups you see: limit, stored, reserved (bytes)"),
    retrieve=extend_schema(summary="One group's repository storage"),
    partial_update=extend_schema(
        summary="Set a group's storage quota (pool staff)", request=StorageUpdateSerializer, responses=StorageSerializer
    ),
)
@extend_schema(tags=["groups"])
class StorageViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.UpdateModelMixin, ApiViewSet):
    queryset = Group.objects.none()  # for the schema only; get_queryset() scopes every request
    serializer_class = StorageSerializer
    cursor_ordering = "name"
    http_method_names = ["get", "patch", "head", "options"]

    def get_queryset(self):
        return selectors.storage_groups(self.request.user)

    def list(self, request, *args, **kwargs):
        page = self.paginate_queryset(self.get_queryset())
        rows = [storage_row(g, selectors.storage_of(g)) for g in page]
        return self.get_paginated_response(StorageSerializer(rows, many=True).data)

    def retrieve(self, request, *args, **kwargs):
        group = self.get_object()
        return Response(StorageSerializer(storage_row(group, selectors.storage_of(group))).data)

    def partial_update(self, request, *args, **kwargs):
        group = self.get_object()
        if not is_pool_admin(request.user):
            raise exceptions.PermissionDenied("only pool administrators set storage quotas")
        data = _valid(StorageUpdateSerializer, request.data, self.get_serializer_context())
        services.storage_quota_set(actor=request.user, group=group, limit_bytes=data["limit"])
        group = self.get_queryset().get(pk=group.pk)
        return Response(StorageSerializer(storage_row(group, selectors.storage_of(group))).data)


ROUTES = [
    ("models", ModelViewSet, "model"),
    ("datasets", DatasetViewSet, "dataset"),
    ("versions", VersionViewSet, "version"),
    ("files", FileViewSet, "file"),
    ("uploads", UploadViewSet, "upload"),
    ("storage", StorageViewSet, "storage"),
]

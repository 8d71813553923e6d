"""Tenants, groups (Slurm accounts) and memberships. Tenant admins manage their tenant's; staff manage all."""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import transaction
from django.db.models import Prefetch
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, status
from rest_framework.response import Response

from api import services
from api.errors import Conflict
from api.filters import GroupFilter, MembershipFilter
from api.permissions import require_change
from api.serializers import (
    ErrorSerializer,
    GroupCreateSerializer,
    GroupSerializer,
    GroupWriteSerializer,
    MembershipCreateSerializer,
    MembershipSerializer,
    MembershipWriteSerializer,
    TenantCreateSerializer,
    TenantSerializer,
    TenantUpdateSerializer,
)
from api.views.base import ApiViewSet
from jobs.selectors import group_usage
from tenants import services as tenant_services
from tenants.models import Group, GroupMember, Membership, Tenant
from tenants.scoping import VIEW


@extend_schema_view(
    list=extend_schema(summary="Tenants you belong to (all, for staff)"),
    retrieve=extend_schema(summary="One tenant"),
    create=extend_schema(
        summary="Create a tenant (staff)", request=TenantCreateSerializer, responses={201: TenantSerializer}
    ),
    partial_update=extend_schema(
        summary="Change a tenant's limits or fair share (staff)",
        request=TenantUpdateSerializer,
        responses=TenantSerializer,
    ),
)
@extend_schema(tags=["tenants"])
class TenantViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin, mixins.UpdateModelMixin, ApiViewSet
):
    queryset = Tenant.objects.none()  # for the schema only; get_queryset() scopes every request
    serializer_class = TenantSerializer
    cursor_ordering = "name"
    http_method_names = ["get", "post", "patch", "head", "options"]

    def get_queryset(self):
        return Tenant.objects.visible_to(self.request.user, VIEW)

    def get_serializer_context(self):
        roles = dict(Membership.objects.filter(user=self.request.user).values_list("tenant_id", "role"))
        return {**super().get_serializer_context(), "roles": roles}

    def create(self, request, *args, **kwargs):
        self.require_pool_admin("create tenants")
        data = self._valid(TenantCreateSerializer, request.data)
        shares = data.pop("shares", 1)
        with transaction.atomic():  # the tenant, its share and its limits, or nothing
            tenant = services.tenant_create(actor=request.user, **data)
            if shares != 1:
                tenant = tenant_services.tenant_update(actor=request.user, tenant=tenant, shares=shares)
        return Response(self.get_serializer(tenant).data, status=status.HTTP_201_CREATED)

    def partial_update(self, request, *args, **kwargs):
        tenant = self.get_object()
        # A tenant admin may not raise the quota of their own tenant: the pool's operators set it.
        self.require_pool_admin("change a tenant's limits")
        data = self._valid(TenantUpdateSerializer, request.data, partial=True)
        with transaction.atomic():
            if "shares" in data:
                tenant = tenant_services.tenant_update(actor=request.user, tenant=tenant, shares=data["shares"])
            tenant = tenant_services.limits_set(actor=request.user, target=tenant, changes=data.get("limits", {}))
        return Response(self.get_serializer(tenant).data)

    def _valid(self, serializer_class, data, **kwargs) -> dict:
        serializer = serializer_class(data=data, context=self.get_serializer_context(), **kwargs)
        serializer.is_valid(raise_exception=True)
        return serializer.validated_data


@extend_schema_view(
    list=extend_schema(summary="Groups (Slurm accounts) with limits and live usage"),
    retrieve=extend_schema(summary="One group"),
    create=extend_schema(
        summary="Create a group (tenant admin)", request=GroupCreateSerializer, responses={201: GroupSerializer}
    ),
    partial_update=extend_schema(
        summary="Change a group and its limits (tenant admin)", request=GroupWriteSerializer, responses=GroupSerializer
    ),
    destroy=extend_schema(
        summary="Delete a group without jobs or children (tenant admin)",
        responses={
            204: None,
            409: OpenApiResponse(ErrorSerializer, description="conflict: the group has jobs or child groups"),
        },
    ),
)
@extend_schema(tags=["groups"])
class GroupViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.UpdateModelMixin,
    mixins.DestroyModelMixin,
    ApiViewSet,
):
    queryset = Group.objects.none()  # for the schema only; get_queryset() scopes every request
    serializer_class = GroupSerializer
    filterset_class = GroupFilter
    cursor_ordering = "name"
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    def get_queryset(self):
        return (
            Group.objects.visible_to(self.request.user, VIEW)
            .select_related("tenant", "parent", "default_partition")
            .prefetch_related("allowed_partitions")
        )

    def list(self, request, *args, **kwargs):
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        return self.get_paginated_response(self._represent(page, many=True).data)

    def retrieve(self, request, *args, **kwargs):
        return Response(self._represent(self.get_object()).data)

    def create(self, request, *args, **kwargs):
        data = self._valid(GroupCreateSerializer, request.data)
        group = services.group_create(
            actor=request.user,
            tenant=data.pop("tenant"),
            name=data.pop("name"),
            parent=data.pop("parent", None),
            **self._update_fields(data),
        )
        return Response(self._represent(self._reload(group)).data, status=status.HTTP_201_CREATED)

    def partial_update(self, request, *args, **kwargs):
        group = self.get_object()
        require_change(request, group, f"only admins of tenant {group.tenant.name} may change group {group.name}")
        data = self._valid(GroupWriteSerializer, request.data, partial=True)
        group = services.group_update(actor=request.user, group=group, **self._update_fields(data))
        return Response(self._represent(self._reload(group)).data)

    def destroy(self, request, *args, **kwargs):
        group = self.get_object()
        require_change(request, group, f"only admins of tenant {group.tenant.name} may change group {group.name}")
        try:
            tenant_services.group_delete(actor=request.user, group=group)
        except DjangoValidationError as exc:
            # Nothing in the request is wrong: the group's jobs or children are in the way.
            raise Conflict(exc.messages[0]) from exc
        return Response(status=status.HTTP_204_NO_CONTENT)

    @staticmethod
    def _update_fields(data: dict) -> dict:
        fields = {key: data[key] for key in ("description", "shares", "partitions", "limits") if key in data}
        # Absent means "leave as is"; null means "no default partition".
        if "default_partition" in data:
            fields["default_partition"] = data["default_partition"]
        return fields

    def _valid(self, serializer_class, data, **kwargs) -> dict:
        serializer = serializer_class(data=data, context=self.get_serializer_context(), **kwargs)
        serializer.is_valid(raise_exception=True)
        return dict(serializer.validated_data)

    def _reload(self, group: Group) -> Group:
        return self.get_queryset().get(pk=group.pk)

    def _represent(self, groups, many: bool = False):
        usage = group_usage(list(groups) if many else [groups])
        return GroupSerializer(groups, many=many, context={**self.get_serializer_context(), "usage": usage})


@extend_schema_view(
    list=extend_schema(summary="Memberships of the tenants you belong to"),
    retrieve=extend_schema(summary="One membership"),
    create=extend_schema(
        summary="Add a user to a tenant and its groups (tenant admin)",
        request=MembershipCreateSerializer,
        responses={201: MembershipSerializer},
    ),
    partial_update=extend_schema(
        summary="Change a member's role or groups (tenant admin)",
        request=MembershipWriteSerializer,
        responses=MembershipSerializer,
    ),
    destroy=extend_schema(summary="Remove a user from a tenant and its groups (tenant admin)"),
)
@extend_schema(tags=["tenants"])
class MembershipViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.UpdateModelMixin,
    mixins.DestroyModelMixin,
    ApiViewSet,
):
    queryset = Membership.objects.none()  # for the schema only; get_queryset() scopes every request
    serializer_class = MembershipSerializer
    filterset_class = MembershipFilter
    cursor_ordering = "id"
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    def get_queryset(self):
        return (
            Membership.objects.visible_to(self.request.user, VIEW)
            .select_related("tenant", "user")
            .prefetch_related(Prefetch("user__group_memberships", queryset=GroupMember.objects.select_related("group")))
        )

    def create(self, request, *args, **kwargs):
        serializer = MembershipCreateSerializer(data=request.data, context=self.get_serializer_context())
        serializer.is_valid(raise_exception=True)
        membership = services.membership_create(actor=request.user, **serializer.validated_data)
        return Response(self._represent(membership), status=status.HTTP_201_CREATED)

    def partial_update(self, request, *args, **kwargs):
        membership = self.get_object()
        require_change(
            request, membership, f"only admins of tenant {membership.tenant.name} may manage its memberships"
        )
        context = {**self.get_serializer_context(), "tenant": membership.tenant}
        serializer = MembershipWriteSerializer(data=request.data, context=context, partial=True)
        serializer.is_valid(raise_exception=True)
        membership = services.membership_update(
            actor=request.user,
            membership=membership,
            role=serializer.validated_data.get("role"),
            groups=serializer.validated_data.get("groups"),
        )
        return Response(self._represent(membership))

    def destroy(self, request, *args, **kwargs):
        membership = self.get_object()
        require_change(
            request, membership, f"only admins of tenant {membership.tenant.name} may manage its memberships"
        )
        tenant_services.membership_remove(actor=request.user, user=membership.user, tenant=membership.tenant)
        return Response(status=status.HTTP_204_NO_CONTENT)

    def _represent(self, membership: Membership) -> dict:
        return self.get_serializer(self.get_queryset().get(pk=membership.pk)).data

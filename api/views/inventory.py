"""Partitions and nodes: the pool's shared inventory (``sinfo``), readable by every signed-in user."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins

from api.serializers import NodeSerializer, PartitionSerializer
from api.views.base import ApiViewSet
from cluster.models import Node, Partition
from jobs.selectors import node_allocations


class _AllocationsMixin:
    def get_serializer_context(self):
        return {**super().get_serializer_context(), "allocations": node_allocations()}


@extend_schema_view(
    list=extend_schema(summary="Partitions (sinfo -s)"),
    retrieve=extend_schema(summary="One partition"),
)
@extend_schema(tags=["inventory"])
class PartitionViewSet(_AllocationsMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, ApiViewSet):
    serializer_class = PartitionSerializer
    queryset = Partition.objects.prefetch_related("nodes")
    cursor_ordering = "name"


@extend_schema_view(
    list=extend_schema(summary="Nodes (sinfo -N)"),
    retrieve=extend_schema(summary="One node"),
)
@extend_schema(tags=["inventory"])
class NodeViewSet(_AllocationsMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, ApiViewSet):
    serializer_class = NodeSerializer
    queryset = Node.objects.select_related("switch").prefetch_related("partitions")
    cursor_ordering = "name"

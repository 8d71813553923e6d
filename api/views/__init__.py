"""REST API v1 views: thin — parse with a serializer, call a service or a selector, answer with a serializer."""

from api.views.inventory import NodeViewSet, PartitionViewSet
from api.views.jobs import JobViewSet
from api.views.me import MeView, QuotaView
from api.views.tenancy import GroupViewSet, MembershipViewSet, TenantViewSet
from api.views.tokens import TokenViewSet

__all__ = [
    "GroupViewSet",
    "JobViewSet",
    "MeView",
    "MembershipViewSet",
    "NodeViewSet",
    "PartitionViewSet",
    "QuotaView",
    "TenantViewSet",
    "TokenViewSet",
]

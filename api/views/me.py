from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from api.serializers import MeSerializer, QuotaSerializer
from jobs.selectors import quota_for
from tenants.models import Group, Membership


class MeView(APIView):
    @extend_schema(operation_id="me_retrieve", responses=MeSerializer, tags=["me"], summary="The signed-in user")
    def get(self, request):
        user = request.user
        memberships = Membership.objects.visible_to(user).filter(user=user).select_related("tenant")
        groups = Group.objects.visible_to(user).filter(members__user=user).select_related("tenant")
        data = {
            "id": user.pk,
            "username": user.username,
            "email": user.email,
            "first_name": user.first_name,
            "last_name": user.last_name,
            "is_staff": user.is_staff,
            "tenants": [{"id": m.tenant_id, "name": m.tenant.name, "role": m.role} for m in memberships],
            "groups": [{"id": g.pk, "name": g.name, "tenant": g.tenant.name} for g in groups],
        }
        return Response(MeSerializer(data).data)


class QuotaView(APIView):
    @extend_schema(
        operation_id="me_quota_retrieve",
        responses=QuotaSerializer,
        tags=["me"],
        summary="quota -u $USER: limits and usage of each of your groups",
    )
    def get(self, request):
        data = {"user": request.user.username, "groups": quota_for(request.user)}
        return Response(QuotaSerializer(data).data)

"""Personal access tokens: list your own, create one (the secret is shown once), revoke."""

from __future__ import annotations

import math

from django.utils import timezone
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import exceptions, mixins, status
from rest_framework.response import Response

from api.models import ApiToken
from api.serializers import TokenCreatedSerializer, TokenCreateSerializer, TokenSerializer
from api.services import token_create, token_revoke
from api.views.base import ApiViewSet
from tenants.scoping import CHANGE, VIEW


@extend_schema_view(
    list=extend_schema(summary="Your tokens, revoked and expired ones included"),
    retrieve=extend_schema(summary="One of your tokens"),
    create=extend_schema(
        summary="Create a token; the secret is in this response only",
        request=TokenCreateSerializer,
        responses={201: TokenCreatedSerializer},
    ),
    destroy=extend_schema(summary="Revoke a token"),
)
@extend_schema(tags=["tokens"])
class TokenViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin, mixins.DestroyModelMixin, ApiViewSet
):
    queryset = ApiToken.objects.none()  # for the schema only; get_queryset() scopes every request
    serializer_class = TokenSerializer
    cursor_ordering = "-id"

    def get_queryset(self):
        action = VIEW if self.request.method in ("GET", "HEAD", "OPTIONS") else CHANGE
        return ApiToken.objects.visible_to(self.request.user, action)

    def create(self, request, *args, **kwargs):
        serializer = TokenCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        expires_days = self._expiry_within_creator(request.auth, data.get("expires_days"))
        token, secret = token_create(
            user=request.user, name=data["name"], scopes=data["scopes"], expires_days=expires_days
        )
        return Response({**TokenSerializer(token).data, "token": secret}, status=status.HTTP_201_CREATED)

    def destroy(self, request, *args, **kwargs):
        token_revoke(user=request.user, token=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)

    @staticmethod
    def _expiry_within_creator(creator, expires_days: int | None) -> int | None:
        """A token made with an expiring token may not outlive it: a leaked short-lived token stays short-lived."""
        if not isinstance(creator, ApiToken) or creator.expires_at is None:
            return expires_days
        days_left = math.floor((creator.expires_at - timezone.now()).total_seconds() / 86400)
        if expires_days is None or expires_days > days_left:
            raise exceptions.ValidationError(
                {"expires_days": [f"the token making this request expires in {days_left} days: give at most that"]}
            )
        return expires_days

"""Personal access tokens for the API and the CLI: stored as a SHA-256 hash, shown once at creation."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

READ = "read"
WRITE = "write"
SCOPES = (READ, WRITE)


class ApiTokenQuerySet(models.QuerySet):
    def visible_to(self, user, action: str = "view"):
        """A user's own tokens, for every action. Tokens are personal: not even staff list other people's here."""
        if user is None or not user.is_authenticated or not user.is_active:
            return self.none()
        return self.filter(user=user)

    def usable(self, now=None):
        now = now or timezone.now()
        return self.filter(revoked_at=None).filter(Q(expires_at=None) | Q(expires_at__gt=now))


class ApiToken(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100)
    # The first characters of the random part: enough to recognise a token in a list, useless to guess it.
    prefix = models.CharField(max_length=8, db_index=True)
    token_hash = models.CharField(max_length=64, unique=True)
    scopes = models.JSONField(default=list)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = ApiTokenQuerySet.as_manager()

    class Meta:
        ordering = ["-id"]
        verbose_name = "API token"

    def __str__(self) -> str:
        return f"{self.name} (aip_{self.prefix}…)"

    def has_scope(self, scope: str) -> bool:
        return scope in (self.scopes or [])

    def is_expired(self, now=None) -> bool:
        return self.expires_at is not None and self.expires_at <= (now or timezone.now())

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None and not self.is_expired()

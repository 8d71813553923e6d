"""The one FilterSet for job lists, shared by the REST API and the browser pages.

Every value is validated: an unknown state, group or date is a form error (400 in the API), never an empty list
that looks like "no jobs". Groups are chosen among the groups the requesting user may see, so naming another
tenant's group reads exactly like naming one that does not exist.
"""

from __future__ import annotations

from datetime import UTC

import django_filters
from django import forms

from cluster.models import Partition
from jobs.models import Job
from tenants.models import Group
from vocab.states import JobState

ME = "me"


def _visible_groups(request):
    if request is None:
        return Group.objects.none()
    return Group.objects.visible_to(request.user)


class _UtcIsoDateTimeField(django_filters.fields.IsoDateTimeField):
    """An ISO time that must exist in UTC: year 1 with a +18:33 offset parses but cannot be stored or compared."""

    def to_python(self, value):
        parsed = super().to_python(value)
        if parsed is None:
            return None
        try:
            # In UTC, because PostgreSQL refuses offsets beyond ±15:59 that ISO 8601 parsing accepts.
            return parsed.astimezone(UTC)
        except OverflowError as exc:
            raise forms.ValidationError("time out of range", code="invalid") from exc


class UtcIsoDateTimeFilter(django_filters.IsoDateTimeFilter):
    field_class = _UtcIsoDateTimeField


class StateInFilter(django_filters.BaseInFilter, django_filters.ChoiceFilter):
    """``state=PENDING,RUNNING``: a comma-separated list, each checked against Slurm's state words."""


class JobFilter(django_filters.FilterSet):
    state = StateInFilter(
        field_name="state",
        choices=[(s.value, s.value) for s in JobState],
        help_text="One or more states, comma-separated: " + ", ".join(s.value for s in JobState),
    )
    group = django_filters.ModelChoiceFilter(
        field_name="group",
        to_field_name="name",
        queryset=_visible_groups,
        help_text="Group (Slurm account) name",
    )
    user = django_filters.CharFilter(method="filter_user", help_text="'me' or a username")
    partition = django_filters.ModelChoiceFilter(
        field_name="partition", to_field_name="name", queryset=Partition.objects.all(), help_text="Partition name"
    )
    submitted_after = UtcIsoDateTimeFilter(
        field_name="submitted_at", lookup_expr="gte", help_text="ISO 8601 time; jobs submitted at or after it"
    )
    submitted_before = UtcIsoDateTimeFilter(
        field_name="submitted_at", lookup_expr="lt", help_text="ISO 8601 time; jobs submitted before it"
    )

    class Meta:
        model = Job
        fields = ["state", "group", "user", "partition", "submitted_after", "submitted_before"]

    def filter_user(self, queryset, name, value):
        if value == ME:
            user = getattr(self.request, "user", None)
            if user is None or not user.is_authenticated:
                return queryset.none()
            return queryset.filter(user=user)
        # An unknown username is an empty list, not an error: errors would tell who has an account.
        return queryset.filter(user__username=value)

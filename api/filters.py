"""FilterSets of the API's non-job lists (jobs use jobs.filters.JobFilter, shared with the browser pages)."""

from __future__ import annotations

import django_filters

from tenants.models import Group, Membership, Tenant


def _visible_tenants(request):
    return Tenant.objects.visible_to(getattr(request, "user", None))


class GroupFilter(django_filters.FilterSet):
    name = django_filters.CharFilter(field_name="name", help_text="Exact group name")
    tenant = django_filters.ModelChoiceFilter(
        field_name="tenant", to_field_name="name", queryset=_visible_tenants, help_text="Tenant name"
    )

    class Meta:
        model = Group
        fields = ["name", "tenant"]


class MembershipFilter(django_filters.FilterSet):
    tenant = django_filters.ModelChoiceFilter(
        field_name="tenant", to_field_name="name", queryset=_visible_tenants, help_text="Tenant name"
    )
    user = django_filters.CharFilter(field_name="user__username", help_text="Username")

    class Meta:
        model = Membership
        fields = ["tenant", "user"]

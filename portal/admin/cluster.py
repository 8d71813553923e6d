"""Admin for the pool's inventory: switches, nodes and partitions (shared by every tenant, like sinfo)."""

from __future__ import annotations

from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.db.models import Count, Sum

from cluster.models import Node, Partition, PosixAccount, Switch
from tenants.forms import SlurmTimeField
from vocab.slurmtime import format_minutes
from vocab.tres import TRESError, format_memory, parse_memory


class MemoryField(forms.CharField):
    """MiB, typed with Slurm's units (``512G``); a bare number is MiB, as in Slurm."""

    def prepare_value(self, value):
        return format_memory(value) if isinstance(value, int) else value

    def to_python(self, value):
        raw = (super().to_python(value) or "").strip()
        if not raw:
            return None
        try:
            return parse_memory(raw)
        except TRESError as exc:
            raise ValidationError(str(exc), code="invalid") from exc


class NodeForm(forms.ModelForm):
    memory_mb = MemoryField(label="Memory", help_text="e.g. 512G; a bare number is MiB")

    class Meta:
        model = Node
        fields = ["name", "switch", "cpus", "memory_mb", "accelerators", "state"]


class PartitionForm(forms.ModelForm):
    max_time = SlurmTimeField(label="MaxTime")

    class Meta:
        model = Partition
        fields = ["name", "is_default", "max_time", "priority_tier", "nodes"]


@admin.register(Switch)
class SwitchAdmin(admin.ModelAdmin):
    list_display = ("name", "parent", "node_count")
    list_select_related = ("parent",)
    search_fields = ("name",)

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(node_count=Count("nodes"))

    @admin.display(description="nodes", ordering="node_count")
    def node_count(self, obj):
        return obj.node_count


@admin.register(Node)
class NodeAdmin(admin.ModelAdmin):
    form = NodeForm
    list_display = ("name", "switch", "cpus", "memory", "accelerators", "state")
    list_filter = ("switch", "state")
    list_select_related = ("switch",)
    search_fields = ("name",)

    @admin.display(description="memory", ordering="memory_mb")
    def memory(self, obj):
        return format_memory(obj.memory_mb)


@admin.register(Partition)
class PartitionAdmin(admin.ModelAdmin):
    form = PartitionForm
    list_display = (
        "name",
        "is_default",
        "max_time_display",
        "node_count",
        "accelerators_total",
        "priority_tier",
    )
    search_fields = ("name",)
    filter_horizontal = ("nodes",)

    def get_queryset(self, request):
        # One join to nodes carries both aggregates, so neither multiplies the other.
        return (
            super()
            .get_queryset(request)
            .annotate(node_count=Count("nodes"), accelerators_total=Sum("nodes__accelerators"))
        )

    @admin.display(description="MaxTime", ordering="max_time")
    def max_time_display(self, obj):
        return format_minutes(obj.max_time)

    @admin.display(description="nodes", ordering="node_count")
    def node_count(self, obj):
        return obj.node_count

    @admin.display(description="accelerators", ordering="accelerators_total")
    def accelerators_total(self, obj):
        return obj.accelerators_total or 0


@admin.register(PosixAccount)
class PosixAccountAdmin(admin.ModelAdmin):
    """Which cluster account a portal user's Slurm jobs run as (see docs/slurm.md for the privilege model)."""

    list_display = ("user", "username", "uid")
    search_fields = ("user__username", "username")
    autocomplete_fields = ("user",)

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        from tenants.services import audit

        # Who may run as which OS account is a security decision: keep it in the audit trail.
        initial, cleaned = form.initial, form.cleaned_data
        changes = {field: [_plain(initial.get(field)), _plain(cleaned.get(field))] for field in form.changed_data}
        audit(actor=request.user, action="posix_account.set", target=obj, tenant=None, changes=changes)


def _plain(value):
    return value if value is None or isinstance(value, (int, str)) else str(value)

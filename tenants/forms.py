"""Form fields and forms that take association limits in sacctmgr's syntax.

A person types limits the way Slurm prints them (``gres/accelerator=800,cpu=512``, ``3-00:00:00``); the fields
parse them with the same rules as the CLI (``tenants.limits.parse_limit_value``) and show stored values
formatted back.
The forms only validate: saving goes through ``tenants.services`` so every change lands in the audit log.
"""

from __future__ import annotations

from django import forms
from django.core.exceptions import ValidationError

from tenants.limits import FIELD_LABELS, TRES_FIELDS, LimitError, parse_limit_value
from tenants.models import AssociationLimits, Group, GroupMember, Membership, Tenant
from vocab.slurmtime import TimeFormatError, format_minutes, parse_minutes
from vocab.tres import CLEAR, KNOWN_TRES, format_tres

# format_minutes(None) prints UNLIMITED, so a value copied from a listing must parse back to "no limit".
_UNLIMITED_WORDS = {"", "unlimited", "infinite", str(CLEAR)}

_HELP = {
    "grp_tres": "Running jobs of this association and all below it, e.g. gres/accelerator=800,cpu=512",
    "grp_tres_mins": "TRES-minutes of all jobs together, e.g. gres/accelerator=100000",
    "grp_jobs": "Running jobs at once",
    "grp_submit_jobs": "Running and pending jobs at once",
    "max_tres_per_job": "One job at most, e.g. gres/accelerator=64,node=8",
    "max_tres_per_user": "One user's running jobs together, e.g. gres/accelerator=32",
    "max_wall": "Longest time limit of a job: minutes, HH:MM:SS or D-HH:MM:SS (e.g. 3-00:00:00)",
}


class LimitField(forms.CharField):
    """One association limit as text; cleans to what the model stores (TRES dict, minutes, count or None)."""

    def __init__(self, limit: str, **kwargs):
        self.limit = limit
        kwargs.setdefault("required", False)
        kwargs.setdefault("label", FIELD_LABELS[limit])
        help_text = _HELP[limit] + ". Empty = no limit."
        if limit in TRES_FIELDS:
            help_text += f" Known TRES: {', '.join(KNOWN_TRES)} (accelerator is short for gres/accelerator)."
        kwargs.setdefault("help_text", help_text)
        kwargs.setdefault("widget", forms.TextInput(attrs={"size": 60 if limit in TRES_FIELDS else 16}))
        super().__init__(**kwargs)

    def prepare_value(self, value):
        if isinstance(value, str):
            return value  # what the person typed, shown back unchanged next to its error
        if self.limit in TRES_FIELDS:
            return format_tres(value)
        if value is None:
            return ""
        return format_minutes(value) if self.limit == "max_wall" else str(value)

    def to_python(self, value):
        raw = (super().to_python(value) or "").strip()
        if self.limit in TRES_FIELDS:
            parsed = self._parse(raw)
            # The form holds the whole new value, so "cpu=-1" (sacctmgr's "clear") just means "no cpu limit".
            return {name: count for name, count in parsed.items() if count != CLEAR}
        if raw.lower() in _UNLIMITED_WORDS:
            return None
        return self._parse(raw)

    def _parse(self, raw: str):
        try:
            return parse_limit_value(self.limit, raw)
        except LimitError as exc:
            raise ValidationError(str(exc), code="invalid") from exc


class SlurmTimeField(forms.CharField):
    """A time limit in minutes, typed as ``sbatch -t`` takes it; empty or UNLIMITED is None."""

    def __init__(self, **kwargs):
        kwargs.setdefault("required", False)
        kwargs.setdefault("help_text", "Minutes, HH:MM:SS or D-HH:MM:SS (e.g. 7-00:00:00). Empty = UNLIMITED.")
        super().__init__(**kwargs)

    def prepare_value(self, value):
        if isinstance(value, str):
            return value
        return "" if value is None else format_minutes(value)

    def to_python(self, value):
        raw = (super().to_python(value) or "").strip()
        if raw.lower() in _UNLIMITED_WORDS:
            return None
        try:
            return parse_minutes(raw)
        except TimeFormatError as exc:
            raise ValidationError(str(exc), code="invalid") from exc


class AssociationLimitsForm(forms.ModelForm):
    """Base for Tenant and Group forms: every limit as a text field in Slurm's syntax."""

    grp_tres = LimitField("grp_tres")
    grp_tres_mins = LimitField("grp_tres_mins")
    grp_jobs = LimitField("grp_jobs")
    grp_submit_jobs = LimitField("grp_submit_jobs")
    max_tres_per_job = LimitField("max_tres_per_job")
    max_tres_per_user = LimitField("max_tres_per_user")
    max_wall = LimitField("max_wall")

    def limit_changes(self, current: AssociationLimits | None) -> dict[str, object]:
        """The ``limits_set`` changes that turn `current`'s stored limits into the form's values.

        ``limits_set`` merges TRES changes into the stored dict, so TRES no longer present are sent as CLEAR.
        """
        changes: dict[str, object] = {}
        for field in AssociationLimits.LIMIT_FIELDS:
            new = self.cleaned_data.get(field)
            old = getattr(current, field) if current is not None else None
            if field in TRES_FIELDS:
                new, old = new or {}, old or {}
                if new != old:
                    changes[field] = {name: CLEAR for name in old if name not in new} | new
            elif new != old:
                changes[field] = new
        return changes


class TenantForm(AssociationLimitsForm):
    class Meta:
        model = Tenant
        fields = ["name", "description", "shares", *AssociationLimits.LIMIT_FIELDS]


class GroupForm(AssociationLimitsForm):
    class Meta:
        model = Group
        fields = [
            "tenant",
            "name",
            "parent",
            "description",
            "allowed_partitions",
            "default_partition",
            "shares",
            *AssociationLimits.LIMIT_FIELDS,
        ]

    def clean(self):
        cleaned = super().clean()
        # tenant and parent are read-only once the group exists (its path and its jobs depend on them).
        tenant = cleaned.get("tenant") if "tenant" in self.fields else getattr(self.instance, "tenant", None)
        parent = cleaned.get("parent") if "parent" in self.fields else None
        if tenant is not None and parent is not None and parent.tenant_id != tenant.pk:
            self.add_error(
                "parent",
                f"parent group {parent.name} belongs to tenant {parent.tenant.name}, not {tenant.name}",
            )
        partitions = cleaned.get("allowed_partitions")
        default = cleaned.get("default_partition")
        if default is not None and partitions and default not in partitions:
            allowed = ", ".join(p.name for p in partitions)
            self.add_error(
                "default_partition",
                f"default partition {default.name} is not among the allowed partitions ({allowed})",
            )
        return cleaned


class GroupMemberForm(forms.ModelForm):
    """Adds a user to a group; as an inline on the group page, `group` is the group being edited."""

    class Meta:
        model = GroupMember
        fields = ["user", "group"]

    def clean(self):
        cleaned = super().clean()
        user, group = cleaned.get("user"), cleaned.get("group")
        # On the add page the group has no tenant when the group form itself was invalid: its errors suffice.
        if user is None or group is None or group.tenant_id is None:
            return cleaned
        if not Membership.objects.filter(user=user, tenant_id=group.tenant_id).exists():
            self.add_error(
                "user",
                f"user {user.username} is not a member of tenant {group.tenant.name}, "
                f"which owns group {group.name}: add a membership first",
            )
        return cleaned

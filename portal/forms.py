"""Browser forms. They parse and validate only: every write goes through the services, like the API's serializers.

The job form hands its values to ``jobs.spec.parse_job_spec`` — the parser behind the API and the CLI — so a rule and
its message live in one place; the fields here are what a person types.
"""

from __future__ import annotations

import uuid

from django import forms
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError

from api.models import SCOPES
from api.services import MAX_EXPIRES_DAYS
from cluster.models import Partition
from jobs.models import Job, Runtime
from jobs.spec import parse_job_spec
from tenants.forms import AssociationLimitsForm, LimitField
from tenants.limits import FIELD_LABELS
from tenants.models import Group, Role
from vocab.slurmtime import format_minutes
from vocab.tres import format_memory

User = get_user_model()

COMMAND, SCRIPT = "command", "script"
# The fields of a job request a suggestion or a resubmission may fill in (query string → form).
PREFILL_FIELDS = (
    "group",
    "name",
    "partition",
    "nodes",
    "accelerators_per_node",
    "cpus_per_node",
    "memory_per_node",
    "time_limit",
    "topology_aware",
    "max_switches",
    "runtime",
    "command",
    "script",
    "environment",
)
TRUE_WORDS = {"1", "true", "on", "yes"}


def environment_text(environment: dict) -> str:
    return "\n".join(f"{key}={value}" for key, value in (environment or {}).items())


def parse_environment(text: str) -> dict[str, str]:
    """``NAME=value`` per line; blank lines and ``#`` comments are skipped. The spec parser checks the names."""
    env: dict[str, str] = {}
    for number, line in enumerate((text or "").splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if "=" not in stripped:
            raise ValidationError(f"line {number}: expected NAME=value, got {stripped[:40]!r}")
        name, value = stripped.split("=", 1)
        env[name.strip()] = value
    return env


class JobForm(forms.Form):
    group = forms.ChoiceField(label="Group (account)", help_text="The group the job is charged to")
    name = forms.CharField(required=False, max_length=128, initial="job", help_text="Letters, digits, . _ -")
    partition = forms.ChoiceField(required=False, label="Partition", help_text="Empty: the group's default")
    nodes = forms.CharField(initial="1", widget=forms.NumberInput(attrs={"min": 1, "inputmode": "numeric"}))
    accelerators_per_node = forms.CharField(
        label="Accelerators per node", initial="1", widget=forms.NumberInput(attrs={"min": 0, "inputmode": "numeric"})
    )
    time_limit = forms.CharField(
        label="Time limit",
        initial="01:00:00",
        help_text="Slurm -t: minutes, HH:MM:SS or D-HH:MM:SS",
        widget=forms.TextInput(attrs={"spellcheck": "false", "autocomplete": "off"}),
    )
    cpus_per_node = forms.CharField(
        required=False,
        label="CPUs per node",
        help_text="Empty: in proportion to the accelerators",
        widget=forms.NumberInput(attrs={"min": 1, "inputmode": "numeric"}),
    )
    memory_per_node = forms.CharField(
        required=False,
        label="Memory per node",
        help_text="e.g. 64G; empty: in proportion to the accelerators",
        widget=forms.TextInput(attrs={"spellcheck": "false"}),
    )
    topology_aware = forms.BooleanField(
        required=False,
        label="Topology-aware placement",
        help_text="Keep the nodes under few leaf switches (Slurm --switches)",
    )
    max_switches = forms.CharField(
        required=False,
        label="Max leaf switches",
        help_text="With topology-aware placement; empty: 1",
        widget=forms.NumberInput(attrs={"min": 1, "inputmode": "numeric"}),
    )
    runtime = forms.ChoiceField(required=False, label="Runtime", help_text="Software environment loaded first")
    mode = forms.ChoiceField(
        choices=[(COMMAND, "Command"), (SCRIPT, "Batch script")], initial=COMMAND, widget=forms.RadioSelect
    )
    command = forms.CharField(
        required=False,
        label="Command line",
        help_text="Runs with bash on every allocated node, e.g. torchrun train.py --config big.yaml",
        widget=forms.TextInput(attrs={"spellcheck": "false", "autocomplete": "off", "class": "mono"}),
    )
    script = forms.CharField(
        required=False,
        strip=False,  # a script is kept byte for byte, its last newline too
        label="Script",
        widget=forms.Textarea(attrs={"rows": 12, "spellcheck": "false", "wrap": "off", "class": "mono"}),
    )
    environment = forms.CharField(
        required=False,
        label="Environment variables",
        help_text="One NAME=value per line",
        widget=forms.Textarea(attrs={"rows": 3, "spellcheck": "false", "class": "mono"}),
    )
    idempotency_key = forms.CharField(required=False, widget=forms.HiddenInput, max_length=128)

    def __init__(self, *args, groups=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.groups = {g.name: g for g in groups}
        self.fields["group"].choices = [(g.name, f"{g.name} ({g.tenant.name})") for g in groups]
        partitions = Partition.objects.order_by("name")
        self.fields["partition"].choices = [("", "group default")] + [(p.name, p.name) for p in partitions]
        runtimes = Runtime.objects.order_by("name").values_list("name", "description")
        self.fields["runtime"].choices = [("", "none")] + [(n, f"{n} — {d}" if d else n) for n, d in runtimes]
        for name, field in self.fields.items():
            if isinstance(field.widget, (forms.HiddenInput, forms.RadioSelect)):
                continue
            # Help and the live error slot are read out with the field; the checker fills the slot as you type.
            ids = ([f"id_{name}_helptext"] if field.help_text else []) + [f"err-{name}"]
            field.widget.attrs["aria-describedby"] = " ".join(ids)
        if not self.is_bound and not self.initial.get("idempotency_key"):
            # One key per rendered form: a double-click or a resent POST gives the same job, not two.
            self.initial["idempotency_key"] = f"web-{uuid.uuid4().hex}"
        self.spec = None

    def spec_data(self) -> dict:
        data = self.cleaned_data
        request = {
            key: data.get(key) or None
            for key in (
                "name",
                "partition",
                "nodes",
                "accelerators_per_node",
                "cpus_per_node",
                "memory_per_node",
                "time_limit",
                "max_switches",
                "runtime",
            )
        }
        request["topology_aware"] = bool(data.get("topology_aware"))
        # Only the payload of the chosen mode: switching tabs must not leave "give exactly one" to the person.
        if data.get("mode") == SCRIPT:
            request["script"] = data.get("script") or ""
        else:
            request["command"] = data.get("command") or ""
        return request

    def clean_environment(self):
        try:
            return parse_environment(self.cleaned_data.get("environment", ""))
        except ValidationError as exc:
            raise ValidationError(exc.messages) from exc

    def clean(self):
        cleaned = super().clean()
        if "environment" in self.errors:
            return cleaned
        request = {**self.spec_data(), "environment": cleaned.get("environment") or {}}
        try:
            self.spec = parse_job_spec(request)
        except ValidationError as exc:
            self.add_spec_errors(exc)
        return cleaned

    def add_spec_errors(self, exc: ValidationError) -> None:
        """Errors of the parser and the services, keyed by spec field, onto this form's fields."""
        errors = exc.message_dict if hasattr(exc, "error_dict") else {"__all__": exc.messages}
        mode = self.cleaned_data.get("mode") if hasattr(self, "cleaned_data") else COMMAND
        for name, messages in errors.items():
            target = name
            if name in (COMMAND, SCRIPT):
                target = mode if mode in (COMMAND, SCRIPT) else COMMAND
            if target not in self.fields:
                target = None
            for message in messages:
                if target is None or target not in self.errors or message not in self.errors[target]:
                    self.add_error(target, message)

    @property
    def group_obj(self) -> Group | None:
        name = self.cleaned_data.get("group") if hasattr(self, "cleaned_data") else None
        return self.groups.get(name)


def initial_from_job(job: Job) -> dict:
    """A new request that repeats `job` (resubmit), in the form's words."""
    return {
        "group": job.group.name,
        "name": job.name,
        "partition": job.partition.name,
        "nodes": job.nodes,
        "accelerators_per_node": job.accelerators_per_node,
        "cpus_per_node": job.cpus_per_node,
        "memory_per_node": format_memory(job.memory_per_node),
        "time_limit": format_minutes(job.time_limit),
        "topology_aware": job.topology_aware,
        "max_switches": job.max_switches or "",
        "runtime": job.runtime.name if job.runtime else "",
        "mode": SCRIPT if job.script else COMMAND,
        "command": job.command,
        "script": job.script,
        "environment": environment_text(job.environment),
    }


def initial_from_query(query) -> dict:
    """Fields given in the query string (a suggestion's change, a bookmark), as form initial values."""
    initial = {}
    for key in PREFILL_FIELDS:
        if key not in query:
            continue
        value = query.get(key)
        if key == "topology_aware":
            initial[key] = str(value).lower() in TRUE_WORDS
        elif key == "time_limit" and str(value).isdigit():
            initial[key] = format_minutes(int(value))
        elif key == "memory_per_node" and str(value).isdigit():
            initial[key] = format_memory(int(value))
        else:
            initial[key] = value
    if query.get("script"):
        initial["mode"] = SCRIPT
    elif query.get("command"):
        initial["mode"] = COMMAND
    return initial


class TokenForm(forms.Form):
    name = forms.CharField(max_length=100, help_text="Tells your tokens apart, e.g. ci-pipeline or laptop")
    scopes = forms.MultipleChoiceField(
        choices=[(s, s) for s in SCOPES],
        initial=list(SCOPES),
        widget=forms.CheckboxSelectMultiple,
        help_text="read: GET only; write: submit, cancel, change",
    )
    expires_days = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=MAX_EXPIRES_DAYS,
        label="Expires after (days)",
        initial=90,
        help_text="Empty: never",
    )


class MemberAddForm(forms.Form):
    username = forms.CharField(max_length=150, help_text="An existing aipool account")
    role = forms.ChoiceField(choices=Role.choices, initial=Role.MEMBER)
    groups = forms.MultipleChoiceField(required=False, widget=forms.CheckboxSelectMultiple)

    def __init__(self, *args, tenant_groups=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["groups"].choices = [(g.name, g.name) for g in tenant_groups]

    def clean_username(self):
        username = self.cleaned_data["username"].strip()
        user = User.objects.filter(username=username, is_active=True).first()
        if user is None:
            raise ValidationError(f"no active account named {username!r}")
        self.user = user
        return username


class MemberChangeForm(forms.Form):
    role = forms.ChoiceField(choices=Role.choices)
    groups = forms.MultipleChoiceField(required=False, widget=forms.CheckboxSelectMultiple)

    def __init__(self, *args, tenant_groups=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["groups"].choices = [(g.name, g.name) for g in tenant_groups]


class GroupCreateForm(forms.Form):
    name = forms.SlugField(max_length=64, help_text="Unique in the pool, like a Slurm account")
    description = forms.CharField(required=False, max_length=200)
    parent = forms.ChoiceField(required=False, help_text="Its limits bind the new group too")
    partitions = forms.MultipleChoiceField(
        required=False, widget=forms.CheckboxSelectMultiple, help_text="None ticked: every partition"
    )

    def __init__(self, *args, tenant_groups=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["parent"].choices = [("", "none (top level)")] + [(g.name, g.name) for g in tenant_groups]
        self.fields["partitions"].choices = [(p.name, p.name) for p in Partition.objects.order_by("name")]


class GroupLimitsForm(forms.Form):
    """A group's limits in sacctmgr's syntax, with the same fields (and parser) as the admin pages."""

    grp_tres = LimitField("grp_tres")
    grp_jobs = LimitField("grp_jobs")
    grp_submit_jobs = LimitField("grp_submit_jobs")
    max_tres_per_job = LimitField("max_tres_per_job")
    max_tres_per_user = LimitField("max_tres_per_user")
    max_wall = LimitField("max_wall")
    grp_tres_mins = LimitField("grp_tres_mins")

    LABELS = FIELD_LABELS

    def limit_changes(self, current: Group) -> dict[str, object]:
        # The admin form's rule for turning typed limits into ``limits_set`` changes: one rule, shared.
        return AssociationLimitsForm.limit_changes(self, current)

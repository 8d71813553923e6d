"""The pool's inventory: switches (spine → leaf), nodes hanging off leaf switches, partitions of nodes.

Inventory is shared by every tenant of the pool (like ``sinfo``), so these models are not tenant-scoped.
"""

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models


class Switch(models.Model):
    name = models.SlugField(max_length=64, unique=True)
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.PROTECT, related_name="children")

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "switches"

    def __str__(self) -> str:
        return self.name

    @property
    def is_leaf(self) -> bool:
        return self.parent_id is not None


class NodeState(models.TextChoices):
    # The admin's word on a node; IDLE/MIXED/ALLOCATED are computed from allocations, as sinfo does.
    UP = "UP", "up"
    DRAIN = "DRAIN", "drain (finish running jobs, accept no new ones)"
    DOWN = "DOWN", "down"


# What the embedded default pool is built from; a pool file names its own with `accelerator_type`.
DEFAULT_ACCELERATOR_TYPE = "nvidia-h100-80gb"


class Node(models.Model):
    name = models.SlugField(max_length=64, unique=True)
    cpus = models.PositiveIntegerField()
    memory_mb = models.PositiveBigIntegerField(help_text="Memory in MiB")
    accelerators = models.PositiveIntegerField(default=8)
    accelerator_type = models.SlugField(
        max_length=64,
        default=DEFAULT_ACCELERATOR_TYPE,
        help_text="e.g. nvidia-h100-80gb: what an inference service's resources.accelerator asks for",
    )
    state = models.CharField(max_length=8, choices=NodeState.choices, default=NodeState.UP)
    switch = models.ForeignKey(Switch, on_delete=models.PROTECT, related_name="nodes", help_text="Leaf switch")

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Partition(models.Model):
    name = models.SlugField(max_length=64, unique=True)
    is_default = models.BooleanField(default=False)
    max_time = models.PositiveIntegerField(null=True, blank=True, help_text="MaxTime in minutes; empty = UNLIMITED")
    priority_tier = models.PositiveIntegerField(default=1)
    nodes = models.ManyToManyField(Node, related_name="partitions", blank=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(
                fields=["is_default"], condition=models.Q(is_default=True), name="one_default_partition"
            )
        ]

    def __str__(self) -> str:
        return self.name


class PosixAccount(models.Model):
    """The operating-system account a portal user's jobs run as on a backend that runs jobs as their owners (Slurm).

    A user without one runs as the POSIX account of the same name. Not tenant-owned: it belongs to the person.
    """

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="posix_account")
    username = models.CharField(
        max_length=32,
        validators=[RegexValidator(r"^[a-z_][a-z0-9_.-]*\$?$", "a POSIX user name: lower case, digits, _ . -")],
        help_text="login name on the cluster's nodes",
    )
    uid = models.PositiveIntegerField(
        null=True, blank=True, help_text="only when the portal's host cannot resolve the name (no passwd entry)"
    )

    class Meta:
        verbose_name = "POSIX account"

    def __str__(self) -> str:
        return f"{self.user} → {self.username}"

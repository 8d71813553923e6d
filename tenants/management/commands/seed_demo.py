"""``manage.py seed_demo``: the README's demo world: the default pool, two tenants, their groups and users.

Safe to rerun: what exists is left as it is (a pool admin may have changed its limits since); only what is
missing is created, through ``tenants.services`` so the audit log shows the demo setup (actor: system).

The demo password ("aipool-demo" unless AIPOOL_DEMO_PASSWORD is set) is for a local demo only.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from cluster.management.commands.load_pool import pool_summary
from cluster.models import Partition
from cluster.pool import PoolFileError, load_pool_file
from portal.env import env_str
from tenants import services
from tenants.limits import parse_limit
from tenants.management.commands.sacctmgr import Output, render_table
from tenants.models import Group, GroupMember, Membership, Role, Tenant

User = get_user_model()

DEMO_PASSWORD = "aipool-demo"
STAFF_USERNAME = "admin"
TENANTS = ("acme", "globex")


@dataclass(frozen=True)
class DemoGroup:
    name: str
    tenant: str
    parent: str | None
    limits: dict[str, str]


@dataclass(frozen=True)
class DemoUser:
    username: str
    tenant: str
    role: str
    groups: tuple[str, ...]


# Parents before children: a child is created under a parent made earlier in this list.
GROUPS = (
    DemoGroup(
        "acme-research",
        "acme",
        None,
        {"GrpTRES": "gres/accelerator=24", "GrpJobs": "20", "MaxWall": "3-00:00:00"},
    ),
    DemoGroup("acme-vision", "acme", "acme-research", {"GrpTRES": "accelerator=16"}),
    DemoGroup("globex-ml", "globex", None, {"GrpTRES": "accelerator=16"}),
)
USERS = (
    DemoUser("alice", "acme", Role.MEMBER, ("acme-research", "acme-vision")),
    DemoUser("ada", "acme", Role.ADMIN, ("acme-research",)),
    DemoUser("bob", "globex", Role.MEMBER, ("globex-ml",)),
)


def demo_password() -> str:
    return env_str("AIPOOL_DEMO_PASSWORD") or DEMO_PASSWORD


def ensure_tenant(name: str) -> Tenant:
    return Tenant.objects.filter(name=name).first() or services.tenant_create(actor=None, name=name)


def ensure_group(spec: DemoGroup, tenants: dict[str, Tenant], groups: dict[str, Group]) -> Group:
    group = Group.objects.filter(name=spec.name).first()
    if group is not None:
        return group
    group = services.group_create(
        actor=None,
        tenant=tenants[spec.tenant],
        name=spec.name,
        parent=groups[spec.parent] if spec.parent else None,
        partitions=Partition.objects.filter(is_default=True),
    )
    limits = dict(parse_limit(name, value) for name, value in spec.limits.items())
    return services.limits_set(actor=None, target=group, changes=limits)


def ensure_user(spec: DemoUser, tenants: dict[str, Tenant], groups: dict[str, Group], password: str) -> bool:
    """Create the user with its membership and groups; True if it was created."""
    if User.objects.filter(username=spec.username).exists():
        return False
    services.user_create(
        actor=None,
        username=spec.username,
        tenant=tenants[spec.tenant],
        groups=[groups[name] for name in spec.groups],
        role=spec.role,
        password=password,
    )
    return True


def ensure_staff(password: str) -> bool:
    if User.objects.filter(username=STAFF_USERNAME).exists():
        return False
    # No service makes pool admins (they belong to no tenant); the audit entry keeps the trail complete.
    user = User.objects.create_superuser(username=STAFF_USERNAME, email="", password=password)
    services.audit(
        actor=None,
        action="user.create",
        target=user,
        tenant=None,
        changes={"username": [None, user.username], "is_superuser": [None, True]},
    )
    return True


def users_table(created: set[str], password: str, show_passwords: bool) -> list[str]:
    names = [STAFF_USERNAME, *(spec.username for spec in USERS)]
    users = {user.username: user for user in User.objects.filter(username__in=names)}
    rows = []
    for name in names:
        user = users[name]
        if name in created:
            shown = password
        elif show_passwords:
            shown = password if user.check_password(password) else "(changed)"
        else:
            shown = "(existing)"
        rows.append([name, *_role_and_groups(user), shown])
    columns = (("User", 10), ("Role", 10), ("Tenant", 10), ("Groups", 26), ("Password", 12))
    return render_table(columns, rows, Output())


def _role_and_groups(user) -> tuple[str, str, str]:
    if user.is_staff:
        return "pool admin", "", ""
    membership = Membership.objects.filter(user=user).select_related("tenant").first()
    groups = GroupMember.objects.filter(user=user).order_by("group__path").values_list("group__name", flat=True)
    if membership is None:
        return "", "", ",".join(groups)
    return membership.role, membership.tenant.name, ",".join(groups)


class Command(BaseCommand):
    help = "Create the demo pool, tenants (acme, globex), groups and users. Idempotent; demo passwords only."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--show-passwords",
            action="store_true",
            help="also print the demo password of accounts created by an earlier run",
        )

    def handle(self, *args, **options) -> None:
        password = demo_password()
        try:
            with transaction.atomic():
                created = self._seed(password)
        except PoolFileError as exc:
            raise CommandError(" ".join(str(exc).split())) from exc
        self.stdout.write(f"Pool: {pool_summary()}")
        self.stdout.write(f"Created {len(created)} demo account(s)." if created else "Demo data already present.")
        for line in users_table(created, password, options["show_passwords"]):
            self.stdout.write(line)
        self.stdout.write("Demo passwords are for a local demo only (set AIPOOL_DEMO_PASSWORD to choose another).")

    def _seed(self, password: str) -> set[str]:
        load_pool_file(settings.AIPOOL_POOL_FILE)
        tenants = {name: ensure_tenant(name) for name in TENANTS}
        groups: dict[str, Group] = {}
        for spec in GROUPS:
            groups[spec.name] = ensure_group(spec, tenants, groups)
        created = {spec.username for spec in USERS if ensure_user(spec, tenants, groups, password)}
        if ensure_staff(password):
            created.add(STAFF_USERNAME)
        return created

"""Associations as aipool wants them vs as ``sacctmgr show assoc`` reports them: the drift, and the sacctmgr commands
that repair it. Pure: no Django, no subprocess (slurm.py runs the commands).

Slurm shows Max* limits (MaxTRES, MaxWall) *inherited*: an association without its own value displays its parent's,
TRES by TRES, and ``-1`` gives inheritance back. Grp* limits are not inherited (each binds its own subtree). So the
comparison is made on what sacctmgr displays, computed the same way, while repairs set each association's own value.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field

from vocab.slurmtime import TimeFormatError, parse_minutes
from vocab.tres import CLEAR, TRESError, format_tres, parse_tres

TRES_LIMITS = ("GrpTRES", "GrpTRESMins", "MaxTRES")
COUNT_LIMITS = ("GrpJobs", "GrpSubmitJobs")
LIMITS = ("GrpTRES", "GrpTRESMins", "GrpJobs", "GrpSubmitJobs", "MaxTRES", "MaxWall")
INHERITED = ("MaxTRES", "MaxWall")
SHOW_FORMAT = ("Account", "ParentName", "User", "Partition", *LIMITS)


@dataclass(frozen=True)
class Association:
    """One association: an account (user == "") under `parent`, or a user in `account`. Limits use sacctmgr's names
    with values as aipool stores them: TRES dicts (memory in MiB), ints, MaxWall in minutes. Absent = no limit."""

    account: str
    parent: str = ""
    user: str = ""
    partition: str = ""
    limits: dict = field(default_factory=dict, compare=False, hash=False)
    description: str = field(default="", compare=False)

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.account.lower(), self.user, self.partition)

    def describe(self) -> str:
        if self.user:
            where = f"user {self.user} in account {self.account}"
            return f"{where} partition {self.partition}" if self.partition else where
        return f"account {self.account} (parent {self.parent or 'root'})"


@dataclass(frozen=True)
class Change:
    """One difference and the sacctmgr command that repairs it."""

    direction: str  # "missing in Slurm" | "only in Slurm" | "differs"
    what: str
    detail: str
    argv: tuple[str, ...]
    error: str = ""  # set when applying the repair failed: Slurm's message

    def command(self) -> str:
        return shlex.join(self.argv)

    def line(self) -> str:
        text = f"{self.direction:<17} {self.what}"
        return f"{text}: {self.detail}" if self.detail else text


# --- values: parse what sacctmgr prints, print what sacctmgr takes ----------------------------------------------


def parse_value(name: str, raw: str):
    raw = (raw or "").strip()
    if not raw:
        return None
    try:
        if name in TRES_LIMITS:
            return parse_tres(raw, allow_clear=False)
        if name == "MaxWall":
            return parse_minutes(raw)
    except (TRESError, TimeFormatError):
        return raw  # a TRES aipool does not know (e.g. billing): compared as text, so it shows up as drift
    return int(raw) if raw.isdigit() else raw


def format_value(name: str, value) -> str:
    if value is None or value == {}:
        return ""
    if name in TRES_LIMITS and isinstance(value, dict):
        return format_tres(value)
    return str(value)


def clear_or_set(name: str, current, wanted) -> str:
    """The ``set NAME=...`` value that turns `current` into `wanted`: TRES one by one (``-1`` clears one, which for
    Max* limits gives the parent's value back), a plain ``-1`` for a scalar aipool leaves unset."""
    if name not in TRES_LIMITS:
        return str(CLEAR) if wanted is None else str(wanted)
    wanted = wanted if isinstance(wanted, dict) else {}
    cleared = [f"{tres}={CLEAR}" for tres in _tres_names(current) if tres not in wanted]
    return ",".join(filter(None, [format_tres(wanted), *cleared]))


def _tres_names(value) -> list[str]:
    if isinstance(value, dict):
        return list(value)
    if isinstance(value, str):  # a TRES aipool does not know, kept as sacctmgr printed it
        return [item.split("=", 1)[0] for item in value.split(",") if "=" in item]
    return []


def parse_show_assoc(text: str) -> list[Association]:
    """``sacctmgr -n -P show assoc format=<SHOW_FORMAT>`` output → associations (limits as displayed)."""
    rows = []
    for line in text.splitlines():
        if not line.strip():
            continue
        cells = line.split("|")
        cells += [""] * (len(SHOW_FORMAT) - len(cells))
        account, parent, user, partition = cells[:4]
        limits = {name: parse_value(name, raw) for name, raw in zip(LIMITS, cells[4:], strict=False)}
        rows.append(
            Association(
                account=account,
                parent=parent,
                user=user,
                partition=partition,
                limits={k: v for k, v in limits.items() if v not in (None, {})},
            )
        )
    return rows


# --- what sacctmgr should display, given aipool's own values ---------------------------------------------------


def displayed(wanted: list[Association], actual_root: Association | None) -> dict[tuple, dict]:
    """The limits sacctmgr would display for each wanted association, with Max* inherited from the parents."""
    by_account = {a.account.lower(): a for a in wanted if not a.user}
    root_limits = {k: v for k, v in (actual_root.limits if actual_root else {}).items() if k in INHERITED}
    effective: dict[str, dict] = {}

    def inherited(account: str, seen: tuple = ()) -> dict:
        if account in effective:
            return effective[account]
        assoc = by_account.get(account)
        if assoc is None or account in seen:
            return root_limits
        parent = inherited(assoc.parent.lower(), (*seen, account)) if assoc.parent.lower() != "root" else root_limits
        effective[account] = _inherit(parent, assoc.limits)
        return effective[account]

    shown = {}
    for assoc in wanted:
        own = dict(assoc.limits)
        above = inherited(assoc.account.lower()) if assoc.user else _parent_effective(assoc, inherited, root_limits)
        merged = _inherit(above, own)
        shown[assoc.key] = {k: v for k, v in merged.items() if v not in (None, {})}
    return shown


def _parent_effective(assoc: Association, inherited, root_limits: dict) -> dict:
    return root_limits if assoc.parent.lower() in ("", "root") else inherited(assoc.parent.lower())


def _inherit(parent: dict, own: dict) -> dict:
    merged = dict(own)
    if "MaxTRES" in parent:
        merged["MaxTRES"] = {**parent["MaxTRES"], **(own.get("MaxTRES") or {})}
    if "MaxWall" in parent and own.get("MaxWall") is None:
        merged["MaxWall"] = parent["MaxWall"]
    return merged


# --- the diff ---------------------------------------------------------------------------------------------------


def diff(
    wanted: list[Association],
    actual: list[Association],
    *,
    managed_accounts: Iterable[str],
    cluster: str,
    organization: str,
    account_orgs: dict[str, str] | None = None,
    default_accounts: dict[str, str] | None = None,
) -> list[Change]:
    """Every difference between `wanted` and `actual`, in an order that can be applied: accounts root first, then
    users, then limits, then removals (users before accounts, deepest accounts first).

    `managed_accounts`: the accounts aipool owns in Slurm (Organization=`organization`); an association is removed
    only when it hangs under one of them or is one of them. Accounts of anyone else are never touched.
    `default_accounts`: each Slurm user's DefaultAccount, which Slurm will not let go while the user has others.
    """
    managed = {a.lower() for a in managed_accounts}
    account_orgs = {k.lower(): v for k, v in (account_orgs or {}).items()}
    actual_by_key = {a.key: a for a in actual}
    root = actual_by_key.get(("root", "", ""))
    shown = displayed(wanted, root)
    depth = _depths(wanted)
    adds, modifies, removes = [], [], []
    for assoc in sorted(wanted, key=lambda a: (bool(a.user), depth.get(a.account.lower(), 0), a.key)):
        current = actual_by_key.get(assoc.key)
        if current is None:
            adds.append(_add(assoc, cluster, organization))
            continue
        modifies.extend(_modify(assoc, current, shown[assoc.key], cluster))
        if not assoc.user and account_orgs.get(assoc.account.lower(), organization) != organization:
            modifies.append(_adopt(assoc, account_orgs.get(assoc.account.lower(), ""), cluster, organization))
    wanted_keys = {a.key for a in wanted}
    extra = [a for a in actual if a.key not in wanted_keys and a.account.lower() in managed]
    defaults = {user: account.lower() for user, account in (default_accounts or {}).items()}
    for assoc in sorted(extra, key=lambda a: (not a.user, -_actual_depth(a, actual_by_key), a.key)):
        if assoc.user and defaults.get(assoc.user) == assoc.account.lower():
            moved = _move_default(assoc, wanted, actual, extra, cluster)
            if moved is not None:
                removes.append(moved)
                defaults[assoc.user] = moved.argv[-1].split("=", 1)[1]
        removes.append(_remove(assoc, cluster))
    return adds + modifies + removes


def _move_default(
    assoc: Association, wanted: list[Association], actual: list[Association], extra: list[Association], cluster: str
) -> Change | None:
    """Before a user leaves their DefaultAccount, point it at an account they keep (none left: Slurm drops the user)."""
    leaving = {a.key for a in extra}
    keeps = sorted({a.account.lower() for a in wanted if a.user == assoc.user})
    keeps += sorted({a.account.lower() for a in actual if a.user == assoc.user and a.key not in leaving} - set(keeps))
    if not keeps:
        return None
    return Change(
        "differs",
        f"user {assoc.user}",
        f"DefaultAccount: {assoc.account} goes away, {keeps[0]} takes its place",
        (
            "sacctmgr",
            "-i",
            "modify",
            "user",
            "where",
            f"name={assoc.user}",
            f"cluster={cluster}",
            "set",
            f"DefaultAccount={keeps[0]}",
        ),
    )


def _depths(wanted: list[Association]) -> dict[str, int]:
    parents = {a.account.lower(): a.parent.lower() for a in wanted if not a.user}
    depths = {}
    for account in parents:
        depth, node, seen = 0, account, set()
        while parents.get(node, "root") not in ("root", "") and node not in seen:
            seen.add(node)
            node = parents[node]
            depth += 1
        depths[account] = depth
    return depths


def _actual_depth(assoc: Association, by_key: dict) -> int:
    depth, node, seen = 0, assoc.account.lower(), set()
    while node not in ("root", "") and node not in seen:
        seen.add(node)
        row = by_key.get((node, "", ""))
        node = row.parent.lower() if row else ""
        depth += 1
    return depth + (1 if assoc.user else 0)


def _limit_args(limits: dict) -> list[str]:
    return [f"{name}={format_value(name, limits[name])}" for name in LIMITS if limits.get(name) not in (None, {})]


def _add(assoc: Association, cluster: str, organization: str) -> Change:
    if assoc.user:
        argv = ["sacctmgr", "-i", "add", "user", assoc.user, f"account={assoc.account}", f"cluster={cluster}"]
    else:
        argv = [
            "sacctmgr",
            "-i",
            "add",
            "account",
            assoc.account,
            f"cluster={cluster}",
            f"parent={assoc.parent or 'root'}",
            f"organization={organization}",
            f"description={assoc.description or assoc.account}",
        ]
    limits = _limit_args(assoc.limits)
    detail = " ".join(limits)
    return Change("missing in Slurm", assoc.describe(), detail, tuple(argv + limits))


def _where(assoc: Association, cluster: str) -> list[str]:
    if assoc.user:
        return ["user", "where", f"name={assoc.user}", f"account={assoc.account}", f"cluster={cluster}"]
    return ["account", "where", f"name={assoc.account}", f"cluster={cluster}"]


def _modify(assoc: Association, current: Association, shown: dict, cluster: str) -> list[Change]:
    changes = []
    if not assoc.user and current.parent.lower() != (assoc.parent or "root").lower():
        changes.append(
            Change(
                "differs",
                f"account {assoc.account}",
                f"parent: aipool={assoc.parent or 'root'} slurm={current.parent or '-'}",
                ("sacctmgr", "-i", "modify", *_where(assoc, cluster), "set", f"parent={assoc.parent or 'root'}"),
            )
        )
    sets, details = [], []
    for name in LIMITS:
        want, have = shown.get(name), current.limits.get(name)
        if (want or None) == (have or None):
            continue
        sets.append(f"{name}={clear_or_set(name, have, assoc.limits.get(name))}")
        details.append(f"{name}: aipool={format_value(name, want) or '-'} slurm={format_value(name, have) or '-'}")
    if sets:
        what = f"user {assoc.user} in account {assoc.account}" if assoc.user else f"account {assoc.account}"
        changes.append(
            Change(
                "differs", what, "; ".join(details), ("sacctmgr", "-i", "modify", *_where(assoc, cluster), "set", *sets)
            )
        )
    return changes


def _adopt(assoc: Association, current_org: str, cluster: str, organization: str) -> Change:
    return Change(
        "differs",
        f"account {assoc.account}",
        f"organization: aipool={organization} slurm={current_org or '-'}",
        ("sacctmgr", "-i", "modify", *_where(assoc, cluster), "set", f"organization={organization}"),
    )


def _remove(assoc: Association, cluster: str) -> Change:
    if assoc.user:
        argv = ["sacctmgr", "-i", "delete", "user", "where", f"name={assoc.user}", f"account={assoc.account}"]
        if assoc.partition:
            argv.append(f"partition={assoc.partition}")
        argv.append(f"cluster={cluster}")
    else:
        argv = ["sacctmgr", "-i", "delete", "account", "where", f"name={assoc.account}", f"cluster={cluster}"]
    detail = " ".join(f"{k}={format_value(k, v)}" for k, v in assoc.limits.items())
    return Change("only in Slurm", assoc.describe(), detail, tuple(argv))

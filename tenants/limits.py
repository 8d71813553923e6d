"""Limit names as sacctmgr spells them, parsed into model field changes.

``parse_limit("GrpTRES", "accelerator=800")`` → ``("grp_tres", {"gres/accelerator": 800})``. TRES changes are merged
into the stored value by ``tenants.services.limits_set`` (``-1`` removes one TRES); ``-1`` on a scalar clears it.
"""

from __future__ import annotations

from vocab.slurmtime import TimeFormatError, parse_minutes
from vocab.tres import CLEAR, TRESError, parse_tres

SACCTMGR_NAMES = {
    "grptres": "grp_tres",
    "grptresmins": "grp_tres_mins",
    "grpjobs": "grp_jobs",
    "grpsubmitjobs": "grp_submit_jobs",
    "grpsubmit": "grp_submit_jobs",
    "maxtresperjob": "max_tres_per_job",
    "maxtres": "max_tres_per_job",
    "maxtresperuser": "max_tres_per_user",
    "maxwall": "max_wall",
    "maxwalldurationperjob": "max_wall",
}
FIELD_LABELS = {
    "grp_tres": "GrpTRES",
    "grp_tres_mins": "GrpTRESMins",
    "grp_jobs": "GrpJobs",
    "grp_submit_jobs": "GrpSubmitJobs",
    "max_tres_per_job": "MaxTRESPerJob",
    "max_tres_per_user": "MaxTRESPerUser",
    "max_wall": "MaxWall",
}
TRES_FIELDS = {"grp_tres", "grp_tres_mins", "max_tres_per_job", "max_tres_per_user"}


class LimitError(ValueError):
    pass


def limit_field(name: str) -> str:
    field = SACCTMGR_NAMES.get(name.lower())
    if field is None:
        raise LimitError(f"unknown limit {name!r}: known are {', '.join(sorted(set(FIELD_LABELS.values())))}")
    return field


def parse_limit_value(field: str, raw: str):
    """The change for one field: a TRES dict (may hold CLEAR), an int, or None to clear."""
    label = FIELD_LABELS[field]
    raw = raw.strip()
    try:
        if field in TRES_FIELDS:
            return parse_tres(raw)
        if raw == str(CLEAR):
            return None
        if field == "max_wall":
            return parse_minutes(raw)
    except (TRESError, TimeFormatError) as exc:
        raise LimitError(f"{label}: {exc}") from exc
    if not raw.isdigit():
        raise LimitError(f"{label}={raw}: expected a whole number (or -1 to clear)")
    return int(raw)


def parse_limit(name: str, raw: str) -> tuple[str, object]:
    field = limit_field(name)
    return field, parse_limit_value(field, raw)

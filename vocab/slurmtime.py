"""Slurm's time-limit formats (``sbatch -t``), in whole minutes like Slurm stores them.

Accepted: ``M``, ``M:S``, ``H:M:S``, ``D-H``, ``D-H:M``, ``D-H:M:S``. Seconds round up to the next minute.
"""

import math
import re

_DAYS = re.compile(r"^(\d+)-(\d+)(?::(\d+))?(?::(\d+))?$")
_CLOCK = re.compile(r"^(\d+)(?::(\d+))?(?::(\d+))?$")


class TimeFormatError(ValueError):
    pass


def parse_minutes(text: str | int) -> int:
    if isinstance(text, int):
        if text < 1:
            raise TimeFormatError("time limit must be at least 1 minute")
        return text
    raw = str(text).strip()
    days = hours = minutes = seconds = 0
    if match := _DAYS.match(raw):
        days, hours = int(match.group(1)), int(match.group(2))
        minutes, seconds = int(match.group(3) or 0), int(match.group(4) or 0)
    elif match := _CLOCK.match(raw):
        parts = [int(p) for p in match.groups() if p is not None]
        if len(parts) == 1:
            minutes = parts[0]
        elif len(parts) == 2:
            minutes, seconds = parts
        else:
            hours, minutes, seconds = parts
    else:
        raise TimeFormatError(
            f"bad time limit {raw!r}: use minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS (e.g. 72:00:00)"
        )
    if seconds >= 60 or (minutes >= 60 and (hours or days)) or (hours >= 24 and days):
        raise TimeFormatError(f"bad time limit {raw!r}: a field is out of range")
    total = days * 1440 + hours * 60 + minutes + math.ceil(seconds / 60)
    if total < 1:
        raise TimeFormatError("time limit must be at least 1 minute")
    return total


def format_minutes(minutes: int | None) -> str:
    """Slurm's display form: ``3-00:00:00``, ``72:00:00`` is shown as ``3-00:00:00``; ``None`` → ``UNLIMITED``."""
    if minutes is None:
        return "UNLIMITED"
    days, rest = divmod(minutes, 1440)
    hours, mins = divmod(rest, 60)
    if days:
        return f"{days}-{hours:02d}:{mins:02d}:00"
    return f"{hours:02d}:{mins:02d}:00"

"""The preset catalog: the YAML data files next to this module and their loader (``manage.py load_catalog``).

Entries are written one per line in the data files (``- {id: org/name, params: 8.03B, …}``) so a reviewer can check
each model's facts against its card; :func:`read` turns them into ``Collection`` fields and rejects unknown keys, so a
typo in the data fails loudly instead of loading wrong.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml
from django.db import transaction

from registry.models import Collection, Kind, Visibility
from registry.names import NameError_, check_name, check_namespace
from tenants.services import audit

HERE = Path(__file__).resolve().parent
FILES = {Kind.MODEL: HERE / "models.yaml", Kind.DATASET: HERE / "datasets.yaml"}
KEYS = {"id", "org", "params", "active", "license", "task", "ctx", "library", "base", "langs", "tags", "size", "source",
        "summary", "datasets"}  # fmt: skip
_COUNT = re.compile(r"^(\d+(?:\.\d+)?)([KMBT])$")
_SCALE = {"K": 10**3, "M": 10**6, "B": 10**9, "T": 10**12}


class CatalogError(ValueError):
    pass


def parse_count(text) -> int | None:
    """``8.03B`` → 8_030_000_000, ``22.7M`` → 22_700_000 (as model cards write parameter counts)."""
    if text in (None, ""):
        return None
    match = _COUNT.match(str(text).strip())
    if not match:
        raise CatalogError(f"parameter count {text!r}: write it like 8.03B or 124M")
    return round(float(match.group(1)) * _SCALE[match.group(2)])


@dataclass(frozen=True)
class Entry:
    kind: str
    namespace: str
    name: str
    fields: dict


def _entry(kind: str, raw: dict) -> Entry:
    if not isinstance(raw, dict):
        raise CatalogError(f"{kind} entry {raw!r}: expected a mapping")
    unknown = set(raw) - KEYS
    ident = str(raw.get("id", "?"))
    if unknown:
        raise CatalogError(f"{ident}: unknown keys {', '.join(sorted(map(str, unknown)))}")
    namespace, _, name = ident.partition("/")
    try:
        check_namespace(namespace)
        check_name(name)
    except NameError_ as exc:
        raise CatalogError(f"{ident}: {exc}") from exc
    for required in ("org", "license", "task"):
        if not raw.get(required):
            raise CatalogError(f"{ident}: '{required}' is required")
    if kind == Kind.MODEL and not raw.get("params"):
        raise CatalogError(f"{ident}: 'params' is required for models")
    default_source = f"https://huggingface.co/{'datasets/' if kind == Kind.DATASET else ''}{ident}"
    library = raw.get("library", "transformers" if kind == Kind.MODEL else "datasets")
    fields = {
        "organisation": str(raw["org"]),
        "license": str(raw["license"]),
        "task": str(raw["task"]),
        "library": str(library),
        "parameters": parse_count(raw.get("params")),
        "active_parameters": parse_count(raw.get("active")),
        "context_length": int(raw["ctx"]) if raw.get("ctx") else None,
        "base_models": [str(b) for b in raw.get("base") or []],
        "datasets": [str(d) for d in raw.get("datasets") or []],
        "languages": [str(x) for x in raw.get("langs") or []],
        "tags": [str(t) for t in raw.get("tags") or []],
        "size_description": str(raw.get("size") or ""),
        "source_url": str(raw.get("source") or default_source),
        "summary": str(raw.get("summary") or ""),
    }
    return Entry(kind=kind, namespace=namespace, name=name, fields=fields)


def read(kind: str, path: Path | None = None) -> list[Entry]:
    data = yaml.safe_load((path or FILES[kind]).read_text()) or []
    if not isinstance(data, list):
        raise CatalogError(f"{path or FILES[kind]}: expected a list of entries")
    entries = [_entry(kind, raw) for raw in data]
    seen: set[tuple[str, str]] = set()
    for entry in entries:
        key = (entry.namespace, entry.name)
        if key in seen:
            raise CatalogError(f"{entry.namespace}/{entry.name} appears twice")
        seen.add(key)
    return entries


@dataclass
class LoadResult:
    created: int = 0
    updated: int = 0
    unchanged: int = 0


@transaction.atomic
def load(*, actor, entries: list[Entry]) -> LoadResult:
    """Create or update each catalog entry; a second run with the same files changes nothing."""
    result = LoadResult()
    existing = {
        (c.kind, c.namespace, c.name): c
        for c in Collection.objects.filter(tenant__isnull=True, kind__in={e.kind for e in entries})
    }
    for entry in entries:
        current = existing.get((entry.kind, entry.namespace, entry.name))
        if current is None:
            collection = Collection.objects.create(
                kind=entry.kind,
                namespace=entry.namespace,
                name=entry.name,
                visibility=Visibility.PUBLIC,
                from_catalog=True,
                **entry.fields,
            )
            audit(actor=actor, action="catalog.add", target=collection, tenant=None)
            result.created += 1
            continue
        changes = {k: [getattr(current, k), v] for k, v in entry.fields.items() if getattr(current, k) != v}
        if not changes and current.from_catalog:
            result.unchanged += 1
            continue
        for key, value in entry.fields.items():
            setattr(current, key, value)
        current.from_catalog = True
        current.save()
        audit(actor=actor, action="catalog.update", target=current, tenant=None, changes=changes)
        result.updated += 1
    return result

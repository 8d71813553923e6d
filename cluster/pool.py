"""Load a pool description (YAML) into the inventory tables, idempotently."""

from __future__ import annotations

from pathlib import Path

import yaml
from django.db import transaction

from cluster.models import DEFAULT_ACCELERATOR_TYPE, Node, Partition, Switch
from vocab.slurmtime import parse_minutes
from vocab.tres import parse_memory


class PoolFileError(ValueError):
    pass


def read_pool_file(path: str | Path) -> dict:
    try:
        data = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise PoolFileError(f"cannot read pool description {path}: {exc}") from exc
    if not isinstance(data, dict) or "leaves" not in data or "partitions" not in data:
        raise PoolFileError(f"{path}: a pool description needs 'leaves' and 'partitions'")
    return data


@transaction.atomic
def load_pool(data: dict) -> None:
    defaults = data.get("node_defaults", {})
    spines = {
        name: Switch.objects.update_or_create(name=name, defaults={"parent": None})[0]
        for name in data.get("spines", [])
    }
    for leaf_name, leaf in data["leaves"].items():
        spine = spines.get(leaf.get("spine"))
        if spine is None:
            raise PoolFileError(f"leaf {leaf_name}: unknown spine {leaf.get('spine')!r}")
        switch, _ = Switch.objects.update_or_create(name=leaf_name, defaults={"parent": spine})
        for node_name in leaf.get("nodes", []):
            spec = {**defaults, **(data.get("nodes", {}) or {}).get(node_name, {})}
            Node.objects.update_or_create(
                name=node_name,
                defaults={
                    "switch": switch,
                    "cpus": int(spec.get("cpus", 64)),
                    "memory_mb": parse_memory(str(spec.get("memory", "512G"))),
                    "accelerators": int(spec.get("accelerators", 8)),
                    "accelerator_type": str(spec.get("accelerator_type", DEFAULT_ACCELERATOR_TYPE)),
                },
            )
    for part_name, part in data["partitions"].items():
        max_time = part.get("max_time")
        partition, _ = Partition.objects.update_or_create(
            name=part_name,
            defaults={
                "is_default": bool(part.get("default", False)),
                "max_time": parse_minutes(str(max_time)) if max_time else None,
                "priority_tier": int(part.get("priority_tier", 1)),
            },
        )
        nodes = list(Node.objects.filter(name__in=part.get("nodes", [])))
        missing = set(part.get("nodes", [])) - {n.name for n in nodes}
        if missing:
            raise PoolFileError(f"partition {part_name}: unknown nodes {', '.join(sorted(missing))}")
        partition.nodes.set(nodes)


def load_pool_file(path: str | Path) -> None:
    load_pool(read_pool_file(path))

"""Pick the backend named by settings.AIPOOL_BACKEND, at call time."""

from __future__ import annotations

from importlib import import_module

from cluster.backends.base import ClusterBackend

BACKENDS = {
    "local": "cluster.backends.local:LocalBackend",
    "slurm": "cluster.backends.slurm:SlurmBackend",
}


def get_backend(name: str | None = None) -> ClusterBackend:
    from django.conf import settings

    name = name or settings.AIPOOL_BACKEND
    try:
        target = BACKENDS[name]
    except KeyError as exc:
        raise ValueError(f"unknown AIPOOL_BACKEND {name!r}: choose one of {', '.join(sorted(BACKENDS))}") from exc
    module_name, class_name = target.split(":")
    backend_class = getattr(import_module(module_name), class_name)
    return backend_class.from_settings(settings)

"""The seed's InferenceService YAML, parsed once at the edge into a typed object with per-field messages.

No database here: which accelerator types exist, which model the reference names and whether a replica fits the
group's limits are checked by ``inference.services.service_apply``. Field paths in messages are the YAML's own
(``spec.minReplicas``), so a person finds the line to fix.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import yaml
from django.core.exceptions import ValidationError

from registry.names import NameError_, Ref, parse_ref

API_VERSION = "serving.ai/v1"
KIND = "InferenceService"
NAME = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")
METRICS = {"qps": "qps", "rps": "qps", "concurrency": "concurrency"}  # KServe's "rps" is our "qps"
MAX_REPLICAS = 1000
MAX_TARGET = 10_000_000
MAX_BODY_BYTES = 64 * 1024
DEFAULT_RATE_LIMIT_RPS = 100
# Kubernetes quantities: binary (Ki, Mi, …) and decimal (k, M, G, …) suffixes; we store MiB.
_QUANTITY = re.compile(r"^(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|Pi|k|K|M|G|T|P)$")
_BYTES = {
    "Ki": 1 << 10,
    "Mi": 1 << 20,
    "Gi": 1 << 30,
    "Ti": 1 << 40,
    "Pi": 1 << 50,
    "k": 10**3,
    "K": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "P": 10**15,
}


@dataclass(frozen=True)
class ServiceSpec:
    name: str
    group: str | None  # metadata.group (or metadata.namespace); None: the caller says which
    model: Ref
    min_replicas: int
    max_replicas: int
    scale_metric: str
    scale_target: int
    accelerator_type: str
    accelerators: int  # per replica
    memory_mb: int  # per replica
    rate_limit_rps: int  # per key

    def normalised(self) -> dict:
        """The spec as stored and shown back (`aipool get isvc NAME -o yaml`): canonical names, explicit defaults."""
        return {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "metadata": {"name": self.name, **({"group": self.group} if self.group else {})},
            "spec": {
                "model": f"{self.model.full_name}:{self.model.version or 'latest'}",
                "minReplicas": self.min_replicas,
                "maxReplicas": self.max_replicas,
                "scaling": {"metric": self.scale_metric, "target": self.scale_target},
                "resources": {
                    "accelerator": self.accelerator_type,
                    "accelerators": self.accelerators,
                    "memory": format_quantity(self.memory_mb),
                },
                "rateLimit": {"perKeyRps": self.rate_limit_rps},
            },
        }


def format_quantity(mib: int) -> str:
    return f"{mib // 1024}Gi" if mib % 1024 == 0 else f"{mib}Mi"


def parse_memory_quantity(raw) -> int:
    """``32Gi`` → 32768 MiB; ``32G`` (decimal) → 30518 MiB, rounded up. Raises ValueError with the fix."""
    text = str(raw).strip() if isinstance(raw, (str, int, float)) and not isinstance(raw, bool) else ""
    match = _QUANTITY.match(text)
    if not match:
        raise ValueError(f"bad memory quantity {raw!r}: use a number and a unit such as 32Gi, 512Mi or 32G")
    size = float(match.group(1)) * _BYTES[match.group(2)]
    mib = -(-int(size) // (1 << 20))
    if mib < 1:
        raise ValueError(f"{raw!r} is less than 1Mi")
    if mib > 2**40:
        raise ValueError(f"{raw!r} is larger than any node")
    return mib


def load_document(text: str | bytes) -> dict:
    """YAML (or JSON, which is YAML) text → a mapping; ValidationError on anything else."""
    if isinstance(text, bytes):
        if len(text) > MAX_BODY_BYTES:
            raise ValidationError({"body": [f"at most {MAX_BODY_BYTES // 1024} KiB"]})
        try:
            text = text.decode()
        except UnicodeDecodeError as exc:
            raise ValidationError({"body": ["must be UTF-8 text"]}) from exc
    if len(text) > MAX_BODY_BYTES:
        raise ValidationError({"body": [f"at most {MAX_BODY_BYTES // 1024} KiB"]})
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" (line {where.line + 1})" if where is not None else ""
        raise ValidationError({"body": [f"not valid YAML{line}: {getattr(exc, 'problem', exc)}"]}) from exc
    if not isinstance(data, dict):
        raise ValidationError({"body": ["expected an InferenceService document (a mapping with apiVersion, kind, …)"]})
    return data


class _Errors(dict):
    def add(self, field: str, message: str) -> None:
        self.setdefault(field, []).append(message)


def _mapping(data: dict, key: str, errors: _Errors, path: str) -> dict:
    value = data.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        errors.add(path, "must be a mapping")
        return {}
    return value


def _int(value, path: str, errors: _Errors, *, minimum: int, maximum: int, default=None):
    if value is None:
        if default is None:
            errors.add(path, "this field is required")
        return default
    if isinstance(value, bool) or not isinstance(value, (int, str)) or not str(value).strip().isdigit():
        errors.add(path, f"must be a whole number, got {value!r}")
        return None
    number = int(value)
    if not minimum <= number <= maximum:
        errors.add(path, f"must be between {minimum} and {maximum}, got {number}")
        return None
    return number


def _first(mapping: dict, *keys):
    """The first of `keys` present: the seed's nested name or KServe's flat one."""
    return next((mapping[k] for k in keys if mapping.get(k) is not None), None)


def parse_service_spec(data: dict) -> ServiceSpec:
    """Raise ValidationError({"spec.field": [messages]}) listing every problem at once."""
    errors = _Errors()
    if data.get("apiVersion") != API_VERSION:
        errors.add("apiVersion", f"must be {API_VERSION}, got {data.get('apiVersion')!r}")
    if data.get("kind") != KIND:
        errors.add("kind", f"must be {KIND}, got {data.get('kind')!r}")
    metadata = _mapping(data, "metadata", errors, "metadata")
    spec = _mapping(data, "spec", errors, "spec")
    name = _name(metadata, errors)
    group = _group(metadata, errors)
    model = _model(spec, errors)
    minimum = _int(spec.get("minReplicas"), "spec.minReplicas", errors, minimum=0, maximum=MAX_REPLICAS, default=1)
    maximum = _int(spec.get("maxReplicas"), "spec.maxReplicas", errors, minimum=1, maximum=MAX_REPLICAS, default=0)
    if maximum == 0:
        maximum = max(1, minimum or 1)  # KServe: maxReplicas defaults to minReplicas
    if minimum is not None and maximum is not None and minimum > maximum:
        errors.add("spec.minReplicas", f"minReplicas ({minimum}) is greater than maxReplicas ({maximum})")
    metric, target = _scaling(spec, errors)
    accelerator, accelerators, memory = _resources(spec, errors)
    rate = _rate_limit(spec, errors)
    if errors:
        raise ValidationError(dict(errors))
    return ServiceSpec(
        name=name,
        group=group,
        model=model,
        min_replicas=minimum,
        max_replicas=maximum,
        scale_metric=metric,
        scale_target=target,
        accelerator_type=accelerator,
        accelerators=accelerators,
        memory_mb=memory,
        rate_limit_rps=rate,
    )


def with_model(document: dict, model: str | None) -> dict:
    """The seed's document as it is, plus the model to serve given beside it (``?model=``, ``--model``)."""
    if not model:
        return document
    spec = document.get("spec")
    if not isinstance(spec, dict):
        return document
    if spec.get("model") not in (None, model):
        raise ValidationError({"spec.model": [f"the document says {spec['model']!r}, the request says {model!r}"]})
    return {**document, "spec": {**spec, "model": model}}


def _name(metadata: dict, errors: _Errors) -> str:
    name = metadata.get("name")
    if name is None:
        errors.add("metadata.name", "this field is required")
    elif not isinstance(name, str) or not NAME.match(name):
        errors.add(
            "metadata.name", "use 1-63 lower-case letters, digits or '-', starting and ending with a letter or digit"
        )
    return name if isinstance(name, str) else ""


def _group(metadata: dict, errors: _Errors) -> str | None:
    group = _first(metadata, "group", "namespace")
    if group is None:
        return None
    if not isinstance(group, str) or not re.match(r"^[-a-zA-Z0-9_]{1,64}$", group):
        errors.add("metadata.group", "must be a group name such as ai-team")
        return None
    return group


def _model(spec: dict, errors: _Errors) -> Ref | None:
    raw = spec.get("model")
    if raw is None:
        errors.add("spec.model", "this field is required: the model to serve, e.g. acme/classifier:production")
        return None
    if isinstance(raw, dict):
        name, version = raw.get("name"), _first(raw, "version", "alias")
        if not isinstance(name, str) or (version is not None and not isinstance(version, (str, int))):
            errors.add("spec.model", "give name (namespace/name) and optionally version or alias")
            return None
        raw = f"{name}:{version}" if version is not None else name
    if not isinstance(raw, str):
        errors.add("spec.model", "expected text such as acme/classifier:production or acme/classifier@3")
        return None
    text = raw.strip().removeprefix("model:")
    # Our own "name:version" form next to the repository's "name@version".
    if "@" not in text and ":" in text:
        text = "@".join(text.rsplit(":", 1))
    try:
        return parse_ref(text)
    except NameError_ as exc:
        errors.add("spec.model", str(exc).replace("@", ":"))
        return None


def _scaling(spec: dict, errors: _Errors) -> tuple[str, int]:
    scaling = _mapping(spec, "scaling", errors, "spec.scaling")
    raw_metric = _first(scaling, "metric") or _first(spec, "scaleMetric") or "qps"
    metric = METRICS.get(str(raw_metric).lower()) if isinstance(raw_metric, str) else None
    if metric is None:
        errors.add("spec.scaling.metric", f"unknown metric {raw_metric!r}: use qps or concurrency")
    raw_target, path = _first(scaling, "target"), "spec.scaling.target"
    if raw_target is None and spec.get("scaleTarget") is not None:
        raw_target, path = spec["scaleTarget"], "spec.scaleTarget"
    if raw_target is None:
        errors.add(path, "this field is required: requests per second (or in flight) one replica should take")
        return metric or "qps", 1
    target = _int(raw_target, path, errors, minimum=1, maximum=MAX_TARGET)
    return metric or "qps", target or 1


def _resources(spec: dict, errors: _Errors) -> tuple[str, int, int]:
    resources = _mapping(spec, "resources", errors, "spec.resources")
    accelerator = resources.get("accelerator")
    if accelerator is None:
        errors.add("spec.resources.accelerator", "this field is required: the accelerator type, e.g. nvidia-h100-80gb")
    elif not isinstance(accelerator, str) or not re.match(r"^[-a-zA-Z0-9_.]{1,64}$", accelerator):
        errors.add("spec.resources.accelerator", f"not an accelerator type: {accelerator!r}")
        accelerator = None
    count = _int(
        _first(resources, "accelerators", "count"),
        "spec.resources.accelerators",
        errors,
        minimum=1,
        maximum=64,
        default=1,
    )
    memory = None
    if resources.get("memory") is None:
        errors.add("spec.resources.memory", "this field is required, e.g. 32Gi")
    else:
        try:
            memory = parse_memory_quantity(resources["memory"])
        except ValueError as exc:
            errors.add("spec.resources.memory", str(exc))
    return accelerator or "", count or 1, memory or 1


def _rate_limit(spec: dict, errors: _Errors) -> int:
    raw = spec.get("rateLimit")
    if isinstance(raw, dict):
        raw = raw.get("perKeyRps")
    value = _int(raw, "spec.rateLimit", errors, minimum=1, maximum=1_000_000, default=DEFAULT_RATE_LIMIT_RPS)
    return value or DEFAULT_RATE_LIMIT_RPS


# Key order of the document as people write it; PostgreSQL's jsonb keeps its own order, so reads restore this one.
_ORDER = {
    "": ("apiVersion", "kind", "metadata", "spec"),
    "metadata": ("name", "group"),
    "spec": ("model", "minReplicas", "maxReplicas", "scaling", "resources", "rateLimit"),
    "spec.scaling": ("metric", "target"),
    "spec.resources": ("accelerator", "accelerators", "memory", "cpus"),
}


def ordered_document(document, path: str = ""):
    """The stored document with its keys in the written order (unknown keys after, as they come)."""
    if not isinstance(document, dict):
        return document
    order = _ORDER.get(path, ())
    keys = [k for k in order if k in document] + [k for k in document if k not in order]
    return {k: ordered_document(document[k], f"{path}.{k}".lstrip(".")) for k in keys}

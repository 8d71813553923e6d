"""Names people type: collection names, references such as ``model:acme/llama@production``, file paths, sizes.

Pure functions (no Django), shared by the services, the API and the job extension.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

NAMESPACE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
ALIAS = re.compile(r"^[a-z][a-z0-9._-]{0,63}$")
SHA256 = re.compile(r"^[0-9a-f]{64}$")
KINDS = ("model", "dataset")
MAX_PATH = 1024
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGTP]?)(i?B)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50}


class NameError_(ValueError):
    """A name, reference or path a person wrote is malformed; the message says how to write it."""


@dataclass(frozen=True)
class Ref:
    kind: str
    namespace: str
    name: str
    version: str = ""  # a version number, an alias, or empty for "latest"

    @property
    def full_name(self) -> str:
        return f"{self.namespace}/{self.name}"

    def __str__(self) -> str:
        return f"{self.kind}:{self.full_name}" + (f"@{self.version}" if self.version else "")


def check_namespace(value: str) -> str:
    if not isinstance(value, str) or not NAMESPACE.match(value):
        raise NameError_("use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit")
    return value


def check_name(value: str) -> str:
    if not isinstance(value, str) or not NAME.match(value):
        raise NameError_("use 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit")
    return value


def check_alias(value: str) -> str:
    if not isinstance(value, str) or not ALIAS.match(value):
        raise NameError_("use 1-64 lower-case letters, digits, '.', '_' or '-', starting with a letter")
    return value


def parse_ref(text: str, *, default_kind: str = "model") -> Ref:
    """``model:acme/llama@production``, ``dataset:acme/corpus@3``, ``acme/llama`` (a model, latest version)."""
    if not isinstance(text, str) or not text.strip():
        raise NameError_("expected a reference such as model:acme/llama@production")
    text = text.strip()
    kind = default_kind
    if ":" in text.split("/", 1)[0]:
        kind, text = text.split(":", 1)
    if kind not in KINDS:
        raise NameError_(f"unknown kind {kind!r}: use model: or dataset:")
    path, _, version = text.partition("@")
    if path.count("/") != 1:
        raise NameError_(f"{path!r}: expected NAMESPACE/NAME, e.g. acme/llama")
    namespace, name = path.split("/")
    try:
        check_namespace(namespace)
        check_name(name)
    except NameError_ as exc:
        raise NameError_(f"{path!r}: {exc}") from exc
    if version and not (version.isdigit() or ALIAS.match(version)):
        raise NameError_(f"@{version}: expected a version number or an alias such as production")
    return Ref(kind=kind, namespace=namespace, name=name, version=version)


def check_path(value: str) -> str:
    """A relative file path inside a version: no absolute paths, no '..', no empty or hidden tricks."""
    if not isinstance(value, str) or not value.strip():
        raise NameError_("a relative path such as weights/model.safetensors is required")
    if len(value) > MAX_PATH:
        raise NameError_(f"at most {MAX_PATH} characters")
    if "\\" in value or "\x00" in value or any(ord(c) < 32 for c in value):
        raise NameError_("use '/' between directories; no control characters")
    if value.startswith("/"):
        raise NameError_("must be relative (no leading '/')")
    parts = value.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise NameError_("no empty, '.' or '..' components")
    return str(PurePosixPath(value))


def env_token(name: str) -> str:
    """``Llama-3.1-8B`` → ``LLAMA_3_1_8B``: the NAME in AIPOOL_MODEL_<NAME>_PATH."""
    token = re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_").upper()
    if not token or token[0].isdigit():
        token = f"X{token}"
    return token


def parse_size(text) -> int:
    """``500G`` / ``1.5T`` / ``1024`` (bytes; binary units) → bytes."""
    if isinstance(text, bool):
        raise NameError_("expected a size such as 500G")
    if isinstance(text, int):
        if text < 0:
            raise NameError_("must not be negative")
        return text
    match = _SIZE.match(str(text))
    if not match:
        raise NameError_(f"bad size {text!r}: use a number with an optional unit K, M, G, T or P (e.g. 500G)")
    return int(float(match.group(1)) * _UNITS[match.group(2).upper()])


def format_size(n: int | None) -> str:
    if n is None:
        return "unlimited"
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"


def format_count(n: int | None) -> str:
    """Parameter counts the way model cards write them: 8.03B, 124M, 22.7M."""
    if n is None:
        return ""
    for unit, size in (("T", 10**12), ("B", 10**9), ("M", 10**6), ("K", 10**3)):
        if n >= size:
            value = n / size
            text = f"{value:.2f}".rstrip("0").rstrip(".") if value < 100 else f"{value:.0f}"
            return f"{text}{unit}"
    return str(n)

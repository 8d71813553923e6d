"""OpenAPI examples of the model and dataset repository (models/, datasets/, versions/, files/, uploads/, storage/).

Taken from the answers of a small pool (tenant acme, group ai-team), like api.examples for the contract's resources;
tests/api/test_schema.py checks each against its schema.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample

WHEN = "2026-03-02T09:15:04Z"
SHA = "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"


def _response(name: str, value: dict) -> list[OpenApiExample]:
    return [OpenApiExample(name, value=value, response_only=True, status_codes=["200", "201"])]


def _request(name: str, value: dict) -> list[OpenApiExample]:
    return [OpenApiExample(name, value=value, request_only=True)]


COLLECTION_FIELDS = {
    "id": 7,
    "kind": "model",
    "full_name": "acme/llama-ft",
    "namespace": "acme",
    "name": "llama-ft",
    "tenant": "acme",
    "group": "ai-team",
    "visibility": "group",
    "replicas": 2,
    "summary": "Llama 3.1 8B fine-tuned on acme's support tickets",
    "organisation": "acme",
    "license": "llama3.1",
    "task": "text-generation",
    "library": "transformers",
    "parameters": 8030000000,
    "parameters_display": "8.03B",
    "active_parameters": None,
    "context_length": 131072,
    "base_models": ["meta-llama/Llama-3.1-8B-Instruct"],
    "datasets": ["acme/tickets"],
    "languages": ["en"],
    "metrics": {"mmlu": 68.4},
    "tags": ["fine-tuned"],
    "size_description": "16 GB in bf16",
    "source_url": "https://huggingface.co/acme/llama-ft",
    "from_catalog": False,
    "aliases": {"latest": 3, "production": 2},
    "versions": 3,
    "page": "/models/acme/llama-ft/",
    "created_at": WHEN,
    "updated_at": WHEN,
}
COLLECTION = _response("A model of group ai-team", COLLECTION_FIELDS)
COLLECTION_DETAIL = _response(
    "A model with its card", {**COLLECTION_FIELDS, "card": "# llama-ft\n\nFine-tuned for support answers.\n"}
)
COLLECTION_CREATE = _request(
    "A model of your group",
    {
        "name": "llama-ft",
        "group": "ai-team",
        "visibility": "group",
        "replicas": 2,
        "summary": "Llama 3.1 8B fine-tuned on acme's support tickets",
        "license": "llama3.1",
        "task": "text-generation",
        "parameters": 8030000000,
        "base_models": ["meta-llama/Llama-3.1-8B-Instruct"],
        "card": "# llama-ft\n\nFine-tuned for support answers.\n",
    },
)
COLLECTION_UPDATE = _request(
    "Share it with the tenant, keep three copies", {"visibility": "tenant", "replicas": 3, "metrics": {"mmlu": 69.1}}
)

VERSION_FIELDS = {
    "id": 12,
    "collection": 7,
    "ref": "model:acme/llama-ft@3",
    "number": 3,
    "state": "published",
    "message": "epoch 3",
    "aliases": ["latest"],
    "file_count": 4,
    "size": 16060000000,
    "created_by": "alice",
    "created_at": WHEN,
    "published_at": WHEN,
    "lineage": {
        "job": 42,
        "checkpoint": "final",
        "parents": [{"id": 5, "ref": "model:meta-llama/Llama-3.1-8B-Instruct@1"}],
    },
}
VERSION = _response("A published version written by job 42", VERSION_FIELDS)
VERSION_CREATE = _request("A new draft", {"message": "epoch 4"})
VERSION_PUBLISH = _request("Publish and point production at it", {"aliases": ["production"]})
ALIAS_SET = _request("Point production at version 2", {"name": "production", "version": 2})
VERSION_COPY = _request(
    "Promote into the tenant's shared model", {"to": "model:acme/llama-prod", "message": "from ft@3", "aliases": []}
)

FILE = _response(
    "A stored file",
    {
        "id": 31,
        "version": 12,
        "path": "config.json",
        "size": 2,
        "sha256": SHA,
        "created_at": WHEN,
        "download": "/api/v1/files/31/download/",
        "replicas_ok": 2,
        "replicas": None,
    },
)
UPLOAD_CREATE = _request("A 16 GB weights file", {"path": "model.safetensors", "size": 16060000000, "sha256": SHA})
UPLOAD = _response(
    "Half-way through",
    {
        "id": 4,
        "version": 13,
        "path": "model.safetensors",
        "size": 16060000000,
        "sha256": SHA,
        "offset": 8030000000,
        "state": "receiving",
        "file": None,
        "created_at": WHEN,
        "updated_at": WHEN,
    },
)
FIT = _response(
    "An 8B model served in bf16",
    {
        "model": "acme/llama-ft",
        "parameters": 8030000000,
        "estimate": {
            "mode": "serve",
            "precision": "bf16",
            "memory_gb": 19.3,
            "accelerators": 1,
            "nodes": 1,
            "accelerator_memory_gb": 80.0,
            "method": "8,030,000,000 parameters × 2 bytes × 1.2 overhead",
        },
        "groups": [
            {
                "group": "ai-team",
                "partition": "main",
                "partition_accelerators": 32,
                "accelerators_per_node": 8,
                "limit": 16,
                "limited_by": "GrpTRES of group ai-team",
                "in_use": 4,
                "allowed": True,
                "allowed_now": True,
                "message": "fits the group's limits (GrpTRES of group ai-team: 16)",
            }
        ],
    },
)
STORAGE = _response(
    "A group's repository storage",
    {
        "id": 1,
        "group": "ai-team",
        "tenant": "acme",
        "limit_bytes": 536870912000,
        "used_bytes": 32120000000,
        "reserved_bytes": 8030000000,
        "display": "29.9 GiB of 500.0 GiB",
    },
)
STORAGE_UPDATE = _request("Half a terabyte", {"limit": "500G"})

"""Examples for the OpenAPI schema: one realistic request and answer per shape, attached to the serializers.

They are what /api/docs/ shows and what schemathesis sends first, so request examples name the objects of a small
pool (tenant acme, group ai-team, partition main); tests check every example against its own schema.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample

WHEN = "2026-03-02T09:15:04Z"

LIMITS = {
    "grp_tres": {"gres/accelerator": 16},
    "grp_tres_mins": {},
    "grp_jobs": 20,
    "grp_submit_jobs": None,
    "max_tres_per_job": {},
    "max_tres_per_user": {},
    "max_wall": 4320,
}
LIMITS_DISPLAY = {
    "GrpTRES": "gres/accelerator=16",
    "GrpTRESMins": "",
    "GrpJobs": "20",
    "GrpSubmitJobs": "",
    "MaxTRESPerJob": "",
    "MaxTRESPerUser": "",
    "MaxWall": "3-00:00:00",
}
NO_LIMITS = {
    "grp_tres": {},
    "grp_tres_mins": {},
    "grp_jobs": None,
    "grp_submit_jobs": None,
    "max_tres_per_job": {},
    "max_tres_per_user": {},
    "max_wall": None,
}
NO_LIMITS_DISPLAY = dict.fromkeys(LIMITS_DISPLAY, "")
TRES_RUNNING = {"cpu": 128, "mem": 1048576, "node": 2, "gres/accelerator": 16}
TRES_PENDING = {"cpu": 8, "mem": 65536, "node": 1, "gres/accelerator": 1}
TRES_NONE = {"cpu": 0, "mem": 0, "node": 0, "gres/accelerator": 0}


def _response(name: str, value: dict) -> list[OpenApiExample]:
    return [OpenApiExample(name, value=value, response_only=True)]


def _request(name: str, value: dict) -> list[OpenApiExample]:
    return [OpenApiExample(name, value=value, request_only=True)]


ME = _response(
    "A member of one tenant",
    {
        "id": 3,
        "username": "alice",
        "email": "alice@acme.example",
        "first_name": "Alice",
        "last_name": "Liddell",
        "is_staff": False,
        "tenants": [{"id": 1, "name": "acme", "role": "member"}],
        "groups": [{"id": 1, "name": "ai-team", "tenant": "acme"}],
    },
)

QUOTA = _response(
    "quota -u alice",
    {
        "user": "alice",
        "groups": [
            {
                "group": "ai-team",
                "tenant": "acme",
                "path": "/ai-team/",
                "limits": LIMITS,
                "limits_display": LIMITS_DISPLAY,
                "usage": {
                    "running_tres": TRES_RUNNING,
                    "pending_tres": TRES_PENDING,
                    "running_jobs": 1,
                    "pending_jobs": 1,
                    "tres_minutes": {"cpu": 76800, "mem": 614400000, "node": 1200, "gres/accelerator": 9600},
                },
                "user_usage": {
                    "running_tres": TRES_NONE,
                    "pending_tres": TRES_PENDING,
                    "running_jobs": 0,
                    "pending_jobs": 1,
                    "tres_minutes": {"cpu": 480, "mem": 3932160, "node": 60, "gres/accelerator": 60},
                },
            }
        ],
    },
)

TENANT = _response(
    "A tenant you administer",
    {
        "id": 1,
        "name": "acme",
        "description": "Acme Research",
        "role": "admin",
        "shares": 1,
        "limits": {**NO_LIMITS, "grp_tres": {"gres/accelerator": 24}},
        "limits_display": {**NO_LIMITS_DISPLAY, "GrpTRES": "gres/accelerator=24"},
        "created_at": WHEN,
    },
)
TENANT_CREATE = _request(
    "A tenant with a quota", {"name": "initech", "description": "Initech AI", "limits": {"GrpTRES": "accelerator=64"}}
)
TENANT_UPDATE = _request("Raise the tenant's quota", {"limits": {"GrpTRES": "gres/accelerator=800,cpu=512"}})

GROUP = _response(
    "A group with limits and live usage",
    {
        "id": 1,
        "name": "ai-team",
        "tenant": "acme",
        "parent": None,
        "path": "/ai-team/",
        "description": "Model training",
        "partitions": ["main"],
        "default_partition": "main",
        "shares": 1,
        "limits": LIMITS,
        "limits_display": LIMITS_DISPLAY,
        "usage": {"running_tres": TRES_RUNNING, "pending_tres": TRES_PENDING, "running_jobs": 1, "pending_jobs": 1},
        "created_at": WHEN,
    },
)
GROUP_CREATE = _request(
    "A child group with its own quota",
    {
        "tenant": "acme",
        "name": "vision",
        "parent": "ai-team",
        "partitions": ["main"],
        "default_partition": "main",
        "description": "Vision models",
        "limits": {"GrpTRES": "accelerator=8", "MaxWall": "24:00:00"},
    },
)
GROUP_UPDATE = _request(
    "Change the quota (-1 clears a limit)", {"limits": {"GrpTRES": "accelerator=32", "GrpJobs": -1}, "shares": 2}
)

MEMBERSHIP = _response(
    "A member and their groups", {"id": 4, "tenant": "acme", "user": "bob", "role": "member", "groups": ["ai-team"]}
)
MEMBERSHIP_CREATE = _request(
    "Add a user to the tenant and a group", {"tenant": "acme", "user": "carol", "role": "member", "groups": ["ai-team"]}
)
MEMBERSHIP_UPDATE = _request("Make a member an admin", {"role": "admin"})

PARTITION = _response(
    "The default partition",
    {
        "id": 1,
        "name": "main",
        "default": True,
        "max_time": "7-00:00:00",
        "max_time_minutes": 10080,
        "priority_tier": 1,
        "nodes": 4,
        "accelerators_total": 32,
        "accelerators_free": 15,
    },
)
NODE = _response(
    "A node partly in use",
    {
        "id": 1,
        "name": "node1",
        "partitions": ["main"],
        "state": "MIXED",
        "accelerators_total": 8,
        "accelerators_allocated": 4,
        "cpus": 64,
        "cpus_allocated": 32,
        "memory_mb": 524288,
        "switch": "leaf0",
    },
)

JOB_FIELDS = {
    "id": 42,
    "name": "llm-pretrain",
    "tenant": "acme",
    "group": "ai-team",
    "user": "alice",
    "partition": "main",
    "nodes": 2,
    "accelerators_per_node": 8,
    "cpus_per_node": 64,
    "memory_per_node": "512G",
    "memory_per_node_mb": 524288,
    "time_limit": "3-00:00:00",
    "time_limit_minutes": 4320,
    "topology_aware": True,
    "max_switches": 1,
    "runtime": "ai-suite/2.1",
    "state": "RUNNING",
    "reason": "None",
    "priority": 1850,
    "exit_code": None,
    "submitted_at": "2026-03-02T09:15:04Z",
    "started_at": "2026-03-02T09:15:06Z",
    "ended_at": None,
    "nodelist": ["node1", "node2"],
    "switches": ["leaf0"],
    "backend": "local",
    "backend_job_id": "42.0",
}
JOB = _response("A running job", JOB_FIELDS)
JOB_DETAIL_FIELDS = {
    **JOB_FIELDS,
    "command": "python train.py --config big.yaml",
    "script": "",
    "environment": {"WANDB_PROJECT": "llm"},
    "events": [
        {"at": "2026-03-02T09:15:04Z", "from_state": "", "to_state": "PENDING", "reason": "", "cause": "submitted"},
        {
            "at": "2026-03-02T09:15:06Z",
            "from_state": "PENDING",
            "to_state": "RUNNING",
            "reason": "",
            "cause": "allocated node1,node2",
        },
    ],
}
JOB_DETAIL = _response("A running job, with its history", JOB_DETAIL_FIELDS)
JOB_SUBMITTED = [
    OpenApiExample(
        "Submitted",
        value={
            **JOB_DETAIL_FIELDS,
            "state": "PENDING",
            "started_at": None,
            "nodelist": [],
            "switches": [],
            "backend": "",
            "backend_job_id": "",
            "events": JOB_DETAIL_FIELDS["events"][:1],
        },
        response_only=True,
        status_codes=["201", "200"],
    )
]

LOG_CHUNK = _response(
    "The next piece of stdout",
    {"text": "step 100 loss 2.31\nstep 200 loss 2.05\n", "offset": 4096, "size": 4096, "state": "RUNNING"},
)
EXPLAIN = _response(
    "Held by the group's quota",
    {
        "state": "PENDING",
        "reason": "AssocGrpGRES",
        "causes": [
            {
                "code": "AssocGrpGRES",
                "message": "group ai-team has 12 of its 16 accelerators in use; this job needs 8",
                "limit": 16,
                "in_use": 12,
                "requested": 8,
            }
        ],
        "estimated_start": "2026-03-02T13:00:00Z",
        "suggestions": [
            {
                "message": "ask for 4 accelerators per node instead of 8: starts now",
                "change": {"accelerators_per_node": 4},
                "estimated_start": "2026-03-02T09:20:00Z",
            }
        ],
    },
)

TOKEN_FIELDS = {
    "id": 7,
    "name": "ci",
    "prefix": "aip_3fZk9QaB",
    "scopes": ["read", "write"],
    "active": True,
    "created_at": WHEN,
    "expires_at": "2026-05-31T09:15:04Z",
    "last_used_at": "2026-03-02T10:01:00Z",
    "revoked_at": None,
}
TOKEN = _response("A token in use", TOKEN_FIELDS)
TOKEN_CREATE = _request("A CI token for 90 days", {"name": "ci", "scopes": ["read", "write"], "expires_days": 90})
TOKEN_CREATED = _response(
    "The secret, shown once",
    {**TOKEN_FIELDS, "last_used_at": None, "token": "aip_3fZk9QaBx1Lw0mJ8cV2pRt6yUe4sNo5kHd7gFa9qWzI"},
)

ERRORS = [
    OpenApiExample(
        "validation_error",
        value={
            "code": "validation_error",
            "detail": "nodes: ensure this value is greater than or equal to 1",
            "errors": {"nodes": ["ensure this value is greater than or equal to 1"]},
        },
        response_only=True,
        status_codes=["400"],
    ),
    OpenApiExample(
        "not_authenticated",
        value={"code": "not_authenticated", "detail": "token expired", "errors": {}},
        response_only=True,
        status_codes=["401"],
    ),
    OpenApiExample(
        "insufficient_scope",
        value={
            "code": "insufficient_scope",
            "detail": "this token lacks the 'write' scope needed for POST",
            "errors": {},
        },
        response_only=True,
        status_codes=["403"],
    ),
    OpenApiExample(
        "not_found",
        value={"code": "not_found", "detail": "not found", "errors": {}},
        response_only=True,
        status_codes=["404"],
    ),
    OpenApiExample(
        "conflict",
        value={"code": "conflict", "detail": "job 42 has already ended (COMPLETED)", "errors": {}},
        response_only=True,
        status_codes=["409"],
    ),
    OpenApiExample(
        "throttled",
        value={"code": "throttled", "detail": "Request was throttled. Expected available in 20 seconds.", "errors": {}},
        response_only=True,
        status_codes=["429"],
    ),
    OpenApiExample(
        "backend_unavailable",
        value={
            "code": "backend_unavailable",
            "detail": "the cluster backend cannot be reached now; try again shortly",
            "errors": {},
        },
        response_only=True,
        status_codes=["503"],
    ),
]

PRIORITY = _response(
    "sprio -l -j 42",
    {
        "job_id": 42,
        "priority": 5350,
        "factors": {
            "age": {"factor": 0.1, "weight": 1000, "value": 100.0},
            "fairshare": {"factor": 0.5, "weight": 10000, "value": 5000.0},
            "job_size": {"factor": 0.25, "weight": 1000, "value": 250.0},
            "partition": {"factor": 0.0, "weight": 1000, "value": 0.0},
        },
        "fairshare": {
            "association": "ai-team",
            "usage": 86400.0,
            "tenant_usage": 172800.0,
            "half_life_seconds": 604800.0,
        },
    },
)

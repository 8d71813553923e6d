"""Property-based API tests: schemathesis reads /api/schema/ and sends generated requests, valid and invalid, to
every operation, then chains them (list → detail → change → delete) along links it infers from the schema.

Every answer must be no server error, and its status code, content type and body must be what the schema documents.
Requests go through the WSGI app in-process, inside the test's transaction: nothing is committed, so no job is ever
dispatched to a backend (dispatch waits for a commit). Seeded and derandomized: the same requests on every run.
"""

from __future__ import annotations

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections, transaction
from hypothesis import HealthCheck, Phase, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from api.throttling import TokenRateThrottle
from portal.wsgi import application

pytestmark = pytest.mark.django_db

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
SEED = 20240501

schema = schemathesis.openapi.from_wsgi(
    "/api/schema/",
    application,
    config=schemathesis.Config.from_dict(
        {
            "seed": SEED,
            # Positive and negative data, 25 examples per operation. The coverage phase (every boundary and
            # missing-field variant) sends ~8,000 requests for ~60 operations, minutes on 2 cores: left out.
            "generation": {"max-examples": 25, "deterministic": True, "database": "none"},
            "phases": {
                "coverage": {"enabled": False},
                # Chains go further on valid data; the single-operation tests cover invalid data.
                "stateful": {"generation": {"mode": "positive"}},
            },
            "suppress-health-check": [HealthCheck.too_slow.name, HealthCheck.filter_too_much.name],
        }
    ),
)


@pytest.fixture(autouse=True)
def _in_process(monkeypatch):
    # Django's WSGI handler closes the database connection after each request, which would end the test's
    # transaction; keep it open, as Django's own test client does.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    # Hundreds of requests a minute from one token: the throttle would answer most of them with 429.
    monkeypatch.setattr(TokenRateThrottle, "THROTTLE_RATES", {"api": None})
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


def bearer_for(user) -> dict[str, str]:
    from api.services import token_create

    _, secret = token_create(user=user, name="schemathesis", scopes=["read", "write"])
    return {"Authorization": f"Bearer {secret}"}


@pytest.fixture
def submitted(world):
    """A job of the tenant admin's tenant, so job detail, logs, explain and cancel have something to find."""
    from tests.jobs.helpers import submit

    return submit(world.alice, world.ai_team, name="seed")


@schema.parametrize()
# One world per operation, shared by its examples: what one example writes, the next may read.
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_every_operation_answers_as_documented(case, world, submitted):
    case.call_and_validate(headers=bearer_for(world.ada), checks=CHECKS)


def test_chained_operations_answer_as_documented(world, submitted):
    class Workflow(schema.as_state_machine()):
        def setup(self):
            # Each scenario starts from the same world and a token of its own: a scenario that revokes its
            # token or deletes a group does not blind the next one.
            self.savepoint = transaction.savepoint()
            self.headers = bearer_for(world.ada)

        def teardown(self):
            transaction.savepoint_rollback(self.savepoint)

        def get_call_kwargs(self, case):
            return {"headers": self.headers}

        def validate_response(self, response, case, additional_checks=None, **kwargs):
            case.validate_response(response, checks=CHECKS, transport_kwargs=kwargs or None)

    Workflow.run(
        settings=settings(
            max_examples=60,
            stateful_step_count=8,
            derandomize=True,
            database=None,
            deadline=None,
            phases=[Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
    )

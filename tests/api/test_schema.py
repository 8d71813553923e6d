"""OpenAPI 3 schema and its interactive docs, served without any CDN."""

import pytest
from django.core.management import call_command

pytestmark = pytest.mark.django_db


def test_schema_is_served(client):
    response = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    schema = response.json()
    assert schema["openapi"].startswith("3.")
    assert "/api/v1/jobs/" in schema["paths"] and "Error" in schema["components"]["schemas"]
    assert "bearerAuth" in schema["components"]["securitySchemes"]
    create = schema["paths"]["/api/v1/jobs/"]["post"]
    assert {"201", "200", "400", "401", "403", "409", "429"} <= set(create["responses"])
    assert create["requestBody"]["content"]["application/json"]["examples"]


def test_schema_validates_without_warnings(tmp_path):
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(tmp_path / "schema.yaml"))


def test_docs_page_loads_swagger_ui_from_this_server(client):
    response = client.get("/api/docs/")
    assert response.status_code == 200
    page = response.content.decode()
    assert "swagger-ui" in page and "drf_spectacular_sidecar" in page
    assert "cdn." not in page and "jsdelivr" not in page and "unpkg" not in page

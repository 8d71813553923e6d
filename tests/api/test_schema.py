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


# --- examples --------------------------------------------------------------------------------------------------

# The v1 resources of api-contract.md, and the model and dataset repository's.
CONTRACT_RESOURCES = ("me/", "tenants/", "groups/", "memberships/", "partitions/", "nodes/", "jobs/", "tokens/")
REGISTRY_RESOURCES = ("models/", "datasets/", "versions/", "files/", "uploads/", "storage/")


def _openapi() -> dict:
    from drf_spectacular.generators import SchemaGenerator

    return SchemaGenerator().get_schema(request=None, public=True)


def _contract_operations(schema: dict):
    for path, operations in schema["paths"].items():
        if not path.removeprefix("/api/v1/").startswith(CONTRACT_RESOURCES + REGISTRY_RESOURCES):
            continue
        for method, operation in operations.items():
            if method != "parameters":
                yield f"{method.upper()} {path}", operation


def _examples(content: dict) -> dict:
    return content.get("application/json", {}).get("examples", {})


def _lacks_examples(content: dict) -> bool:
    # Raw bytes (file uploads and downloads) have no JSON example to give.
    return "application/json" in content and not _examples(content)


def test_every_contract_operation_has_request_and_response_examples():
    missing = []
    for label, operation in _contract_operations(_openapi()):
        body = operation.get("requestBody")
        if body and _lacks_examples(body["content"]):
            missing.append(f"{label} request")
        for code, response in operation["responses"].items():
            if code.startswith("2") and "content" in response and _lacks_examples(response["content"]):
                missing.append(f"{label} {code}")
    assert not missing


def test_the_examples_check_covers_the_repository():
    labels = [label for label, _ in _contract_operations(_openapi())]
    for resource in REGISTRY_RESOURCES:
        assert any(f" /api/v1/{resource}" in label for label in labels), resource
    assert "POST /api/v1/models/ " not in labels  # labels are "METHOD PATH"
    assert "POST /api/v1/models/" in labels


def _json_schema(node):
    """OpenAPI 3.0's `nullable` as JSON Schema's null type, so jsonschema can check the examples."""
    if isinstance(node, list):
        return [_json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: _json_schema(value) for key, value in node.items()}
    if node.pop("nullable", False):
        if "type" in node:
            node["type"] = [node["type"], "null"]
        else:
            node = {"anyOf": [node, {"type": "null"}]}
    return node


def test_every_example_matches_its_schema():
    import jsonschema

    schema = _json_schema(_openapi())
    components = {"components": schema["components"]}
    wrong = []
    for label, operation in _contract_operations(schema):
        bodies = [("request", operation.get("requestBody", {}))]
        bodies += [(code, response) for code, response in operation["responses"].items()]
        for where, body in bodies:
            media = body.get("content", {}).get("application/json", {})
            for name, example in media.get("examples", {}).items():
                validator = jsonschema.Draft202012Validator({**media["schema"], **components})
                for error in validator.iter_errors(example["value"]):
                    wrong.append(f"{label} {where} '{name}': {error.message} at {list(error.absolute_path)}")
    assert not wrong

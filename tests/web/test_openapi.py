"""The service's OpenAPI document passes openapi-spec-validator, with request bodies and the
statuses the routes really answer."""

import json
import urllib.request

from openapi_spec_validator import validate


def test_openapi_document_is_valid_and_complete(server):
    with urllib.request.urlopen(server.base + "/v1/openapi.json") as r:
        doc = json.load(r)
    validate(doc)
    paths = doc["paths"]
    assert paths["/v1/health"]["get"]["security"] == []
    assert "201" in paths["/v1/collections/{name}"]["put"]["responses"]
    for path, item in paths.items():
        for method, op in item.items():
            if method in ("post", "put"):
                assert "requestBody" in op, (path, method)
    # The statuses it declares are the ones the routes give.
    req = urllib.request.Request(server.base + "/v1/collections/c", data=b"{}", method="PUT",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req) as r:
        assert r.status == 201

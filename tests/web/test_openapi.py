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


def test_every_option_the_service_takes_is_bounded_as_the_table_says(server):
    """The schemas of the collection options, the passage options and a query's threshold are
    the library's option table (neardup.options()): type, bounds, choices and default."""
    import neardup

    with urllib.request.urlopen(server.base + "/v1/openapi.json") as r:
        doc = json.load(r)
    paths = doc["paths"]
    body = lambda path, method: paths[path][method]["requestBody"]["content"]["application/json"]["schema"]
    create = body("/v1/collections/{name}", "put")["properties"]
    passages = next(s for s in create["passages"]["oneOf"] if s.get("type") == "object")["properties"]
    search = body("/v1/collections/{name}/search", "post")["properties"]
    schemas = {"search": create, "pipeline": create, "passages": passages, "query": search}
    checked = 0
    for r in neardup.options():
        if not r["http"]:
            continue
        s = schemas[r["group"]][r["http"]]
        if r["choices"]:
            assert s.get("enum", s.get("items", {}).get("enum")) == r["choices"], r["name"]
        for key, exclusive in [("min", "exclusiveMinimum"), ("max", "exclusiveMaximum")]:
            bound = r[key]
            if bound is not None and abs(bound) < 1e15:
                assert s["minimum" if key == "min" else "maximum"] == bound, (r["name"], s)
                assert s.get(exclusive, False) == r.get(f"{key}_exclusive", False), (r["name"], s)
        if r["default"] is not None:
            assert s["default"] == r["default"], (r["name"], s)
        checked += 1
    assert checked >= 20

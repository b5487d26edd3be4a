//! The OpenAPI 3.0 description of the service (`GET /v1/openapi.json`), checked by
//! `openapi-spec-validator` in the Python test suite.

use serde_json::{json, Value};

use neardup::{OptionGroup, OptionKind, OptionRow};

use crate::Limits;

fn error_response(description: &str) -> Value {
    json!({
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    })
}

fn ok_response(description: &str, schema: Value) -> Value {
    json!({"description": description, "content": {"application/json": {"schema": schema}}})
}

fn body(schema: Value) -> Value {
    json!({"required": true, "content": {"application/json": {"schema": schema}}})
}

fn path_param(name: &str, description: &str) -> Value {
    json!({"name": name, "in": "path", "required": true, "description": description,
           "schema": {"type": "string"}})
}

/// An operation with its responses: `ok` plus the errors every route can give (and `extra`).
fn op(summary: &str, ok: (&str, Value), extra: &[(&str, &str)]) -> Value {
    let mut responses = serde_json::Map::new();
    responses.insert(ok.0.to_string(), ok.1);
    for (code, description) in [
        (
            "400",
            "malformed JSON, wrong types, invalid UTF-8, invalid name or option, or a request \
             head that cannot be parsed (bad_request: request line, a control byte in a header, \
             conflicting Content-Length)",
        ),
        ("401", "missing or wrong bearer token"),
        (
            "403",
            "an Origin other than the server's own, or (on loopback) a Host that is not \
                 localhost, 127.0.0.1 or [::1] with the server's port",
        ),
        (
            "413",
            "body, document, metadata (--max-metadata-bytes) or batch over the limit, or a \
             request that may need more memory than requests may hold at once \
             (request_too_large: --max-memory-mb)",
        ),
        ("414", "URI too long"),
        ("431", "over 100 header fields, or a request head over 400 KiB"),
        (
            "503",
            "the store had an I/O error and is being reopened (storage_unavailable), or, for \
             search, check, insert, overlap and compare, every turn is taken or the memory a \
             request needs is in use, and the queue is full or the wait was over 10 s (busy, \
             with Retry-After)",
        ),
    ]
    .iter()
    .chain(extra)
    {
        responses.insert(code.to_string(), error_response(description));
    }
    responses["503"]["headers"] = json!({"Retry-After": {
        "description": "seconds to wait before retrying (busy)",
        "schema": {"type": "integer"}
    }});
    json!({"summary": summary, "responses": responses})
}

fn with(mut operation: Value, key: &str, value: Value) -> Value {
    if key == "requestBody" {
        operation["responses"]["415"] =
            error_response("a body not sent as Content-Type: application/json");
    }
    operation[key] = value;
    operation
}

/// The schema of one option of the library's table ([`neardup::option_table`]): its type,
/// bounds, choices, default and doc, with `note` (what the service adds) after the doc.
fn option_schema(row: &OptionRow, note: &str) -> Value {
    let mut schema = match row.kind {
        OptionKind::Flag => json!({"type": "boolean"}),
        OptionKind::Integer => json!({"type": "integer"}),
        OptionKind::Number => json!({"type": "number"}),
        OptionKind::Choice => json!({"type": "string", "enum": row.choices}),
        OptionKind::Choices => {
            json!({"type": "array", "items": {"type": "string", "enum": row.choices}})
        }
        OptionKind::Pair => json!({"type": "array", "items": {"type": "number", "minimum": 0},
                                   "minItems": 2, "maxItems": 2}),
        OptionKind::Text | OptionKind::Path => json!({"type": "string"}),
    };
    // Bounds that fit a JSON number (a count bounded only by the machine's word is unbounded).
    let fits = |v: &Value| v.as_f64().is_some_and(|x| x.abs() < 1e15);
    if let Some(min) = row.min.as_ref().filter(|v| fits(v)) {
        schema["minimum"] = min.clone();
        if row.min_exclusive {
            schema["exclusiveMinimum"] = json!(true);
        }
    }
    if let Some(max) = row.max.as_ref().filter(|v| fits(v)) {
        schema["maximum"] = max.clone();
        if row.max_exclusive {
            schema["exclusiveMaximum"] = json!(true);
        }
    }
    if !row.default.is_null() {
        schema["default"] = row.default.clone();
    }
    let doc = if note.is_empty() { row.doc.to_string() } else { format!("{}; {note}", row.doc) };
    schema["description"] = json!(doc);
    schema
}

/// The schemas of the table's options of `group` that the service takes, by their names, each
/// with the service's note where it has one.
fn option_schemas(group: OptionGroup, notes: &[(&str, &str)]) -> serde_json::Map<String, Value> {
    neardup::option_table()
        .iter()
        .filter(|r| r.group == group)
        .filter_map(|r| {
            let name = r.http?;
            let note = notes.iter().find(|(n, _)| *n == name).map_or("", |(_, note)| note);
            Some((name.to_string(), option_schema(r, note)))
        })
        .collect()
}

/// The document, with the limits this server runs with.
pub fn document(limits: &Limits) -> Value {
    let name = path_param("name", "collection name: 1-64 of [A-Za-z0-9_.-], not starting with '.'");
    let id = path_param("id", "document id");
    let not_found = [("404", "no such collection or document")];
    let collection_errors = [("404", "no such collection"), ("409", "spec mismatch")];
    let object = json!({"type": "object"});
    let text_or_tokens = json!({
        "text": {"type": "string"},
        "tokens": {"type": "array", "items": {"type": "string"}}
    });
    let doc_schema = json!({
        "type": "object",
        "required": ["id"],
        "properties": {
            "id": {"oneOf": [{"type": "string"}, {"type": "number"}]},
            "text": text_or_tokens["text"], "tokens": text_or_tokens["tokens"],
            "metadata": {}
        },
        "additionalProperties": false
    });
    // The options, from the library's table: types, bounds, choices, defaults and docs.
    let mut create = option_schemas(
        OptionGroup::Search,
        &[
            ("hamming", "simhash and both only (400 with minhash); given alone, it means method simhash, as in `neardup dedup`"),
            ("recall", "minhash and both only (400 with simhash)"),
            ("bands", "minhash and both only"),
            ("rows", "minhash and both only"),
        ],
    );
    for (k, v) in option_schemas(OptionGroup::Pipeline, &[]) {
        create.insert(k, v);
    }
    create.insert(
        "spec".into(),
        json!({"type": "object",
        "description": "a pipeline spec (as `neardup spec` prints it), instead of the preset"}),
    );
    create.insert("store_text".into(), json!({"type": "boolean"}));
    create.insert(
        "passages".into(),
        json!({
            "description": "keep a passage index of the texts (which implies store_text) \
                            for POST .../overlap: true, or the options of `neardup overlap`",
            "oneOf": [
                {"type": "boolean"},
                {"type": "object", "additionalProperties": false,
                 "properties": option_schemas(OptionGroup::Passages, &[])}
            ]
        }),
    );
    let create = json!({"type": "object", "properties": create, "additionalProperties": false});
    let query = option_schemas(
        OptionGroup::Query,
        &[("threshold", "below the collection's, every document is scanned (at most --max-scan-docs verifications per request, documents sent times documents stored, else 400 threshold_below_collection)")],
    );
    let threshold = query["threshold"].clone();
    // The table's top_k, bounded by this server's limit.
    let mut top_k = query["top_k"].clone();
    top_k["maximum"] = json!(limits.max_top_k);
    top_k["description"] = json!(format!(
        "{}; over the limit (--max-top-k) is refused with 400, never cut",
        top_k["description"].as_str().unwrap_or("")
    ));
    let search = json!({
        "type": "object",
        "properties": {
            "text": text_or_tokens["text"], "tokens": text_or_tokens["tokens"],
            "top_k": top_k.clone(),
            "threshold": threshold.clone()
        },
        "additionalProperties": false
    });
    let check = json!({
        "type": "object",
        "properties": {
            "id": {"oneOf": [{"type": "string"}, {"type": "number"}],
                   "description": "needed to store the document; a check with \"insert\": false may leave it out"},
            "text": text_or_tokens["text"], "tokens": text_or_tokens["tokens"],
            "metadata": {"description": "stored with the document; absent or null keeps a stored document's metadata"},
            "insert": {"type": "boolean"},
            "threshold": threshold.clone(), "top_k": top_k.clone()
        },
        "additionalProperties": false
    });
    let batch_check = json!({
        "type": "object",
        "required": ["docs"],
        "description": "a batch: decided in order, committed at once, answered in order as {\"results\": [...]}",
        "properties": {
            "docs": {"type": "array", "items": {
                "type": "object",
                "properties": {
                    "id": {"oneOf": [{"type": "string"}, {"type": "number"}]},
                    "text": text_or_tokens["text"], "tokens": text_or_tokens["tokens"],
                    "metadata": {}, "insert": {"type": "boolean"}
                },
                "additionalProperties": false
            }},
            "insert": {"type": "boolean"}, "threshold": threshold, "top_k": top_k
        },
        "additionalProperties": false
    });
    let overlap = json!({
        "type": "object",
        "properties": {
            "text": text_or_tokens["text"], "tokens": text_or_tokens["tokens"],
            "id": {"oneOf": [{"type": "string"}, {"type": "number"}],
                   "description": "the query's own id: a stored document of this id is never \
                                   its source"},
            "exclude_source": {"type": "array",
                               "items": {"oneOf": [{"type": "string"}, {"type": "number"}]},
                               "description": "ids never counted as sources"}
        },
        "additionalProperties": false
    });
    let passage = json!({"type": "object", "properties": {
        "query": {"type": "string", "nullable": true,
                  "description": "the request's id, or null"},
        "start": {"type": "integer", "description": "code point offset in the query"},
        "end": {"type": "integer", "description": "end, exclusive"},
        "source": {"type": "string"},
        "source_start": {"type": "integer"}, "source_end": {"type": "integer"},
        "similarity": {"type": "number"}, "evidence": {"type": "number"},
        "start_byte": {"type": "integer"}, "end_byte": {"type": "integer"},
        "source_start_byte": {"type": "integer"}, "source_end_byte": {"type": "integer"},
        "also": {"type": "array", "items": {"type": "string"},
                 "description": "other documents holding the same text"},
        "quotation": {"type": "boolean",
                      "description": "inside a quotation or the reference list: cited, left \
                                      out of the copied share"},
        "exclusion": {"type": "string", "enum": ["quote", "references", null], "nullable": true},
        "source_text": {"type": "string", "description": "the source's text of the passage"}
    }});
    let overlap_answer = json!({
        "type": "object",
        "required": ["query", "chars", "copied_chars", "copied", "copied_with_quotations",
                     "excluded_chars", "sources", "passages", "excluded"],
        "properties": {
            "query": {"type": "string", "nullable": true},
            "chars": {"type": "integer", "description": "code points of the query"},
            "copied_chars": {"type": "integer",
                             "description": "code points inside a passage, each counted once"},
            "copied": {"type": "number", "description": "copied_chars / chars"},
            "copied_with_quotations": {"type": "number",
                                       "description": "the copied share with quotations and \
                                                       references counted"},
            "excluded_chars": {"type": "integer",
                               "description": "copied code points left out: quotations, references"},
            "sources": {"type": "array", "items": {"type": "object", "properties": {
                "id": {"type": "string"}, "chars": {"type": "integer"},
                "copied": {"type": "number"}, "quoted_chars": {"type": "integer"}}}},
            "passages": {"type": "array", "items": passage.clone()},
            "excluded": {"type": "array", "items": passage}
        }
    });
    let compare = json!({
        "type": "object",
        "required": ["a", "b"],
        "properties": {
            "a": {"type": "string"}, "b": {"type": "string"},
            "preset": {"type": "string"}, "spec": {"type": "object"}
        },
        "additionalProperties": false
    });
    let hits = json!({"type": "object", "properties": {"hits": {"type": "array", "items": {
        "type": "object", "properties": {
            "id": {"type": "string"}, "similarity": {"type": "number"}, "metadata": {}}}},
        "scanned": {"type": "boolean",
            "description": "every document was verified (a threshold below the collection's)"}}});
    let check_answer = json!({
        "type": "object",
        "required": ["duplicate", "matches", "inserted", "replaced"],
        "properties": {
            "duplicate": {"type": "boolean", "description": "a stored document is similar"},
            "matches": {"type": "array", "items": {"type": "object", "properties": {
                "id": {"type": "string"}, "similarity": {"type": "number"}, "metadata": {}}}},
            "inserted": {"type": "boolean",
                         "description": "the document was written (not a duplicate, insert true)"},
            "replaced": {"type": "boolean",
                         "description": "it was written over a stored document of the same id"}
        }
    });

    let mut paths = serde_json::Map::new();
    paths.insert(
        "/v1/collections".into(),
        json!({"get": op("List collections", ("200", ok_response("the collections", object.clone())), &[])}),
    );
    paths.insert(
        "/v1/collections/{name}".into(),
        json!({
            "parameters": [name],
            "put": with(
                op(
                    "Create a collection (idempotent with the same settings)",
                    ("201", ok_response("created", object.clone())),
                    &[
                        ("200", "it exists with the same settings"),
                        ("409", "it exists with other settings: the message names each that \
                                 differs, with the stored and the requested value"),
                    ],
                ),
                "requestBody",
                body(create),
            ),
            "get": op("Describe a collection (size, spec, index parameters)",
                      ("200", ok_response("the collection", object.clone())), &not_found),
            "delete": op("Delete a collection", ("200", ok_response("deleted", object.clone())), &not_found),
        }),
    );
    paths.insert(
        "/v1/collections/{name}/docs".into(),
        json!({
            "parameters": [name],
            "post": with(
                op("Insert or replace documents, atomically",
                   ("200", ok_response("counts", object.clone())), &collection_errors),
                "requestBody",
                body(json!({"type": "object", "required": ["docs"],
                            "properties": {"docs": {"type": "array", "items": doc_schema}},
                            "additionalProperties": false})),
            ),
        }),
    );
    paths.insert(
        "/v1/collections/{name}/docs/{id}".into(),
        json!({
            "parameters": [name, id],
            "get": op("A document: metadata, fingerprints, text if stored",
                      ("200", ok_response("the document", object.clone())), &not_found),
            "delete": op("Delete a document", ("200", ok_response("deleted", object.clone())), &not_found),
        }),
    );
    paths.insert(
        "/v1/collections/{name}/search".into(),
        json!({
            "parameters": [name],
            "post": with(op("Similar documents, most similar first", ("200", ok_response("hits", hits)),
                            &collection_errors), "requestBody", body(search)),
        }),
    );
    paths.insert(
        "/v1/collections/{name}/check".into(),
        json!({
            "parameters": [name],
            "post": with(op("Near-duplicate of anything stored? If not, insert it (atomic); a batch with docs",
                            ("200", ok_response("duplicate, matches, inserted, replaced (a batch: results, in order)",
                                                json!({"oneOf": [check_answer.clone(), {"type": "object", "properties": {
                                                    "results": {"type": "array", "items": check_answer}}}]}))),
                            &collection_errors), "requestBody", body(json!({"oneOf": [check, batch_check]}))),
        }),
    );
    paths.insert(
        "/v1/collections/{name}/overlap".into(),
        json!({
            "parameters": [name],
            "post": with(op("Which passages of a text are copied from which stored documents, \
                             and how much (collections made with passages)",
                            ("200", ok_response("the copied share, sources and passages",
                                                overlap_answer)),
                            &[("404", "no such collection"),
                              ("400", "the collection keeps no passages (no_passages), or a \
                                       bad field")]),
                       "requestBody", body(overlap)),
        }),
    );
    paths.insert(
        "/v1/compare".into(),
        json!({"post": with(op("Compare two texts, as `neardup compare --json`",
                               ("200", ok_response("every measure", object.clone())), &[]),
                            "requestBody", body(compare))}),
    );
    paths.insert(
        "/v1/health".into(),
        json!({"get": {
            "summary": "Health: 200 when the store is usable, 503 with the reason after an I/O error",
            "security": [],
            "responses": {
                "200": ok_response("healthy", object.clone()),
                "503": ok_response("unhealthy, with the reason", object.clone())
            }
        }}),
    );
    paths.insert(
        "/metrics".into(),
        json!({"get": with(op("Prometheus metrics", ("200", json!({"description": "metrics",
            "content": {"text/plain": {"schema": {"type": "string"}}}})), &[]), "responses", json!({
                "200": {"description": "metrics", "content": {"text/plain": {"schema": {"type": "string"}}}},
                "401": error_response("missing or wrong bearer token")
            }))}),
    );
    paths.insert(
        "/v1/openapi.json".into(),
        json!({"get": {"summary": "This document",
                       "responses": {"200": ok_response("the OpenAPI document", object.clone()),
                                     "401": error_response("missing or wrong bearer token")}}}),
    );
    json!({
        "openapi": "3.0.3",
        "info": {"title": "neardup", "version": env!("CARGO_PKG_VERSION"),
                 "description": "Similar-text search and near-duplicate checks on an embedded store."},
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {"Error": {"type": "object", "required": ["error"], "properties": {"error": {
                "type": "object", "required": ["code", "message"], "properties": {
                "code": {"type": "string"}, "message": {"type": "string"}}}}}}
        },
        "security": [{"bearer": []}],
        "paths": paths,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The collection-creating body takes every search option of the library's table that a
    /// collection takes, under its name, and no other.
    #[test]
    fn the_create_schema_follows_the_option_table() {
        let doc = document(&Limits::default());
        let schema = &doc["paths"]["/v1/collections/{name}"]["put"]["requestBody"]["content"]
            ["application/json"]["schema"]["properties"];
        let props = schema.as_object().expect("properties");
        for option in neardup::SearchSpec::OPTIONS {
            assert_eq!(props.contains_key(option.name), option.collections, "{}", option.name);
        }
        let passages = schema["passages"]["oneOf"][1]["properties"].as_object().expect("passages");
        let mut names: Vec<&str> = passages.keys().map(String::as_str).collect();
        names.sort_unstable();
        let mut table = neardup::overlap::OverlapOptions::NAMES.to_vec();
        table.sort_unstable();
        assert_eq!(names, table);
    }
}

"""POST /v1/entities/list and /v1/entities/get: entity-id pages, name previews, aliases, speaker subjects."""
import uuid

import pytest

from .conftest import at, form, ledger, observe, ok, one, post, query, refused

pytestmark = pytest.mark.django_db
LIST = "/v1/entities/list"
GET = "/v1/entities/get"


def insert_entity(project, name, *, aliases=()):
    entity_id = str(uuid.uuid4())
    query("INSERT INTO entity (entity_id, scope, canonical_name, normalized_name, entity_type, aliases,"
          " resolution_version, identity_kind, speaker_subject_id, first_seen_at)"
          " VALUES (%s, %s, %s, lower(%s), 'thing', %s, 'entity/v1', 'named', NULL, '2026-01-02T03:04:05.25Z')",
          [entity_id, project, name, name, list(aliases)])
    return entity_id


def test_formed_entities_list_and_get(project, auth):
    observe(project, [("user", "I live in Dublin.")], subject="alice", occurred_at=at(0))
    form(project)
    speaker, place = (str(r[0]) for r in query(
        "SELECT entity_id FROM entity WHERE scope = %s ORDER BY identity_kind DESC", [project]))
    body = ok(auth, LIST, {})
    assert list(body) == ["entities"]
    assert [e["id"] for e in body["entities"]] == sorted([speaker, place])
    by_id = {e["id"]: e for e in body["entities"]}
    assert list(by_id[place]) == ["id", "identity_kind", "name_preview", "name_bytes", "name_truncated",
                                  "alias_count", "first_seen_at"]
    assert (by_id[place]["identity_kind"], by_id[place]["name_preview"], by_id[place]["name_bytes"],
            by_id[place]["name_truncated"], by_id[place]["alias_count"]) == ("named", "Dublin", 6, False, 0)
    assert (by_id[speaker]["identity_kind"], by_id[speaker]["name_preview"]) == ("speaker", "speaker")
    assert ledger(project, "entity.list") == [("allowed", 2)]

    named = ok(auth, GET, {"id": place})
    assert list(named) == ["id", "identity_kind", "canonical_name", "aliases", "first_seen_at"]
    assert (named["canonical_name"], named["aliases"]) == ("Dublin", [])
    me = ok(auth, GET, {"id": speaker.upper()})
    assert list(me) == ["id", "identity_kind", "canonical_name", "aliases", "speaker_subject_id", "first_seen_at"]
    assert (me["id"], me["speaker_subject_id"], me["canonical_name"]) == (speaker, "alice", "speaker")
    assert ledger(project, "entity.get") == [("allowed", 1), ("allowed", 1)]


def test_aliases_sorted_and_counted(project, auth):
    entity_id = insert_entity(project, "Acme", aliases=["acme ltd", "ACME", "Acmé"])
    assert ok(auth, GET, {"id": entity_id}) == {
        "id": entity_id, "identity_kind": "named", "canonical_name": "Acme", "aliases": ["ACME", "Acmé", "acme ltd"],
        "first_seen_at": "2026-01-02T03:04:05.25Z"}
    (listed,) = ok(auth, LIST, {})["entities"]
    assert listed["alias_count"] == 3


def test_name_preview_is_512_characters(project, auth):
    entity_id = insert_entity(project, "ж" * 700)
    (listed,) = ok(auth, LIST, {})["entities"]
    assert listed["id"] == entity_id
    assert (listed["name_preview"], listed["name_bytes"], listed["name_truncated"]) == ("ж" * 512, 1400, True)


def test_pages_and_deleted_cursor(project, auth):
    ids = sorted(insert_entity(project, f"Place {i}") for i in range(5))
    first = ok(auth, LIST, {"limit": 2})
    assert [e["id"] for e in first["entities"]] == ids[:2] and first["next"] == {"id": ids[1]}
    query("DELETE FROM entity WHERE entity_id = %s", [ids[1]])
    rest = ok(auth, LIST, {"after": first["next"], "limit": 3})
    assert [e["id"] for e in rest["entities"]] == ids[2:] and "next" not in rest
    assert ledger(project, "entity.list") == [("allowed", 2), ("allowed", 3)]


def test_unknown_and_foreign_entities_are_the_same_404(project, auth, other):
    entity_id = insert_entity(project, "Dublin")
    _, other_auth = other
    foreign = post(other_auth, GET, {"id": entity_id})
    unknown = post(other_auth, GET, {"id": str(uuid.uuid4())})
    assert foreign.status_code == unknown.status_code == 404 and foreign.content == unknown.content
    assert ok(other_auth, LIST, {}) == {"entities": []}
    assert one("SELECT count(*) FROM entity WHERE entity_id = %s", [entity_id]) == (1,)


@pytest.mark.parametrize("route,body", [
    (LIST, {"limit": 0}), (LIST, {"limit": 101}), (LIST, {"after": {}}), (LIST, {"after": {"id": "zz"}}),
    (GET, {}), (GET, {"id": None}), (GET, {"id": "Dublin"}), (GET, {"id": "{" + str(uuid.uuid4()) + "}"}),
])
def test_bad_requests_are_invalid_entity_page(auth, route, body):
    assert refused(auth, route, body) == "invalid_entity_page"


@pytest.mark.parametrize("route,body", [
    (LIST, {"limit": 1.5}), (LIST, {"after": "x"}), (GET, {"id": 7}), (GET, {"id": str(uuid.uuid4()), "x": 1}),
])
def test_type_errors_are_invalid_body(auth, route, body):
    assert refused(auth, route, body) == "invalid_body"

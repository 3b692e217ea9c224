"""Recall test helpers: turns observed and formed for real (rules proposer), claims written through the
claim writer when a test needs precise control, and an in-process /v1/recalls caller."""
import json

from django.db import connection
from django.test import Client

from formation import vocabulary
from formation.claims import Claim, Source, write_claim
from formation.driver import drain
from formation.rules import RulesProposer
from memory import services


def observe_turn(project, content, *, subject=None, role="user", occurred_at=None):
    """Append one single-message turn and return its receipt."""
    return services.observe(
        project=project, messages=[{"role": role, "content": content, "group_ordinal": 0}],
        data_subject_id=subject, occurred_at=occurred_at)


def form(project):
    """Form every pending turn of the project with the offline rules proposer."""
    return drain(project, proposer=RulesProposer())


def write_fact(project, *, content, quote, predicate, subject, object, data_subject=None, role="user",
               occurred_at=None, valid_from=None, statement=None, observation_id=None, subject_type="thing"):
    """Write one fact through the claim writer, cited by `quote` inside a real stored message.

    A new turn holding `content` is observed unless `observation_id` names an existing one.
    Returns (fact_id, observation_id).
    """
    if observation_id is None:
        observation_id = observe_turn(project, content, subject=data_subject, role=role, occurred_at=occurred_at).id
    raw = content.encode("utf-8")
    start = raw.index(quote.encode("utf-8"))
    vocab = vocabulary.load()
    spec = vocab.by_name[predicate]
    with connection.cursor() as cursor:
        cursor.execute("SELECT occurred_at FROM turn_message WHERE observation_id = %s AND ordinal = 0",
                       [observation_id])
        message_time = cursor.fetchone()[0]
        source = Source(project=project, observation_id=observation_id, ordinal=0, role=role,
                        data_subject_id=data_subject, occurred_at=message_time, extractor_version="rules/v1")
        claim = Claim(predicate=predicate, cardinality=spec.cardinality, subject=subject, object=object,
                      statement=statement or content, confidence=0.9, subject_type=subject_type,
                      object_type=spec.object_kind, quote=quote, byte_start=start,
                      byte_end=start + len(quote.encode("utf-8")))
        fact_id = write_claim(cursor, source=source, claim=claim, speaker_terms=vocab.speaker_terms,
                              valid_from=valid_from)
    return str(fact_id), observation_id


def post(auth, path, body):
    """POST a JSON body in process, as the credential in `auth`."""
    raw = body if isinstance(body, (bytes, str)) else json.dumps(body)
    return Client().post(path, data=raw, content_type="application/json", **auth)


def recall_ok(auth, **body):
    response = post(auth, "/v1/recalls", body)
    assert response.status_code == 200, response.content
    return response.json()


def recall_error(auth, body):
    response = post(auth, "/v1/recalls", body)
    assert response.status_code == 400, response.content
    return response.json()["error"]["code"]


def named_entities(project, names):
    """Insert named entities in bulk; returns {canonical name: entity id}."""
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO entity (entity_id, scope, canonical_name, normalized_name, entity_type, aliases,"
            " resolution_version, identity_kind, first_seen_at)"
            " SELECT gen_random_uuid(), %s, n, lower(n), 'thing', '{}', 'entity/v1', 'named', now()"
            " FROM unnest(%s::text[]) AS n RETURNING canonical_name, entity_id::text",
            [project, list(names)])
        return dict(cursor.fetchall())


def bulk_edges(project, edges, *, predicate="uses", role="user", data_subject=None):
    """Insert current facts in bulk, each cited by the same span of one stored message.

    `edges` holds (subject entity id, object entity id, seconds ago recorded). Returns the fact ids in
    the order given.
    """
    observation_id = observe_turn(project, "Linked thing.", subject=data_subject, role=role).id
    subjects, objects, ages = (list(column) for column in zip(*edges))
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO fact (fact_id, scope, subject_entity_id, object_entity_id, predicate, cardinality,"
            " statement, valid, known, confidence, source_role, data_subject_id, recorded_at, version)"
            " SELECT gen_random_uuid(), %s, e.s, e.o, %s, p.cardinality, 'Linked thing.',"
            "  tstzrange(now() - interval '1 year', NULL), tstzrange(now() - e.age * interval '1 second', NULL),"
            "  0.5, %s, %s, now() - e.age * interval '1 second', gen_random_uuid()"
            " FROM unnest(%s::uuid[], %s::uuid[], %s::int[]) WITH ORDINALITY AS e(s, o, age, n)"
            " JOIN predicate p ON p.predicate = %s ORDER BY e.n RETURNING fact_id::text",
            [project, predicate, role, data_subject, subjects, objects, ages, predicate])
        fact_ids = [row[0] for row in cursor.fetchall()]
        # A bulk load no real project does at once: without fresh statistics PostgreSQL 18 checks each evidence
        # row's foreign key through a scope-only index, scanning the whole project per row.
        cursor.execute("ANALYZE fact, entity")
        cursor.execute(
            "INSERT INTO fact_evidence (scope, fact_id, source_observation_id, source_ordinal, quote, byte_start,"
            " byte_end, extractor_version) SELECT %s, f, %s, 0, 'Linked', 0, 6, 'rules/v1' FROM unnest(%s::uuid[]) f",
            [project, observation_id, fact_ids])
        cursor.execute("ANALYZE fact_evidence")  # the recall that follows plans with the bulk load's statistics
    return fact_ids

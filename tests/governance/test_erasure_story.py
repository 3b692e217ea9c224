"""The erasure story on committed data (governance.md §1): subject A is erased down to the bytes of a
pg_dump, while subject B, who shares an entity with A, keeps every row; and an erasure racing formation."""
import re
import subprocess
import threading
import time
import uuid

import pytest
from django.conf import settings
from django.db import connection, connections

from core.errors import Conflict
from governance.erasure import erase
from memory import generations, services
from memory.embedders import EndpointConfig, EndpointEmbedder
from memory.models import EmbeddingGeneration
from tests.fakeembeddings import fake_embeddings
from tests.governance.support import (
    PROJECT_COUNTS,
    add_artifact,
    add_curated,
    add_feedback,
    add_retraction,
    add_segment,
    fact_of,
    form,
    one,
    project_counts,
    register_subject,
    rows,
    say,
    subject_counts,
    word,
)
from tests.support.postgres import PG_BIN

RECEIPT_KEYS = set(PROJECT_COUNTS)  # the 13 receipt keys plus data_subject for a subject erasure
PG_DUMP = str(PG_BIN / "pg_dump")


def embed_everything(project):
    """Every passage source and entity of the project gets a vector (through a loopback embedding endpoint), in
    the project's building generation, started here when there is none."""
    with fake_embeddings() as fake:
        embedder = EndpointEmbedder(EndpointConfig(endpoint=fake.base_url, model="fake-bag",
                                                   allowlist=(fake.authority,)))
        generation = EmbeddingGeneration.objects.filter(project_id=project, state="building").first()
        if generation is None:
            generation = generations.start(project=project, principal="cli", principal_kind="operator",
                                           embedder=embedder)
        while generations.build(project=project, generation_id=generation.generation_id, principal="cli",
                                principal_kind="operator", embedder=embedder).remaining:
            pass
        while generations.build_entities(project=project, generation_id=generation.generation_id, principal="cli",
                                         principal_kind="operator", embedder=embedder).remaining:
            pass


def _dump_tables(database):
    db = settings.DATABASES["default"]
    out = subprocess.run(
        [PG_DUMP, "--data-only", "--no-owner", "-h", db["HOST"] or "127.0.0.1", "-p", str(db["PORT"] or 5432),
         "-U", db["USER"], database], capture_output=True, text=True, check=True, timeout=120).stdout
    tables, current = {}, None
    for line in out.splitlines():
        match = re.match(r"COPY public\.(\w+) ", line)
        if match:
            current = match.group(1)
            tables.setdefault(current, [])
        elif line == "\\.":
            current = None
        elif current:
            tables[current].append(line)
    return {table: "\n".join(lines) for table, lines in tables.items()}


def test_erasing_subject_a_leaves_nothing_of_a_and_everything_of_b(committed, committed_project, test_database_name):
    project, _ = committed_project
    dub, cork, amman, org, gal = word("Dub"), word("Cor"), word("Amm"), word("Acm"), word("Gal")
    secret = uuid.uuid4().hex
    keys = [str(uuid.uuid4()) for _ in range(4)]
    a_texts = [f"I live in {dub}.", f"I work at {org.upper()}.", f"I moved to {cork}.", f"I used to live in {amman}."]
    with committed():
        a_reference = word("alice")
        a = register_subject(project, a_reference)
        b = register_subject(project, word("bob"))
        a_obs = [say(project, a, text, key=key) for text, key in zip(a_texts, keys)]
        b_obs = [say(project, b, f"I work at {org}."), say(project, b, f"I live in {gal}.")]
        form(project)
        artifact_content = f"artifact {secret}".encode()
        add_artifact(project, a, artifact_content)
        add_artifact(project, b, b"bob's session state")
        add_feedback(project, fact_of(project, a_obs[2]), f"feedback {secret}")
        add_feedback(project, fact_of(project, b_obs[1]), "bob's feedback")
        add_segment(project, a, f"summary {secret}")
        add_segment(project, b, "bob's summary")
        curated_text = f"I prefer {word('Tea')}."
        add_curated(project, a, curated_text)
        add_retraction(project, a_obs[0], fact_of(project, a_obs[0]))

        embed_everything(project)

        # The story is there before the erasure: history from the move, the Amman refusal, the shared spelling.
        mine = subject_counts(project, a)
        assert all(mine[key] > 0 for key in mine), mine
        assert one("SELECT reason FROM rejected_claim WHERE source_observation_id = %s", [a_obs[3]]) == ("not_current",)
        assert one("SELECT count(*) FROM fact_history WHERE scope = %s", [project])[0] >= 1
        assert one("SELECT canonical_name, aliases FROM entity WHERE scope = %s AND normalized_name = %s",
                   [project, org.lower()]) == (org.upper(), [org])
        before, before_b = project_counts(project), subject_counts(project, b)

        receipt = erase(project=project, data_subject_id=a, reason="story", principal="cli", principal_kind="operator")

        after, after_b = project_counts(project), subject_counts(project, b)
        assert set(receipt) == {"request_id", "scope", "data_subject_id", "completed_at", "deleted", "residual", "clean"}
        assert receipt["scope"] == project and receipt["data_subject_id"] == a
        assert receipt["clean"] is True
        assert set(receipt["residual"]) == RECEIPT_KEYS and set(receipt["residual"].values()) == {0}
        assert RECEIPT_KEYS <= set(receipt["deleted"]) <= RECEIPT_KEYS | {"fact_evidence_orphaned"}
        # The receipt counts every row removed: each table shrank by exactly what it says.
        assert {key: before[key] - after[key] for key in RECEIPT_KEYS} == {k: receipt["deleted"][k] for k in RECEIPT_KEYS}
        assert receipt["deleted"]["observation"] == 6 and receipt["deleted"]["data_subject"] == 1
        # B keeps every row; only a vector made partly of A's words (the shared entity's) went, and the follower
        # makes it again from B's words alone.
        shared_vectors = before_b["entity_vector"] - after_b["entity_vector"]
        assert shared_vectors == 1
        assert {**after_b, "entity_vector": before_b["entity_vector"]} == before_b
        embed_everything(project)
        assert subject_counts(project, b) == before_b
        assert one("SELECT count(*) FROM entity_vector v JOIN entity e USING (entity_id) WHERE v.scope = %s"
                   " AND e.normalized_name = %s", [project, org.lower()]) == (1,)
        assert set(subject_counts(project, a).values()) == {0}

        # The shared entity survives, spelled only as B spelled it.
        assert one("SELECT canonical_name, aliases FROM entity WHERE scope = %s AND normalized_name = %s",
                   [project, org.lower()]) == (org, [])
        # The subject's retry key is a tombstone, the artifact id is single-use, the receipt is stored and final.
        assert one("SELECT count(*) FROM subject_retry WHERE scope = %s AND subject_id IS NULL", [project]) == (1,)
        assert one("SELECT count(*) FROM artifact_tombstone WHERE scope = %s", [project]) == (1,)
        stored = one("SELECT selector, completed_at IS NOT NULL, principal FROM erasure_request WHERE request_id = %s",
                     [receipt["request_id"]])
        assert stored[1:] == (True, "cli") and a in str(stored[0])
        magnitude = sum(v for k, v in receipt["deleted"].items() if k != "fact_evidence_orphaned")
        assert rows("SELECT principal, principal_kind, magnitude, outcome FROM audit_entry WHERE project = %s"
                    " AND operation = 'erase'", [project]) == [("cli", "operator", magnitude, "allowed")]

        # The same turn sent again under its idempotency key is refused forever.
        with pytest.raises(Conflict):
            say(project, a, a_texts[0], key=keys[0])

        again = erase(project=project, data_subject_id=a, principal="cli", principal_kind="operator")
        assert again["clean"] is True and set(again["deleted"].values()) == {0}
        assert again["request_id"] != receipt["request_id"]

    dump = _dump_tables(test_database_name)
    outside = "\n".join(text for table, text in dump.items() if table != "erasure_request")
    # The dump is real: B's words are in it and the receipt keeps A's selector.
    assert f"I live in {gal}." in outside and a in dump["erasure_request"]
    gone = [*a_texts, a, a_reference, dub, cork, amman, org.upper(), secret, artifact_content.hex(), curated_text]
    assert [needle for needle in gone if needle in outside] == []


def test_erasure_racing_formation_leaves_no_orphans(committed, committed_project):
    project, _ = committed_project
    subject = word("racer")
    with committed():
        for _ in range(40):
            say(project, subject, f"I like {word('Thing')}. I use {word('Tool')}.")
    out = {}

    def drain():
        try:
            out["stats"] = form(project)
        except Exception as exc:  # recorded, and the assertion below shows it
            out["drain_error"] = repr(exc)
        finally:
            connections.close_all()

    def erase_midway():
        try:
            deadline = time.monotonic() + 60
            while one("SELECT count(*) FROM observation WHERE scope = %s AND formed_at IS NOT NULL",
                      [project])[0] < 5 and time.monotonic() < deadline:
                time.sleep(0.01)
            out["formed_before"] = one("SELECT count(*) FROM observation WHERE scope = %s AND formed_at IS NOT NULL",
                                       [project])[0]
            out["receipt"] = erase(project=project, data_subject_id=subject, principal="cli",
                                   principal_kind="operator")
        finally:
            connections.close_all()

    with committed():
        threads = [threading.Thread(target=drain), threading.Thread(target=erase_midway)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert "drain_error" not in out
        receipt = out["receipt"]
        # The erasure really raced: formation had formed some turns and not all of them.
        assert 5 <= out["formed_before"] < 40
        assert receipt["clean"] is True and receipt["deleted"]["observation"] == 40
        assert set(project_counts(project).values()) == {0}
        for table, column, ref in (("fact", "fact_id", "fact_ref"), ("entity", "entity_id", "entity_ref"),
                                   ("rejected_claim", "rejected_claim_id", "rejected_ref")):
            assert one(f"SELECT count(*) FROM {table} t WHERE t.scope = %s AND NOT EXISTS"
                       f" (SELECT 1 FROM projection_dependency d WHERE d.{ref} = t.{column})", [project]) == (0,)
        assert one("SELECT count(*) FROM projection_dependency WHERE scope = %s", [project]) == (0,)
        with connection.cursor() as cursor:
            cursor.execute("SELECT log_offset, formed_offset FROM watermark WHERE scope = %s", [project])
            stored, formed = cursor.fetchone()
        assert formed == stored  # nothing unformed is left, so formed caught up
        # A later turn with the same subject simply starts new data.
        services.observe(project=project, data_subject_id=subject,
                         messages=[{"role": "user", "content": "hello", "group_ordinal": 0}])

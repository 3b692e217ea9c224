"""Embedding generations (writes): start, build, activate, cancel, prune and repair, each with its `embedding.*`
ledger row, and the follower that keeps a project's generations current. PostgreSQL is the queue: a passage
source with no vector in a live generation is the work; Celery only kicks (memory/tasks.py)."""
import logging
import time
from dataclasses import dataclass

from django.conf import settings
from django.db import connection, transaction

from core import audit
from core.errors import Conflict, NotFound, Unavailable
from core.locks import advisory_xact_lock, session_unlock, try_session_lock

from . import embedders, entity_candidates, lexical_index
from .models import EmbeddingGeneration
from .passages import coverage, vector_literal, vector_storage_ready

logger = logging.getLogger(__name__)

PAGE = 128
LIVE_STATES = ("building", "active")


@dataclass(frozen=True)
class BuildPage:
    embedded: int
    remaining: bool
    activated: bool = False


def _require_storage():
    if not vector_storage_ready():
        raise Unavailable("passage_unavailable", "this database has no pgvector: passages are lexical only")


def _embedder(embedder):
    embedder = embedder or embedders.configured()
    if embedder is None:
        raise Unavailable("passage_unavailable", "no embedding model is configured")
    return embedder


def _generation(project, generation_id, *, lock=False):
    query = EmbeddingGeneration.objects.filter(project_id=project, generation_id=generation_id)
    generation = (query.select_for_update() if lock else query).first()
    if generation is None:
        raise NotFound("not_found", "no such generation")
    return generation


def start(*, project, principal, principal_kind, embedder=None, auto_activate=False):
    """A new building generation under the configured embedder's identity. At most one building per project
    (and one active), so never more than two live generations."""
    _require_storage()
    identity = _embedder(embedder).identity
    with transaction.atomic(), connection.cursor() as cursor:
        advisory_xact_lock(cursor, "embedding-generation", project)
        if EmbeddingGeneration.objects.filter(project_id=project, state="building").exists():
            raise Conflict("generation_exists", "a generation is already building; cancel or activate it first")
        generation = EmbeddingGeneration.objects.create(
            project_id=project, provider=identity.provider, model=identity.model, revision=identity.revision,
            dimensions=identity.dimensions, input_format=identity.input_format, state="building",
            auto_activate=auto_activate, started_by=principal)
        audit.record(op="embedding.start", principal=principal, principal_kind=principal_kind,
                     project=project, magnitude=1)
    return generation


_PENDING = (
    "SELECT ps.chunk_id::text, ps.source_id::text, ps.content_digest, m.content FROM passage_source ps"
    " JOIN turn_message m ON m.chunk_id = ps.chunk_id"
    " WHERE ps.scope = %s AND NOT EXISTS (SELECT 1 FROM passage_vector pv WHERE pv.generation_id = %s"
    "  AND pv.chunk_id = ps.chunk_id)"
    " ORDER BY ps.log_offset, ps.ordinal LIMIT %s"
)


def build(*, project, generation_id, principal, principal_kind, embedder=None, page=PAGE, index_first=True):
    """Embed one page of the generation's missing sources. No transaction is open while the model runs; the
    store waits for any erasure of those sources and keeps only sources still present and unchanged.
    `index_first`: write the sources still missing first (the follower, which did so once, passes False)."""
    _require_storage()
    embedder = _embedder(embedder)
    generation = _generation(project, generation_id)
    if generation.state not in LIVE_STATES:
        raise Conflict("generation_not_live", "the generation was cancelled or retired")
    if not embedder.identity.matches(generation):
        raise Conflict("embedder_mismatch", "the configured embedder is not the generation's model")
    if index_first:
        lexical_index.follow(project)  # a message is embedded from its source
    with connection.cursor() as cursor:
        cursor.execute(_PENDING, [project, str(generation.generation_id), page + 1])
        rows = cursor.fetchall()
    batch = rows[:page]
    stored = 0
    if batch:
        vectors = embedder.embed([row[3] for row in batch])
        stored = _store(project, generation, batch, vectors, principal, principal_kind)
    remaining = len(rows) > page
    activated = False
    _update_coverage(project, generation, complete=not remaining)
    if not remaining:
        if generation.state == "building" and generation.auto_activate:
            try:
                activate(project=project, generation_id=generation.generation_id, principal=principal,
                         principal_kind=principal_kind)
                activated = True
            except Conflict:
                remaining = True  # a source arrived meanwhile; the next page takes it
    return BuildPage(embedded=stored, remaining=remaining, activated=activated)


def _store(project, generation, batch, vectors, principal, principal_kind):
    chunks = [row[0] for row in batch]
    sources = sorted({row[1] for row in batch})
    digests = [bytes(row[2]) for row in batch]
    literals = [vector_literal(v) for v in vectors]
    with transaction.atomic(), connection.cursor() as cursor:
        # Erasure locks its observations FOR UPDATE first: this waits for it, and a source it removed is then
        # simply absent below, so nothing of an erased message is ever stored.
        cursor.execute("SELECT 1 FROM observation WHERE scope = %s AND observation_id = ANY(%s::uuid[])"
                       " ORDER BY observation_id FOR KEY SHARE", [project, sources])
        cursor.execute(
            "INSERT INTO passage_vector (generation_id, chunk_id, scope, source_id, data_subject_id, role,"
            " content_digest, dimensions, embedding)"
            " SELECT %s::uuid, ps.chunk_id, ps.scope, ps.source_id, ps.data_subject_id, ps.role, ps.content_digest,"
            " %s::int, x.v::vector"
            " FROM unnest(%s::uuid[], %s::bytea[], %s::text[]) AS x(chunk_id, digest, v)"
            " JOIN passage_source ps ON ps.chunk_id = x.chunk_id AND ps.content_digest = x.digest AND ps.scope = %s"
            " ON CONFLICT (generation_id, chunk_id) DO NOTHING",
            [str(generation.generation_id), generation.dimensions, chunks, digests, literals, project])
        stored = cursor.rowcount
        audit.record(op="embedding.build", principal=principal, principal_kind=principal_kind,
                     project=project, magnitude=stored)
    return stored


# Entities with no vector in the generation, or with words newer than their vector's: a new quote of a fact
# believed now (the same facts entity_candidates.evidence_of reads) or a new spelling of the name.
_PENDING_ENTITIES = (
    "SELECT e.entity_id::text FROM entity e"
    " LEFT JOIN entity_vector v ON v.generation_id = %(g)s::uuid AND v.entity_id = e.entity_id"
    " WHERE e.scope = %(p)s AND (v.entity_id IS NULL"
    "  OR EXISTS (SELECT 1 FROM fact f JOIN fact_evidence ev ON ev.fact_id = f.fact_id AND ev.id > v.evidence_seen"
    "   WHERE f.subject_entity_id = e.entity_id AND f.scope = %(p)s AND upper_inf(f.known)"
    "   AND (f.retention_until IS NULL OR f.retention_until > now()))"
    "  OR EXISTS (SELECT 1 FROM fact f JOIN fact_evidence ev ON ev.fact_id = f.fact_id AND ev.id > v.evidence_seen"
    "   WHERE f.object_entity_id = e.entity_id AND f.scope = %(p)s AND upper_inf(f.known)"
    "   AND (f.retention_until IS NULL OR f.retention_until > now()))"
    "  OR EXISTS (SELECT 1 FROM entity_name_receipt r WHERE r.entity_id = e.entity_id AND r.id > v.names_seen))"
    " ORDER BY e.entity_id LIMIT %(k)s"
)


def build_entities(*, project, generation_id, principal, principal_kind, embedder=None, page=PAGE):
    """Embed one page of the generation's missing or outdated entity vectors (`entity-evidence/v1`). As for
    passages, the model runs outside any transaction and the store keeps only evidence still unchanged."""
    _require_storage()
    embedder = _embedder(embedder)
    generation = _generation(project, generation_id)
    if generation.state not in LIVE_STATES or not entity_candidates.entity_storage_ready():
        return BuildPage(embedded=0, remaining=False)
    if not embedder.identity.matches(generation):
        raise Conflict("embedder_mismatch", "the configured embedder is not the generation's model")
    with connection.cursor() as cursor:
        cursor.execute(_PENDING_ENTITIES, {"g": str(generation.generation_id), "p": project, "k": page + 1})
        pending = [row[0] for row in cursor.fetchall()]
        batch = pending[:page]
        evidence = entity_candidates.evidence_of(cursor, project, batch)
        cursor.execute("SELECT entity_id::text, evidence_digest FROM entity_vector WHERE generation_id = %s"
                       " AND entity_id = ANY(%s::uuid[])", [str(generation.generation_id), batch])
        current = {row[0]: bytes(row[1]) for row in cursor.fetchall()}
    # Same words as the stored vector (say, a quote past the 2,000-byte cut): only the marks move.
    changed = [e for e in batch if e in evidence and current.get(e) != evidence[e].digest]
    vectors = embedder.embed([evidence[e].text for e in changed]) if changed else []
    stored = _store_entities(project, generation, evidence, dict(zip(changed, vectors)),
                             [e for e in batch if e in evidence and e not in changed], principal, principal_kind)
    return BuildPage(embedded=stored, remaining=len(pending) > page)


def _store_entities(project, generation, evidence, vectors, unchanged, principal, principal_kind):
    generation_id = str(generation.generation_id)
    entity_ids = sorted(set(vectors) | set(unchanged))
    if not entity_ids:
        return 0
    sources = sorted({s for e in entity_ids for s in evidence[e].sources})
    with transaction.atomic(), connection.cursor() as cursor:
        # Erasure locks its observations FOR UPDATE first: wait for it, then read the evidence again; an entity
        # whose words changed meanwhile (an erased quote) is left for the next pass, so nothing erased is stored.
        cursor.execute("SELECT 1 FROM observation WHERE scope = %s AND observation_id = ANY(%s::uuid[])"
                       " ORDER BY observation_id FOR KEY SHARE", [project, sources])
        now = entity_candidates.evidence_of(cursor, project, entity_ids)
        stored = 0
        for entity_id in entity_ids:
            before, after = evidence[entity_id], now.get(entity_id)
            if after is None or after.digest != before.digest:
                continue
            marks = [after.evidence_seen, after.names_seen, list(after.sources)]
            if entity_id in vectors:
                cursor.execute(
                    "INSERT INTO entity_vector (generation_id, entity_id, scope, evidence_digest, source_ids,"
                    " evidence_seen, names_seen, dimensions, embedding)"
                    " VALUES (%s, %s, %s, %s, %s::uuid[], %s, %s, %s, %s::vector)"
                    " ON CONFLICT (generation_id, entity_id) DO UPDATE SET evidence_digest = EXCLUDED.evidence_digest,"
                    " source_ids = EXCLUDED.source_ids, evidence_seen = EXCLUDED.evidence_seen,"
                    " names_seen = EXCLUDED.names_seen, embedding = EXCLUDED.embedding, embedded_at = now()",
                    [generation_id, entity_id, project, after.digest, marks[2], marks[0], marks[1],
                     generation.dimensions, vector_literal(vectors[entity_id])])
                stored += 1
            else:
                cursor.execute("UPDATE entity_vector SET evidence_seen = %s, names_seen = %s, source_ids = %s::uuid[]"
                               " WHERE generation_id = %s AND entity_id = %s", [*marks, generation_id, entity_id])
        if stored:
            audit.record(op="embedding.build", principal=principal, principal_kind=principal_kind,
                         project=project, magnitude=stored)
    return stored


def _update_coverage(project, generation, *, complete):
    with connection.cursor() as cursor:
        cursor.execute("SELECT covered_through_offset FROM embedding_generation WHERE generation_id = %s",
                       [str(generation.generation_id)])
        _, covered = coverage(cursor, project, generation.generation_id, cursor.fetchone()[0])
        built = ", built_at = coalesce(built_at, now())" if complete else ""
        cursor.execute(f"UPDATE embedding_generation SET covered_through_offset = greatest(covered_through_offset,"
                       f" %s::bigint){built} WHERE generation_id = %s", [covered, str(generation.generation_id)])


def _missing(cursor, project, generation_id):
    cursor.execute(
        "SELECT count(*) FROM passage_source ps WHERE ps.scope = %s AND NOT EXISTS (SELECT 1 FROM passage_vector pv"
        " WHERE pv.generation_id = %s AND pv.chunk_id = ps.chunk_id AND pv.content_digest = ps.content_digest)",
        [project, str(generation_id)])
    return cursor.fetchone()[0]


def activate(*, project, generation_id, principal, principal_kind):
    """Make a fully built generation the one searched; the previous active one is retired. Refused while any
    surviving source lacks a vector."""
    _require_storage()
    with transaction.atomic(), connection.cursor() as cursor:
        advisory_xact_lock(cursor, "embedding-generation", project)
        generation = _generation(project, generation_id, lock=True)
        if generation.state == "active":
            return generation
        if generation.state != "building":
            raise Conflict("generation_not_live", "the generation was cancelled or retired")
        if _missing(cursor, project, generation.generation_id):
            raise Conflict("generation_incomplete", "some passage sources have no vector in this generation")
        cursor.execute("UPDATE embedding_generation SET state = 'retired', ended_at = now()"
                       " WHERE scope = %s AND state = 'active'", [project])
        cursor.execute("UPDATE embedding_generation SET state = 'active', activated_at = now(),"
                       " built_at = coalesce(built_at, now()) WHERE generation_id = %s",
                       [str(generation.generation_id)])
        audit.record(op="embedding.activate", principal=principal, principal_kind=principal_kind,
                     project=project, magnitude=1)
    generation.refresh_from_db()
    return generation


def cancel(*, project, generation_id, principal, principal_kind):
    """Stop a building generation and delete its vectors."""
    _require_storage()
    with transaction.atomic(), connection.cursor() as cursor:
        advisory_xact_lock(cursor, "embedding-generation", project)
        generation = _generation(project, generation_id, lock=True)
        if generation.state != "building":
            raise Conflict("generation_not_building", "only a building generation can be cancelled")
        cursor.execute("DELETE FROM passage_vector WHERE generation_id = %s", [str(generation.generation_id)])
        deleted = cursor.rowcount
        if entity_candidates.entity_storage_ready():
            cursor.execute("DELETE FROM entity_vector WHERE generation_id = %s", [str(generation.generation_id)])
            deleted += cursor.rowcount
        cursor.execute("UPDATE embedding_generation SET state = 'cancelled', ended_at = now()"
                       " WHERE generation_id = %s", [str(generation.generation_id)])
        audit.record(op="embedding.cancel", principal=principal, principal_kind=principal_kind,
                     project=project, magnitude=deleted)
    return deleted


def prune(*, project, principal, principal_kind):
    """Delete the vectors of the project's cancelled and retired generations (their rows stay as history)."""
    _require_storage()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("DELETE FROM passage_vector pv USING embedding_generation g"
                       " WHERE g.generation_id = pv.generation_id AND g.scope = %s"
                       " AND g.state IN ('cancelled', 'retired')", [project])
        deleted = cursor.rowcount
        if entity_candidates.entity_storage_ready():
            cursor.execute("DELETE FROM entity_vector v USING embedding_generation g"
                           " WHERE g.generation_id = v.generation_id AND g.scope = %s"
                           " AND g.state IN ('cancelled', 'retired')", [project])
            deleted += cursor.rowcount
        audit.record(op="embedding.prune", principal=principal, principal_kind=principal_kind,
                     project=project, magnitude=deleted)
    return deleted


def repair(*, project, generation_id, principal, principal_kind):
    """Drop the generation's vectors whose source changed since they were made; the follower re-embeds them."""
    _require_storage()
    with transaction.atomic(), connection.cursor() as cursor:
        generation = _generation(project, generation_id)
        cursor.execute(
            "DELETE FROM passage_vector pv USING passage_source ps, turn_message m"
            " WHERE pv.generation_id = %s AND ps.chunk_id = pv.chunk_id AND m.chunk_id = ps.chunk_id"
            " AND (pv.content_digest <> ps.content_digest"
            "  OR sha256(convert_to(m.content, 'UTF8')) <> ps.content_digest)",
            [str(generation.generation_id)])
        deleted = cursor.rowcount
        if deleted:
            cursor.execute("UPDATE embedding_generation SET covered_through_offset = NULL WHERE generation_id = %s",
                           [str(generation.generation_id)])
        # A changed message's source is re-derived so its new text is searchable (lexically and by vector).
        cursor.execute(
            "UPDATE passage_source ps SET content_digest = sha256(convert_to(m.content, 'UTF8')),"
            " message_bytes = octet_length(convert_to(m.content, 'UTF8')),"
            " lexemes = to_tsvector('english'::regconfig, m.content)"
            " FROM turn_message m WHERE m.chunk_id = ps.chunk_id AND ps.scope = %s"
            " AND sha256(convert_to(m.content, 'UTF8')) <> ps.content_digest", [project])
        rederived = cursor.rowcount
        deleted += _drop_outdated_entities(cursor, project, generation)
        audit.record(op="embedding.repair", principal=principal, principal_kind=principal_kind,
                     project=project, magnitude=deleted + rederived)
    return deleted


def _drop_outdated_entities(cursor, project, generation, chunk=500):
    """Delete the generation's entity vectors whose evidence no longer reads as it did (a retracted or closed
    fact's quote, say); the follower embeds the entity again."""
    if not entity_candidates.entity_storage_ready():
        return 0
    cursor.execute("SELECT entity_id::text, evidence_digest FROM entity_vector WHERE generation_id = %s"
                   " ORDER BY entity_id", [str(generation.generation_id)])
    stored = [(row[0], bytes(row[1])) for row in cursor.fetchall()]
    outdated = []
    for start in range(0, len(stored), chunk):
        part = stored[start:start + chunk]
        live = entity_candidates.evidence_of(cursor, project, [e for e, _ in part])
        outdated += [e for e, digest in part if e not in live or live[e].digest != digest]
    if outdated:
        cursor.execute("DELETE FROM entity_vector WHERE generation_id = %s AND entity_id = ANY(%s::uuid[])",
                       [str(generation.generation_id), outdated])
    return len(outdated)


# ---------------------------------------------------------------------------------------------
# The follower


def follow(project, *, budget=None):
    """Bring the project's live generations up to date (one follower per project at a time). A project that
    never had a generation gets one started, to activate itself when built (MEMOIR_EMBEDDING_AUTOSTART).
    Returns the number of vectors stored, or None when another follower holds the project."""
    if not vector_storage_ready():
        return 0
    try:
        embedder = embedders.configured()
    except embedders.EmbedderConfigError:
        logger.warning("embedding follower: the embedder settings are unusable")
        return 0
    if embedder is None:
        return 0
    lexical_index.follow(project)  # vectors are made from sources: the sources first
    deadline = time.monotonic() + (budget if budget is not None else settings.MEMOIR_EMBEDDING_FOLLOW_BUDGET)
    with connection.cursor() as cursor:
        if not try_session_lock(cursor, "embedding-follow", project):
            return None
    stored = 0
    try:
        live = list(EmbeddingGeneration.objects.filter(project_id=project, state__in=LIVE_STATES))
        if not live and settings.MEMOIR_EMBEDDING_AUTOSTART:
            if EmbeddingGeneration.objects.filter(project_id=project).exists():
                return 0  # an operator ended every generation: do not restart on our own
            with connection.cursor() as cursor:
                cursor.execute("SELECT EXISTS (SELECT 1 FROM passage_source WHERE scope = %s)", [project])
                if not cursor.fetchone()[0]:
                    return 0
            try:
                live = [start(project=project, principal=audit.SYSTEM_PRINCIPAL, principal_kind="system",
                              embedder=embedder, auto_activate=True)]
            except Conflict:
                live = list(EmbeddingGeneration.objects.filter(project_id=project, state__in=LIVE_STATES))
        identity = embedder.identity
        for generation in live:
            if not identity.matches(generation):
                continue  # never mix vectors: another model's generation waits for its own embedder
            # Messages before entities, before every page of entities and once more at the end: a message stored
            # while this follower embeds entities is taken by it (its own kick found the project locked).
            entities_done = False
            while time.monotonic() < deadline:
                page = build(project=project, generation_id=generation.generation_id,
                             principal=audit.SYSTEM_PRINCIPAL, principal_kind="system", embedder=embedder,
                             index_first=False)
                stored += page.embedded
                if page.remaining:
                    if page.embedded == 0:
                        break  # a page of sources that vanished meanwhile; the next kick retries
                    continue
                if entities_done:
                    break
                entity_page = build_entities(project=project, generation_id=generation.generation_id,
                                             principal=audit.SYSTEM_PRINCIPAL, principal_kind="system",
                                             embedder=embedder)
                stored += entity_page.embedded
                entities_done = not entity_page.remaining or entity_page.embedded == 0
    finally:
        with connection.cursor() as cursor:
            session_unlock(cursor, "embedding-follow", project)
    return stored


def projects_to_follow():
    """Projects with a passage source missing from a live generation, or (autostart) with sources and no
    generation ever."""
    if not vector_storage_ready():
        return []
    autostart = settings.MEMOIR_EMBEDDING_AUTOSTART
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT g.scope FROM embedding_generation g WHERE g.state IN ('building', 'active') AND EXISTS ("
            " SELECT 1 FROM passage_source ps WHERE ps.scope = g.scope AND NOT EXISTS (SELECT 1 FROM passage_vector pv"
            "  WHERE pv.generation_id = g.generation_id AND pv.chunk_id = ps.chunk_id))"
            " UNION SELECT p.name FROM project p WHERE %s AND NOT EXISTS (SELECT 1 FROM embedding_generation g"
            "  WHERE g.scope = p.name) AND EXISTS (SELECT 1 FROM passage_source ps WHERE ps.scope = p.name)"
            " ORDER BY 1", [autostart])
        projects = {row[0] for row in cursor.fetchall()}
        if entity_candidates.entity_storage_ready():
            cursor.execute("SELECT scope, generation_id::text FROM embedding_generation"
                           " WHERE state IN ('building', 'active')")
            for scope, generation_id in cursor.fetchall():
                if scope not in projects:
                    cursor.execute(_PENDING_ENTITIES, {"g": generation_id, "p": scope, "k": 1})
                    if cursor.fetchone():
                        projects.add(scope)
        return sorted(projects)

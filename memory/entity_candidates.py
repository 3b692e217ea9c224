"""Entity candidates (reads): the `entity-evidence/v1` text of an entity, and nearest entities to a question in
the active generation, each re-checked against its live evidence. Semantic anchors (memory/recall.py) and
`POST /v1/entities/candidates` both use it; docs/decisions.md ("Entity candidates") gives the rules."""
import hashlib
from dataclasses import dataclass, field

from django.db import connection, transaction

from core.errors import Unavailable

from . import embedders, passages
from .passage_schema import INDEXED_DIMENSIONS
from .passages import vector_literal

EVIDENCE_MAX_BYTES = 2000
SEPARATOR = " | "
NAME_PREVIEW_BYTES = 256
MIN_CANDIDATE_POOL = 40


@dataclass(frozen=True)
class Evidence:
    text: str
    digest: bytes
    sources: tuple  # observation ids (text) whose words are in `text`
    evidence_seen: int  # the newest fact_evidence id read (0: none)
    names_seen: int  # the newest entity_name_receipt id read (0: none)
    identity_kind: str
    entity_type: str
    name: str  # the canonical name


@dataclass
class Candidate:
    entity_id: str
    identity_kind: str
    name: str
    entity_type: str
    similarity: float


@dataclass
class CandidateResult:
    generation_id: str
    target_count: int
    build_state: str
    approximate: bool
    candidates: list = field(default_factory=list)


def entity_storage_ready():
    return passages.table_ready("entity_vector")


def _clip(text, limit):
    data = text.encode("utf-8")
    return text if len(data) <= limit else data[:limit].decode("utf-8", errors="ignore")


def compose(canonical_name, aliases, quotes):
    """The `entity-evidence/v1` text: the canonical name, then the aliases, then the distinct quotes sorted,
    joined by " | ", whole quotes only, at most 2,000 bytes. `quotes` is [(quote, source_id)]; returns the text
    and the sources of the pieces kept (a name's sources are added by the caller)."""
    text = _clip(canonical_name, EVIDENCE_MAX_BYTES)
    for alias in sorted(set(aliases)):
        piece = SEPARATOR + alias
        if len((text + piece).encode("utf-8")) > EVIDENCE_MAX_BYTES:
            break
        text += piece
    sources = set()
    by_quote = {}
    for quote, source in quotes:
        by_quote.setdefault(quote, set()).add(source)
    for quote in sorted(by_quote):
        piece = SEPARATOR + quote
        if len((text + piece).encode("utf-8")) > EVIDENCE_MAX_BYTES:
            break  # whole quotes only, and always a prefix of the sorted quotes (deterministic)
        text += piece
        sources |= by_quote[quote]
    return text, sources


_NAMES = (
    "SELECT e.entity_id::text, e.canonical_name, e.aliases,"
    " ARRAY(SELECT DISTINCT r.source_observation_id::text FROM entity_name_receipt r WHERE r.entity_id = e.entity_id"
    "  AND r.scope = e.scope),"
    " coalesce((SELECT max(r.id) FROM entity_name_receipt r WHERE r.entity_id = e.entity_id AND r.scope = e.scope), 0),"
    " e.identity_kind, e.entity_type"
    " FROM entity e WHERE e.scope = %s AND e.entity_id = ANY(%s::uuid[])"
)
# Quotes of the facts about or pointing at the entity that are believed now (a closed or retracted fact's words
# no longer describe it), with the observation each came from.
_QUOTES = (
    "SELECT x.entity_id::text, ev.quote, ev.source_observation_id::text, ev.id FROM ("
    "  SELECT f.fact_id, f.subject_entity_id AS entity_id FROM fact f WHERE f.scope = %(p)s"
    "   AND f.subject_entity_id = ANY(%(ids)s::uuid[]) AND upper_inf(f.known)"
    "   AND (f.retention_until IS NULL OR f.retention_until > now())"
    "  UNION SELECT f.fact_id, f.object_entity_id FROM fact f WHERE f.scope = %(p)s"
    "   AND f.object_entity_id = ANY(%(ids)s::uuid[]) AND upper_inf(f.known)"
    "   AND (f.retention_until IS NULL OR f.retention_until > now())) x"
    " JOIN fact_evidence ev ON ev.fact_id = x.fact_id AND ev.scope = %(p)s"
)


def evidence_of(cursor, project, entity_ids):
    """{entity_id: Evidence} for the live entities among `entity_ids`."""
    if not entity_ids:
        return {}
    ids = sorted(set(entity_ids))
    cursor.execute(_NAMES, [project, ids])
    names = {row[0]: row[1:] for row in cursor.fetchall()}
    cursor.execute(_QUOTES, {"p": project, "ids": ids})
    quotes, seen = {}, {}
    for entity_id, quote, source, evidence_id in cursor.fetchall():
        quotes.setdefault(entity_id, []).append((quote, source))
        seen[entity_id] = max(seen.get(entity_id, 0), evidence_id)
    out = {}
    for entity_id, (canonical, aliases, name_sources, names_seen, kind, entity_type) in names.items():
        text, sources = compose(canonical, aliases or [], quotes.get(entity_id, []))
        sources |= set(name_sources)
        out[entity_id] = Evidence(text=text, digest=hashlib.sha256(text.encode("utf-8")).digest(),
                                  sources=tuple(sorted(sources)), evidence_seen=seen.get(entity_id, 0),
                                  names_seen=names_seen, identity_kind=kind, entity_type=entity_type, name=canonical)
    return out


def _nearest(cursor, generation, question_literal, k, *, exact, subject):
    dims = generation.dimensions
    params = {"g": str(generation.generation_id), "q": question_literal, "k": k}
    distance = passages.distance_to_question(cursor, "v", dims, k, exact=exact, table="entity_vector")
    subject_filter = ""
    if subject:
        # A subject's recall anchors only on entities that subject's own turns produced (as exact anchors do).
        subject_filter = (" AND EXISTS (SELECT 1 FROM projection_dependency d WHERE d.entity_ref = v.entity_id"
                          " AND d.scope = v.scope AND d.projection_kind = 'entity' AND d.data_subject_id = %(s)s)")
        params["s"] = subject
    cursor.execute(
        f"SELECT v.entity_id::text, v.evidence_digest, {passages.EXACT_DISTANCE.format(alias='v')} AS d"
        f" FROM entity_vector v WHERE v.generation_id = %(g)s::uuid AND v.dimensions = {dims}{subject_filter}"
        f" ORDER BY {distance} LIMIT %(k)s", params)
    # Exact re-rank of what the index returned in relaxed order.
    return sorted(((e, bytes(digest), float(d)) for e, digest, d in cursor.fetchall()), key=lambda r: (r[2], r[0]))


def nearest(cursor, *, project, generation, question_literal, limit, candidates=0, subject=None):
    """[Candidate] best first: the generation's entity vectors nearest the question (`question_literal`, its vector
    as passages.vector_literal writes it), dropping any whose entity is gone or whose evidence changed since it was
    embedded. Approximate (HNSW) when `candidates` > 0."""
    exact = candidates == 0
    rows = _nearest(cursor, generation, question_literal, candidates or max(limit * 4, MIN_CANDIDATE_POOL),
                    exact=exact, subject=subject)
    live = evidence_of(cursor, project, [row[0] for row in rows])
    found = []
    for entity_id, digest, distance in rows:
        evidence = live.get(entity_id)
        if evidence is None or evidence.digest != digest:
            continue  # never answer from words the entity no longer has
        found.append(Candidate(entity_id=entity_id, identity_kind=evidence.identity_kind, name=evidence.name,
                               entity_type=evidence.entity_type, similarity=round(1.0 - distance, 4)))
        if len(found) == limit:
            break
    return found, not exact and generation.dimensions in INDEXED_DIMENSIONS


def build_state(cursor, project, generation):
    """(target_count, 'complete' | 'catching_up'): how many entities the project has, and whether each has a
    vector in the generation."""
    cursor.execute(
        "SELECT count(*), count(*) FILTER (WHERE NOT EXISTS (SELECT 1 FROM entity_vector v"
        " WHERE v.generation_id = %s AND v.entity_id = e.entity_id)) FROM entity e WHERE e.scope = %s",
        [str(generation.generation_id), project])
    total, missing = cursor.fetchone()
    return total, "complete" if missing == 0 else "catching_up"


def search(*, project, question, limit=10, candidates=0):
    """The route's answer: nearest entities in the active generation. Raises Unavailable when no generation can
    be searched with the configured embedder (no pgvector, no active generation, or another model)."""
    generation, embedder = passages.usable(project)
    if generation is None or embedder is None or not entity_storage_ready():
        raise Unavailable("entity_candidates_unavailable", "entity candidates are not available")
    try:
        question_vector = embedder.embed([question])[0]
    except embedders.EmbedderError:
        raise Unavailable("entity_candidates_unavailable", "the question could not be embedded") from None
    with transaction.atomic(), connection.cursor() as cursor:
        found, approximate = nearest(cursor, project=project, generation=generation,
                                     question_literal=vector_literal(question_vector), limit=limit,
                                     candidates=candidates)
        target_count, state = build_state(cursor, project, generation)
    return CandidateResult(generation_id=str(generation.generation_id), target_count=target_count, build_state=state,
                           approximate=approximate, candidates=found)


def name_preview(name):
    """(preview, byte length, truncated) of an entity's name."""
    data = name.encode("utf-8")
    text = _clip(name, NAME_PREVIEW_BYTES)
    return text, len(data), len(text.encode("utf-8")) < len(data)

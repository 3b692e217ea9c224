"""Passage search (reads): lexical candidates from the tsvector index, vector candidates from the active
generation, fused by reciprocal rank; every returned message re-checked against its live digest.

The ranking and the meaning of `similarity` are described in docs/decisions.md ("Passages")."""
import logging
import math
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import timedelta

import psycopg
from django.db import connection, transaction

from . import embedders, lexeme_counts, lexical_index, self_reference
from .lexeme_counts import tsquery_literal
from .models import EmbeddingGeneration
from .passage_schema import INDEXED_DIMENSIONS, hnsw_index_name

logger = logging.getLogger(__name__)

# Reciprocal rank fusion: a small k trusts each ranking's top, and the vector ranking counts VECTOR_WEIGHT times a
# lexical one (a lexical ranking's deep ranks are messages sharing one common word). Chosen on real conversations
# and our labelled set together; flat for k 2..10, weight 1.25..1.75 (docs/decisions.md, "Fusion").
RRF_K = 2
VECTOR_WEIGHT = 1.25
# Messages one lexical candidate arm reads at most; the spec's ceiling on candidates (docs/decisions.md).
LEXICAL_BUDGET = 1000
# Lexemes, the most telling first, among which any two held together find a candidate.
PAIR_TERMS = 6
LEXICAL_CANDIDATES = 200
# When even the rarest question word is in more than LEXICAL_BUDGET messages, its arm can only read an arbitrary
# (storage-order) part of them, each scoring the same but for its length: this many do as well as a thousand, and
# cost a fifth as much at a million messages (docs/decisions.md, "Bounded candidates").
OVERFLOW_SAMPLE = LEXICAL_CANDIDATES
# The question's lexemes that score candidates, the rarest first: every one costs a tsquery match per candidate, so
# an 8 KB question of a thousand words would cost ~150 ms at a million messages; a question's rarest words are
# the ones that tell its messages apart.
MAX_QUESTION_LEXEMES = 32
# BM25 with binary term frequency and a fixed average message length (lexemes), so no per-project statistics
# have to be kept: k1, b and the assumed average.
BM25_K1, BM25_B, AVG_LEXEMES = 1.2, 0.75, 16.0
# The route reads a generation of at most this many vectors whole (exact); above it, through its HNSW index
# (approximate). Reading costs ~1.1 us a vector on 2 cores (5.5 ms here; 20 ms at 20,000, where a walk costs 2.5).
EXACT_MAX_VECTORS = 5000
# A search whose vectors (the generation's, or one subject's of it) number at most this is exact even where the
# index was allowed: reading them whole costs a few ms and beats walking a graph shared with other projects and
# people, which tests each visited tuple's generation and subject on the heap.
EXACT_FEW_VECTORS = 2000
# A generation holding under half of the stored vectors is read whole up to this many wherever it would be walked:
# the graph is mostly other generations', and a walk past them costs more than the read (docs/decisions.md).
EXACT_SHARED_VECTORS = 20000
# A subject's vectors are read whole up to this many: through the (generation, subject) btree that costs ~1.3 us a
# vector (25 ms at 20,000 scattered over a million), while a subject-filtered HNSW walk tests every visited tuple's
# subject on the heap and cost 31 to 150 ms for a subject holding 2% of a million (docs/decisions.md).
EXACT_SUBJECT_VECTORS = 20000
# The most index tuples a subject-filtered HNSW scan visits (hnsw.max_scan_tuples): every visited tuple costs a
# heap read to test its subject, and the subjects it runs for hold more than EXACT_SUBJECT_VECTORS vectors.
FILTERED_SCAN_TUPLES = 10000
MIN_VECTOR_CANDIDATES = 40
# Speakers a question names whose own messages a search without a subject also ranks (each costs a lexical and a
# vector read of that person's messages).
MAX_NAMED_SUBJECTS = 2
# The HNSW candidate list (hnsw.ef_search), at least the k asked for: recall@10 0.982 on real MiniLM vectors
# against 0.994 at 200, for a third of the cost (docs/decisions.md, "The HNSW candidate list").
EF_SEARCH = 64
# A person's next message after the top passage, when it came within this long, follows it in a search ranked
# over that person's own messages: answers run over turns ("...a concert for my daughter's birthday." / "It was
# Matt Patterson!") and the second turn rarely shares the question's words (docs/decisions.md, "The top
# passage's continuation").
CONTINUATION_WINDOW = timedelta(minutes=30)
CONTINUATION_LOOKAHEAD = 8  # of that person's next messages, the first of the roles asked for
_WINDOW_SECONDS = int(CONTINUATION_WINDOW.total_seconds())
PREVIEW_BYTES = 1024
HYDRATE_SPARE = 4  # messages re-read beyond `limit`, for the few a digest or retention check drops


@dataclass
class Hit:
    chunk_id: str
    source_id: str
    ordinal: int
    role: str
    content: str
    occurred_at: object
    message_bytes: int
    content_digest: str
    similarity: float


@dataclass
class SearchResult:
    generation_id: str
    through_offset: int | None
    covered_through_offset: int | None
    build_state: str
    approximate: bool
    semantic: bool  # the vector half ran
    hits: list = field(default_factory=list)
    question_embedding_ms: float = 0.0
    question_embedding_wait_ms: float = 0.0

    def embedding_timings(self):
        """{"embed": model ms, "embed-wait": ms the search waited for it} when the question was embedded."""
        if not self.semantic:
            return {}
        return {"embed": self.question_embedding_ms, "embed-wait": self.question_embedding_wait_ms}


_storage = {}
_hnsw_kinds = {}
_storage_lock = threading.Lock()


def _database_key(*parts):
    """`parts` keyed by the database the connection points at (a test may point it at another server)."""
    settings_dict = connection.settings_dict
    return (settings_dict.get("HOST"), settings_dict.get("PORT"), settings_dict.get("NAME"), *parts)


def table_ready(table):
    """Whether this database has `table` (the vector tables exist only where pgvector was present when migrations
    ran); asked once per table and database the process connects to (a test may point the connection at a
    server without pgvector)."""
    key = _database_key(table)
    with _storage_lock:
        if key not in _storage:
            with connection.cursor() as cursor:
                cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [f"public.{table}"])
                _storage[key] = bool(cursor.fetchone()[0])
        return _storage[key]


def vector_storage_ready():
    return table_ready("passage_vector")


def vector_literal(vector):
    return "[" + ",".join(map(repr, map(float, vector))) + "]"


_GENERATION_FIELDS = [field.attname for field in EmbeddingGeneration._meta.concrete_fields]
_ACTIVE_GENERATION_SQL = (
    "SELECT " + ", ".join(field.column for field in EmbeddingGeneration._meta.concrete_fields)
    + " FROM embedding_generation WHERE scope = %s AND state = 'active'")  # at most one (a unique partial index)


def active_generation(project):
    """The project's active generation, or None. Every search and recall reads it, so it is one plain statement:
    building the ORM's query cost more than running it (1.7 ms against 0.4 on 2 cores)."""
    with connection.cursor() as cursor:
        cursor.execute(_ACTIVE_GENERATION_SQL, [project])
        row = cursor.fetchone()
    return None if row is None else EmbeddingGeneration.from_db(connection.alias, _GENERATION_FIELDS, row)


def usable(project):
    """(generation or None, embedder or None): the vector half runs only when the configured embedder's
    identity equals the active generation's."""
    if not vector_storage_ready():
        return None, None
    generation = active_generation(project)
    if generation is None:
        return None, None
    try:
        embedder = embedders.configured()
        if embedder is None or not embedder.identity.matches(generation):
            return generation, None
    except (embedders.EmbedderError, embedders.EmbedderConfigError):
        logger.warning("the configured embedder is unusable; passages answer lexically")
        return generation, None
    return generation, embedder


def coverage(cursor, project, generation_id, known=None, through=None, indexed=None):
    """(through_offset, covered_through_offset) for a generation: the stored log's end (read here unless given),
    and the offset through which every surviving message has a vector in it: no further than the lexical
    follower's cursor `indexed` (read here unless given), since a message is embedded from its source. `known` is a
    coverage recorded earlier (it only grows while no vector is dropped), so only the log after it is scanned."""
    if through is None:
        cursor.execute("SELECT log_offset FROM watermark WHERE scope = %s", [project])
        row = cursor.fetchone()
        through = row[0] if row else None
    if generation_id is None or through is None:
        return through, None
    if indexed is None:
        cursor.execute("SELECT coalesce((SELECT indexed_through FROM passage_lexical_state WHERE scope = %s), -1)",
                       [project])
        indexed = cursor.fetchone()[0]
    cursor.execute(
        "SELECT min(ps.log_offset) FROM passage_source ps WHERE ps.scope = %s AND ps.log_offset > %s::bigint"
        " AND NOT EXISTS (SELECT 1 FROM passage_vector pv WHERE pv.generation_id = %s AND pv.chunk_id = ps.chunk_id)",
        [project, -1 if known is None else known, str(generation_id)])
    missing = cursor.fetchone()[0]
    covered = min(through if missing is None else missing - 1, indexed)
    return through, (covered if covered >= 0 else None)


def _tsquery_any(lexemes):
    """A tsquery text matching any of `lexemes`, bound as one parameter so the GIN index serves it."""
    return " | ".join(tsquery_literal(lexeme) for lexeme in lexemes)


def _candidate_terms(present, counts, idf):
    """(generators, pairs): the lexemes and lexeme pairs that find lexical candidates (docs/decisions.md, "Lexeme
    counts"). Generators are the rarest lexemes while their messages together stay within LEXICAL_BUDGET (at least
    the rarest one); pairs are any two of the question's PAIR_TERMS most telling lexemes not both generators, so
    common words still find messages that share several of them."""
    generators, reached = [], 0
    for lexeme in sorted(present, key=lambda x: (counts[x], x)):
        if generators and reached + counts[lexeme] > LEXICAL_BUDGET:
            break
        generators.append(lexeme)
        reached += counts[lexeme]
    telling = sorted(present, key=lambda x: (-idf[x], x))[:PAIR_TERMS]
    pairs = [(a, b) for i, a in enumerate(telling) for b in telling[i + 1:]
             if a not in generators or b not in generators]
    return generators, pairs


def _candidate_arms(generators, pairs):
    """The tsquery texts of the candidate arms; each arm reads at most LEXICAL_BUDGET messages."""
    arms = [_tsquery_any(generators)]
    if pairs:
        arms.append(" | ".join(f"({tsquery_literal(a)} & {tsquery_literal(b)})" for a, b in pairs))
    return arms


def _arm_limits(generators, counts):
    """How many messages each arm reads: the generators' arm a sample of OVERFLOW_SAMPLE when its rarest word alone
    passes LEXICAL_BUDGET (it could only read an arbitrary part of them), else the budget; the pairs' arm the
    budget."""
    first = OVERFLOW_SAMPLE if counts[generators[0]] > LEXICAL_BUDGET else LEXICAL_BUDGET
    return [first, LEXICAL_BUDGET]


class Lexical(list):
    """[(chunk_id, score, weight_fraction)] best first; `stored`: the project's log size read with the counts (None
    when nothing is stored), which search reuses as the coverage's through offset; `reach`: the offset through
    which the lexical half saw every stored message (indexed sources, then the tail the follower has not reached)."""

    def __init__(self, items=(), stored=None, reach=None, indexed=-1, tail=()):
        super().__init__(items)
        self.stored = stored
        self.reach = reach
        self.indexed = indexed  # the follower's cursor: messages after it have no source (and so no vector) yet
        self.tail = tail  # lexical_index.read_tail's rows: the turns after the cursor, read for this search
        self.named = []  # [(subject, Lexical over that subject's messages)] for the named speakers
        # {subject: the question in that person's own words, being embedded} for their vector halves
        self.named_embeddings = {}


def _bm25(weight, lexeme_count):
    return weight * (BM25_K1 + 1) / (1 + BM25_K1 * (1 - BM25_B + BM25_B * lexeme_count / AVG_LEXEMES))


def _lexical(cursor, project, question, subject, roles, k):
    """Lexical candidates (a Lexical), BM25-like over the question's lexemes: the indexed sources through the GIN
    index, and the turns after the follower's cursor parsed directly."""
    counts, stored, indexed = lexeme_counts.question_counts(cursor, project=project, question=question)
    last = None if stored is None else stored - 1
    tail, reach = [], last
    if counts and last is not None and indexed < last:
        tail, reach = lexical_index.read_tail(cursor, project=project, indexed_through=indexed, last_offset=last)
        for lexeme in counts:
            counts[lexeme] += sum(1 for row in tail if lexeme in row[5])
    if not counts:
        return Lexical(stored=stored, reach=reach, indexed=indexed)
    lexemes = sorted(counts)
    total = max([stored or 1] + list(counts.values()))
    idf = {lex: math.log(1 + (total - df + 0.5) / (df + 0.5)) for lex, df in counts.items()}
    present = sorted(sorted((lex for lex in lexemes if counts[lex] > 0),
                            key=lambda x: (counts[x], x))[:MAX_QUESTION_LEXEMES])
    if not present:
        return Lexical(stored=stored, reach=reach, indexed=indexed)
    weight_total = sum(idf[lex] for lex in present) or 1.0
    generators, pairs = _candidate_terms(present, counts, idf)
    params = {"project": project, "k": k}
    # The candidate's weight: the idf of each present lexeme it holds, summed in lexeme order, as one CASE per
    # lexeme (a per-row function scan and aggregate cost several times more on thousands of candidates).
    terms = []
    for i, lexeme in enumerate(present):
        params[f"tq{i}"], params[f"idf{i}"] = tsquery_literal(lexeme), idf[lexeme]
        terms.append(f"CASE WHEN p.lexemes @@ %(tq{i})s::tsquery THEN %(idf{i})s::float8 ELSE 0 END")
    filters = ""
    if subject:
        filters += " AND p.data_subject_id = %(subject)s"
        params["subject"] = subject
    if roles:
        filters += " AND p.role = ANY(%(roles)s::text[])"
        params["roles"] = list(roles)
    arms = []
    for i, (arm, limit) in enumerate(zip(_candidate_arms(generators, pairs), _arm_limits(generators, counts))):
        params[f"arm{i}"], params[f"limit{i}"] = arm, limit
        arms.append(f"(SELECT p.chunk_id, p.log_offset, p.ordinal, length(p.lexemes) AS lexeme_count,"
                    f" {' + '.join(terms)} AS weight FROM passage_source p WHERE p.scope = %(project)s"
                    f" AND p.lexemes @@ %(arm{i})s::tsquery{filters} LIMIT %(limit{i})s)")
    norm = f"(1 + {BM25_K1} * (1 - {BM25_B} + {BM25_B} * c.lexeme_count::float8 / {AVG_LEXEMES}))"
    cursor.execute(
        f"SELECT c.chunk_id::text, c.weight * {BM25_K1 + 1} / {norm} AS score, c.weight, c.log_offset, c.ordinal"
        f" FROM ({' UNION '.join(arms)}) c"
        " ORDER BY score DESC, c.log_offset DESC, c.ordinal, c.chunk_id LIMIT %(k)s", params)
    found = {chunk: (float(score), float(weight), offset, ordinal)
             for chunk, score, weight, offset, ordinal in cursor.fetchall()}
    wanted_roles = set(roles or ())
    for chunk, offset, ordinal, role, data_subject, held, _ in tail:
        if chunk in found or (subject and data_subject != subject) or (wanted_roles and role not in wanted_roles):
            continue
        if not (any(g in held for g in generators) or any(a in held and b in held for a, b in pairs)):
            continue
        weight = sum(idf[lex] for lex in present if lex in held)
        found[chunk] = (_bm25(weight, len(held)), weight, offset, ordinal)
    ranked = sorted(found.items(), key=lambda item: (-item[1][0], -item[1][2], item[1][3], item[0]))[:k]
    return Lexical(((chunk, score, weight / weight_total) for chunk, (score, weight, _, _) in ranked),
                   stored=stored, reach=reach, indexed=indexed, tail=tail)


def _vector(cursor, generation, question_literal, subject, roles, k, *, exact, distance=None):
    """[(chunk_id, cosine_distance)] nearest first; approximate through HNSW unless `exact`. `distance`: the SQL
    distance_to_question gave for this read already (its settings made before the question vector was ready)."""
    dims = generation.dimensions
    filters, params = "", {"g": str(generation.generation_id), "q": question_literal, "k": k}
    if subject:
        filters += " AND pv.data_subject_id = %(subject)s"
        params["subject"] = subject
    if roles:
        filters += " AND pv.role = ANY(%(roles)s::text[])"
        params["roles"] = list(roles)
    if distance is None:
        distance = distance_to_question(cursor, "pv", dims, k, exact=exact, filtered=bool(subject))
    cursor.execute(
        f"SELECT pv.chunk_id::text, {EXACT_DISTANCE.format(alias='pv')} AS d FROM passage_vector pv"
        f" WHERE pv.generation_id = %(g)s::uuid AND pv.dimensions = {dims}{filters} ORDER BY {distance} LIMIT %(k)s",
        params)
    rows = cursor.fetchall()
    # Exact re-rank: relaxed ordering from the index is put back in true distance order.
    return sorted(((chunk, float(d)) for chunk, d in rows), key=lambda r: (r[1], r[0]))


# Generations last found too large to read whole under the route's bound (or recall's), with when: counting costs
# up to ~4 ms, so a large verdict is reused for LARGE_VERDICT_SECONDS (a small one is always recounted, cheaply).
_large_generations = {}
_many_vectors = {}  # the same for EXACT_FEW_VECTORS
_large_subjects = {}  # (generation, subject) last counted above EXACT_SUBJECT_VECTORS, with when
LARGE_VERDICT_SECONDS = 60.0


# The exact cosine distance of a vector table row (`alias`) to the bound question vector: what every vector read
# selects and re-ranks by, whichever index found the row.
EXACT_DISTANCE = "{alias}.embedding <=> %(q)s::vector"


def hnsw_kind(table, dims):
    """'halfvec' where `table`'s HNSW index for `dims` is over half-precision casts (memory 0005, pgvector 0.7+),
    else 'vector'; asked once per database the process connects to, like table_ready."""
    key = _database_key(table, dims)
    with _storage_lock:
        if key not in _hnsw_kinds:
            with connection.cursor() as cursor:
                cursor.execute("SELECT to_regclass(%s) IS NOT NULL",
                               [f"public.{hnsw_index_name(table, dims, half=True)}"])
                _hnsw_kinds[key] = "halfvec" if cursor.fetchone()[0] else "vector"
        return _hnsw_kinds[key]


def distance_to_question(cursor, alias, dims, k, *, exact, filtered=False, table="passage_vector"):
    """The SQL a vector read of `table` (as `alias`) orders by: approximate, the distance to the bound question
    vector `%(q)s` written exactly as the partial HNSW expression index so the planner uses it (over half-precision
    casts where the index is), with an iterative scan sized for `k` (set for this transaction; bounded by
    FILTERED_SCAN_TUPLES when a subject filters it); exact, or a dimension with no index, EXACT_DISTANCE. The read
    selects EXACT_DISTANCE and re-ranks by it either way."""
    if exact or dims not in INDEXED_DIMENSIONS:
        return EXACT_DISTANCE.format(alias=alias)
    scan_tuples = FILTERED_SCAN_TUPLES if filtered else 20000  # 20000: pgvector's own default
    cursor.execute(f"SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true),"
                   f" set_config('hnsw.ef_search', '{max(EF_SEARCH, k)}', true),"
                   f" set_config('hnsw.max_scan_tuples', '{scan_tuples}', true)")
    kind = hnsw_kind(table, dims)
    return f"{alias}.embedding::{kind}({dims}) <=> %(q)s::{kind}({dims})"


def _small_generation(cursor, generation):
    """The route's rule: the generation holds at most EXACT_MAX_VECTORS vectors, or is a small share of them all."""
    return _generation_at_most(cursor, generation, EXACT_MAX_VECTORS, _large_generations)


def _few_vectors(cursor, generation, subject):
    """Whether the vectors a search may return are few enough to read whole: the generation's at most
    EXACT_FEW_VECTORS or a small share of them all, or `subject`'s of it at most EXACT_SUBJECT_VECTORS (counted
    through the primary key or the subject index)."""
    if subject is None:
        return _generation_at_most(cursor, generation, EXACT_FEW_VECTORS, _many_vectors)
    return _generation_at_most(cursor, generation, EXACT_SUBJECT_VECTORS, _large_subjects, subject)


def _generation_at_most(cursor, generation, bound, larger, subject=None):
    """Whether the generation (or `subject`'s part of it) is read whole: at most `bound` vectors, or (a whole
    generation) at most EXACT_SHARED_VECTORS that are under half of all stored vectors. One found larger
    (recorded in `larger`) is not recounted for LARGE_VERDICT_SECONDS."""
    key = str(generation.generation_id) if subject is None else (str(generation.generation_id), subject)
    seen = larger.get(key)
    if seen is not None and time.monotonic() - seen < LARGE_VERDICT_SECONDS:
        return False
    count, stored = _count_up_to(cursor, generation, bound if subject is not None else max(bound, EXACT_SHARED_VECTORS),
                                  subject)
    # `stored` is the planner's estimate (pg_class.reltuples; -1 before the first ANALYZE): close enough to choose a
    # plan, and either plan answers correctly.
    small = count <= bound or (subject is None and count <= EXACT_SHARED_VECTORS and count * 2 < stored)
    if small:
        larger.pop(key, None)
    else:
        if len(larger) >= 4096:  # only large subjects are kept, but never let the map grow without end
            larger.clear()
        larger[key] = time.monotonic()
    return small


def _count_up_to(cursor, generation, bound, subject=None):
    """(a count of the generation's vectors, or `subject`'s of them, that stops one past `bound`; the estimated
    number of stored vectors of every generation)."""
    subject_filter = "" if subject is None else " AND data_subject_id = %s"
    params = [str(generation.generation_id)] + ([] if subject is None else [subject]) + [bound + 1]
    cursor.execute(f"SELECT count(*), (SELECT reltuples FROM pg_class WHERE oid = 'passage_vector'::regclass)"
                   f" FROM (SELECT 1 FROM passage_vector WHERE generation_id = %s{subject_filter} LIMIT %s) c", params)
    count, stored = cursor.fetchone()
    return count, float(stored)


def fuse(*rankings, weights=None):
    """Reciprocal rank fusion: sum of weight/(RRF_K + rank) over the rankings a chunk appears in (`weights`, one
    per ranking, default 1). Ties go to the better rank in the first ranking (lexical: the message shares the
    question's words), then the chunk id."""
    scores = {}
    for ranking, weight in zip(rankings, weights or [1.0] * len(rankings), strict=True):
        for rank, chunk in enumerate(ranking, start=1):
            scores[chunk] = scores.get(chunk, 0.0) + weight / (RRF_K + rank)
    first = {chunk: rank for rank, chunk in enumerate(rankings[0] if rankings else [])}
    return sorted(scores, key=lambda chunk: (-scores[chunk], first.get(chunk, len(first)), chunk))


# The top passage `t` and its subject's next few sources `n` (bounded: a long run of other roles is not read through).
_NEXT_SOURCES = (
    " JOIN LATERAL (SELECT n.chunk_id, n.occurred_at, n.role, n.log_offset, n.ordinal FROM passage_source n"
    "  WHERE n.scope = t.scope AND n.data_subject_id = t.data_subject_id"
    "  AND (n.log_offset, n.ordinal) > (t.log_offset, t.ordinal)"
    f"  ORDER BY n.log_offset, n.ordinal LIMIT {CONTINUATION_LOOKAHEAD}) n"
)
_TOP_SOURCE = " WHERE t.scope = %(project)s AND t.chunk_id = %(chunk)s::uuid AND t.data_subject_id IS NOT NULL"
_CONTINUATION = (
    "SELECT n.chunk_id::text FROM passage_source t CROSS" + _NEXT_SOURCES + _TOP_SOURCE +
    " AND (%(roles)s::text[] IS NULL OR n.role = ANY(%(roles)s::text[]))"
    f" AND n.occurred_at BETWEEN t.occurred_at - interval '{_WINDOW_SECONDS} seconds'"
    f" AND t.occurred_at + interval '{_WINDOW_SECONDS} seconds'"
    " ORDER BY n.log_offset, n.ordinal LIMIT 1"
)
# The same read where the follower has not reached every turn yet: the top passage's place (when it has a source)
# and its subject's next sources, unfiltered, to be merged with the tail's turns.
_CONTINUATION_SOURCES = (
    "SELECT t.log_offset, t.ordinal, t.data_subject_id, t.occurred_at,"
    " n.log_offset, n.ordinal, n.chunk_id::text, n.role, n.occurred_at FROM passage_source t LEFT" + _NEXT_SOURCES +
    " ON true" + _TOP_SOURCE
)


def continuation(cursor, *, project, chunk, roles=None, tail=()):
    """The chunk id of the message its speaker sent next (the first of `roles` among the same data subject's next
    CONTINUATION_LOOKAHEAD messages in log order), when it came within CONTINUATION_WINDOW of `chunk`; None
    otherwise, or for a message with no subject. `cursor` is a psycopg cursor (the statement is prepared); read
    through the (scope, subject, offset) btree, and from `tail` (lexical_index.read_tail's rows) for the turns the
    follower has not reached yet, so a continuation is found from the moment it is stored."""
    if not tail:
        cursor.execute(_CONTINUATION, {"project": project, "chunk": chunk, "roles": list(roles) if roles else None},
                       prepare=True)
        row = cursor.fetchone()
        return row[0] if row else None
    cursor.execute(_CONTINUATION_SOURCES, {"project": project, "chunk": chunk}, prepare=True)
    rows = cursor.fetchall()
    if rows:
        offset, ordinal, subject, occurred_at = rows[0][:4]
        following = [row[4:] for row in rows if row[6] is not None]
    else:  # the top passage is in the tail itself
        top = next((row for row in tail if row[0] == chunk), None)
        if top is None or top[4] is None:
            return None
        _, offset, ordinal, _, subject, _, occurred_at = top
        following = []
    # Tail rows: (chunk, offset, ordinal, role, subject, lexemes, occurred_at), put in the sources' column order.
    following += [(t_offset, t_ordinal, t_chunk, t_role, t_at)
                  for t_chunk, t_offset, t_ordinal, t_role, t_subject, _, t_at in tail
                  if t_subject == subject and (t_offset, t_ordinal) > (offset, ordinal)]
    for _, _, next_chunk, role, at in sorted(following)[:CONTINUATION_LOOKAHEAD]:
        if (not roles or role in roles) and abs(at - occurred_at) <= CONTINUATION_WINDOW:
            return next_chunk
    return None


def _hydrate(cursor, project, chunks, generation_id, question_literal):
    """The live rows of `chunks`, dropping any whose message changed or went (digest re-check at read). A message
    the lexical follower has not reached yet has no source row: it is read as its source would be written.
    `cursor` is a psycopg cursor (not Django's wrapper): the statement is prepared, once per connection and shape,
    since planning this five-way join cost more than running it (0.8 ms against 0.7 at a million messages)."""
    if not chunks:
        return {}
    vector_join, vector_col = "", "NULL::float8"
    params = [project, chunks]
    if generation_id is not None:
        vector_join = (" LEFT JOIN passage_vector pv ON pv.generation_id = %s::uuid AND pv.chunk_id = ps.chunk_id"
                       " AND pv.content_digest = ps.content_digest")
        vector_col = "1 - (pv.embedding <=> %s::vector)"
        params = [question_literal, generation_id, project, chunks]
    cursor.execute(
        f"SELECT m.chunk_id::text, m.observation_id::text, m.ordinal, m.role, m.content, m.occurred_at,"
        f" coalesce(ps.message_bytes, octet_length(convert_to(m.content, 'UTF8'))),"
        f" encode(coalesce(ps.content_digest, sha256(convert_to(m.content, 'UTF8'))), 'hex'), {vector_col}"
        f" FROM turn_message m JOIN observation o ON o.observation_id = m.observation_id"
        f" LEFT JOIN passage_source ps ON ps.chunk_id = m.chunk_id{vector_join}"
        f" WHERE o.scope = %s AND o.kind = 'turn' AND m.chunk_id = ANY(%s::uuid[])"
        f" AND (ps.chunk_id IS NULL OR sha256(convert_to(m.content, 'UTF8')) = ps.content_digest)"
        f" AND (o.retention_until IS NULL OR o.retention_until > now())", params, prepare=True)
    return {row[0]: row for row in cursor.fetchall()}


@dataclass(frozen=True)
class QuestionEmbedding:
    generation: object  # the active generation, or None
    vector: list | None  # None: the semantic surfaces cannot run for this question
    ms: float = 0.0  # the model's time
    waited_ms: float = 0.0  # how long the request waited for it (the model ran beside the lexical half)
    # The vector as pgvector's text, written in the pool beside the lexical half: 384 reprs cost ~0.5 ms.
    literal: str | None = None

    def result(self):
        return self  # already done: stands in wherever a PendingEmbedding does

    @property
    def expected(self):
        return self.vector is not None


# Question embeddings run here while the request thread reads the lexical candidates: the model is compute the
# database does not wait on, and each half takes about as long as the other (docs/decisions.md, "Speed").
_question_pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="question-embedding")


class PendingEmbedding:
    """A question's embedding under way: `result()` waits for it. Never raises."""

    def __init__(self, generation, embedder, question):
        self.generation = generation
        self.question = question
        self._embedder = embedder
        self._future = None if embedder is None else _question_pool.submit(_embed_one, embedder, question)

    def reworded(self, question):
        """The same model embedding another wording (itself when the wording is the same)."""
        if question == self.question or self._embedder is None:
            return self
        return PendingEmbedding(self.generation, self._embedder, question)

    @property
    def expected(self):
        """Whether a vector is on its way (it may still fail): search plans its vector half by it."""
        return self._future is not None

    def result(self):
        if self._future is None:
            return QuestionEmbedding(self.generation, None)
        started = time.perf_counter()
        vector, literal, ms = self._future.result()
        return QuestionEmbedding(self.generation, vector, ms, (time.perf_counter() - started) * 1000, literal)


def _embed_one(embedder, question):
    """(vector, its literal, model ms), or (None, None, ms) when the question could not be embedded."""
    started = time.perf_counter()
    literal = None
    try:
        vector = embedder.embed([question])[0]
        literal = vector_literal(vector)
    except embedders.EmbedderError:
        logger.warning("the question could not be embedded; the semantic surfaces are skipped")
        vector = None
    except Exception:
        logger.exception("the question embedding failed; the semantic surfaces are skipped")
        vector = None
    return vector, literal, (time.perf_counter() - started) * 1000


def begin_question_embedding(project, question, subject=None):
    """Start embedding the question under the active generation's model (the generation is read here, in the
    caller's connection; only the model runs in the pool). Passages and semantic anchors share one. With a
    `subject`, whose messages alone are searched, the names they go by are put in the first person first
    (memory.self_reference)."""
    generation, embedder = usable(project)
    if embedder is not None and subject:
        with connection.cursor() as cursor:
            names = self_reference.subject_names(cursor, project=project, subject=subject)
        question = self_reference.in_own_words(question, names)
    return PendingEmbedding(generation, embedder, question)


@dataclass(frozen=True)
class VectorPlan:
    """How a vector half reads, decided before the question vector is ready: whole (`exact`) or through the HNSW
    index, whose settings are made already; `distance` is the SQL for it."""
    subject: str | None
    k: int
    exact: bool
    approximate: bool  # the HNSW index serves it
    distance: str


def _plan_vector_half(cursor, generation, *, subject, candidates, pool, approximate):
    """The VectorPlan: exact unless `approximate` (None: the route's rule, exact unless `candidates` > 0 or the
    generation is large; True from recall); few vectors are read whole whatever was allowed, unless `candidates` > 0
    asks for the index (api.md §7.3)."""
    if approximate is None:
        exact = candidates == 0 and _small_generation(cursor, generation)
    else:
        exact = not approximate
    if not exact and candidates == 0 and _few_vectors(cursor, generation, subject):
        exact = True
    k = candidates or pool
    distance = distance_to_question(cursor, "pv", generation.dimensions, k, exact=exact, filtered=bool(subject))
    return VectorPlan(subject=subject, k=k, exact=exact,
                      approximate=not exact and generation.dimensions in INDEXED_DIMENSIONS, distance=distance)


def _vector_half(cursor, generation, question_literal, plan, *, roles):
    """(vector candidates, whether the HNSW index served them), read as `plan` says."""
    found = _vector(cursor, generation, question_literal, plan.subject, roles, plan.k, exact=plan.exact,
                    distance=plan.distance)
    return found, plan.approximate


def _pool(limit, candidates):
    return max(limit * 4, candidates, MIN_VECTOR_CANDIDATES)


def _named(data_subject_id, named_subjects):
    """The named speakers' subjects a search without a subject also ranks by (at most MAX_NAMED_SUBJECTS)."""
    if data_subject_id is not None:
        return []
    return list(dict.fromkeys(named_subjects))[:MAX_NAMED_SUBJECTS]


def _lexical_halves(cursor, project, question, subject, roles, k, named, pending=None):
    """The lexical half, and each named speaker's; with `pending` (the question's embedding under way), each named
    speaker's vector half gets the question in their own words, whose embedding starts here, before the lexical
    statements (docs/decisions.md, "The subject's own words")."""
    reworded = {}
    if named and isinstance(pending, PendingEmbedding) and pending.expected:
        with connection.cursor() as names_cursor:
            names = self_reference.names_of(names_cursor, project=project, subjects=named)
        reworded = {each: pending.reworded(self_reference.in_own_words(question, names[each])) for each in named}
    found = _lexical(cursor, project, question, subject, roles, k)
    found.named = [(each, _lexical(cursor, project, question, each, roles, k)) for each in named]
    found.named_embeddings = reworded
    return found


def lexical_candidates(cursor, *, project, question, limit, data_subject_id=None, roles=None, named_subjects=(),
                       question_embedding=None):
    """The lexical half of `search` on its own, for a caller that reads it while the question is still being
    embedded (recall, before its semantic anchors wait for the vector); pass the result to `search`, which takes
    the named subjects' rankings (and their own-words embeddings, started from `question_embedding`) from it."""
    return _lexical_halves(cursor, project, question, data_subject_id, roles,
                           max(LEXICAL_CANDIDATES, _pool(limit, 0)), _named(data_subject_id, named_subjects),
                           question_embedding)


def search(*, project, question, limit=10, candidates=0, data_subject_id=None, roles=None, approximate=None,
           with_coverage=True, question_embedding=None, lexical=None, named_subjects=()):
    """Hybrid passage search. `approximate=None` follows the route's rule (exact unless `candidates` > 0 or the
    generation is large); recall passes True. Without a subject, `named_subjects` (the speakers a question
    names, found by recall; carried by `lexical` when given) lead with their own messages (docs/decisions.md,
    "Named speakers steer passages"). Never raises for a missing semantic surface."""
    pending = question_embedding or begin_question_embedding(project, question, data_subject_id)
    pool = _pool(limit, candidates)
    used_index = False
    with transaction.atomic(), connection.cursor() as cursor:
        if lexical is None:
            lexical = _lexical_halves(cursor, project, question, data_subject_id, roles, max(LEXICAL_CANDIDATES, pool),
                                      _named(data_subject_id, named_subjects), pending)
        # What does not need the question vector runs before waiting for it (the model is the longer half at
        # scale): the vector half's plan and index settings, and the coverage.
        generation = pending.generation
        plan = None
        if pending.expected:
            plan = _plan_vector_half(cursor, generation, subject=data_subject_id, candidates=candidates, pool=pool,
                                     approximate=approximate)
        through, covered, lexical_behind = None, None, False
        if with_coverage:
            stored = lexical.stored
            through, covered = coverage(cursor, project, generation.generation_id if pending.expected else None,
                                        generation.covered_through_offset if pending.expected else None,
                                        through=stored - 1 if stored else None, indexed=lexical.indexed)
            reach = through if lexical.reach is None else lexical.reach
            lexical_behind = through is not None and reach < through
        waiting = time.perf_counter()
        embedded = pending.result()
        embed_wait_ms = (time.perf_counter() - waiting) * 1000  # 0 for an embedding the caller already awaited
        question_vector, embed_ms = embedded.vector, embedded.ms
        semantic = question_vector is not None
        if with_coverage and not semantic:
            # Lexical only (or the model failed after all): the coverage is the lexical half's.
            covered = (reach if reach >= 0 else None) if lexical_behind else None
        question_literal = embedded.literal
        vector, named_rankings, named_weights = [], [], []
        if semantic:
            vector, used_index = _vector_half(cursor, generation, question_literal, plan, roles=roles)
        for each, named_lexical in lexical.named:
            named_rankings.append([c for c, _, _ in named_lexical])
            named_weights.append(1.0)
            if semantic:  # each plan makes its own index settings, so it is made just before its read
                named_plan = _plan_vector_half(cursor, generation, subject=each, candidates=candidates, pool=pool,
                                               approximate=approximate)
                own_words = lexical.named_embeddings.get(each)
                own_literal = own_words.result().literal if own_words is not None else None
                named_literal = own_literal or question_literal
                named_vector, _ = _vector_half(cursor, generation, named_literal, named_plan, roles=roles)
                named_rankings.append([c for c, _ in named_vector])
                named_weights.append(VECTOR_WEIGHT)
        fused = fuse([c for c, _, _ in lexical], [c for c, _ in vector], weights=[1.0, VECTOR_WEIGHT])
        first = []  # the named people's own messages, when they lead
        if named_rankings:
            # The named people's own messages first, in their rankings' fused order; everyone else's follow only
            # where theirs run out (docs/decisions.md, "Named speakers steer passages"), so the named rankings
            # have no say in the order of the rest.
            first = fuse(*named_rankings, weights=named_weights)
            chosen = set(first)
            fused = first + [c for c in fused if c not in chosen]
        # Ranked over one person's own messages (a subject's, or a named speaker's leading the answer)?
        own_led = bool(fused) and (data_subject_id is not None or bool(first))
        lexical_weight = {c: w for _, named_lexical in lexical.named for c, _, w in named_lexical}
        lexical_weight.update((c, w) for c, _, w in lexical)
        hits = []
        # Django's connection and this transaction, through a psycopg cursor so the hydration is prepared.
        with connection.wrap_database_errors, psycopg.Cursor(connection.connection) as prepared:
            if own_led:  # their next message follows the top one
                following = continuation(prepared, project=project, chunk=fused[0], roles=roles, tail=lexical.tail)
                if following is not None:
                    fused = [fused[0], following] + [c for c in fused[1:] if c != following]
            # Re-read a few more than asked for; only when changed or expired messages leave the answer short is the
            # next stretch of the fused order read.
            start, stretch = 0, limit + HYDRATE_SPARE
            while len(hits) < limit and start < len(fused):
                batch = fused[start:start + stretch]
                start, stretch = start + len(batch), limit * 2 + HYDRATE_SPARE
                rows = _hydrate(prepared, project, batch, str(generation.generation_id) if semantic else None,
                                question_literal)
                for chunk in batch:
                    row = rows.get(chunk)
                    if row is None:
                        continue
                    if semantic and row[8] is None and chunk not in lexical_weight:
                        continue  # a vector whose source changed: never returned
                    similarity = row[8] if semantic and row[8] is not None else lexical_weight.get(chunk, 0.0)
                    hits.append(Hit(chunk_id=row[0], source_id=row[1], ordinal=row[2], role=row[3], content=row[4],
                                    occurred_at=row[5], message_bytes=row[6], content_digest=row[7],
                                    similarity=round(float(similarity), 4)))
                    if len(hits) == limit:
                        break
        generation_id = str(generation.generation_id) if generation is not None else ""
    if semantic:
        complete = covered is not None and through is not None and covered >= through and not lexical_behind
        state = "complete" if complete else "catching_up"
    else:
        # No vector half (no generation, or the configured embedder cannot search it): lexical only, unless the
        # lexical follower is further behind than the tail search reads.
        state = "catching_up" if lexical_behind else "lexical_only"
    return SearchResult(generation_id=generation_id if semantic else "", through_offset=through,
                        covered_through_offset=covered, build_state=state, approximate=used_index,
                        semantic=semantic, hits=hits, question_embedding_ms=embed_ms,
                        question_embedding_wait_ms=embed_wait_ms)


def preview(content, limit_bytes=PREVIEW_BYTES):
    """(preview text, its byte end, whether it is the whole message), cut on a character boundary."""
    data = content.encode("utf-8")
    if len(data) <= limit_bytes:
        return content, len(data), True
    text = data[:limit_bytes].decode("utf-8", errors="ignore")
    return text, len(text.encode("utf-8")), False

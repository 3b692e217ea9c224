"""The passage tables' DDL, run only by migrations: passage sources with their lexical index, and the vector
storage that exists only where the pgvector extension is available (docs/decisions.md, "Passages")."""
from django.db import DatabaseError

# The text-search configuration of every passage tsvector and query: english stems and drops stop words,
# which is what a question phrased differently from its answer needs (docs/decisions.md).
TS_CONFIG = "english"
# Dimensions that get an HNSW index (a partial expression index each); any other dimension is searched exactly.
INDEXED_DIMENSIONS = (384, 768, 1024, 1536)
VECTOR_TABLES = ("passage_vector", "entity_vector")

# Registered in projection_kind, keyed by the source observation (id_column source_id): erasure and retention
# reach these rows through the selection's observations, with no projection_dependency row per message.
PASSAGE_KINDS = (
    ("passage_source", "passage_source", "source_id", "a message's passage source and its tsvector"),
    ("passage_vector", "passage_vector", "source_id", "a passage source's embedding in one generation"),
)

# A message's passage source, selected from the trigger's transition table `new_messages` (turns only).
_SOURCES_INSERT = f"""
    INSERT INTO public.passage_source (chunk_id, scope, source_id, ordinal, role, log_offset, occurred_at,
                                       data_subject_id, content_digest, message_bytes, lexemes)
    SELECT n.chunk_id, o.scope, n.observation_id, n.ordinal, n.role, o.log_offset, n.occurred_at, o.data_subject_id,
           sha256(convert_to(n.content, 'UTF8')), octet_length(convert_to(n.content, 'UTF8')),
           to_tsvector('{TS_CONFIG}'::regconfig, n.content)
    FROM new_messages n JOIN public.observation o ON o.observation_id = n.observation_id
    WHERE o.kind = 'turn'"""


def _sources_function(body):
    """The turn_message trigger function, its one statement `body` (the source insert, with or without counts)."""
    return f"""
CREATE OR REPLACE FUNCTION memoir_passage_sources() RETURNS trigger LANGUAGE plpgsql
  SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  IF TG_TABLE_NAME <> 'turn_message' THEN
    RAISE EXCEPTION 'memoir_passage_sources serves turn_message only';
  END IF;
{body};
  RETURN NULL;
END $$;
"""


SOURCES_SQL = f"""
CREATE TABLE passage_source (
  chunk_id uuid PRIMARY KEY,
  scope varchar(63) NOT NULL,
  source_id uuid NOT NULL,
  ordinal integer NOT NULL,
  role varchar(16) NOT NULL,
  log_offset bigint NOT NULL,
  occurred_at timestamptz NOT NULL,
  data_subject_id text NULL,
  input_format varchar(32) NOT NULL DEFAULT 'message-text/v1' CHECK (input_format = 'message-text/v1'),
  content_digest bytea NOT NULL CHECK (octet_length(content_digest) = 32),
  message_bytes integer NOT NULL,
  lexemes tsvector NOT NULL,
  CONSTRAINT passage_source_message_fk FOREIGN KEY (chunk_id) REFERENCES turn_message (chunk_id)
    ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED,
  CONSTRAINT passage_source_observation_fk FOREIGN KEY (scope, source_id) REFERENCES observation (scope, observation_id)
    ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED
);
CREATE INDEX passage_source_lexemes_idx ON passage_source USING gin (lexemes);
CREATE INDEX passage_source_offset_idx ON passage_source (scope, log_offset, ordinal);
CREATE INDEX passage_source_source_idx ON passage_source (source_id);

-- A passage source is written by the statement that stores its message, so the lexical surface never lags.
{_sources_function(_SOURCES_INSERT).strip()}
CREATE TRIGGER turn_message_passage_sources AFTER INSERT ON turn_message
  REFERENCING NEW TABLE AS new_messages FOR EACH STATEMENT EXECUTE FUNCTION memoir_passage_sources();

INSERT INTO passage_source (chunk_id, scope, source_id, ordinal, role, log_offset, occurred_at, data_subject_id,
                            content_digest, message_bytes, lexemes)
SELECT m.chunk_id, o.scope, m.observation_id, m.ordinal, m.role, o.log_offset, m.occurred_at, o.data_subject_id,
       sha256(convert_to(m.content, 'UTF8')), octet_length(convert_to(m.content, 'UTF8')),
       to_tsvector('{TS_CONFIG}'::regconfig, m.content)
FROM turn_message m JOIN observation o ON o.observation_id = m.observation_id WHERE o.kind = 'turn';
"""

SOURCES_REVERSE = """
DROP TRIGGER turn_message_passage_sources ON turn_message;
DROP FUNCTION memoir_passage_sources();
DROP TABLE passage_source;
"""

# Each data subject's sources in log order: the message after one of theirs (passages.continuation).
SUBJECT_ORDER_INDEX_NAME = "passage_source_subject_order_idx"
SUBJECT_ORDER_INDEX = (f"CREATE INDEX IF NOT EXISTS {SUBJECT_ORDER_INDEX_NAME} ON passage_source"
                       " (scope, data_subject_id, log_offset, ordinal) WHERE data_subject_id IS NOT NULL")


# The people who speak in a project, one row each, so a question that names one finds them by what their data
# subject id spells ("caroline" in "c09-caroline") before any fact about them is formed (recall._NAMED_SUBJECTS;
# docs/decisions.md, "A subject id that spells a name"). Written by the lexical follower with the sources; keyed by
# the person's latest indexed observation, so erasure and retention reach the row through it (a source-keyed kind).
SPEAKER_KIND = ("passage_speaker", "passage_speaker", "source_id",
                "a data subject who speaks in the project, keyed by their latest passage source")
SPEAKER_SQL = """
CREATE TABLE passage_speaker (
  scope varchar(63) NOT NULL,
  data_subject_id text NOT NULL,
  source_id uuid NOT NULL,
  log_offset bigint NOT NULL,
  PRIMARY KEY (scope, data_subject_id),
  CONSTRAINT passage_speaker_observation_fk FOREIGN KEY (scope, source_id) REFERENCES observation (scope, observation_id)
    ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED
);
CREATE INDEX passage_speaker_source_idx ON passage_speaker (source_id);
CREATE INDEX passage_speaker_name_keys_idx ON passage_speaker USING gin (memoir_speaker_name_keys(scope, data_subject_id));
INSERT INTO passage_speaker (scope, data_subject_id, source_id, log_offset)
SELECT DISTINCT ON (scope, data_subject_id) scope, data_subject_id, source_id, log_offset FROM passage_source
WHERE data_subject_id IS NOT NULL ORDER BY scope, data_subject_id, log_offset DESC;
"""
SPEAKER_REVERSE = "DROP TABLE IF EXISTS passage_speaker;"


def hnsw_index_name(table, dims, *, half):
    return f"{table}_hnsw_{'half_' if half else ''}{dims}"


def hnsw_indexes(table, *, half):
    """A partial HNSW cosine index per indexed dimension, on the `embedding` of a vector table: over its casts to
    half precision (`half`; pgvector 0.7+) or over the vectors as stored (docs/decisions.md, "Half-precision
    HNSW"). IF NOT EXISTS: an operator may have built one beforehand, CONCURRENTLY."""
    return "\n".join(hnsw_index(table, d, half=half) + ";" for d in INDEXED_DIMENSIONS)


def hnsw_index(table, dims, *, half):
    kind, ops = ("halfvec", "halfvec_cosine_ops") if half else ("vector", "vector_cosine_ops")
    return (f"CREATE INDEX IF NOT EXISTS {hnsw_index_name(table, dims, half=half)} ON {table} USING hnsw"
            f" ((embedding::{kind}({dims})) {ops}) WHERE dimensions = {dims}")


def halfvec_available(cursor):
    """Whether the installed pgvector has the halfvec type (0.7.0 and later)."""
    cursor.execute("SELECT to_regtype('halfvec') IS NOT NULL")
    return bool(cursor.fetchone()[0])


def _create_hnsw_indexes(cursor, table):
    cursor.execute(hnsw_indexes(table, half=halfvec_available(cursor)))


def use_half_precision_hnsw(connection, *, half=True):
    """Replace each vector table's HNSW indexes by half-precision ones (`half`), or back; a no-op where the vector
    tables do not exist or pgvector has no halfvec. Rebuilding costs minutes per million vectors."""
    with connection.cursor() as cursor:
        if half and not halfvec_available(cursor):
            return
        cursor.execute("SET LOCAL statement_timeout = 0")
        for table in VECTOR_TABLES:
            cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [f"public.{table}"])
            if not cursor.fetchone()[0]:
                continue
            cursor.execute(hnsw_indexes(table, half=half))
            cursor.execute(";".join(f"DROP INDEX IF EXISTS {hnsw_index_name(table, d, half=not half)}"
                                    for d in INDEXED_DIMENSIONS))


VECTOR_SQL = """
CREATE TABLE passage_vector (
  generation_id uuid NOT NULL REFERENCES embedding_generation (generation_id) ON DELETE CASCADE,
  chunk_id uuid NOT NULL REFERENCES passage_source (chunk_id) ON DELETE CASCADE,
  scope varchar(63) NOT NULL,
  source_id uuid NOT NULL,
  -- Copied from the source so the index scan filters on them (a subject's or a role's passages only).
  data_subject_id text NULL,
  role varchar(16) NOT NULL,
  content_digest bytea NOT NULL,
  dimensions integer NOT NULL,
  embedding vector NOT NULL,
  embedded_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (generation_id, chunk_id),
  CONSTRAINT passage_vector_dimensions_chk CHECK (vector_dims(embedding) = dimensions)
);
CREATE INDEX passage_vector_source_idx ON passage_vector (source_id);
"""

VECTOR_REVERSE = "DROP TABLE IF EXISTS passage_vector;"


def vector_extension_state(cursor):
    """'installed', 'available' (not created here) or 'missing'."""
    cursor.execute("SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'vector'),"
                   " EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector')")
    installed, available = cursor.fetchone()
    return "installed" if installed else ("available" if available else "missing")


def create_vector_storage(connection, transaction):
    """Create the extension when the server ships it and we may, then the vector table. Without pgvector the
    vector parts are skipped and the semantic surfaces answer as unavailable."""
    with connection.cursor() as cursor:
        state = vector_extension_state(cursor)
        if state == "missing":
            return False
        if state == "available":
            try:
                with transaction.atomic(using=connection.alias):
                    cursor.execute("CREATE EXTENSION IF NOT EXISTS vector")
            except DatabaseError:
                return False  # not allowed to create it: an operator runs the one CREATE EXTENSION (README)
        cursor.execute("SELECT to_regclass('passage_vector') IS NOT NULL")
        if not cursor.fetchone()[0]:
            cursor.execute(VECTOR_SQL)
            _create_hnsw_indexes(cursor, "passage_vector")
    return True


# Entity vectors (semantic anchors, `/v1/entities/candidates`): one per entity per generation, embedded from its
# `entity-evidence/v1` text under the generation's model. `source_ids` are the observations whose words went into
# that text (quotes and name spellings), so erasure reaches the vector through any one of them.
ENTITY_INPUT_FORMAT = "entity-evidence/v1"
ENTITY_VECTOR_KIND = (
    "entity_vector", "entity_vector", "source_ids", "an entity's embedding (its names and quotes) in one generation")

ENTITY_VECTOR_SQL = f"""
CREATE TABLE entity_vector (
  generation_id uuid NOT NULL REFERENCES embedding_generation (generation_id) ON DELETE CASCADE,
  entity_id uuid NOT NULL REFERENCES entity (entity_id) ON DELETE CASCADE,
  scope varchar(63) NOT NULL,
  input_format varchar(32) NOT NULL DEFAULT '{ENTITY_INPUT_FORMAT}' CHECK (input_format = '{ENTITY_INPUT_FORMAT}'),
  evidence_digest bytea NOT NULL CHECK (octet_length(evidence_digest) = 32),
  source_ids uuid[] NOT NULL,
  -- The newest fact_evidence and entity_name_receipt ids the evidence was read with: newer words re-embed it.
  evidence_seen bigint NOT NULL,
  names_seen bigint NOT NULL,
  dimensions integer NOT NULL,
  embedding vector NOT NULL,
  embedded_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (generation_id, entity_id),
  CONSTRAINT entity_vector_dimensions_chk CHECK (vector_dims(embedding) = dimensions)
);
CREATE INDEX entity_vector_sources_idx ON entity_vector USING gin (source_ids);
CREATE INDEX entity_vector_entity_idx ON entity_vector (entity_id);
"""

ENTITY_VECTOR_REVERSE = "DROP TABLE IF EXISTS entity_vector;"


def create_entity_vector_storage(connection):
    """The entity vector table, wherever the passage vector table exists (pgvector present)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass('passage_vector') IS NOT NULL, to_regclass('entity_vector') IS NOT NULL")
        passages_ready, entities_ready = cursor.fetchone()
        if passages_ready and not entities_ready:
            cursor.execute(ENTITY_VECTOR_SQL)
            _create_hnsw_indexes(cursor, "entity_vector")
        return passages_ready


# Per-project document frequencies of passage lexemes, for the lexical half's idf (docs/decisions.md, "Lexeme
# counts"). Rows are deltas, so concurrent writers never wait on one another's row locks; a fold (the beat task,
# erasure) sums each key's rows into one. A lexeme is stored as a 64-bit hash, never as text: the counts hold no
# words. The message trigger writes a new message's counts in the statement that writes its source (no second
# trigger on the append path); statement triggers on passage_source move them for every delete and update.
_COUNTED_SOURCES_INSERT = "  WITH added AS (" + _SOURCES_INSERT + """
    RETURNING scope, lexemes)
  INSERT INTO public.passage_lexeme_count (scope, lexeme_key, documents)
  SELECT a.scope, public.memoir_lexeme_key(l), count(*)::int
  FROM added a CROSS JOIN LATERAL unnest(tsvector_to_array(a.lexemes)) l GROUP BY 1, 2"""

LEXEME_COUNTS_SQL = f"""
-- The backfill reads every passage source once: minutes at millions of messages, past the usual timeout.
SET LOCAL statement_timeout = 0;
CREATE FUNCTION memoir_lexeme_key(lexeme text) RETURNS bigint LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  AS $$ SELECT pg_catalog.hashtextextended(lexeme, 0) $$;

CREATE TABLE passage_lexeme_count (
  scope varchar(63) NOT NULL,
  lexeme_key bigint NOT NULL,
  documents integer NOT NULL,
  folded boolean NOT NULL DEFAULT false
);
-- One index: every extra one is paid by each observe, inside its project's append lock.
CREATE INDEX passage_lexeme_count_key_idx ON passage_lexeme_count (scope, lexeme_key) INCLUDE (documents, folded);
{_sources_function(_COUNTED_SOURCES_INSERT)}
CREATE FUNCTION memoir_passage_lexeme_counts() RETURNS trigger LANGUAGE plpgsql
  SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    INSERT INTO public.passage_lexeme_count (scope, lexeme_key, documents)
    SELECT o.scope, public.memoir_lexeme_key(l), -count(*)::int
    FROM old_sources o CROSS JOIN LATERAL unnest(tsvector_to_array(o.lexemes)) l GROUP BY 1, 2;
  ELSE
    INSERT INTO public.passage_lexeme_count (scope, lexeme_key, documents)
    SELECT d.scope, public.memoir_lexeme_key(d.l), sum(d.n)::int FROM (
      SELECT o.scope, l, -1 AS n FROM old_sources o CROSS JOIN LATERAL unnest(tsvector_to_array(o.lexemes)) l
      UNION ALL
      SELECT n.scope, l, 1 FROM new_sources n CROSS JOIN LATERAL unnest(tsvector_to_array(n.lexemes)) l) d
    GROUP BY d.scope, d.l HAVING sum(d.n) <> 0;
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER passage_source_lexeme_counts_delete AFTER DELETE ON passage_source
  REFERENCING OLD TABLE AS old_sources FOR EACH STATEMENT EXECUTE FUNCTION memoir_passage_lexeme_counts();
CREATE TRIGGER passage_source_lexeme_counts_update AFTER UPDATE ON passage_source
  REFERENCING OLD TABLE AS old_sources NEW TABLE AS new_sources FOR EACH STATEMENT
  EXECUTE FUNCTION memoir_passage_lexeme_counts();

INSERT INTO passage_lexeme_count (scope, lexeme_key, documents, folded)
SELECT p.scope, memoir_lexeme_key(l), count(*)::int, true
FROM passage_source p CROSS JOIN LATERAL unnest(tsvector_to_array(p.lexemes)) l GROUP BY 1, 2;
"""

LEXEME_COUNTS_REVERSE = f"""
{_sources_function(_SOURCES_INSERT)}
DROP TRIGGER passage_source_lexeme_counts_delete ON passage_source;
DROP TRIGGER passage_source_lexeme_counts_update ON passage_source;
DROP FUNCTION memoir_passage_lexeme_counts();
DROP TABLE passage_lexeme_count;
DROP FUNCTION memoir_lexeme_key(text);
"""


# The lexical follower (memory/lexical_index.py) writes passage sources and their counts from the log, behind the
# append path: the observe transaction holds its project's append lock, and the tsvector, the GIN entry and the
# count rows were a sixth of its cost. `indexed_through` is the offset through which every stored turn has its
# source; search reads the turns after it directly (a bounded tail), so a message is searchable at once.
LEXICAL_FOLLOWER_SQL = """
CREATE TABLE passage_lexical_state (
  scope varchar(63) PRIMARY KEY,
  indexed_through bigint NOT NULL CHECK (indexed_through >= -1),
  updated_at timestamptz NOT NULL DEFAULT now()
);
DROP TRIGGER turn_message_passage_sources ON turn_message;
DROP FUNCTION memoir_passage_sources();
-- Every message stored so far has its source (the trigger wrote it): the follower starts after the log's end.
INSERT INTO passage_lexical_state (scope, indexed_through) SELECT scope, log_offset FROM watermark;
"""

LEXICAL_FOLLOWER_REVERSE = f"""
{_sources_function(_COUNTED_SOURCES_INSERT)}
CREATE TRIGGER turn_message_passage_sources AFTER INSERT ON turn_message
  REFERENCING NEW TABLE AS new_messages FOR EACH STATEMENT EXECUTE FUNCTION memoir_passage_sources();
WITH added AS (
  INSERT INTO passage_source (chunk_id, scope, source_id, ordinal, role, log_offset, occurred_at, data_subject_id,
                              content_digest, message_bytes, lexemes)
  SELECT m.chunk_id, o.scope, m.observation_id, m.ordinal, m.role, o.log_offset, m.occurred_at, o.data_subject_id,
         sha256(convert_to(m.content, 'UTF8')), octet_length(convert_to(m.content, 'UTF8')),
         to_tsvector('{TS_CONFIG}'::regconfig, m.content)
  FROM turn_message m JOIN observation o ON o.observation_id = m.observation_id
  WHERE o.kind = 'turn' AND NOT EXISTS (SELECT 1 FROM passage_source ps WHERE ps.chunk_id = m.chunk_id)
  RETURNING scope, lexemes)
INSERT INTO passage_lexeme_count (scope, lexeme_key, documents)
SELECT a.scope, memoir_lexeme_key(l), count(*)::int
FROM added a CROSS JOIN LATERAL unnest(tsvector_to_array(a.lexemes)) l GROUP BY 1, 2;
DROP TABLE passage_lexical_state;
"""

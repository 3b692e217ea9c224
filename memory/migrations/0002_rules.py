"""Rules Django cannot declare on memory's tables: database cascades and project-consistent composite FKs, the
backlog reservation functions, the watermark recompute and mark-formed functions, and the speaker name keys.

Squashed from memory's 0002_database_rules, 0003_watermark_function, 0005_mark_formed_function and
0017_speaker_name_keys (docs/decisions.md, "Tables at the bottom"); each statement's text is unchanged. The
foreign keys and functions of governance's and core's tables that 0002 also created are in those apps now."""
from django.db import migrations

DEFERRED = "DEFERRABLE INITIALLY DEFERRED"

# (table, constraint, columns, target table, target columns, action)
FOREIGN_KEYS = [
    ("turn_message", "turn_message_observation_fk", "observation_id", "observation", "observation_id",
     "ON DELETE CASCADE"),
    ("ingestion_reservation", "ingestion_reservation_observation_fk", "observation_id", "observation",
     "observation_id", "ON DELETE CASCADE"),
    ("entity_name_receipt", "entity_name_receipt_source_fk", "scope, source_observation_id", "observation",
     "scope, observation_id", "ON DELETE CASCADE"),
    ("entity_name_receipt", "entity_name_receipt_entity_fk", "scope, entity_id", "entity", "scope, entity_id",
     "ON DELETE CASCADE"),
    ("fact", "fact_subject_entity_fk", "scope, subject_entity_id", "entity", "scope, entity_id", ""),
    ("fact", "fact_object_entity_fk", "scope, object_entity_id", "entity", "scope, entity_id", ""),
    ("fact", "fact_superseded_by_fk", "superseded_by_id", "fact", "fact_id", "ON DELETE SET NULL"),
    ("fact", "fact_supersession_source_fk", "supersession_source_id", "observation", "observation_id",
     "ON DELETE CASCADE"),
    ("fact", "fact_cardinality_matches_vocabulary", "predicate, cardinality", "predicate",
     "predicate, cardinality", "ON UPDATE CASCADE"),
    ("fact_evidence", "fact_evidence_fact_fk", "scope, fact_id", "fact", "scope, fact_id", "ON DELETE CASCADE"),
    ("fact_evidence", "fact_evidence_source_fk", "scope, source_observation_id", "observation",
     "scope, observation_id", ""),
    ("fact_evidence", "evidence_message_fk", "source_observation_id, source_ordinal", "turn_message",
     "observation_id, ordinal", ""),
    ("fact_history", "fact_history_fact_fk", "scope, fact_id", "fact", "scope, fact_id", "ON DELETE CASCADE"),
    ("fact_history", "fact_history_source_fk", "scope, source_observation_id", "observation",
     "scope, observation_id", "ON DELETE CASCADE"),
    ("rejected_claim", "rejected_claim_source_fk", "scope, source_observation_id", "observation",
     "scope, observation_id", ""),
    ("rejected_claim", "rejected_claim_message_fk", "source_observation_id, source_ordinal", "turn_message",
     "observation_id, ordinal", ""),
    ("curated_claim", "curated_claim_source_fk", "scope, source_observation_id", "observation",
     "scope, observation_id", "ON DELETE CASCADE"),
    ("record_retraction", "record_retraction_source_fk", "scope, source_observation_id", "observation",
     "scope, observation_id", "ON DELETE CASCADE"),
    ("record_retraction", "record_retraction_message_fk", "source_observation_id, source_ordinal", "turn_message",
     "observation_id, ordinal", "ON DELETE CASCADE"),
    ("record_retraction", "record_retraction_replacement_fk", "replacement_observation_id", "observation",
     "observation_id", "ON DELETE SET NULL"),
    ("memory_feedback", "memory_feedback_fact_fk", "scope, target_fact_id", "fact", "scope, fact_id",
     "ON DELETE CASCADE"),
]

FK_SQL = "\n".join(
    f"ALTER TABLE {table} ADD CONSTRAINT {name} FOREIGN KEY ({cols}) REFERENCES {target} ({target_cols})"
    f" {action} {DEFERRED};"
    for table, name, cols, target, target_cols, action in FOREIGN_KEYS
)
FK_REVERSE = "\n".join(f"ALTER TABLE {t} DROP CONSTRAINT {n};" for t, n, *_ in FOREIGN_KEYS)

DEFINER = "SECURITY DEFINER SET search_path = pg_catalog, pg_temp"

RESERVATION_SQL = f"""
CREATE FUNCTION sync_ingestion_reservation() RETURNS trigger LANGUAGE plpgsql {DEFINER} AS $$
BEGIN
  IF TG_TABLE_NAME <> 'observation' THEN
    RAISE EXCEPTION 'sync_ingestion_reservation serves observation only';
  END IF;
  -- Deferred: read the row as it stands at commit, not as it was when the event was queued.
  IF NOT EXISTS (SELECT 1 FROM public.observation o WHERE o.observation_id = NEW.observation_id
                 AND o.kind = 'turn' AND o.formed_at IS NULL) THEN
    DELETE FROM public.ingestion_reservation WHERE observation_id = NEW.observation_id;
    RETURN NULL;
  END IF;
  IF EXISTS (SELECT 1 FROM public.ingestion_reservation WHERE observation_id = NEW.observation_id) THEN
    RETURN NULL;
  END IF;
  UPDATE public.ingestion_budget SET pending = pending + 1 WHERE pending < max_pending;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'the ingestion backlog is full'
      USING ERRCODE = 'P0001', CONSTRAINT = 'ingestion_backlog_capacity';
  END IF;
  INSERT INTO public.ingestion_project_usage AS u (scope, pending) VALUES (NEW.scope, 1)
    ON CONFLICT (scope) DO UPDATE SET pending = u.pending + 1
    WHERE u.pending < (SELECT b.max_pending_per_project FROM public.ingestion_budget b);
  IF NOT FOUND THEN
    RAISE EXCEPTION 'the project ingestion backlog is full'
      USING ERRCODE = 'P0001', CONSTRAINT = 'ingestion_backlog_capacity';
  END IF;
  INSERT INTO public.ingestion_reservation (observation_id, scope) VALUES (NEW.observation_id, NEW.scope);
  RETURN NULL;
END $$;

CREATE CONSTRAINT TRIGGER observation_ingestion_reservation
  AFTER INSERT OR UPDATE OF formed_at, kind ON observation
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION sync_ingestion_reservation();

CREATE FUNCTION ingestion_reservation_release() RETURNS trigger LANGUAGE plpgsql {DEFINER} AS $$
DECLARE remaining integer;
BEGIN
  IF TG_TABLE_NAME <> 'ingestion_reservation' THEN
    RAISE EXCEPTION 'ingestion_reservation_release serves ingestion_reservation only';
  END IF;
  UPDATE public.ingestion_budget SET pending = pending - 1;
  UPDATE public.ingestion_project_usage SET pending = pending - 1 WHERE scope = OLD.scope
    RETURNING pending INTO remaining;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'ingestion usage underflow' USING ERRCODE = '23514';
  END IF;
  IF remaining = 0 THEN
    DELETE FROM public.ingestion_project_usage WHERE scope = OLD.scope AND pending = 0;
  END IF;
  RETURN NULL;
END $$;

CREATE CONSTRAINT TRIGGER ingestion_reservation_release
  AFTER DELETE ON ingestion_reservation
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION ingestion_reservation_release();
"""

RESERVATION_REVERSE = """
DROP TRIGGER ingestion_reservation_release ON ingestion_reservation;
DROP FUNCTION ingestion_reservation_release();
DROP TRIGGER observation_ingestion_reservation ON observation;
DROP FUNCTION sync_ingestion_reservation();
"""

# The watermark recompute as one database function: one round trip on every mark-formed and park. A volatile
# PL/pgSQL function takes a fresh snapshot for each statement, so the minimum is read after the watermark row
# lock is held, exactly as the three separate statements did (formation.md §2.6).
WATERMARK_SQL = """
CREATE FUNCTION memoir_recompute_watermark(p_scope text) RETURNS bigint
  LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  stored bigint;
  lowest bigint;
  formed bigint;
BEGIN
  SELECT log_offset INTO stored FROM public.watermark WHERE scope = p_scope FOR UPDATE;
  IF NOT FOUND THEN
    RETURN NULL;
  END IF;
  SELECT min(log_offset) INTO lowest FROM public.observation
   WHERE scope = p_scope AND formed_at IS NULL AND parked_at IS NULL;
  IF lowest IS NULL THEN
    formed := stored;
  ELSIF lowest = 0 THEN
    formed := NULL;
  ELSE
    formed := lowest - 1;
  END IF;
  UPDATE public.watermark SET formed_offset = formed, updated_at = now() WHERE scope = p_scope;
  RETURN formed;
END $$;
"""

# Marking a turn formed and recomputing the watermark in one round trip (formation.md §2.5–§2.6).
MARK_FORMED_SQL = """
CREATE FUNCTION memoir_mark_formed(p_scope text, p_observation uuid) RETURNS boolean
  LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  UPDATE public.observation SET formed_at = now()
   WHERE observation_id = p_observation AND scope = p_scope AND formed_at IS NULL AND parked_at IS NULL;
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  PERFORM public.memoir_recompute_watermark(p_scope);
  RETURN true;
END $$;
"""

# The names a speaker's data subject id spells ("c01-maya", "maya.okafor@…"), indexed per project, so a recall
# without a subject finds the person a question names by their id too (docs/decisions.md, "A subject id that
# spells a name"). Each run of letters in the id, lower-cased, of at least two letters, prefixed with the project:
# a canonical UUID spells no name (its hex runs would read as "bed", "face"). IMMUTABLE as lower() is: it follows
# the database's character type, which a database keeps for life. COST tells the planner what a call costs (a
# regex split and an aggregate): at the default it would rather run it on every row of a LIMITed scan than use
# the index (40 ms a word at 5,000 subjects, against 0.05 through the index).
SPEAKER_NAME_KEYS_SQL = r"""
CREATE FUNCTION memoir_speaker_name_keys(scope text, subject text) RETURNS text[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE COST 10000 AS $$
  SELECT coalesce(array_agg(DISTINCT scope || ' ' || word), '{}')
  FROM regexp_split_to_table(lower(subject), '[^[:alpha:]]+') AS word
  WHERE length(word) >= 2
    AND subject !~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
$$;
CREATE INDEX entity_speaker_name_keys_idx ON entity
  USING gin (memoir_speaker_name_keys(scope, speaker_subject_id)) WHERE identity_kind = 'speaker';
"""
SPEAKER_NAME_KEYS_REVERSE = """
DROP INDEX IF EXISTS entity_speaker_name_keys_idx;
DROP FUNCTION IF EXISTS memoir_speaker_name_keys(text, text);
"""


class Migration(migrations.Migration):
    dependencies = [("memory", "0001_tables")]

    operations = [
        migrations.RunSQL(FK_SQL, FK_REVERSE),
        migrations.RunSQL(RESERVATION_SQL, RESERVATION_REVERSE),
        migrations.RunSQL(WATERMARK_SQL, "DROP FUNCTION memoir_recompute_watermark(text);"),
        migrations.RunSQL(MARK_FORMED_SQL, "DROP FUNCTION memoir_mark_formed(text, uuid);"),
        migrations.RunSQL(SPEAKER_NAME_KEYS_SQL, SPEAKER_NAME_KEYS_REVERSE),
    ]

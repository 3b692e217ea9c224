"""Rules Django cannot declare: database cascades, project-consistent composite FKs, the backlog
reservation functions, artifact accounting, the audit seal functions, and the seeded vocabulary."""
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
    ("projection_dependency", "projection_dependency_source_fk", "scope, source_observation_id", "observation",
     "scope, observation_id", "ON DELETE CASCADE"),
    ("projection_dependency", "projection_dependency_fact_fk", "fact_ref", "fact", "fact_id", "ON DELETE CASCADE"),
    ("projection_dependency", "projection_dependency_entity_fk", "entity_ref", "entity", "entity_id",
     "ON DELETE CASCADE"),
    ("projection_dependency", "projection_dependency_rejected_fk", "rejected_ref", "rejected_claim",
     "rejected_claim_id", "ON DELETE CASCADE"),
    ("projection_dependency", "projection_dependency_history_fk", "history_ref", "fact_history", "history_id",
     "ON DELETE CASCADE"),
    ("projection_dependency", "projection_dependency_artifact_fk", "artifact_ref", "agent_artifact", "artifact_id",
     "ON DELETE CASCADE"),
    ("projection_dependency", "projection_dependency_segment_fk", "segment_ref", "segment", "segment_id",
     "ON DELETE CASCADE"),
    ("projection_dependency", "projection_dependency_feedback_fk", "feedback_ref", "memory_feedback", "feedback_id",
     "ON DELETE CASCADE"),
    ("projection_dependency", "projection_dependency_kind_fk", "projection_kind", "projection_kind", "kind", ""),
    ("agent_artifact", "agent_artifact_source_fk", "scope, source_observation_id", "observation",
     "scope, observation_id", "ON DELETE CASCADE"),
]

FK_SQL = "\n".join(
    f"ALTER TABLE {table} ADD CONSTRAINT {name} FOREIGN KEY ({cols}) REFERENCES {target} ({target_cols})"
    f" {action} {DEFERRED};"
    for table, name, cols, target, target_cols, action in FOREIGN_KEYS
)
FK_REVERSE = "\n".join(f"ALTER TABLE {t} DROP CONSTRAINT {n};" for t, n, *_ in FOREIGN_KEYS)

DEFINER = "SECURITY DEFINER SET search_path = pg_catalog, pg_temp"

FUNCTIONS_SQL = f"""
ALTER TABLE projection_dependency ADD CONSTRAINT dependency_one_target_chk
  CHECK (num_nonnulls(fact_ref, entity_ref, rejected_ref, history_ref, artifact_ref, segment_ref, feedback_ref) = 1);

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

CREATE FUNCTION agent_artifact_accounting() RETURNS trigger LANGUAGE plpgsql {DEFINER} AS $$
DECLARE
  policy public.agent_storage_policy%ROWTYPE;
  scope_name text;
  delta_bytes bigint;
  delta_objects integer;
  grows boolean;
BEGIN
  IF TG_TABLE_NAME <> 'agent_artifact' THEN
    RAISE EXCEPTION 'agent_artifact_accounting serves agent_artifact only';
  END IF;
  IF TG_OP = 'DELETE' THEN scope_name := OLD.scope; ELSE scope_name := NEW.scope; END IF;
  SELECT * INTO policy FROM public.agent_storage_policy WHERE scope = scope_name FOR UPDATE;
  IF TG_OP = 'INSERT' THEN
    delta_bytes := NEW.bytes; delta_objects := 1; grows := true;
  ELSIF TG_OP = 'UPDATE' THEN
    delta_bytes := NEW.bytes - OLD.bytes; delta_objects := 0; grows := delta_bytes > 0;
  ELSE
    delta_bytes := -OLD.bytes; delta_objects := -1; grows := false;
  END IF;
  IF grows AND (NEW.bytes > policy.max_object_bytes
                OR policy.used_bytes + delta_bytes > policy.max_bytes
                OR policy.used_objects + delta_objects > policy.max_objects) THEN
    RAISE EXCEPTION 'the artifact storage allowance is exhausted'
      USING ERRCODE = 'P0001', CONSTRAINT = 'agent_storage_capacity';
  END IF;
  UPDATE public.agent_storage_policy
     SET used_bytes = greatest(0, used_bytes + delta_bytes),
         used_objects = greatest(0, used_objects + delta_objects)
   WHERE scope = scope_name;
  RETURN NULL;
END $$;

CREATE TRIGGER agent_artifact_accounting AFTER INSERT OR UPDATE OR DELETE ON agent_artifact
  FOR EACH ROW EXECUTE FUNCTION agent_artifact_accounting();

CREATE FUNCTION memoir_audit_entries_digest(lo bigint, hi bigint) RETURNS bytea
  LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
  SELECT sha256(convert_to(coalesce(string_agg(
      e.entry_id || '|' || e.operation || '|' || e.principal || '|' || e.principal_kind || '|' || e.project
      || '|' || e.magnitude || '|' || e.outcome || '|' || extract(epoch FROM e.occurred_at),
      E'\\n' ORDER BY e.entry_id), ''), 'UTF8'))
  FROM public.audit_entry e WHERE e.entry_id BETWEEN lo AND hi
$$;

CREATE FUNCTION memoir_audit_seal_now() RETURNS SETOF public.audit_seal LANGUAGE plpgsql {DEFINER} AS $$
DECLARE
  last_seal public.audit_seal%ROWTYPE;
  lo bigint;
  hi bigint;
  previous bytea;
  counted integer;
  entries bytea;
BEGIN
  LOCK TABLE public.audit_entry IN SHARE ROW EXCLUSIVE MODE;
  SELECT * INTO last_seal FROM public.audit_seal ORDER BY seal_id DESC LIMIT 1;
  IF FOUND THEN
    lo := last_seal.to_entry + 1;
    previous := last_seal.digest;
  ELSE
    SELECT min(entry_id) INTO lo FROM public.audit_entry;
    previous := decode(repeat('00', 32), 'hex');
  END IF;
  IF lo IS NULL THEN RETURN; END IF;
  SELECT entry_id INTO hi FROM public.audit_entry WHERE entry_id >= lo ORDER BY entry_id OFFSET 99999 LIMIT 1;
  IF hi IS NULL THEN
    SELECT max(entry_id) INTO hi FROM public.audit_entry WHERE entry_id >= lo;
  END IF;
  IF hi IS NULL THEN RETURN; END IF;
  SELECT count(*) INTO counted FROM public.audit_entry WHERE entry_id BETWEEN lo AND hi;
  entries := public.memoir_audit_entries_digest(lo, hi);
  RETURN QUERY INSERT INTO public.audit_seal (from_entry, to_entry, entry_count, entries_digest, previous_digest,
                                              digest)
    VALUES (lo, hi, counted, entries, previous, sha256(previous || entries)) RETURNING *;
END $$;
"""

FUNCTIONS_REVERSE = """
DROP FUNCTION memoir_audit_seal_now();
DROP FUNCTION memoir_audit_entries_digest(bigint, bigint);
DROP TRIGGER agent_artifact_accounting ON agent_artifact;
DROP FUNCTION agent_artifact_accounting();
DROP TRIGGER ingestion_reservation_release ON ingestion_reservation;
DROP FUNCTION ingestion_reservation_release();
DROP TRIGGER observation_ingestion_reservation ON observation;
DROP FUNCTION sync_ingestion_reservation();
ALTER TABLE projection_dependency DROP CONSTRAINT dependency_one_target_chk;
"""


def seed(apps, schema_editor):
    from memory.vocabulary import PREDICATES, PROJECTION_KINDS, SPEAKER_TERMS, UNRESOLVABLE_TERMS

    Predicate = apps.get_model("memory", "Predicate")
    UnresolvableTerm = apps.get_model("memory", "UnresolvableTerm")
    SpeakerTerm = apps.get_model("memory", "SpeakerTerm")
    IngestionBudget = apps.get_model("memory", "IngestionBudget")
    ProjectionKind = apps.get_model("governance", "ProjectionKind")
    FormationHeartbeat = apps.get_model("governance", "FormationHeartbeat")
    Predicate.objects.bulk_create(
        Predicate(predicate=name, semantic_type=st, cardinality=card, object_kind=kind, event=event, description=desc)
        for name, st, card, kind, event, desc in PREDICATES
    )
    UnresolvableTerm.objects.bulk_create(
        UnresolvableTerm(lang="en", term=term, reason=reason)
        for reason, terms in UNRESOLVABLE_TERMS.items() for term in terms
    )
    SpeakerTerm.objects.bulk_create(SpeakerTerm(term=t) for t in SPEAKER_TERMS)
    ProjectionKind.objects.bulk_create(
        ProjectionKind(kind=k, projection_table=t, id_column=c, survives_sharing=s, description=d)
        for k, t, c, s, d in PROJECTION_KINDS
    )
    IngestionBudget.objects.create(singleton=True, max_pending=4096, max_pending_per_project=512, pending=0)
    FormationHeartbeat.objects.create(id=1)


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0001_initial"),
        ("governance", "0002_initial"),
    ]

    operations = [
        migrations.RunSQL(FK_SQL, FK_REVERSE),
        migrations.RunSQL(FUNCTIONS_SQL, FUNCTIONS_REVERSE),
        migrations.RunPython(seed, migrations.RunPython.noop),
    ]

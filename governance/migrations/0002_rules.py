"""Rules Django cannot declare on governance's tables: the erasure registry's cascades from each projection it
names, an artifact's cascade from its source, the one-target check, artifact storage accounting, and the GIN
index over the names a subject's external reference spells.

Squashed from memory's 0002_database_rules (the statements on governance's tables), governance's
0004_artifact_project_identity (the artifact foreign key follows the (project, id) pair) and
0008_subject_reference_name_keys (docs/decisions.md, "Tables at the bottom"); each statement's text is
unchanged."""
from django.db import migrations

DEFERRED = "DEFERRABLE INITIALLY DEFERRED"

# (table, constraint, columns, target table, target columns, action)
FOREIGN_KEYS = [
    ("projection_dependency", "projection_dependency_source_fk", "scope, source_observation_id", "observation",
     "scope, observation_id", "ON DELETE CASCADE"),
    ("projection_dependency", "projection_dependency_fact_fk", "fact_ref", "fact", "fact_id", "ON DELETE CASCADE"),
    ("projection_dependency", "projection_dependency_entity_fk", "entity_ref", "entity", "entity_id",
     "ON DELETE CASCADE"),
    ("projection_dependency", "projection_dependency_rejected_fk", "rejected_ref", "rejected_claim",
     "rejected_claim_id", "ON DELETE CASCADE"),
    ("projection_dependency", "projection_dependency_history_fk", "history_ref", "fact_history", "history_id",
     "ON DELETE CASCADE"),
    # Artifacts are named by (project, id): the id alone is not a key, so two projects may each hold id X and
    # neither can learn of the other's.
    ("projection_dependency", "projection_dependency_artifact_fk", "scope, artifact_ref", "agent_artifact",
     "scope, artifact_id", "ON DELETE CASCADE"),
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
"""

FUNCTIONS_REVERSE = """
DROP TRIGGER agent_artifact_accounting ON agent_artifact;
DROP FUNCTION agent_artifact_accounting();
ALTER TABLE projection_dependency DROP CONSTRAINT dependency_one_target_chk;
"""

# The names a registered subject's external reference spells ("maya.okafor@…"), indexed per project with
# memory's `memoir_speaker_name_keys`, so a recall without a subject finds a registered person the question names
# by their reference too, formed fact or not (docs/decisions.md, "A subject id that spells a name").
NAME_KEYS_SQL = ("CREATE INDEX data_subject_reference_name_keys_idx ON data_subject"
                 " USING gin (memoir_speaker_name_keys(scope, external_reference)) WHERE external_reference IS NOT NULL")
NAME_KEYS_REVERSE = "DROP INDEX IF EXISTS data_subject_reference_name_keys_idx"


class Migration(migrations.Migration):
    dependencies = [("governance", "0001_tables")]

    operations = [
        migrations.RunSQL(FK_SQL, FK_REVERSE),
        migrations.RunSQL(FUNCTIONS_SQL, FUNCTIONS_REVERSE),
        migrations.RunSQL(NAME_KEYS_SQL, NAME_KEYS_REVERSE),
    ]

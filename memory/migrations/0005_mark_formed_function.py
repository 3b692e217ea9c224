"""Marking a turn formed and recomputing the watermark in one round trip (formation.md §2.5–§2.6)."""
from django.db import migrations

SQL = """
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


class Migration(migrations.Migration):
    dependencies = [("memory", "0004_fact_slot_indexes")]
    operations = [migrations.RunSQL(SQL, "DROP FUNCTION memoir_mark_formed(text, uuid);")]

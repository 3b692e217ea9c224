"""The watermark recompute as one database function: one round trip on every mark-formed and park.

A volatile PL/pgSQL function takes a fresh snapshot for each statement, so the minimum is read after the
watermark row lock is held, exactly as the three separate statements did (formation.md §2.6)."""
from django.db import migrations

SQL = """
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


class Migration(migrations.Migration):
    dependencies = [("memory", "0002_database_rules")]
    operations = [migrations.RunSQL(SQL, "DROP FUNCTION memoir_recompute_watermark(text);")]

"""The ledger's seal functions: the digest of a range of entries and the owner's SECURITY DEFINER seal that the
runtime role calls (governance.md §4; docs/database-roles.md). Until the layering they were in memory's
0002_database_rules; the text is unchanged."""
from django.db import migrations

DEFINER = "SECURITY DEFINER SET search_path = pg_catalog, pg_temp"

SQL = f"""
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

REVERSE = """
DROP FUNCTION memoir_audit_seal_now();
DROP FUNCTION memoir_audit_entries_digest(bigint, bigint);
"""


class Migration(migrations.Migration):
    dependencies = [("core", "0001_initial")]
    operations = [migrations.RunSQL(SQL, REVERSE)]

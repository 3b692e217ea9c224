"""The outbox write: when a project's formed watermark advances, each enabled endpoint of that project gets a
delivery row in the same transaction. A row not yet picked up by a sender is brought forward instead of a
new one added, so a burst of formed turns costs one pending delivery per endpoint, not one per turn."""
from django.db import migrations

SQL = """
CREATE FUNCTION memoir_notification_outbox() RETURNS trigger
  LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  parked integer;
  endpoint record;
BEGIN
  IF NOT EXISTS (SELECT 1 FROM public.notification_endpoint
                  WHERE scope = NEW.scope AND disabled_at IS NULL) THEN
    RETURN NULL;
  END IF;
  SELECT count(*) INTO parked FROM public.observation WHERE scope = NEW.scope AND parked_at IS NOT NULL;
  FOR endpoint IN SELECT endpoint_id FROM public.notification_endpoint
                   WHERE scope = NEW.scope AND disabled_at IS NULL ORDER BY endpoint_id LOOP
    UPDATE public.notification_delivery
       SET formed_through = NEW.formed_offset, stored_through = NEW.log_offset, parked_turns = parked,
           occurred_at = now()
     WHERE endpoint_id = endpoint.endpoint_id AND last_attempt_at IS NULL AND lease_until IS NULL
       AND delivered_at IS NULL AND parked_at IS NULL;
    IF NOT FOUND THEN
      INSERT INTO public.notification_delivery
        (delivery_id, endpoint_id, scope, formed_through, stored_through, parked_turns, occurred_at, created_at,
         attempts, next_attempt_at)
      VALUES (gen_random_uuid(), endpoint.endpoint_id, NEW.scope, NEW.formed_offset, NEW.log_offset, parked,
              now(), now(), 0, now());
    END IF;
  END LOOP;
  RETURN NULL;
END $$;

CREATE TRIGGER memoir_notification_outbox AFTER UPDATE OF formed_offset ON watermark
  FOR EACH ROW
  WHEN (NEW.formed_offset IS NOT NULL
        AND (OLD.formed_offset IS NULL OR NEW.formed_offset > OLD.formed_offset))
  EXECUTE FUNCTION memoir_notification_outbox();
"""

REVERSE = """
DROP TRIGGER memoir_notification_outbox ON watermark;
DROP FUNCTION memoir_notification_outbox();
"""


class Migration(migrations.Migration):
    dependencies = [("notifications", "0001_tables")]
    operations = [migrations.RunSQL(SQL, REVERSE)]

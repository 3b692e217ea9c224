"""A btree over each data subject's passage sources in log order, so search finds the message that follows its top
passage in that person's own words (passages.continuation; docs/decisions.md, "The top passage's continuation").
On a large install, build it beforehand with CREATE INDEX CONCURRENTLY (docs/operating.md, "Upgrades")."""
from django.db import migrations

from memory.passage_schema import SUBJECT_ORDER_INDEX, SUBJECT_ORDER_INDEX_NAME


class Migration(migrations.Migration):
    dependencies = [("memory", "0005_half_precision_hnsw")]
    operations = [migrations.RunSQL(SUBJECT_ORDER_INDEX, f"DROP INDEX IF EXISTS {SUBJECT_ORDER_INDEX_NAME}")]

"""The seeded vocabulary: predicates, unresolvable and speaker terms, and the ingestion budget's one row
(from memory's 0002_database_rules; the projection kinds and the formation heartbeat it also seeded are
governance's and formation's rows now)."""
from django.db import migrations


def seed(apps, schema_editor):
    from memory.vocabulary import PREDICATES, SPEAKER_TERMS, UNRESOLVABLE_TERMS

    Predicate = apps.get_model("memory", "Predicate")
    UnresolvableTerm = apps.get_model("memory", "UnresolvableTerm")
    SpeakerTerm = apps.get_model("memory", "SpeakerTerm")
    IngestionBudget = apps.get_model("memory", "IngestionBudget")
    Predicate.objects.bulk_create(
        Predicate(predicate=name, semantic_type=st, cardinality=card, object_kind=kind, event=event, description=desc)
        for name, st, card, kind, event, desc in PREDICATES
    )
    UnresolvableTerm.objects.bulk_create(
        UnresolvableTerm(lang="en", term=term, reason=reason)
        for reason, terms in UNRESOLVABLE_TERMS.items() for term in terms
    )
    SpeakerTerm.objects.bulk_create(SpeakerTerm(term=t) for t in SPEAKER_TERMS)
    IngestionBudget.objects.create(singleton=True, max_pending=4096, max_pending_per_project=512, pending=0)


class Migration(migrations.Migration):
    dependencies = [("memory", "0003_passages")]
    operations = [migrations.RunPython(seed, migrations.RunPython.noop)]

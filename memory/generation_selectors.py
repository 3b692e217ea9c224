"""Embedding generation reads: the generations of a project with their coverage of messages and of entities
(console, command)."""
from django.db import connection

from .entity_candidates import entity_storage_ready
from .models import EmbeddingGeneration
from .passages import coverage, vector_storage_ready


def generation_rows(*, project):
    """Each generation of the project, newest first, with vectors stored, sources and coverage."""
    rows = []
    ready = vector_storage_ready()
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM passage_source WHERE scope = %s", [project])
        sources = cursor.fetchone()[0]
        cursor.execute("SELECT count(*) FROM entity WHERE scope = %s", [project])
        entities = cursor.fetchone()[0]
        entities_ready = ready and entity_storage_ready()
        for generation in EmbeddingGeneration.objects.filter(project_id=project).order_by("-created_at"):
            vectors, covered, through, entity_vectors = 0, None, None, 0
            if ready:
                cursor.execute("SELECT count(*) FROM passage_vector WHERE generation_id = %s",
                               [str(generation.generation_id)])
                vectors = cursor.fetchone()[0]
                through, covered = coverage(cursor, project, generation.generation_id)
            if entities_ready:
                cursor.execute("SELECT count(*) FROM entity_vector WHERE generation_id = %s",
                               [str(generation.generation_id)])
                entity_vectors = cursor.fetchone()[0]
            rows.append({"generation_id": str(generation.generation_id), "state": generation.state,
                         "provider": generation.provider, "model": generation.model,
                         "dimensions": generation.dimensions, "vectors": vectors, "sources": sources,
                         "covered_through_offset": covered, "through_offset": through,
                         "entity_vectors": entity_vectors, "entities": entities})
    return rows

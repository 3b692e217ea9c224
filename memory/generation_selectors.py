"""Embedding generation reads: the generations of a project with their coverage (console, command)."""
from django.db import connection

from .models import EmbeddingGeneration
from .passages import coverage, vector_storage_ready


def generation_rows(*, project):
    """Each generation of the project, newest first, with vectors stored, sources and coverage."""
    rows = []
    ready = vector_storage_ready()
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM passage_source WHERE scope = %s", [project])
        sources = cursor.fetchone()[0]
        for generation in EmbeddingGeneration.objects.filter(project_id=project).order_by("-created_at"):
            vectors, covered, through = 0, None, None
            if ready:
                cursor.execute("SELECT count(*) FROM passage_vector WHERE generation_id = %s",
                               [str(generation.generation_id)])
                vectors = cursor.fetchone()[0]
                through, covered = coverage(cursor, project, generation.generation_id)
            rows.append({"generation_id": str(generation.generation_id), "state": generation.state,
                         "provider": generation.provider, "model": generation.model,
                         "dimensions": generation.dimensions, "vectors": vectors, "sources": sources,
                         "covered_through_offset": covered, "through_offset": through})
    return rows

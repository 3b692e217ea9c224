"""The generation lifecycle from the shell (`memoir_embeddings`) and its console page with coverage."""
import io

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import connection
from django.test import Client

from memory.models import EmbeddingGeneration
from tests.recall.conftest import observe_turn

pytestmark = pytest.mark.django_db


def run(*args):
    out = io.StringIO()
    call_command("memoir_embeddings", *args, stdout=out)
    return out.getvalue()


def test_lifecycle_commands_write_their_ledger_ops(new_project, endpoint_embedder):
    project = new_project[0]
    observe_turn(project, "Alpha words.")
    observe_turn(project, "Beta words.")
    assert "started" in run("start", "--project", project)
    generation = EmbeddingGeneration.objects.get(project_id=project)
    assert "embedded 2; complete" in run("build", "--project", project, str(generation.generation_id), "--all")
    assert "activated" in run("activate", "--project", project, str(generation.generation_id))
    listing = run("list", "--project", project)
    assert "state=active" in listing and "vectors=2" in listing and "covered_through_offset=1" in listing
    assert "build_state=complete" in run("search", "--project", project, "beta")
    assert "dropped 0" in run("repair", "--project", project, str(generation.generation_id))
    assert "pruned 0" in run("prune", "--project", project)
    with connection.cursor() as cursor:
        cursor.execute("SELECT operation FROM audit_entry WHERE project = %s AND operation LIKE 'embedding.%%'"
                       " ORDER BY entry_id", [project])
        ops = [row[0] for row in cursor.fetchall()]
    assert ops == ["embedding.start", "embedding.build", "embedding.activate", "embedding.search",
                   "embedding.repair", "embedding.prune"]


def test_console_lists_generations_with_coverage(new_project, endpoint_embedder):
    project = new_project[0]
    observe_turn(project, "Gamma words.")
    run("start", "--project", project)
    generation = EmbeddingGeneration.objects.get(project_id=project)
    run("build", "--project", project, str(generation.generation_id))
    admin = User.objects.create_superuser("gen-admin", "a@example.com", "pw-long-enough")
    client = Client()
    client.force_login(admin)
    page = client.get("/console/memory/embeddinggeneration/")
    assert page.status_code == 200
    html = page.content.decode()
    assert str(generation.generation_id) in html and "building" in html and "Covered through offset" in html
    assert "Entities embedded" in html

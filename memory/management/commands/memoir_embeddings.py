"""`memoir_embeddings list|start|build|activate|cancel|prune|repair|search|follow`: embedding generations from the
shell; each verb calls memory/generations.py (or the passage search) and writes its `embedding.*` ledger row."""
from django.core.management.base import BaseCommand, CommandError

from core import audit
from core.errors import DomainError
from memory import generations, passages
from memory.generation_selectors import generation_rows

OPERATOR = {"principal": audit.CLI_PRINCIPAL, "principal_kind": "operator"}


class Command(BaseCommand):
    help = "List, start, build, activate, cancel, prune and repair embedding generations; search passages."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        for name in ("list", "start", "prune", "follow"):
            sub.add_parser(name).add_argument("--project", required=True)
        for name in ("build", "activate", "cancel", "repair"):
            verb = sub.add_parser(name)
            verb.add_argument("--project", required=True)
            verb.add_argument("generation_id")
            if name == "build":
                verb.add_argument("--all", action="store_true", help="build page after page until complete")
        search = sub.add_parser("search")
        search.add_argument("--project", required=True)
        search.add_argument("--limit", type=int, default=10)
        search.add_argument("question")

    def handle(self, *args, action, **options):
        try:
            getattr(self, f"do_{action}")(**options)
        except DomainError as err:
            raise CommandError(err.message or err.code) from None

    def do_list(self, project, **_):
        for row in generation_rows(project=project):
            self.stdout.write(" ".join(f"{k}={v}" for k, v in row.items()))

    def do_start(self, project, **_):
        generation = generations.start(project=project, **OPERATOR)
        self.stdout.write(f"started {generation.generation_id} {generation.provider}:{generation.model}"
                          f" dimensions={generation.dimensions}")

    def do_build(self, project, generation_id, all=False, **_):
        total = 0
        while True:
            page = generations.build(project=project, generation_id=generation_id, **OPERATOR)
            total += page.embedded
            if not (all and page.remaining and page.embedded):
                break
        entities = 0
        if not page.remaining:  # entities after messages, as the follower does
            while True:
                entity_page = generations.build_entities(project=project, generation_id=generation_id, **OPERATOR)
                entities += entity_page.embedded
                if not (all and entity_page.remaining and entity_page.embedded):
                    break
        self.stdout.write(f"embedded {total}; {'more remain' if page.remaining else 'complete'};"
                          f" entities embedded {entities}")

    def do_activate(self, project, generation_id, **_):
        generations.activate(project=project, generation_id=generation_id, **OPERATOR)
        self.stdout.write(f"activated {generation_id}")

    def do_cancel(self, project, generation_id, **_):
        deleted = generations.cancel(project=project, generation_id=generation_id, **OPERATOR)
        self.stdout.write(f"cancelled {generation_id}; {deleted} vectors deleted")

    def do_prune(self, project, **_):
        self.stdout.write(f"pruned {generations.prune(project=project, **OPERATOR)} vectors")

    def do_repair(self, project, generation_id, **_):
        deleted = generations.repair(project=project, generation_id=generation_id, **OPERATOR)
        self.stdout.write(f"dropped {deleted} stale vectors; the follower re-embeds them")

    def do_follow(self, project, **_):
        self.stdout.write(f"stored {generations.follow(project) or 0} vectors")

    def do_search(self, project, question, limit, **_):
        found = passages.search(project=project, question=question, limit=limit)
        audit.record(op="embedding.search", principal=audit.CLI_PRINCIPAL, principal_kind="operator",
                     project=project, magnitude=len(found.hits))
        self.stdout.write(f"build_state={found.build_state} generation={found.generation_id or '-'}")
        for hit in found.hits:
            self.stdout.write(f"{hit.similarity:.4f} {hit.chunk_id} {hit.role}")

"""`memoir_formation drain|status|parked|unpark|rebuild`: the formation driver from the shell."""
from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from formation import driver, rebuild
from formation.kick import kick_drain
from governance import audit
from memory.errors import DomainError


class Command(BaseCommand):
    help = "Drain formation synchronously, show its status, list and unpark parked turns."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        sub.add_parser("drain").add_argument("--project", required=True)
        sub.add_parser("status")
        parked = sub.add_parser("parked")
        parked.add_argument("--project", required=True)
        parked.add_argument("--after", type=int, default=-1)
        parked.add_argument("--limit", type=int, default=50)
        unpark = sub.add_parser("unpark")
        unpark.add_argument("--project", required=True)
        unpark.add_argument("observation_id")
        rebuild_parser = sub.add_parser("rebuild", help="extractor rebuild: start (or --dry-run), status, cancel")
        rebuild_parser.add_argument("rebuild_action", choices=("start", "status", "cancel"))
        rebuild_parser.add_argument("--project", required=True)
        rebuild_parser.add_argument("--to", dest="target", default=None,
                                    help="rules/v1, rules/v2, model, or extract/v2:<hash> (start only)")
        rebuild_parser.add_argument("--dry-run", action="store_true",
                                    help="report the facts each predicate would gain and lose; change nothing")
        rebuild_parser.add_argument("--keep-orphans", action="store_true",
                                    help="do not purge entities the rebuild leaves with nothing")

    def handle(self, *args, action, **options):
        try:
            getattr(self, f"do_{action}")(**options)
        except DomainError as err:
            raise CommandError(err.message or err.code) from None

    def do_drain(self, project, **_):
        # No ledger row of its own (api.md §9).
        stats = driver.drain(project)
        self.stdout.write(f"formed {stats.turns_formed} turns ({stats.facts} facts, {stats.refusals} refusals),"
                          f" failed {stats.turns_failed}, parked {stats.turns_parked}")

    def do_status(self, **_):
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT p.name, w.log_offset, w.formed_offset,"
                " (SELECT count(*) FROM observation o WHERE o.scope = p.name AND o.parked_at IS NOT NULL),"
                " (SELECT count(*) FROM observation o WHERE o.scope = p.name AND o.kind = 'turn'"
                "   AND o.formed_at IS NULL AND o.parked_at IS NULL)"
                " FROM project p LEFT JOIN watermark w ON w.scope = p.name ORDER BY p.name")
            rows = cursor.fetchall()
        audit.record("formation.status", audit.CLI_PRINCIPAL, "operator", "", len(rows))
        for name, stored, formed, parked, backlog in rows:
            self.stdout.write(f"{name}\tstored={stored}\tformed={formed}\tparked={parked}\tbacklog={backlog}")

    def do_parked(self, project, after, limit, **_):
        if not 1 <= limit <= 200:
            raise CommandError("--limit is 1..200")
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT observation_id, log_offset, formation_attempts, parked_at, formation_error FROM observation"
                " WHERE scope = %s AND parked_at IS NOT NULL AND log_offset > %s ORDER BY log_offset LIMIT %s",
                [project, after, limit])
            rows = cursor.fetchall()
        audit.record("formation.parked", audit.CLI_PRINCIPAL, "operator", project, len(rows))
        for oid, offset, attempts, parked_at, error in rows:
            self.stdout.write(f"{offset}\t{oid}\tattempts={attempts}\tparked_at={parked_at.isoformat()}\t{error}")

    def do_unpark(self, project, observation_id, **_):
        driver.unpark(project=project, observation_id=observation_id, principal=audit.CLI_PRINCIPAL,
                      kick=kick_drain)
        self.stdout.write(f"unparked {observation_id}")

    def do_rebuild(self, rebuild_action, project, target, dry_run, keep_orphans, **_):
        if rebuild_action == "start":
            if not target:
                raise CommandError("rebuild start needs --to VERSION")
            out = rebuild.start(project=project, target=target, principal=audit.CLI_PRINCIPAL, dry_run=dry_run,
                                clean_up=not keep_orphans, kick=rebuild.kick_rebuild)
            if dry_run:
                self.stdout.write(f"dry run: {out['sources']} sources would be re-formed under"
                                  f" {out['target_version']}: +{out['facts_gained']} -{out['facts_lost']} facts")
                for predicate, change in out["predicates"].items():
                    self.stdout.write(f"{predicate}\tgain={change['gain']}\tlose={change['lose']}")
                return
            self._write_job(out)
        elif rebuild_action == "cancel":
            self._write_job(rebuild.cancel(project=project, principal=audit.CLI_PRINCIPAL))
        else:
            job = rebuild.latest_job(project=project)
            audit.record("formation.rebuild", audit.CLI_PRINCIPAL, "operator", project, 0)
            if job is None:
                self.stdout.write("no rebuild for this project")
                return
            self._write_job(job)

    def _write_job(self, job):
        self.stdout.write(
            f"{job['state']}\tto={job['target_version']}\treinterpreted_through={job['reinterpreted_through']}"
            f"\treinterpreting_through={job['reinterpreting_through']}\tacknowledged={job['sources_acknowledged']}"
            f"\tskipped={job['sources_skipped']}\tgained={job['facts_gained']}\tlost={job['facts_lost']}"
            f"\tentities_purged={job['entities_purged']}\tfacts_purged={job['facts_purged']}")

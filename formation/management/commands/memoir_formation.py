"""`memoir_formation drain|status|parked|unpark|rebuild`: the formation driver and the extractor rebuild from the
shell."""
from django.db import connection

from core import audit
from core.commands import OperatorCommand, OperatorError, parse_uuid, require_project
from formation import driver, rebuild
from formation.kick import kick_drain


class Command(OperatorCommand):
    help = "Drain formation synchronously, show its status, list and unpark parked turns."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True, metavar="{drain,status,parked,unpark,rebuild}",
                                    help="what to do")
        sub.add_parser("drain", help="form the project's waiting turns now, in this process").add_argument(
            "--project", required=True, help="the project's name")
        sub.add_parser("status", help="stored, formed, parked and backlog for every project")
        parked = sub.add_parser("parked", help="list the project's parked turns")
        parked.add_argument("--project", required=True, help="the project's name")
        parked.add_argument("--after", type=int, default=-1, help="only turns after this log offset")
        parked.add_argument("--limit", type=int, default=50, help="1..200 turns (default: %(default)s)")
        unpark = sub.add_parser("unpark", help="put a parked turn back in the queue")
        unpark.add_argument("--project", required=True, help="the project's name")
        unpark.add_argument("observation_id", help="the parked turn's observation id (a UUID)")
        rebuild_parser = sub.add_parser("rebuild", help="extractor rebuild: start (or --dry-run), status, cancel")
        rebuild_parser.add_argument("rebuild_action", choices=("start", "status", "cancel"),
                                    help="start a job, show the latest job, or cancel the running one")
        rebuild_parser.add_argument("--project", required=True, help="the project's name")
        rebuild_parser.add_argument("--to", dest="target", default=None,
                                    help="rules/v1, rules/v2, model, or extract/v2:<hash> (start only)")
        rebuild_parser.add_argument("--dry-run", action="store_true",
                                    help="report the facts each predicate would gain and lose; change nothing")
        rebuild_parser.add_argument("--keep-orphans", action="store_true",
                                    help="do not purge entities the rebuild leaves with nothing")

    def run(self, *, action, **options):
        return getattr(self, f"do_{action}")(**options)

    def do_drain(self, project, **_):
        require_project(project)
        # No ledger row of its own (api.md §9).
        stats = driver.drain(project)
        result = {"formed": stats.turns_formed, "facts": stats.facts, "refusals": stats.refusals,
                  "failed": stats.turns_failed, "parked": stats.turns_parked}
        return result, [f"formed {stats.turns_formed} turns ({stats.facts} facts, {stats.refusals} refusals),"
                        f" failed {stats.turns_failed}, parked {stats.turns_parked}"]

    def do_status(self, **_):
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT p.name, w.log_offset, w.formed_offset,"
                " (SELECT count(*) FROM observation o WHERE o.scope = p.name AND o.parked_at IS NOT NULL),"
                " (SELECT count(*) FROM observation o WHERE o.scope = p.name AND o.kind = 'turn'"
                "   AND o.formed_at IS NULL AND o.parked_at IS NULL)"
                " FROM project p LEFT JOIN watermark w ON w.scope = p.name ORDER BY p.name")
            rows = cursor.fetchall()
        audit.record(op="formation.status", principal=audit.CLI_PRINCIPAL, principal_kind="operator",
                     project="", magnitude=len(rows))
        result = [{"project": n, "stored": s, "formed": f, "parked": p, "backlog": b} for n, s, f, p, b in rows]
        return result, [f"{n}\tstored={s}\tformed={f}\tparked={p}\tbacklog={b}" for n, s, f, p, b in rows]

    def do_parked(self, project, after, limit, **_):
        if not 1 <= limit <= 200:
            raise OperatorError("--limit is 1..200")
        require_project(project)
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT observation_id, log_offset, formation_attempts, parked_at, formation_error FROM observation"
                " WHERE scope = %s AND parked_at IS NOT NULL AND log_offset > %s ORDER BY log_offset LIMIT %s",
                [project, after, limit])
            rows = cursor.fetchall()
        audit.record(op="formation.parked", principal=audit.CLI_PRINCIPAL, principal_kind="operator",
                     project=project, magnitude=len(rows))
        result = [{"observation_id": str(o), "log_offset": off, "attempts": a, "parked_at": p, "reason": e}
                  for o, off, a, p, e in rows]
        return result, [f"{off}\t{o}\tattempts={a}\tparked_at={p.isoformat()}\t{e}" for o, off, a, p, e in rows]

    def do_unpark(self, project, observation_id, **_):
        require_project(project)
        observation_id = parse_uuid(observation_id, "observation id")
        driver.unpark(project=project, observation_id=observation_id, principal=audit.CLI_PRINCIPAL,
                      kick=kick_drain)
        return {"observation_id": observation_id, "unparked": True}, [f"unparked {observation_id}"]

    def do_rebuild(self, rebuild_action, project, target, dry_run, keep_orphans, **_):
        require_project(project)
        if rebuild_action == "start":
            if not target:
                raise OperatorError("rebuild start needs --to VERSION")
            out = rebuild.start(project=project, target=target, principal=audit.CLI_PRINCIPAL, dry_run=dry_run,
                                clean_up=not keep_orphans, kick=rebuild.kick_rebuild)
            if dry_run:
                lines = [f"dry run: {out['sources']} sources would be re-formed under"
                         f" {out['target_version']}: +{out['facts_gained']} -{out['facts_lost']} facts"]
                lines += [f"{predicate}\tgain={change['gain']}\tlose={change['lose']}"
                          for predicate, change in out["predicates"].items()]
                return out, lines
            return out, [self._job_line(out)]
        if rebuild_action == "cancel":
            job = rebuild.cancel(project=project, principal=audit.CLI_PRINCIPAL)
            return job, [self._job_line(job)]
        job = rebuild.latest_job(project=project)
        audit.record(op="formation.rebuild", principal=audit.CLI_PRINCIPAL, principal_kind="operator",
                     project=project, magnitude=0)
        if job is None:
            return None, ["no rebuild for this project"]
        return job, [self._job_line(job)]

    @staticmethod
    def _job_line(job):
        return (f"{job['state']}\tto={job['target_version']}\treinterpreted_through={job['reinterpreted_through']}"
                f"\treinterpreting_through={job['reinterpreting_through']}\tacknowledged={job['sources_acknowledged']}"
                f"\tskipped={job['sources_skipped']}\tgained={job['facts_gained']}\tlost={job['facts_lost']}"
                f"\tentities_purged={job['entities_purged']}\tfacts_purged={job['facts_purged']}")

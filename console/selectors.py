"""Reads behind the operator console (console.md §3–§5): project formation figures, formation health,
refusal and ledger summaries, fact status and the evidence view. Read-only; the admin stays thin."""
from dataclasses import dataclass
from datetime import timedelta

from django.db import connection
from django.db.models import Case, Count, Exists, IntegerField, OuterRef, Subquery, Value, When
from django.db.models.functions import Coalesce
from django.utils import timezone

from formation.driver import current_proposer
from formation.models import FormationHeartbeat
from governance.models import Project
from memory.evidence import legible
from memory.models import IngestionBudget, Observation, RecordRetraction, Watermark

HEARTBEAT_STALE_SECONDS = 330
CONTEXT_WINDOW = 160
ACTIVITY_WINDOWS = {1: "last hour", 24: "last 24 hours", 168: "last 7 days", 720: "last 30 days"}
FACT_STATUSES = ("current", "validity_closed", "knowledge_closed", "retracted")


def _count(queryset):
    """A correlated count(*) as a subquery expression."""
    return Coalesce(Subquery(queryset.order_by().values("project").annotate(n=Count("*")).values("n")[:1],
                             output_field=IntegerField()), Value(0))


def with_formation_figures(projects):
    """Annotate projects with stored, formed, parked, backlog and the oldest unformed turn's ingest time."""
    watermark = Watermark.objects.filter(project=OuterRef("pk"))
    backlog = Observation.objects.filter(project=OuterRef("pk"), kind="turn", formed_at__isnull=True,
                                         parked_at__isnull=True)
    parked = Observation.objects.filter(project=OuterRef("pk"), parked_at__isnull=False)
    return projects.annotate(
        stored=Subquery(watermark.values("log_offset")[:1]),
        formed=Subquery(watermark.values("formed_offset")[:1]),
        parked=_count(parked),
        backlog=_count(backlog),
        # Offsets are handed out in ingest order, so the lowest backlog offset is the oldest (and indexed).
        oldest_unformed=Subquery(backlog.order_by("log_offset").values("ingested_at")[:1]),
    )


def age(since, now=None):
    """A short human age such as '3m 05s', or '' when there is nothing waiting."""
    if since is None:
        return ""
    seconds = max(0, int(((now or timezone.now()) - since).total_seconds()))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours:02d}h"
    if hours:
        return f"{hours}h {minutes:02d}m"
    if minutes:
        return f"{minutes}m {secs:02d}s"
    return f"{secs}s"


@dataclass(frozen=True)
class Heartbeat:
    last_pass_at: object
    last_progress_at: object
    last_failure_at: object
    passes: int
    failures: int
    stale: bool


def formation_health():
    """Per-project rows plus the instance-wide backlog budget, heartbeat and extractor (console.md §3.3)."""
    now = timezone.now()
    rows = []
    for p in with_formation_figures(Project.objects.order_by("name")):
        rows.append({"name": p.name, "label": p.label, "stored": p.stored, "formed": p.formed,
                     "parked": p.parked, "backlog": p.backlog, "backlog_age": age(p.oldest_unformed, now),
                     "suspended": p.suspended_at is not None})
    budget = IngestionBudget.objects.filter(singleton=True).first()
    beat = FormationHeartbeat.objects.filter(id=1).first()
    heartbeat = None
    if beat is not None:
        stale = beat.last_pass_at is None or (now - beat.last_pass_at) > timedelta(seconds=HEARTBEAT_STALE_SECONDS)
        heartbeat = Heartbeat(beat.last_pass_at, beat.last_progress_at, beat.last_failure_at, beat.passes,
                              beat.failures, stale)
    return {
        "rows": rows,
        "pending": budget.pending if budget else 0,
        "max_pending": budget.max_pending if budget else None,
        "heartbeat": heartbeat,
        "heartbeat_age": age(beat.last_pass_at, now) if beat and beat.last_pass_at else "never",
        "extractor": extractor_in_use(),
    }


def extractor_in_use():
    """The running proposer's version, or why it cannot be built (never the configuration's values)."""
    try:
        return current_proposer().version
    except Exception as exc:  # a misconfigured extractor must not take the health page down with it
        return f"unavailable ({type(exc).__name__})"


def ledger_activity(*, hours):
    """Ledger counts by (operation, outcome) over the last `hours` hours."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT operation, outcome, count(*) FROM audit_entry WHERE occurred_at >= now() - make_interval(hours => %s)"
            " GROUP BY operation, outcome ORDER BY count(*) DESC, operation, outcome", [int(hours)])
        return [{"operation": op, "outcome": out, "count": n} for op, out, n in cursor.fetchall()]


def with_fact_status(facts):
    """Annotate facts with `status` as api.md §7.3 computes it: retraction, then known, then valid."""
    retracted = RecordRetraction.objects.filter(project=OuterRef("project"), target_fact_id=OuterRef("fact_id"))
    return facts.annotate(
        status=Case(
            When(Exists(retracted), then=Value("retracted")),
            When(known__upper_inf=False, then=Value("knowledge_closed")),
            When(valid__upper_inf=False, then=Value("validity_closed")),
            default=Value("current"),
        ))


def filter_fact_status(facts, status):
    retracted = Exists(RecordRetraction.objects.filter(project=OuterRef("project"),
                                                       target_fact_id=OuterRef("fact_id")))
    if status == "retracted":
        return facts.filter(retracted)
    facts = facts.exclude(retracted)
    if status == "knowledge_closed":
        return facts.filter(known__upper_inf=False)
    if status == "validity_closed":
        return facts.filter(known__upper_inf=True, valid__upper_inf=False)
    if status == "current":
        return facts.filter(known__upper_inf=True, valid__upper_inf=True)
    return facts


def evidence_view(fact):
    """Each evidence row of a fact with its context window split around the quote (recall.md §6).

    The split is made on bytes and each part decoded, so the highlight lands on exactly the stored span.
    """
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT ev.id, ev.source_observation_id, ev.source_ordinal, ev.quote, ev.byte_start, ev.byte_end,"
            " ev.extractor_version, ev.authored_by, m.id, m.role, convert_to(m.content, 'UTF8'), o.log_offset"
            " FROM fact_evidence ev"
            " LEFT JOIN turn_message m ON m.observation_id = ev.source_observation_id AND m.ordinal = ev.source_ordinal"
            " LEFT JOIN observation o ON o.observation_id = ev.source_observation_id"
            " WHERE ev.fact_id = %s AND ev.scope = %s"
            " ORDER BY o.log_offset NULLS LAST, ev.source_ordinal, ev.byte_start LIMIT 100",
            [str(fact.fact_id), fact.project_id])
        rows = cursor.fetchall()
    out = []
    for (ev_id, obs_id, ordinal, quote, start, end, version, authored_by, message_id, role, content,
         log_offset) in rows:
        item = {"id": ev_id, "observation_id": obs_id, "ordinal": ordinal, "quote": quote, "byte_start": start,
                "byte_end": end, "extractor_version": version, "authored_by": authored_by,
                "message_id": message_id, "role": role, "log_offset": log_offset,
                "before": "", "highlight": quote, "after": "", "context": "", "context_start": None,
                "complete": False, "message_gone": content is None}
        if content is not None:
            item.update(_split_context(bytes(content), start, end))
        out.append(item)
    return out


def _split_context(message, start, end):
    lo = max(0, start - CONTEXT_WINDOW)
    hi = min(len(message), end + CONTEXT_WINDOW)
    context, context_start, complete = legible(message[lo:hi], lo, start, end, len(message))
    if not context:
        return {}
    raw = context.encode("utf-8")
    q = start - context_start
    return {
        "context": context,
        "context_start": context_start,
        "complete": complete,
        "before": raw[:q].decode("utf-8"),
        "highlight": raw[q:q + (end - start)].decode("utf-8"),
        "after": raw[q + (end - start):].decode("utf-8"),
    }

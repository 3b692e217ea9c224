"""The console home (issue 14): tiles and SVG charts of formation, refusals, erasures, exports, retention and
the ledger's seal, overall or for one project. Each tile appears only to holders of the permission behind it,
and each number links to the filtered list behind it."""
from urllib.parse import urlencode

from django.urls import reverse

from console import dashboard_selectors as ds
from console import svg_charts
from core.closed_sets import REFUSAL_REASONS
from governance.models import Project

ACTIVITY_OPS = ("observe", "recall", "erase", "export")
TABLE_ROWS = 25


def _url(name, **query):
    base = reverse(f"admin:{name}")
    query = {k: v for k, v in query.items() if v not in (None, "")}
    return base + ("?" + urlencode(query) if query else "")


def _can(request, *perms):
    return any(request.user.has_perm(p) for p in perms)


def chosen_project(request):
    """The ?project= the dashboard is narrowed to, when it names an existing project; '' otherwise."""
    name = request.GET.get("project", "")
    if name and Project.objects.filter(name=name).exists():
        return name
    return ""


def dashboard(request):
    """The template context of the console home for this user."""
    project = chosen_project(request)
    ctx = {"project": project, "projects": list(Project.objects.order_by("name").values_list("name", flat=True)[:500]),
           "sections": []}
    per_project = {}

    def row(name):
        return per_project.setdefault(name, {"name": name, "url": _url("index", project=name)})

    if _can(request, "memory.view_parkedturn"):
        formation = ds.formation_by_project(project=project or None)
        total_backlog = sum(r["backlog"] for r in formation)
        worst = max(formation, key=lambda r: r["lag_seconds"], default=None)
        parked = sum(r["parked"] for r in formation)
        observation_perm = _can(request, "memory.view_observation")
        for r in formation:
            item = row(r["name"])
            item.update(backlog=r["backlog"], lag=r["lag"] or "—", parked=r["parked"],
                        backlog_url=_url("memory_observation_changelist", project__name__exact=r["name"],
                                         formed="no", parked="no") if observation_perm else None,
                        parked_url=_url("memory_parkedturn_changelist", project__name__exact=r["name"]))
        chart_rows = [(r["name"], r["backlog"],
                       row(r["name"]).get("backlog_url"), 0) for r in formation if r["backlog"] or project][:20]
        instance = ds.instance_state()
        ctx["sections"].append({
            "key": "formation", "title": "Formation",
            "tiles": [
                {"key": "backlog", "label": "backlog (turns waiting)", "value": total_backlog,
                 "url": _url("console_formation_health"), "warn": total_backlog > 0},
                {"key": "lag", "label": "formation lag (oldest waiting)",
                 "value": (worst["lag"] if worst and worst["lag"] else "none"),
                 "url": _url("console_formation_health"), "warn": bool(worst and worst["lag_seconds"] > 300)},
                {"key": "parked", "label": "parked turns", "value": parked,
                 "url": _url("memory_parkedturn_changelist", project__name__exact=project), "warn": parked > 0},
                {"key": "heartbeat", "label": "last formation sweep",
                 "value": f"{instance['last_pass_age']} ago" if instance["last_pass_at"] else "never",
                 "url": _url("console_formation_health"), "warn": instance["stale"], "small": True},
                {"key": "budget", "label": "ingestion budget (pending / max)",
                 "value": f"{instance['pending']} / {instance['max_pending'] or '—'}",
                 "url": _url("console_formation_health"), "small": True},
            ],
            "charts": [{"key": "backlog-chart", "title": "Backlog by project",
                        "svg": svg_charts.hbars(rows=chart_rows, title="Backlog by project", unit=" waiting")}],
        })

    if _can(request, "governance.view_refusal_summary"):
        by_day = ds.refusals_by_day(project=project or None)
        list_perm = _can(request, "memory.view_rejectedclaim")
        links = {reason: _url("memory_rejectedclaim_changelist", project__name__exact=project, reason__exact=reason)
                 for reason in REFUSAL_REASONS} if list_perm else {}
        present = [r for r in REFUSAL_REASONS if by_day["totals"][r]]
        total = sum(by_day["totals"].values())
        tiles = [{"key": "refusals", "label": f"refusals, last {ds.CHART_DAYS} days", "value": total,
                  "url": _url("memory_rejectedclaim_changelist", project__name__exact=project) if list_perm else None}]
        for reason in sorted(present, key=lambda r: -by_day["totals"][r])[:3]:
            tiles.append({"key": f"refusals-{reason}", "label": reason, "value": by_day["totals"][reason],
                          "url": links.get(reason), "small": True})
        series = {r: by_day["series"][r] for r in REFUSAL_REASONS}
        for name, _reason, count in ds.refusals_by_reason(project=project or None):
            row(name)["refusals"] = row(name).get("refusals", 0) + count
            if list_perm:
                row(name)["refusals_url"] = _url("memory_rejectedclaim_changelist", project__name__exact=name)
        ctx["sections"].append({
            "key": "refusals", "title": "Refusals by reason",
            "tiles": tiles,
            "charts": [{"key": "refusals-chart", "title": f"Refusals per day by reason (last {ds.CHART_DAYS} days, UTC)",
                        "svg": svg_charts.stacked_days(labels=ds.day_labels(by_day["days"]), series=series,
                                                       links=links, title="Refusals per day by reason"),
                        "legend": svg_charts.legend(list(REFUSAL_REASONS), links, only=present) if present else None}],
        })

    if _can(request, "governance.view_project"):
        instance = ds.instance_state()
        tiles = [{"key": "projects", "label": "projects", "value": instance["projects"],
                  "url": _url("governance_project_changelist")},
                 {"key": "suspended", "label": "suspended", "value": instance["suspended"],
                  "url": _url("governance_project_changelist"), "warn": instance["suspended"] > 0}]
        if _can(request, "governance.view_credential"):
            tiles.append({"key": "credentials", "label": "live credentials", "value": instance["live_credentials"],
                          "url": _url("governance_credential_changelist", state="live")})
        ctx["sections"].append({"key": "instance", "title": "Projects and credentials", "tiles": tiles,
                                "charts": [], "overall": True})

    compliance_tiles, compliance_charts = [], []
    if _can(request, "governance.view_erasurerequest"):
        erasures = ds.erasures_by_project(project=project or None)
        done = sum(e[1] for e in erasures)
        clean = sum(e[2] for e in erasures)
        open_ = sum(e[3] for e in erasures)
        compliance_tiles += [
            {"key": "erasures", "label": "erasures done", "value": done,
             "url": _url("governance_erasurerequest_changelist", project__name__exact=project)},
            {"key": "erasures-dirty", "label": "with residual rows", "value": done - clean,
             "url": _url("governance_erasurerequest_changelist", project__name__exact=project), "warn": done > clean},
        ]
        if open_:
            compliance_tiles.append({"key": "erasures-open", "label": "erasures not completed", "value": open_,
                                     "url": _url("governance_erasurerequest_changelist",
                                                 project__name__exact=project), "warn": True})
        for name, d, _c, _o in erasures:
            row(name).update(erasures=d, erasures_url=_url("governance_erasurerequest_changelist",
                                                           project__name__exact=name))
    if _can(request, "governance.view_auditentry"):
        exports = sum(n for _op, outcome, n in ds.ledger_counts(operations=["export"], project=project or None)
                      if outcome == "allowed")
        compliance_tiles.append({"key": "exports", "label": "exports done", "value": exports,
                                 "url": _url("governance_auditentry_changelist", operation__exact="export",
                                             outcome__exact="allowed", project=project)})
        for name, count in ds.exports_by_project(project=project or None):
            row(name).update(exports=count, exports_url=_url("governance_auditentry_changelist",
                                                             operation__exact="export", outcome__exact="allowed",
                                                             project=name))
        activity = ds.ledger_by_day(operations=ACTIVITY_OPS, project=project or None)
        links = {op: _url("governance_auditentry_changelist", operation__exact=op, project=project)
                 for op in ACTIVITY_OPS}
        compliance_charts.append({"key": "activity-chart",
                                  "title": f"Requests per day (allowed ledger rows, last {ds.CHART_DAYS} days, UTC)",
                                  "svg": svg_charts.stacked_days(labels=ds.day_labels(activity["days"]),
                                                                 series=activity["series"], links=links,
                                                                 title="Requests per day"),
                                  "legend": svg_charts.legend(list(ACTIVITY_OPS), links)})
    if _can(request, "governance.view_retentionsweep"):
        sweeps = ds.retention_sweeps_by_project(project=project or None)
        compliance_tiles.append({"key": "sweeps", "label": "retention sweeps",
                                 "value": sum(s[1] for s in sweeps),
                                 "url": _url("governance_retentionsweep_changelist", project__name__exact=project)})
    if compliance_tiles or compliance_charts:
        ctx["sections"].append({"key": "compliance", "title": "Erasure, export and retention",
                                "tiles": compliance_tiles, "charts": compliance_charts})

    if _can(request, "governance.view_auditseal"):
        seal = ds.seal_state()
        ledger_perm = _can(request, "governance.view_auditentry")
        ctx["sections"].append({"key": "ledger", "title": "Audit ledger", "tiles": [
            {"key": "seal", "label": "last seal", "value": f"{seal['seal_age']} ago" if seal["sealed_at"] else "never",
             "detail": f"seal {seal['seal_id']}" if seal["seal_id"] else "",
             "url": _url("governance_auditseal_changelist"),
             "warn": seal["seal_age_seconds"] is None or seal["seal_age_seconds"] > 900},
            {"key": "unsealed", "label": "entries not yet sealed", "value": seal["unsealed"],
             "url": _url("governance_auditentry_changelist") if ledger_perm else None},
            {"key": "verified", "label": "last verification",
             "value": f"{seal['verified_age']} ago" if seal["verified_at"] else "never",
             "url": _url("governance_auditentry_changelist", operation__exact="audit.verify") if ledger_perm
             else None, "warn": seal["verified_at"] is None},
        ], "charts": []})

    if _can(request, "memory.view_fact"):
        coverage = ds.embedding_coverage(project=project or None)
        if coverage is not None:
            embedded = coverage["embedded"]
            share = f"{100 * embedded / coverage['total']:.0f}%" if coverage["total"] and embedded is not None else "—"
            indexed, total = coverage["indexed"], coverage["total"]
            ctx["sections"].append({"key": "embeddings", "title": "Embeddings", "tiles": [
                {"key": "indexed", "label": "messages indexed (lexical)",
                 "value": f"{100 * indexed / total:.0f}%" if total else "—", "detail": f"{indexed} of {total}",
                 "warn": indexed < total},
                {"key": "coverage", "label": "messages embedded (active generation)", "value": share,
                 "detail": f"{embedded} of {coverage['total']}" if embedded is not None else "vector search unavailable",
                 "url": _url("memory_embeddinggeneration_changelist")
                 if _can(request, "memory.view_embeddinggeneration") else None}],
                "charts": []})

    columns = [c for c, perm in (("backlog", "memory.view_parkedturn"), ("lag", "memory.view_parkedturn"),
                                  ("parked", "memory.view_parkedturn"),
                                  ("refusals", "governance.view_refusal_summary"),
                                  ("erasures", "governance.view_erasurerequest"),
                                  ("exports", "governance.view_auditentry")) if _can(request, perm)]
    if not project and columns:
        for name in ctx["projects"]:
            row(name)
        def activity(r):
            return tuple(-(r.get(c) or 0) for c in ("parked", "backlog", "refusals", "erasures", "exports"))

        ranked = sorted(per_project.values(), key=lambda r: (activity(r), r["name"]))
        ctx["table"] = {"columns": columns, "rows": ranked[:TABLE_ROWS], "more": max(0, len(ranked) - TABLE_ROWS)}
    return ctx


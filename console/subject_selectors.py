"""Reads behind the console's subject page: resolve a subject id or registered reference within one project,
then count and list what Memoir holds for it (messages, facts with evidence, refusals, artifacts, erasures)."""
import uuid
from dataclasses import dataclass

from django.db import connection

from console import selectors as console_selectors
from governance.models import AgentArtifact, DataSubject, ErasureRequest
from memory.models import Fact, RejectedClaim, TurnMessage

LIST_LIMIT = 50


@dataclass(frozen=True)
class ResolvedSubject:
    data_subject_id: str  # the value stored on observations, facts, refusals and artifacts
    registered_id: str | None  # the data_subject registry row, when there is one
    external_reference: str | None
    label: str


def resolve(*, project, term):
    """A registered subject matched by id or external reference, else the term itself as a free-text id."""
    term = term.strip()
    if not term:
        return None
    registered = None
    try:
        registered = DataSubject.objects.filter(project=project, subject_id=uuid.UUID(term)).first()
    except ValueError:
        pass
    if registered is None:
        registered = DataSubject.objects.filter(project=project, external_reference=term).first()
    if registered is not None:
        return ResolvedSubject(str(registered.subject_id), str(registered.subject_id), registered.external_reference,
                               registered.label)
    return ResolvedSubject(term, None, None, "")


def _count(sql, params):
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone()[0]


def message_count(*, project, subject):
    return _count("SELECT count(*) FROM turn_message m JOIN observation o ON o.observation_id = m.observation_id"
                  " WHERE o.scope = %s AND o.data_subject_id = %s", [project, subject])


def messages(*, project, subject, limit=LIST_LIMIT):
    return list(TurnMessage.objects.filter(observation__project=project, observation__data_subject_id=subject)
                .select_related("observation").order_by("-observation__log_offset", "ordinal")[:limit])


def facts(*, project, subject, limit=LIST_LIMIT, with_evidence=False):
    """The subject's facts, newest first, each with its status and (optionally) its evidence split around the
    quote as on the fact page."""
    rows = Fact.objects.filter(project=project, data_subject_id=subject).select_related(
        "subject_entity", "object_entity")
    total = rows.count()
    listed = list(console_selectors.with_fact_status(rows).order_by("-recorded_at")[:limit])
    out = []
    for fact in listed:
        out.append({"fact": fact, "evidence": console_selectors.evidence_view(fact)[:3] if with_evidence else []})
    return total, out


def refusals(*, project, subject, limit=LIST_LIMIT):
    rows = RejectedClaim.objects.filter(project=project, data_subject_id=subject)
    return rows.count(), list(rows.order_by("-recorded_at")[:limit])


def artifacts(*, project, subject, limit=LIST_LIMIT):
    rows = AgentArtifact.objects.filter(project=project, data_subject_id=subject).defer("content")
    return rows.count(), list(rows.order_by("-updated_at")[:limit])


def erasures(*, project, subject, limit=LIST_LIMIT):
    """Erasure receipts whose selector named this subject (the receipts keep their selector)."""
    rows = ErasureRequest.objects.filter(project=project, selector__data_subject_id=subject)
    listed = list(rows.order_by("-requested_at")[:limit])
    for receipt in listed:
        receipt.is_clean = receipt.completed_at is not None and not any((receipt.residual or {}).values())
    return rows.count(), listed


def project_exports(*, project):
    """Allowed exports in the project: the ledger never names a subject, so exports are counted per project."""
    return _count("SELECT count(*) FROM audit_entry WHERE operation = 'export' AND outcome = 'allowed'"
                  " AND project = %s", [project])

"""The console's custom pages (console.md §3–§4): formation health, issue credential (token shown once),
erasure and export forms, refusal summary, ledger activity, seal and verify. Each checks its permission,
calls one service or selector, and writes its ledger row."""
import json
import re
import secrets
import uuid
from urllib.parse import urlencode

from django import forms
from django.core.serializers.json import DjangoJSONEncoder
from django.db import connection, transaction
from django.http import HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone

from console import selectors as console_selectors
from console.access import OPERATOR, ledger_read, principal_of, require
from console.site import site
from core.errors import DomainError
from core.locks import advisory_xact_lock
from governance import services
from governance.erasure import erase
from governance.export import export
from governance.export import refusal_summary as summarise
from governance.ledger import seal, verify
from governance.models import ACCESS_MODES, Project

ISSUE_NONCES = "memoir_issue_nonces"
MAX_PENDING_NONCES = 20
MAX_SOURCE_IDS = 10_000


def render(request, template, title, **context):
    return TemplateResponse(request, template, {**site.each_context(request), "title": title, **context})


def _message(exc):
    return exc.message or exc.code


# --- formation health -----------------------------------------------------------------------------

def formation_health(request):
    require(request, "memory.view_parkedturn")
    health = console_selectors.formation_health()
    ledger_read(request, "formation.status", "", len(health["rows"]))
    return render(request, "admin/memoir/formation_health.html", "Formation health", health=health,
                  stale_after=console_selectors.HEARTBEAT_STALE_SECONDS)


# --- issue credential: the token is shown once ----------------------------------------------------

class IssueCredentialForm(forms.Form):
    name = forms.CharField(max_length=128)
    project = forms.ModelChoiceField(queryset=Project.objects.none(), to_field_name="name",
                                     help_text="Active projects only.")
    access = forms.ChoiceField(choices=[(a, a) for a in ACCESS_MODES], initial="read_write")
    nonce = forms.CharField(widget=forms.HiddenInput)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["project"].queryset = Project.objects.filter(suspended_at__isnull=True).order_by("name")


def _new_nonce(request):
    """A single-use form nonce: a re-submitted POST finds it spent and issues nothing."""
    nonce = secrets.token_urlsafe(24)
    pending = request.session.get(ISSUE_NONCES, [])[-(MAX_PENDING_NONCES - 1):]
    request.session[ISSUE_NONCES] = [*pending, nonce]
    return nonce


def _spend_nonce(request, nonce):
    """Spend the nonce before anything is issued. Concurrent re-submits each loaded the session when they
    began, so the spend re-reads the stored session under a lock held to commit: only one finds it."""
    session = request.session
    if not nonce or not session.session_key:
        return False
    with transaction.atomic(), connection.cursor() as cursor:
        advisory_xact_lock(cursor, "console-session", session.session_key)
        stored = session.__class__(session.session_key).load().get(ISSUE_NONCES, [])
        if nonce not in stored:
            return False
        session[ISSUE_NONCES] = [n for n in stored if n != nonce]
        session.save()
    return True


def _issue_form_page(request, form):
    return render(request, "admin/memoir/issue_credential.html", "Issue credential", form=form,
                  action=reverse("admin:console_issue_credential_result"))


def _already_shown(request):
    response = render(request, "admin/memoir/token_already_shown.html", "Token already shown")
    response["Cache-Control"] = "no-store"
    return response


def issue_credential(request):
    require(request, "governance.issue_credential")
    form = IssueCredentialForm(initial={"access": "read_write", "nonce": _new_nonce(request)})
    return _issue_form_page(request, form)


def issue_credential_result(request):
    require(request, "governance.issue_credential")
    if request.method != "POST":
        return _already_shown(request)
    form = IssueCredentialForm(request.POST)
    if request.POST.get("nonce") not in request.session.get(ISSUE_NONCES, []):
        return _already_shown(request)
    if not form.is_valid():
        return _issue_form_page(request, form)
    if not _spend_nonce(request, form.cleaned_data["nonce"]):
        return _already_shown(request)
    data = form.cleaned_data
    try:
        credential, token = services.issue_credential(
            project=data["project"].name, name=data["name"], access=data["access"],
            principal=principal_of(request), principal_kind=OPERATOR)
    except DomainError as exc:
        form = IssueCredentialForm(initial={**data, "project": data["project"].name,
                                            "nonce": _new_nonce(request)})
        form.add_error(None, _message(exc))
        return _issue_form_page(request, form)
    response = render(request, "admin/memoir/token_shown.html", "Credential issued", credential=credential,
                      token=token)
    response["Cache-Control"] = "no-store"
    return response


# --- erasure and export ---------------------------------------------------------------------------

class SelectorForm(forms.Form):
    project = forms.ModelChoiceField(queryset=Project.objects.order_by("name"), to_field_name="name")
    selector = forms.ChoiceField(choices=[("subject", "a data subject"), ("sources", "source observations")],
                                 widget=forms.RadioSelect, initial="subject")
    data_subject_id = forms.CharField(required=False, max_length=1024, strip=False)
    source_observation_ids = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 6}),
                                             help_text="One observation UUID per line, at most 10,000.")

    def clean(self):
        data = super().clean()
        if data.get("selector") == "sources":
            lines = [line.strip() for line in re.split(r"\r?\n", data.get("source_observation_ids") or "")]
            lines = [line for line in lines if line]
            if not lines:
                self.add_error("source_observation_ids", "Give at least one observation id.")
            elif len(lines) > MAX_SOURCE_IDS:
                self.add_error("source_observation_ids", "At most 10,000 observation ids.")
            else:
                try:
                    data["ids"] = [str(uuid.UUID(line)) for line in lines]
                except ValueError:
                    self.add_error("source_observation_ids", "Every line must be one observation UUID.")
            data["subject"] = None
        else:
            subject = data.get("data_subject_id") or ""
            if not subject.strip():
                self.add_error("data_subject_id", "Give the data subject id.")
            data["subject"], data["ids"] = subject, None
        return data


class ErasureForm(SelectorForm):
    reason = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    confirm_project = forms.CharField(label="Type the project name to confirm")

    def clean(self):
        data = super().clean()
        project = data.get("project")
        if project is not None and data.get("confirm_project") != project.name:
            self.add_error("confirm_project", "The typed name does not match the project.")
        return data


def new_erasure(request):
    require(request, "governance.run_erasure")
    form = ErasureForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            receipt = erase(project=data["project"].name, data_subject_id=data["subject"],
                            source_observation_ids=data["ids"], reason=data.get("reason") or "",
                            principal=principal_of(request), principal_kind=OPERATOR)
        except DomainError as exc:
            form.add_error(None, _message(exc))
        else:
            return HttpResponseRedirect(reverse("admin:governance_erasurerequest_change",
                                                args=[receipt["request_id"]]))
    return render(request, "admin/memoir/selector_form.html", "New erasure", form=form,
                  intro="Erase everything derived from one data subject or from listed source observations. "
                        "This cannot be undone; the receipt counts what was deleted and what remains.",
                  button="Erase")


def export_subject(request):
    require(request, "governance.run_export")
    form = SelectorForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            document = export(project=data["project"].name, data_subject_id=data["subject"],
                              source_observation_ids=data["ids"], principal=principal_of(request),
                              principal_kind=OPERATOR)
        except DomainError as exc:
            form.add_error(None, _message(exc))
        else:
            stamp = timezone.now().strftime("%Y%m%dT%H%M%SZ")
            response = HttpResponse(json.dumps(document, cls=DjangoJSONEncoder, ensure_ascii=False, indent=1),
                                    content_type="application/json; charset=utf-8")
            response["Content-Disposition"] = f'attachment; filename="export-{data["project"].name}-{stamp}.json"'
            response["Cache-Control"] = "no-store"
            return response
    return render(request, "admin/memoir/selector_form.html", "Export (subject access)", form=form,
                  intro="Download every stored row for one data subject or for listed source observations "
                        "as JSON.", button="Export")


# --- refusal summary and ledger activity ----------------------------------------------------------

class RefusalSummaryForm(forms.Form):
    project = forms.ModelChoiceField(queryset=Project.objects.order_by("name"), to_field_name="name")
    limit = forms.IntegerField(min_value=0, max_value=500, initial=100, required=False,
                               help_text="0 to 500 groups (0 means 100).")


def refusal_summary(request):
    require(request, "governance.view_refusal_summary")
    form = RefusalSummaryForm(request.GET if "project" in request.GET else None)
    rows = None
    if form.is_bound and form.is_valid():
        project = form.cleaned_data["project"].name
        rows = summarise(project=project, limit=form.cleaned_data.get("limit") or 100)
        base = reverse("admin:memory_rejectedclaim_changelist")
        for row in rows:
            row["url"] = base + "?" + urlencode({"project__name__exact": project, "reason__exact": row["reason"],
                                                 "predicate": row["predicate"]})
        ledger_read(request, "refusal.summary", project, len(rows))
    return render(request, "admin/memoir/refusal_summary.html", "Refusal summary", form=form, rows=rows)


def ledger_activity(request):
    require(request, "governance.view_auditentry")
    try:
        hours = int(request.GET.get("hours", 24))
    except ValueError:
        hours = 24
    if hours not in console_selectors.ACTIVITY_WINDOWS:
        hours = 24
    rows = console_selectors.ledger_activity(hours=hours)
    ledger_read(request, "audit.activity", "", len(rows))
    return render(request, "admin/memoir/ledger_activity.html", "Ledger activity", rows=rows, hours=hours,
                  windows=console_selectors.ACTIVITY_WINDOWS.items(), total=sum(r["count"] for r in rows))


# --- seals ----------------------------------------------------------------------------------------

def _display(value):
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    return value


def seal_now(request):
    require(request, "governance.seal_audit")
    sealed = None
    if request.method == "POST":
        result = seal(principal=principal_of(request), principal_kind=OPERATOR)
        sealed = {"result": None if result is None else {k: _display(v) for k, v in result.items()}}
    return render(request, "admin/memoir/seal_now.html", "Seal now", sealed=sealed)


def verify_chain(request):
    require(request, "governance.verify_audit")
    result = {k: _display(v) for k, v in verify(principal=principal_of(request), principal_kind=OPERATOR).items()}
    return render(request, "admin/memoir/verify_chain.html", "Verify chain", result=result)

"""The console's subject page (issue 14): one data subject in one project at a glance, with Export and Erase
for those allowed. Each section shows only to holders of its permission; content needs memory.view_content."""
from urllib.parse import urlencode

from django import forms
from django.core.exceptions import PermissionDenied
from django.urls import reverse

from console import subject_selectors
from console.access import SUBJECT_PAGE_PERMS, can_view_content, ledger_read, may_open
from console.views import render
from governance.models import Project


class SubjectLookupForm(forms.Form):
    project = forms.ModelChoiceField(queryset=Project.objects.order_by("name"), to_field_name="name")
    subject = forms.CharField(max_length=1024, strip=True, label="Subject id or registered reference")


def subject_page(request):
    if not may_open(request, None):
        raise PermissionDenied
    form = SubjectLookupForm(request.GET if "subject" in request.GET else None)
    context = {"form": form, "perms_needed": SUBJECT_PAGE_PERMS}
    if form.is_bound and form.is_valid():
        project = form.cleaned_data["project"].name
        resolved = subject_selectors.resolve(project=project, term=form.cleaned_data["subject"])
        context.update(project=project, resolved=resolved, **_sections(request, project, resolved))
        ledger_read(request, "console.read", project, context["rendered"])
    response = render(request, "admin/memoir/subject.html", "Subject at a glance", **context)
    response["Cache-Control"] = "no-store"
    return response


def _sections(request, project, resolved):
    user, subject = request.user, resolved.data_subject_id
    show_content = can_view_content(request)
    out = {"show_content": show_content, "sections": [], "rendered": 0}

    def section(key, title, count, rows, url=None):
        out["sections"].append({"key": key, "title": title, "count": count, "rows": rows, "url": url})
        out["rendered"] += len(rows)

    if user.has_perm("memory.view_turnmessage"):
        count = subject_selectors.message_count(project=project, subject=subject)
        url = _changelist("memory_turnmessage", q=f"subject:{subject}") if show_content else None
        section("messages", "Messages", count, subject_selectors.messages(project=project, subject=subject), url)
    if user.has_perm("memory.view_fact"):
        count, rows = subject_selectors.facts(project=project, subject=subject, with_evidence=show_content)
        section("facts", "Facts", count, rows,
                _changelist("memory_fact", project__name__exact=project, q=f"subject:{subject}"))
    if user.has_perm("memory.view_rejectedclaim"):
        count, rows = subject_selectors.refusals(project=project, subject=subject)
        section("refusals", "Refusals", count, rows)
    if user.has_perm("governance.view_agentartifact"):
        count, rows = subject_selectors.artifacts(project=project, subject=subject)
        section("artifacts", "Artifacts", count, rows)
    if user.has_perm("governance.view_erasurerequest"):
        count, rows = subject_selectors.erasures(project=project, subject=subject)
        section("erasures", "Erasures", count, rows,
                _changelist("governance_erasurerequest", project__name__exact=project))
    if user.has_perm("governance.view_auditentry"):
        out["exports"] = subject_selectors.project_exports(project=project)
        out["exports_url"] = _changelist("governance_auditentry", operation__exact="export",
                                         outcome__exact="allowed", project=project)
    out["can_export"] = user.has_perm("governance.run_export")
    out["can_erase"] = user.has_perm("governance.run_erasure")
    out["export_url"] = reverse("admin:console_export")
    out["erase_url"] = reverse("admin:console_new_erasure")
    return out


def _changelist(model, **query):
    return reverse(f"admin:{model}_changelist") + "?" + urlencode(query)

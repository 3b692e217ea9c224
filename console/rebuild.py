"""The console's extractor-rebuild page: start (with a dry-run preview first), progress, cancel. Thin: each
action calls formation.rebuild and the page reads its job rows."""
from django import forms
from django.template.response import TemplateResponse

from console.access import OPERATOR, ledger_read, principal_of, require
from console.site import site
from core.errors import DomainError
from formation import rebuild
from governance.models import Project

PERMISSION = "memory.run_rebuild"


class RebuildForm(forms.Form):
    project = forms.ModelChoiceField(queryset=Project.objects.none(), to_field_name="name")
    target = forms.CharField(max_length=80, initial="rules/v2",
                             help_text="rules/v1, rules/v2, model (the configured model) or extract/v2:HASH")
    clean_up = forms.BooleanField(required=False, initial=True,
                                  help_text="purge entities the rebuild leaves with no current fact or human record")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["project"].queryset = Project.objects.order_by("name")


def rebuild_page(request):
    require(request, PERMISSION)
    form, preview, error, notice = RebuildForm(), None, None, None
    if request.method == "POST":
        action = request.POST.get("action")
        if action == "cancel":
            try:
                rebuild.cancel(project=request.POST.get("project", ""), principal=principal_of(request),
                               principal_kind=OPERATOR)
                notice = "Cancelled. Every source keeps exactly one reading: the old one or the new one."
            except DomainError as exc:
                error = exc.message or exc.code
        else:
            form = RebuildForm(request.POST)
            if form.is_valid():
                options = {"project": form.cleaned_data["project"].name, "target": form.cleaned_data["target"],
                           "principal": principal_of(request), "principal_kind": OPERATOR}
                try:
                    if action == "start":
                        rebuild.start(**options, clean_up=form.cleaned_data["clean_up"], kick=rebuild.kick_rebuild)
                        notice = "Started. The worker re-forms the project source by source."
                    else:
                        preview = rebuild.start(**options, dry_run=True)
                except DomainError as exc:
                    error = exc.message or exc.code
    jobs = rebuild.jobs(limit=50)
    for job in jobs:
        through, done = job["reinterpreting_through"], job["reinterpreted_through"]
        job["percent"] = 100 if through < 0 else int(100 * ((done if done is not None else -1) + 1) / (through + 1))
    ledger_read(request, "formation.rebuild", "", len(jobs))
    context = {**site.each_context(request), "title": "Extractor rebuild", "form": form, "preview": preview,
               "error": error, "notice": notice, "jobs": jobs}
    return TemplateResponse(request, "admin/memoir/extractor_rebuild.html", context)

"""The operator console (console.md): the MemoirAdminSite at /console/ and the behaviour every model admin
on it shares. The custom pages' URLs are joined to the site's own in console/urls.py, so the site never
imports its pages and the pages may import the site.

Every mutation goes through a service with principal `user:<pk>`, kind `operator`; views stay thin.
"""
import uuid

from django.contrib import admin
from django.contrib.admin.filters import FieldListFilter, ListFilter
from django.contrib.admin.utils import get_fields_from_path, quote
from django.http import HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse

from console import dashboard as console_dashboard
from console.access import OPERATOR, ledger_read, may_open, principal_of
from core import audit
from core.version import __version__
from governance import dblog

# --- the site -------------------------------------------------------------------------------------

# Custom console pages in the menu: (key, menu name, url name, permission needed).
CONSOLE_PAGES = (
    ("formation_health", "Formation health", "console_formation_health", "memory.view_parkedturn"),
    ("issue_credential", "Issue credential", "console_issue_credential", "governance.issue_credential"),
    ("new_erasure", "New erasure", "console_new_erasure", "governance.run_erasure"),
    ("export", "Export (subject access)", "console_export", "governance.run_export"),
    ("refusal_summary", "Refusal summary", "console_refusal_summary", "governance.view_refusal_summary"),
    ("ledger_activity", "Ledger activity", "console_ledger_activity", "governance.view_auditentry"),
    ("seal_now", "Seal now", "console_seal_now", "governance.seal_audit"),
    ("verify_chain", "Verify chain", "console_verify_chain", "governance.verify_audit"),
    ("subject", "Subject at a glance", "console_subject", None),
    ("extractor_rebuild", "Extractor rebuild", "console_extractor_rebuild", "memory.run_rebuild"),
)


class DeclaredLookupsOnly:
    """A changelist applies only the query-string lookups its declared filters (list_filter, date_hierarchy) read.

    Django lets any lookup on a local field through (`?data_subject_id=<guess>`, `?statement__contains=`), which
    turns a list's count into an oracle on fields the page hides. Anything undeclared is refused with a 400
    (DisallowedModelAdminLookup), never silently applied. The site mixes this into every registered admin."""

    _declared_cache = {}

    def lookup_allowed(self, lookup, value, request=None):
        return lookup in self.declared_lookups(request)

    def declared_lookups(self, request):
        allowed = set()
        for item in self.get_list_filter(request):
            allowed |= self._filter_parameters(item, request)
        if self.date_hierarchy:
            allowed |= {f"{self.date_hierarchy}__{part}" for part in ("year", "month", "day")}
        return allowed

    def _filter_parameters(self, item, request):
        key = (type(self), repr(item))
        if key not in self._declared_cache:
            if isinstance(item, type) and issubclass(item, ListFilter):
                spec = item(request, {}, self.model, self)
            else:
                path, filter_class = item if isinstance(item, (tuple, list)) else (item, FieldListFilter.create)
                field = get_fields_from_path(self.model, path)[-1]
                spec = filter_class(field, request, {}, self.model, self, field_path=path)
            self._declared_cache[key] = frozenset(spec.expected_parameters())
        return self._declared_cache[key]


class MemoirAdminSite(admin.AdminSite):
    site_header = f"Memoir console {__version__}"
    site_title = "Memoir console"
    index_title = "Operator console"
    index_template = "admin/memoir/dashboard.html"
    site_url = None

    def index(self, request, extra_context=None):
        """The dashboard (console_dashboard), with the list of every page below it."""
        extra = {"dash": console_dashboard.dashboard(request), "memoir_version": __version__,
                 "can_subject": may_open(request, None)}
        return super().index(request, {**(extra_context or {}), **extra})
    def each_context(self, request):
        context = super().each_context(request)
        # Every page shows a banner while the database server's log would keep content (governance/dblog.py).
        context["database_log_warning"] = dblog.cached_warning() if request.user.is_active else ""
        return context

    def register(self, model_or_iterable, admin_class=None, **options):
        # Every admin, ours and Django's (users, groups), answers only its declared lookups.
        admin_class = admin_class or admin.ModelAdmin
        if not issubclass(admin_class, DeclaredLookupsOnly):
            admin_class = type(admin_class.__name__, (DeclaredLookupsOnly, admin_class),
                               {"__module__": admin_class.__module__})
        return super().register(model_or_iterable, admin_class, **options)

    def login(self, request, extra_context=None):
        response = super().login(request, extra_context)
        # A successful sign-in is a POST answered with a redirect by an authenticated user.
        if request.method == "POST" and response.status_code == 302 and request.user.is_authenticated:
            audit.record_best_effort(op="console.login", principal=principal_of(request),
                                     principal_kind=OPERATOR, project="", magnitude=1)
        return response

    def get_app_list(self, request, app_label=None):
        app_list = super().get_app_list(request, app_label)
        if app_label is None:
            pages = [
                {"name": name, "object_name": key, "perms": {"view": True}, "view_only": True,
                 "admin_url": reverse(f"{self.name}:{url_name}", current_app=self.name), "add_url": None}
                for key, name, url_name, perm in CONSOLE_PAGES if may_open(request, perm)
            ]
            if pages:
                app_list.append({"name": "Console pages", "app_label": "console", "app_url": "#console-pages",
                                 "has_module_perms": True, "models": pages})
        return app_list


site = MemoirAdminSite(name="admin")


# --- shared ModelAdmin behaviour ------------------------------------------------------------------

class LedgeredAdmin(admin.ModelAdmin):
    """Writes a ledger row when a changelist (list_op) or detail page (detail_op) renders."""

    list_op = None
    detail_op = None
    show_full_result_count = False
    list_per_page = 50

    def changelist_view(self, request, extra_context=None):
        response = super().changelist_view(request, extra_context)
        cl = (getattr(response, "context_data", None) or {}).get("cl")
        if self.list_op and cl is not None and response.status_code == 200:
            ledger_read(request, self.list_op, request.GET.get("project__name__exact", ""), len(cl.result_list))
        return response

    def change_view(self, request, object_id, form_url="", extra_context=None):
        response = super().change_view(request, object_id, form_url, extra_context)
        original = (getattr(response, "context_data", None) or {}).get("original")
        if self.detail_op and original is not None and response.status_code == 200:
            ledger_read(request, self.detail_op, getattr(original, "project_id", ""), 1)
        return response

    def history_view(self, request, object_id, extra_context=None):
        # The console changes nothing through Django's admin log (the ledger is the record), so the history
        # page would only repeat the object's title, content included, without a console.read row.
        return HttpResponseRedirect(reverse(
            f"{self.admin_site.name}:{self.opts.app_label}_{self.opts.model_name}_change", args=[quote(object_id)]))


class NoWritesMixin:
    """No add, change or delete through the console, superusers included; the triggers stay the last wall."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class ViewOnlyAdmin(NoWritesMixin, LedgeredAdmin):
    """Append-only or derived data (console.md §1 rule 2): view permission only, for everyone."""

    actions = None


def exact_uuid(term):
    try:
        return uuid.UUID(term.strip())
    except ValueError:
        return None


class ExactSearchAdmin(ViewOnlyAdmin):
    """Search is an exact lookup on an indexed column (console.md §1 rule 4), never a table scan."""

    exact_uuid_field = None
    search_fields = ("pk",)  # only to render the box; get_search_results decides

    def get_search_results(self, request, queryset, search_term):
        if not search_term.strip():
            return queryset, False
        value = exact_uuid(search_term)
        if value is None or self.exact_uuid_field is None:
            return queryset.none(), False
        return queryset.filter(**{self.exact_uuid_field: value}), False


def confirm_action(modeladmin, request, queryset, *, action, title, question, button, perform):
    """Ask first (a confirmation page posting back to the changelist), then run `perform` per row."""
    if request.POST.get("confirmed") == "yes":
        for obj in queryset:
            perform(obj)
        return None
    context = {
        **modeladmin.admin_site.each_context(request),
        "title": title, "question": question, "button": button, "action": action,
        "queryset": queryset, "opts": modeladmin.model._meta,
        "action_checkbox_name": admin.helpers.ACTION_CHECKBOX_NAME,
    }
    return TemplateResponse(request, "admin/memoir/confirm_action.html", context)



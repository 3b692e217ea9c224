"""Console pages for governance (console.md §3): projects with their storage policy, credentials, erasures,
retention sweeps, the ledger and its seals, subjects, artifacts and projection kinds; Django's users and groups."""
from urllib.parse import urlencode

from django import forms
from django.contrib import admin, messages
from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.models import Group, User
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import transaction
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from console import selectors as console_selectors
from console.access import OPERATOR, hexdigest, principal_of
from console.site import ExactSearchAdmin, LedgeredAdmin, ViewOnlyAdmin, confirm_action, exact_uuid, site
from core.errors import DomainError
from governance import services
from governance.artifacts import configure_storage
from governance.models import (
    PROJECT_NAME_RE,
    AgentArtifact,
    AgentStoragePolicy,
    AuditEntry,
    AuditSeal,
    Credential,
    DataSubject,
    ErasureRequest,
    Project,
    ProjectionKind,
    RetentionSweep,
)


class ProjectNameFilter(admin.SimpleListFilter):
    """Filter on a plain-text project column (the ledger's) by the known project names."""

    title = "project"
    parameter_name = "project"

    def lookups(self, request, model_admin):
        return [(name, name) for name in Project.objects.order_by("name").values_list("name", flat=True)[:500]]

    def queryset(self, request, queryset):
        return queryset.filter(project=self.value()) if self.value() else queryset


# --- projects -------------------------------------------------------------------------------------

class ProjectForm(forms.ModelForm):
    name = forms.CharField(max_length=63, validators=[RegexValidator(
        PROJECT_NAME_RE, "A project name is a lowercase letter then up to 62 of a-z, 0-9 and _.")])
    label = forms.CharField(required=False, help_text="Display text; the name is used when left blank.")
    retention_days = forms.IntegerField(required=False, validators=[MinValueValidator(1), MaxValueValidator(36500)],
                                        help_text="1 to 36500 days; blank keeps turns indefinitely.")

    class Meta:
        model = Project
        fields = ("name", "label", "retention_days")

    def clean(self):
        data = super().clean()
        if not (data.get("label") or "").strip():
            data["label"] = data.get("name") or (self.instance.label if self.instance.pk else "")
        return data


class StoragePolicyForm(forms.ModelForm):
    max_object_bytes = forms.IntegerField(validators=[MinValueValidator(1), MaxValueValidator(524288)])
    max_bytes = forms.IntegerField(validators=[MinValueValidator(1), MaxValueValidator(1073741824)])
    max_objects = forms.IntegerField(validators=[MinValueValidator(1), MaxValueValidator(100000)])
    max_age_hours = forms.IntegerField(validators=[MinValueValidator(1), MaxValueValidator(8760)])

    class Meta:
        model = AgentStoragePolicy
        fields = ("max_object_bytes", "max_bytes", "max_objects", "max_age_hours")


class StoragePolicyInline(admin.StackedInline):
    model = AgentStoragePolicy
    form = StoragePolicyForm
    fields = ("max_object_bytes", "max_bytes", "max_objects", "max_age_hours", "used_bytes", "used_objects")
    readonly_fields = ("used_bytes", "used_objects")
    can_delete = False
    extra = 0
    max_num = 1
    verbose_name = "storage policy"
    verbose_name_plural = "storage policy"

    def has_add_permission(self, request, obj=None):
        return False  # the project's insert trigger creates the policy

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Project, site=site)
class ProjectAdmin(LedgeredAdmin):
    list_op = "project.list"
    list_display = ("name", "label", "retention", "suspended", "stored", "formed", "parked", "backlog",
                    "oldest_unformed_age")
    search_fields = ("name__startswith",)
    ordering = ("name",)
    form = ProjectForm
    actions = ("suspend", "resume")

    def get_queryset(self, request):
        return console_selectors.with_formation_figures(super().get_queryset(request))

    def get_fields(self, request, obj=None):
        if obj is None:
            return ("name", "label", "retention_days")
        return ("name", "label", "retention_days", "created_at", "suspended_at")

    def get_readonly_fields(self, request, obj=None):
        return ("name", "created_at", "suspended_at") if obj is not None else ()

    def get_inlines(self, request, obj):
        return [StoragePolicyInline] if obj is not None else []

    def has_delete_permission(self, request, obj=None):
        return False  # projects are never deleted (governance.md §5)

    @admin.display(description="retention")
    def retention(self, obj):
        return f"{obj.retention_days} days" if obj.retention_days else "indefinite"

    @admin.display(description="suspended", boolean=True)
    def suspended(self, obj):
        return obj.suspended_at is not None

    @admin.display(description="stored")
    def stored(self, obj):
        return obj.stored

    @admin.display(description="formed")
    def formed(self, obj):
        return obj.formed

    @admin.display(description="parked")
    def parked(self, obj):
        return obj.parked

    @admin.display(description="backlog")
    def backlog(self, obj):
        return obj.backlog

    @admin.display(description="oldest unformed age")
    def oldest_unformed_age(self, obj):
        return console_selectors.age(obj.oldest_unformed)

    def save_model(self, request, obj, form, change):
        data = form.cleaned_data
        if not change:
            created = services.create_project(name=data["name"], label=data["label"],
                                              retention_days=data.get("retention_days"),
                                              principal=principal_of(request), principal_kind=OPERATOR)
            obj._state.adding = False
            obj._state.db = created._state.db
            return
        if "label" in form.changed_data:
            services.set_project_label(name=obj.pk, label=data["label"])
        if "retention_days" in form.changed_data:
            services.set_project_retention(name=obj.pk, retention_days=data.get("retention_days"),
                                           principal=principal_of(request), principal_kind=OPERATOR)

    def save_related(self, request, form, formsets, change):
        for formset in formsets:
            self.save_formset(request, form, formset, change)

    def save_formset(self, request, form, formset, change):
        # The admin's change message reads these; the policy is never saved through the formset.
        formset.new_objects, formset.changed_objects, formset.deleted_objects = [], [], []
        if formset.model is not AgentStoragePolicy:
            return
        for policy_form in formset.forms:
            if not policy_form.has_changed():
                continue
            formset.changed_objects.append((policy_form.instance, policy_form.changed_data))
            limits = {k: policy_form.cleaned_data[k] for k in StoragePolicyForm.Meta.fields}
            try:
                with transaction.atomic():
                    configure_storage(project=form.instance.pk, principal=principal_of(request),
                                      principal_kind=OPERATOR, **limits)
            except DomainError as exc:
                messages.error(request, f"Storage limits were not changed: {exc.message or exc.code}")

    def _project_action(self, request, queryset, verb, service):
        def perform(project):
            service(name=project.pk, principal=principal_of(request), principal_kind=OPERATOR)
            done = {"suspend": "suspended", "resume": "resumed"}[verb]
            self.message_user(request, f"Project {project.pk}: {done}.", messages.SUCCESS)

        return confirm_action(self, request, queryset, action=verb, title=f"{verb.capitalize()} projects",
                              question=f"{verb.capitalize()} these projects?", button=f"Yes, {verb}",
                              perform=perform)

    @admin.action(description="Suspend selected projects", permissions=["change"])
    def suspend(self, request, queryset):
        return self._project_action(request, queryset, "suspend", services.suspend_project)

    @admin.action(description="Resume selected projects", permissions=["change"])
    def resume(self, request, queryset):
        return self._project_action(request, queryset, "resume", services.resume_project)


# --- credentials ----------------------------------------------------------------------------------

class RevokedFilter(admin.SimpleListFilter):
    title = "state"
    parameter_name = "state"

    def lookups(self, request, model_admin):
        return (("live", "live"), ("revoked", "revoked"))

    def queryset(self, request, queryset):
        if self.value() == "live":
            return queryset.filter(revoked_at__isnull=True)
        if self.value() == "revoked":
            return queryset.filter(revoked_at__isnull=False)
        return queryset


@admin.register(Credential, site=site)
class CredentialAdmin(LedgeredAdmin):
    list_op = "credential.list"
    list_display = ("name", "project", "access", "token_prefix", "created_at", "revoked_at", "last_used_at")
    list_filter = ("access", RevokedFilter)
    list_select_related = ("project",)
    search_fields = ("token_prefix__startswith",)
    search_help_text = "Token prefix (mem_…), exact start."
    ordering = ("-created_at",)
    fields = ("credential_id", "name", "project", "access", "token_prefix", "created_at", "revoked_at",
              "last_used_at")
    readonly_fields = fields
    actions = ("revoke",)

    def has_add_permission(self, request):
        return False  # credentials are issued on the "Issue credential" page, which shows the token once

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def has_revoke_permission(self, request):
        return request.user.has_perm("governance.revoke_credential")

    def changelist_view(self, request, extra_context=None):
        extra_context = {**(extra_context or {}),
                         "can_issue": request.user.has_perm("governance.issue_credential")}
        return super().changelist_view(request, extra_context)

    @admin.action(description="Revoke selected credentials", permissions=["revoke"])
    def revoke(self, request, queryset):
        def perform(credential):
            if credential.revoked_at is not None:
                self.message_user(request, f"{credential}: already revoked.", messages.WARNING)
                return
            services.revoke_credential(credential_id=credential.pk, principal=principal_of(request),
                                       principal_kind=OPERATOR)
            self.message_user(request, f"{credential}: revoked.", messages.SUCCESS)

        return confirm_action(self, request, queryset, action="revoke", title="Revoke credentials",
                              question="Revoke these credentials? Their tokens stop working at once; "
                                       "this cannot be undone.", button="Yes, revoke", perform=perform)


# --- compliance -----------------------------------------------------------------------------------

def _receipt_table(deleted, residual):
    """deleted and residual side by side; a residual above 0 (a survivor) is highlighted."""
    deleted, residual = deleted or {}, residual or {}
    rows = []
    for key in sorted(set(deleted) | set(residual)):
        flagged = bool(residual.get(key))
        rows.append(format_html(
            '<tr class="{}"{}><th scope="row">{}</th><td class="deleted">{}</td><td class="residual">{}</td></tr>',
            "residual-nonzero" if flagged else "",
            format_html(' style="{}"', "background:#ffd6d6;font-weight:bold;color:#ba2121") if flagged else "",
            key, deleted.get(key, "—"), residual.get(key, "—")))
    return format_html('<table class="erasure-receipt"><thead><tr><th>kind</th><th>deleted</th>'
                       "<th>residual</th></tr></thead><tbody>{}</tbody></table>", format_html_join("", "{}", ((r,) for r in rows)))


def receipt_is_clean(obj):
    return obj.completed_at is not None and all(v == 0 for v in (obj.residual or {}).values())


@admin.register(ErasureRequest, site=site)
class ErasureRequestAdmin(ViewOnlyAdmin):
    list_op = "erasure.list"
    detail_op = "console.read"
    list_display = ("request_id", "project", "selector_type", "requested_at", "completed_at", "is_clean")
    list_filter = ("project",)
    list_select_related = ("project",)
    ordering = ("-requested_at",)
    fields = ("request_id", "project", "selector_type", "selector_value", "reason", "principal",
              "principal_kind", "requested_at", "completed_at", "is_clean", "receipt")
    readonly_fields = fields

    def change_view(self, request, object_id, form_url="", extra_context=None):
        extra_context = {**(extra_context or {}), "subtitle": f"Erasure receipt {object_id}"}
        return super().change_view(request, object_id, form_url, extra_context)

    def changelist_view(self, request, extra_context=None):
        extra_context = {**(extra_context or {}),
                         "can_erase": request.user.has_perm("governance.run_erasure"),
                         "can_export": request.user.has_perm("governance.run_export")}
        return super().changelist_view(request, extra_context)

    @admin.display(description="selector")
    def selector_type(self, obj):
        selector = obj.selector or {}
        return "sources" if selector.get("source_observation_ids") else "subject"

    @admin.display(description="selected")
    def selector_value(self, obj):
        selector = obj.selector or {}
        ids = selector.get("source_observation_ids")
        if ids:
            return f"{len(ids)} source observation(s)"
        return selector.get("data_subject_id", "")

    @admin.display(description="clean")
    def is_clean(self, obj):
        if obj.completed_at is None:
            return "pending"
        return format_html('<span class="receipt-{}">{}</span>', "clean" if receipt_is_clean(obj) else "dirty",
                           "✓ clean" if receipt_is_clean(obj) else "✗ residual rows remain")

    @admin.display(description="deleted / residual")
    def receipt(self, obj):
        if obj.completed_at is None:
            return "not completed"
        return _receipt_table(obj.deleted, obj.residual)


@admin.register(RetentionSweep, site=site)
class RetentionSweepAdmin(ViewOnlyAdmin):
    list_display = ("sweep_id", "project", "swept_at", "observations", "deleted_total")
    list_filter = ("project",)
    list_select_related = ("project",)
    ordering = ("-swept_at",)

    @admin.display(description="rows deleted")
    def deleted_total(self, obj):
        return sum(v for v in (obj.deleted or {}).values() if isinstance(v, int))


@admin.register(AuditEntry, site=site)
class AuditEntryAdmin(ViewOnlyAdmin):
    list_display = ("entry_id", "occurred_at", "operation", "outcome", "principal_kind", "principal", "project",
                    "magnitude")
    list_filter = ("operation", "outcome", "principal_kind", ProjectNameFilter)
    date_hierarchy = "occurred_at"
    ordering = ("-entry_id",)

    def changelist_view(self, request, extra_context=None):
        extra_context = {**(extra_context or {}),
                         "can_activity": request.user.has_perm("governance.view_auditentry")}
        return super().changelist_view(request, extra_context)


@admin.register(AuditSeal, site=site)
class AuditSealAdmin(ViewOnlyAdmin):
    list_display = ("seal_id", "from_entry", "to_entry", "entry_count", "digest_hex", "sealed_at")
    fields = ("seal_id", "from_entry", "to_entry", "entry_count", "entries_digest_hex", "previous_digest_hex",
              "digest_hex", "sealed_at")
    readonly_fields = fields
    ordering = ("-seal_id",)

    def changelist_view(self, request, extra_context=None):
        extra_context = {**(extra_context or {}),
                         "can_seal": request.user.has_perm("governance.seal_audit"),
                         "can_verify": request.user.has_perm("governance.verify_audit")}
        return super().changelist_view(request, extra_context)

    @admin.display(description="digest")
    def digest_hex(self, obj):
        return format_html('<code class="digest">{}</code>', hexdigest(obj.digest))

    @admin.display(description="entries digest")
    def entries_digest_hex(self, obj):
        return format_html("<code>{}</code>", hexdigest(obj.entries_digest))

    @admin.display(description="previous digest")
    def previous_digest_hex(self, obj):
        return format_html("<code>{}</code>", hexdigest(obj.previous_digest))


@admin.register(DataSubject, site=site)
class DataSubjectAdmin(ExactSearchAdmin):
    list_op = detail_op = "console.read"
    list_display = ("subject_id", "project", "external_reference", "label", "created_at", "updated_at", "glance")
    list_filter = ("project",)
    list_select_related = ("project",)
    search_help_text = "Exact subject id or external reference."

    @admin.display(description="at a glance")
    def glance(self, obj):
        url = reverse(f"{self.admin_site.name}:console_subject") + "?" + urlencode(
            {"project": obj.project_id, "subject": str(obj.subject_id)})
        return format_html('<a href="{}">subject page</a>', url)

    def get_search_results(self, request, queryset, search_term):
        value = exact_uuid(search_term) if search_term.strip() else None
        if value is not None:
            return queryset.filter(subject_id=value), False
        if search_term:
            return queryset.filter(external_reference=search_term), False
        return queryset, False
    fields = ("subject_id", "project", "external_reference", "label", "version", "previous_version",
              "updated_by", "created_at", "updated_at", "inactive_after")
    readonly_fields = fields
    ordering = ("-created_at",)


@admin.register(AgentArtifact, site=site)
class AgentArtifactAdmin(ExactSearchAdmin):
    list_op = detail_op = "console.read"
    list_display = ("artifact_id", "project", "kind", "name", "bytes", "digest", "updated_at", "expires_at")
    list_filter = ("project", "kind")
    list_select_related = ("project",)
    exact_uuid_field = "artifact_id"
    search_help_text = "Exact artifact id."
    # Artifact bytes are never rendered: size and digest only (console.md §1 rule 5).
    fields = ("artifact_id", "project", "data_subject_id", "kind", "name", "bytes", "digest", "version",
              "previous_version", "source_observation", "authored_by", "created_at", "updated_at", "expires_at")
    readonly_fields = fields
    ordering = ("-updated_at",)

    @admin.display(description="digest")
    def digest(self, obj):
        return hexdigest(obj.last_digest)


@admin.register(ProjectionKind, site=site)
class ProjectionKindAdmin(ViewOnlyAdmin):
    list_display = ("kind", "projection_table", "id_column", "survives_sharing", "description")


# Console users and groups are managed by superusers on the same site.
site.register(User, UserAdmin)
site.register(Group, GroupAdmin)

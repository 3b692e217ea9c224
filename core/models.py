"""The tables every layer points at: the project (the tenancy root every row's `scope` names) and the audit
ledger with its seals, which `core.audit.record()` appends to for every layer (data-model.md §1, §5;
docs/decisions.md, "Tables at the bottom").

Governance keeps proxies of the three (`governance.Project`, `.AuditEntry`, `.AuditSeal`): they carry the
console's permissions and admin pages under their old names, so these models declare no permissions of their own.
"""
import hashlib

import pgtrigger
from django.db import models
from django.db.models import CheckConstraint, Q
from django.db.models.functions import Now

from core.audit import OPERATIONS, OUTCOMES, PRINCIPAL_KINDS
from core.closed_sets import choices
from core.dbfuncs import octets_exactly

PROJECT_NAME_RE = r"^[a-z][a-z0-9_]{0,62}$"


class _NamedAsInGovernance:
    """pgtrigger names a trigger and its function `pgtrigger_<name>_<hash of "app.Model:name">`. These tables
    were governance's, and their installed triggers carry that label's hash (a test drops one by its name), so
    they keep it: the database schema did not change when the models moved."""

    def get_pgid(self, model):
        uri = f"governance.{model._meta.object_name}:{self.name}"
        return f"pgtrigger_{self.name}_{hashlib.sha1(uri.encode()).hexdigest()[:5]}".lower()


class _Trigger(_NamedAsInGovernance, pgtrigger.Trigger):
    pass


class _Protect(_NamedAsInGovernance, pgtrigger.Protect):
    pass


class _ReadOnly(_NamedAsInGovernance, pgtrigger.ReadOnly):
    pass


def _no_truncate(table):
    return _Trigger(
        name=f"{table}_no_truncate",
        when=pgtrigger.Before,
        operation=pgtrigger.Truncate,
        level=pgtrigger.Statement,
        func=f"RAISE EXCEPTION '{table} is append-only'; RETURN NULL;",
    )


class Project(models.Model):
    name = models.CharField(max_length=63, primary_key=True)
    label = models.TextField()
    retention_days = models.IntegerField(null=True, blank=True)
    created_at = models.DateTimeField(db_default=Now())
    suspended_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "project"
        default_permissions = ()
        constraints = [
            CheckConstraint(condition=Q(name__regex=PROJECT_NAME_RE), name="project_name_chk"),
            CheckConstraint(condition=~Q(label=""), name="project_label_chk"),
            CheckConstraint(
                condition=Q(retention_days__isnull=True) | Q(retention_days__gte=1, retention_days__lte=36500),
                name="project_retention_chk",
            ),
        ]
        triggers = [
            _ReadOnly(name="project_identity", fields=["name", "created_at"]),
            _Protect(name="project_no_delete", operation=pgtrigger.Delete),
            # A project's artifact storage policy row (governance's table) is made with it. The function body is
            # PL/pgSQL, resolved when it runs: no table of a higher layer is needed to install it.
            _Trigger(
                name="project_storage_policy",
                when=pgtrigger.After,
                operation=pgtrigger.Insert,
                func="INSERT INTO agent_storage_policy (scope) VALUES (NEW.name) ON CONFLICT DO NOTHING; RETURN NULL;",
            ),
        ]

    def __str__(self):
        return self.name


class AuditEntry(models.Model):
    entry_id = models.BigAutoField(primary_key=True)
    operation = models.CharField(max_length=32, choices=choices(OPERATIONS))
    principal = models.TextField()
    principal_kind = models.CharField(max_length=16, choices=choices(PRINCIPAL_KINDS))
    project = models.TextField(default="", blank=True)
    magnitude = models.BigIntegerField(default=0)
    outcome = models.CharField(max_length=16, choices=choices(OUTCOMES))
    occurred_at = models.DateTimeField(db_default=Now())

    class Meta:
        db_table = "audit_entry"
        verbose_name_plural = "audit entries"
        default_permissions = ()
        constraints = [
            CheckConstraint(condition=Q(operation__in=OPERATIONS), name="audit_operation_chk"),
            CheckConstraint(condition=~Q(principal=""), name="audit_principal_chk"),
            CheckConstraint(condition=Q(principal_kind__in=PRINCIPAL_KINDS), name="audit_principal_kind_chk"),
            CheckConstraint(condition=Q(magnitude__gte=0), name="audit_magnitude_chk"),
            CheckConstraint(condition=Q(outcome__in=OUTCOMES), name="audit_outcome_chk"),
        ]
        indexes = [
            models.Index(fields=["occurred_at"], name="audit_entry_time_idx"),
            models.Index(fields=["project", "occurred_at"], name="audit_entry_project_idx"),
            models.Index(fields=["operation", "occurred_at"], name="audit_entry_op_idx"),
        ]
        triggers = [
            _Protect(name="audit_entry_append_only", operation=pgtrigger.Update | pgtrigger.Delete),
            _no_truncate("audit_entry"),
            # The database numbers and times every entry: a row naming its own id (one outside the sealed
            # ranges, or far ahead) or its own time is refused. A defaulted id is the sequence's latest value.
            _Trigger(
                name="audit_entry_assigned_by_database",
                when=pgtrigger.Before,
                operation=pgtrigger.Insert,
                func="IF NEW.entry_id IS DISTINCT FROM currval(pg_get_serial_sequence('public.audit_entry',"
                     " 'entry_id')) OR NEW.occurred_at IS DISTINCT FROM statement_timestamp() THEN"
                     " RAISE EXCEPTION 'audit_entry assigns its own entry_id and occurred_at'"
                     " USING ERRCODE = '42501'; END IF; RETURN NEW;",
            ),
        ]


class AuditSeal(models.Model):
    seal_id = models.BigAutoField(primary_key=True)
    from_entry = models.BigIntegerField()
    to_entry = models.BigIntegerField()
    entry_count = models.IntegerField()
    entries_digest = models.BinaryField()
    previous_digest = models.BinaryField()
    digest = models.BinaryField()
    sealed_at = models.DateTimeField(db_default=Now())

    class Meta:
        db_table = "audit_seal"
        default_permissions = ()
        constraints = [
            CheckConstraint(condition=Q(from_entry__lte=models.F("to_entry")), name="audit_seal_range_chk"),
            CheckConstraint(condition=Q(entry_count__gt=0), name="audit_seal_count_chk"),
            CheckConstraint(condition=octets_exactly("entries_digest", 32) & octets_exactly("previous_digest", 32)
                            & octets_exactly("digest", 32), name="audit_seal_digest_len_chk"),
        ]
        triggers = [
            _Protect(name="audit_seal_append_only", operation=pgtrigger.Update | pgtrigger.Delete),
            _no_truncate("audit_seal"),
        ]

"""Governance tables: credentials, the erasure registry and receipts, retention sweeps, subjects and artifacts
(data-model.md §1, §5–§8). The project and the audit ledger are core's tables (`core/models.py`); governance
keeps proxies of them that carry the console's permissions and pages (docs/decisions.md, "Tables at the bottom")."""
import uuid

import pgtrigger
from django.db import models
from django.db.models import CheckConstraint, Q, UniqueConstraint
from django.db.models.functions import Now

import core.models
from core.closed_sets import choices
from core.dbfuncs import char_length, octets_at_most, octets_between, octets_exactly
from core.models import PROJECT_NAME_RE  # noqa: F401 - re-exported: the console validates names with it

ACCESS_MODES = ("read_only", "read_write")
ARTIFACT_KINDS = ("state", "file")
IDENT_RE = r"^[a-z][a-z0-9_]*$"
PROJECT = "core.Project"


def _no_truncate(table):
    return pgtrigger.Trigger(
        name=f"{table}_no_truncate",
        when=pgtrigger.Before,
        operation=pgtrigger.Truncate,
        level=pgtrigger.Statement,
        func=f"RAISE EXCEPTION '{table} is append-only'; RETURN NULL;",
    )


# --- proxies of core's tables: the rights governance administers on them ------------------------------------
# Their app label keeps the console's URLs (/console/governance/project/), permission codenames
# (governance.issue_credential, governance.view_auditentry, ...) and the groups that hold them as they were.

class Project(core.models.Project):
    class Meta:
        proxy = True
        permissions = [
            ("issue_credential", "Can issue credentials"),
            ("revoke_credential", "Can revoke credentials"),
            ("run_erasure", "Can erase data subjects and sources"),
            ("run_export", "Can export a data subject"),
            ("seal_audit", "Can seal the audit ledger"),
            ("verify_audit", "Can verify the audit ledger"),
            ("view_refusal_summary", "Can view the refusal summary"),
        ]


class AuditEntry(core.models.AuditEntry):
    class Meta:
        proxy = True
        verbose_name_plural = "audit entries"


class AuditSeal(core.models.AuditSeal):
    class Meta:
        proxy = True


# --- governance's own tables ---------------------------------------------------------------------------------

class Credential(models.Model):
    credential_id = models.UUIDField(primary_key=True, default=uuid.uuid4)
    project = models.ForeignKey(PROJECT, models.PROTECT, db_column="scope", related_name="credentials")
    name = models.TextField()
    access = models.CharField(max_length=16, choices=choices(ACCESS_MODES), default="read_write")
    token_digest = models.BinaryField(unique=True)
    token_prefix = models.CharField(max_length=12)
    created_at = models.DateTimeField(db_default=Now())
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "credential"
        constraints = [
            CheckConstraint(condition=Q(access__in=ACCESS_MODES), name="credential_access_chk"),
            CheckConstraint(condition=~Q(name="") & Q(models.lookups.LessThanOrEqual(char_length("name"), 128)),
                            name="credential_name_chk"),
            CheckConstraint(condition=octets_exactly("token_digest", 32), name="credential_digest_len_chk"),
            CheckConstraint(condition=Q(token_prefix__regex=r"^mem_.{8}$"), name="credential_prefix_chk"),
        ]
        indexes = [
            models.Index(fields=["token_digest"], condition=Q(revoked_at__isnull=True),
                         name="credential_live_digest_idx"),
        ]
        triggers = [
            pgtrigger.ReadOnly(name="credential_identity", exclude=["revoked_at", "last_used_at"]),
            pgtrigger.Protect(
                name="credential_revocation_final",
                operation=pgtrigger.Update,
                condition=pgtrigger.Condition(
                    "OLD.revoked_at IS NOT NULL AND NEW.revoked_at IS DISTINCT FROM OLD.revoked_at"),
            ),
            pgtrigger.Protect(name="credential_no_delete", operation=pgtrigger.Delete),
        ]

    def __str__(self):
        return f"{self.name} ({self.token_prefix}…)"


class ProjectionKind(models.Model):
    kind = models.CharField(max_length=32, primary_key=True)
    projection_table = models.CharField(max_length=63)
    id_column = models.CharField(max_length=63)
    description = models.TextField(default="")
    survives_sharing = models.BooleanField(default=False)

    class Meta:
        db_table = "projection_kind"
        constraints = [
            CheckConstraint(condition=Q(projection_table__regex=IDENT_RE), name="projection_kind_table_chk"),
            CheckConstraint(condition=Q(id_column__regex=IDENT_RE), name="projection_kind_column_chk"),
        ]

    def __str__(self):
        return self.kind


REGISTRY_REFS = {
    "fact": "fact_ref",
    "entity": "entity_ref",
    "rejected_claim": "rejected_ref",
    "fact_history": "history_ref",
    "agent_artifact": "artifact_ref",
    "segment": "segment_ref",
    "feedback": "feedback_ref",
}


def _typed_ref(kind):
    return models.GeneratedField(
        expression=models.Case(
            models.When(projection_kind=kind, then=models.functions.Cast("projection_id", models.UUIDField())),
            default=None,
            output_field=models.UUIDField(),
        ),
        output_field=models.UUIDField(),
        db_persist=True,
    )


class ProjectionDependency(models.Model):
    """One row per (source observation, projection): what erasure walks."""

    id = models.BigAutoField(primary_key=True)
    project = models.ForeignKey(PROJECT, models.PROTECT, db_column="scope", related_name="+")
    source_observation = models.ForeignKey(
        "memory.Observation", models.DO_NOTHING, db_constraint=False, related_name="+")
    # A plain column with a database FK (added in SQL): the generated refs below read it.
    projection_kind = models.CharField(max_length=32, db_column="projection_kind")
    projection_id = models.TextField()
    data_subject_id = models.TextField(null=True)
    retention_until = models.DateTimeField(null=True)
    pipeline_version = models.TextField(default="v1")
    registered_at = models.DateTimeField(db_default=Now())
    fact_ref = _typed_ref("fact")
    entity_ref = _typed_ref("entity")
    rejected_ref = _typed_ref("rejected_claim")
    history_ref = _typed_ref("fact_history")
    artifact_ref = _typed_ref("agent_artifact")
    segment_ref = _typed_ref("segment")
    feedback_ref = _typed_ref("feedback")

    class Meta:
        db_table = "projection_dependency"
        constraints = [
            UniqueConstraint(fields=["source_observation", "projection_kind", "projection_id"],
                             name="projection_dependency_uniq"),
        ]
        indexes = [
            models.Index(fields=["project", "projection_kind", "projection_id"], name="projdep_kind_id_idx"),
            models.Index(fields=["project", "data_subject_id", "projection_kind"], name="projdep_subject_idx"),
        ] + [models.Index(fields=[ref], name=f"projdep_{ref}_idx") for ref in REGISTRY_REFS.values()]


class ErasureRequest(models.Model):
    request_id = models.UUIDField(primary_key=True, default=uuid.uuid4)
    project = models.ForeignKey(PROJECT, models.PROTECT, db_column="scope", related_name="+")
    selector = models.JSONField()
    reason = models.TextField(default="", blank=True)
    principal = models.TextField()
    principal_kind = models.TextField()
    requested_at = models.DateTimeField(db_default=Now())
    completed_at = models.DateTimeField(null=True)
    deleted = models.JSONField(null=True)
    residual = models.JSONField(null=True)

    class Meta:
        db_table = "erasure_request"
        constraints = [
            CheckConstraint(
                condition=Q(completed_at__isnull=True, deleted__isnull=True, residual__isnull=True)
                | Q(completed_at__isnull=False, deleted__isnull=False, residual__isnull=False),
                name="erasure_residual_with_completion_chk",
            ),
        ]
        triggers = [
            pgtrigger.Protect(name="erasure_request_no_delete", operation=pgtrigger.Delete),
            _no_truncate("erasure_request"),
            pgtrigger.Protect(name="erasure_request_final", operation=pgtrigger.Update,
                              condition=pgtrigger.Condition("OLD.completed_at IS NOT NULL")),
        ]


class RetentionSweep(models.Model):
    sweep_id = models.UUIDField(primary_key=True, default=uuid.uuid4)
    project = models.ForeignKey(PROJECT, models.PROTECT, db_column="scope", related_name="+")
    swept_at = models.DateTimeField(db_default=Now())
    observations = models.IntegerField()
    deleted = models.JSONField()

    class Meta:
        db_table = "retention_sweep"
        constraints = [CheckConstraint(condition=Q(observations__gte=0), name="retention_sweep_obs_chk")]
        triggers = [
            pgtrigger.Protect(name="retention_sweep_append_only", operation=pgtrigger.Update | pgtrigger.Delete),
            _no_truncate("retention_sweep"),
        ]


class DataSubject(models.Model):
    subject_id = models.UUIDField(primary_key=True, default=uuid.uuid4)
    project = models.ForeignKey(PROJECT, models.PROTECT, db_column="scope", related_name="+")
    external_reference = models.TextField(null=True)
    label = models.TextField(default="", blank=True)
    version = models.UUIDField(default=uuid.uuid4)
    previous_version = models.UUIDField(null=True)
    last_digest = models.BinaryField(null=True)
    updated_by = models.TextField()
    created_at = models.DateTimeField(db_default=Now())
    updated_at = models.DateTimeField(db_default=Now())
    inactive_after = models.DateTimeField(null=True)

    class Meta:
        db_table = "data_subject"
        constraints = [
            UniqueConstraint(fields=["project", "external_reference"], condition=Q(external_reference__isnull=False),
                             name="data_subject_reference_uniq"),
            CheckConstraint(condition=Q(external_reference__isnull=True)
                            | octets_between("external_reference", 1, 1024), name="data_subject_reference_chk"),
            CheckConstraint(condition=Q(octets_at_most("label", 256)), name="data_subject_label_chk"),
        ]
        triggers = [
            pgtrigger.ReadOnly(name="data_subject_identity",
                               fields=["project", "subject_id", "created_at", "inactive_after"]),
            pgtrigger.Trigger(
                name="data_subject_tombstones_keys",
                when=pgtrigger.Before,
                operation=pgtrigger.Delete,
                func="UPDATE subject_retry SET subject_id = NULL, request_digest = NULL"
                     " WHERE subject_id = OLD.subject_id; RETURN OLD;",
            ),
        ]


class SubjectRetry(models.Model):
    id = models.BigAutoField(primary_key=True)
    project = models.ForeignKey(PROJECT, models.PROTECT, db_column="scope", related_name="+")
    key_digest = models.BinaryField()
    request_digest = models.BinaryField(null=True)
    subject = models.ForeignKey(DataSubject, models.DO_NOTHING, null=True, related_name="+")

    class Meta:
        db_table = "subject_retry"
        constraints = [
            UniqueConstraint(fields=["project", "key_digest"], name="subject_retry_key_uniq"),
            CheckConstraint(condition=Q(subject__isnull=True, request_digest__isnull=True)
                            | Q(subject__isnull=False, request_digest__isnull=False),
                            name="subject_retry_payload_chk"),
        ]
        triggers = [pgtrigger.Protect(name="subject_retry_no_delete", operation=pgtrigger.Delete)]


class AgentStoragePolicy(models.Model):
    project = models.OneToOneField(PROJECT, models.PROTECT, db_column="scope", primary_key=True,
                                   related_name="storage_policy")
    max_object_bytes = models.IntegerField(db_default=262144, default=262144)
    max_bytes = models.BigIntegerField(db_default=16777216, default=16777216)
    max_objects = models.IntegerField(db_default=128, default=128)
    max_age_hours = models.IntegerField(db_default=720, default=720)
    used_bytes = models.BigIntegerField(db_default=0, default=0)
    used_objects = models.IntegerField(db_default=0, default=0)

    class Meta:
        db_table = "agent_storage_policy"
        verbose_name_plural = "agent storage policies"
        constraints = [
            CheckConstraint(condition=Q(max_object_bytes__gte=1, max_object_bytes__lte=524288),
                            name="storage_max_object_chk"),
            CheckConstraint(condition=Q(max_bytes__gte=1, max_bytes__lte=1073741824), name="storage_max_bytes_chk"),
            CheckConstraint(condition=Q(max_objects__gte=1, max_objects__lte=100000), name="storage_max_objects_chk"),
            CheckConstraint(condition=Q(max_age_hours__gte=1, max_age_hours__lte=8760), name="storage_max_age_chk"),
            CheckConstraint(condition=Q(used_bytes__gte=0, used_objects__gte=0), name="storage_used_chk"),
        ]


class AgentArtifact(models.Model):
    # (project, artifact_id) is the artifact's identity (agent_artifact_scope_uniq); the row id is internal only.
    id = models.BigAutoField(primary_key=True)
    artifact_id = models.UUIDField()
    project = models.ForeignKey(PROJECT, models.PROTECT, db_column="scope", related_name="+")
    data_subject_id = models.TextField()
    kind = models.CharField(max_length=8, choices=choices(ARTIFACT_KINDS))
    name = models.TextField(default="", blank=True)
    content = models.BinaryField()
    bytes = models.IntegerField()
    version = models.UUIDField(default=uuid.uuid4)
    previous_version = models.UUIDField(null=True)
    last_digest = models.BinaryField()
    source_observation = models.OneToOneField("memory.Observation", models.DO_NOTHING, db_constraint=False,
                                              related_name="+")
    authored_by = models.TextField()
    created_at = models.DateTimeField(db_default=Now())
    updated_at = models.DateTimeField(db_default=Now())
    expires_at = models.DateTimeField()

    class Meta:
        db_table = "agent_artifact"
        constraints = [
            CheckConstraint(condition=octets_between("data_subject_id", 1, 1024), name="artifact_subject_chk"),
            CheckConstraint(condition=Q(kind__in=ARTIFACT_KINDS), name="artifact_kind_chk"),
            CheckConstraint(condition=Q(octets_at_most("name", 256)), name="artifact_name_chk"),
            CheckConstraint(condition=Q(octets_at_most("content", 524288)), name="artifact_content_chk"),
            UniqueConstraint(fields=["project", "artifact_id"], name="agent_artifact_scope_uniq"),
        ]
        triggers = [
            pgtrigger.ReadOnly(name="artifact_identity", fields=[
                "artifact_id", "project", "data_subject_id", "kind", "source_observation", "created_at",
                "expires_at"]),
            pgtrigger.Trigger(
                name="artifact_tombstone",
                when=pgtrigger.Before,
                operation=pgtrigger.Delete,
                func="INSERT INTO artifact_tombstone (scope, artifact_id) VALUES (OLD.scope, OLD.artifact_id)"
                     " ON CONFLICT DO NOTHING; RETURN OLD;",
            ),
        ]


class ArtifactTombstone(models.Model):
    id = models.BigAutoField(primary_key=True)
    project = models.ForeignKey(PROJECT, models.PROTECT, db_column="scope", related_name="+")
    artifact_id = models.UUIDField()
    removed_at = models.DateTimeField(db_default=Now())

    class Meta:
        db_table = "artifact_tombstone"
        constraints = [UniqueConstraint(fields=["project", "artifact_id"], name="artifact_tombstone_uniq")]
        triggers = [pgtrigger.Protect(name="artifact_tombstone_no_delete", operation=pgtrigger.Delete)]

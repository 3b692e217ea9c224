"""Memory tables: the source log, the vocabulary, entities, bitemporal facts with their evidence and
history, refusals, curated claims, retractions, feedback and segments (data-model.md §2–§4)."""
import uuid

import pgtrigger
from django.contrib.postgres.constraints import ExclusionConstraint
from django.contrib.postgres.fields import ArrayField, DateTimeRangeField, RangeOperators
from django.contrib.postgres.indexes import GistIndex
from django.db import models
from django.db.models import CheckConstraint, F, Func, Q, UniqueConstraint, Value
from django.db.models.functions import Coalesce, Now

from core.closed_sets import (
    CARDINALITIES,
    IDENTITY_KINDS,
    OBJECT_KINDS,
    OBSERVATION_KINDS,
    REFUSAL_REASONS,
    RESOLUTION_VERSIONS,
    ROLES,
    SEMANTIC_TYPES,
    choices,
)
from core.dbfuncs import char_length, extractor_version_ok, octets_at_most, octets_between, octets_exactly

PROJECT = "core.Project"
TERM_NORMALISED = Q(term=Func(Func(F("term"), function="btrim"), function="lower")) & ~Q(term="")


class RealField(models.FloatField):
    """A float stored as PostgreSQL `real` (float32), as confidence is."""

    def db_type(self, connection):
        return "real"


def _scope(**options):
    return models.ForeignKey(PROJECT, models.PROTECT, db_column="scope", related_name="+", **options)


class Observation(models.Model):
    observation_id = models.UUIDField(primary_key=True, default=uuid.uuid4)
    project = _scope()
    log_offset = models.BigIntegerField()
    kind = models.CharField(max_length=16, choices=choices(OBSERVATION_KINDS))
    occurred_at = models.DateTimeField()
    ingested_at = models.DateTimeField(db_default=Now())
    source_role = models.CharField(max_length=16, choices=choices(ROLES))
    data_subject_id = models.TextField(null=True)
    retention_until = models.DateTimeField(null=True)
    formed_at = models.DateTimeField(null=True)
    formation_attempts = models.IntegerField(db_default=0, default=0)
    formation_failed_at = models.DateTimeField(null=True)
    formation_error = models.TextField(null=True)
    parked_at = models.DateTimeField(null=True)
    extractor_version = models.TextField(null=True)

    class Meta:
        db_table = "observation"
        permissions = [
            ("unpark_turn", "Can unpark a parked turn"),
            ("view_content", "Can view message content"),
        ]
        constraints = [
            UniqueConstraint(fields=["project", "log_offset"], name="observation_scope_offset_uniq"),
            UniqueConstraint(fields=["project", "observation_id"], name="observation_scope_id_uniq"),
            CheckConstraint(condition=Q(kind__in=OBSERVATION_KINDS), name="observation_kind_chk"),
            CheckConstraint(condition=Q(source_role__in=ROLES), name="observation_role_chk"),
            CheckConstraint(condition=Q(data_subject_id__isnull=True) | octets_at_most("data_subject_id", 1024),
                            name="observation_subject_chk"),
            CheckConstraint(condition=Q(formation_attempts__gte=0), name="observation_attempts_chk"),
            CheckConstraint(condition=Q(formation_error__isnull=True) | Q(
                models.lookups.LessThanOrEqual(char_length("formation_error"), 2000)),
                name="observation_error_len_chk"),
            CheckConstraint(condition=Q(parked_at__isnull=True) | Q(formation_attempts__gt=0),
                            name="observation_parked_chk"),
            CheckConstraint(condition=Q(parked_at__isnull=True) | Q(formed_at__isnull=True),
                            name="observation_parked_not_formed_chk"),
            CheckConstraint(condition=Q(extractor_version__isnull=True) | extractor_version_ok("extractor_version"),
                            name="observation_extractor_version_chk"),
        ]
        indexes = [
            models.Index(fields=["project", "data_subject_id"], condition=Q(data_subject_id__isnull=False),
                         name="observation_subject_idx"),
            models.Index(fields=["project", "log_offset"], condition=Q(formed_at__isnull=True, parked_at__isnull=True),
                         name="observation_backlog_idx"),
            models.Index(fields=["project", "log_offset"], condition=Q(parked_at__isnull=False),
                         name="observation_parked_idx"),
            models.Index(fields=["ingested_at"], condition=Q(kind="turn", formed_at__isnull=True,
                                                              parked_at__isnull=True),
                         name="observation_pending_age_idx"),
            models.Index(fields=["project", "retention_until", "log_offset"],
                         condition=Q(retention_until__isnull=False), name="observation_scope_expiry_idx"),
        ]
        triggers = [
            pgtrigger.ReadOnly(name="observation_identity", fields=[
                "observation_id", "project", "log_offset", "kind", "occurred_at", "ingested_at", "source_role",
                "data_subject_id"]),
            pgtrigger.Protect(name="observation_formed_once", operation=pgtrigger.Update, condition=pgtrigger.Condition(
                "OLD.formed_at IS NOT NULL AND NEW.formed_at IS DISTINCT FROM OLD.formed_at")),
            # A pin changes only as an extractor rebuild re-forms a formed turn: the project's running job must
            # target the new version (formation/rebuild.py). A trigger WHEN clause cannot hold a subquery.
            pgtrigger.Trigger(
                name="observation_pin_once", when=pgtrigger.Before, operation=pgtrigger.Update,
                condition=pgtrigger.Condition(
                    "OLD.extractor_version IS NOT NULL AND NEW.extractor_version IS DISTINCT FROM OLD.extractor_version"),
                func="IF NEW.kind = 'turn' AND OLD.formed_at IS NOT NULL AND EXISTS (SELECT 1 FROM formation_rebuild j"
                     " WHERE j.scope = NEW.scope AND j.state = 'running' AND j.target_version = NEW.extractor_version)"
                     " THEN RETURN NEW; END IF;"
                     " RAISE EXCEPTION 'an observation keeps its extractor pin' USING ERRCODE = '23514';",
            ),
            pgtrigger.Protect(name="observation_artifact_source", operation=pgtrigger.Insert | pgtrigger.Update,
                              condition=pgtrigger.Condition(
                                  "NEW.kind = 'artifact' AND (NEW.formed_at IS NULL OR NEW.retention_until IS NULL)")),
            pgtrigger.Trigger(
                name="observation_retry_forgets_payload",
                when=pgtrigger.Before,
                operation=pgtrigger.Delete,
                func="UPDATE observation_retry SET observation_id = NULL, request_digest = NULL"
                     " WHERE observation_id = OLD.observation_id; RETURN OLD;",
            ),
            pgtrigger.Trigger(
                name="observation_registered_subject",
                when=pgtrigger.Before,
                operation=pgtrigger.Insert,
                func="IF NEW.data_subject_id IS NOT NULL THEN PERFORM 1 FROM data_subject"
                     " WHERE scope = NEW.scope AND subject_id::text = NEW.data_subject_id FOR KEY SHARE; END IF;"
                     " RETURN NEW;",
            ),
        ]

    def __str__(self):
        return f"{self.project_id}#{self.log_offset}"


class ParkedTurn(Observation):
    """The console's view of parked turns (console.md §3.3)."""

    class Meta:
        proxy = True
        verbose_name = "parked turn"


class TurnMessage(models.Model):
    id = models.BigAutoField(primary_key=True)
    observation = models.ForeignKey(Observation, models.DO_NOTHING, db_constraint=False, related_name="messages")
    ordinal = models.IntegerField()
    role = models.CharField(max_length=16, choices=choices(ROLES))
    content = models.TextField()
    group_ordinal = models.IntegerField()
    occurred_at = models.DateTimeField()
    chunk_id = models.UUIDField(unique=True, db_default=Func(function="gen_random_uuid"), default=uuid.uuid4)

    class Meta:
        db_table = "turn_message"
        constraints = [
            UniqueConstraint(fields=["observation", "ordinal"], name="turn_message_ordinal_uniq"),
            CheckConstraint(condition=Q(ordinal__gte=0), name="turn_message_ordinal_chk"),
            CheckConstraint(condition=Q(group_ordinal__gte=0), name="turn_message_group_chk"),
            CheckConstraint(condition=Q(role__in=ROLES), name="turn_message_role_chk"),
            CheckConstraint(condition=octets_at_most("content", 65536), name="turn_message_content_chk"),
        ]
        indexes = [
            models.Index(fields=["observation", "ordinal"], include=["group_ordinal", "role"],
                         name="turn_message_obs_idx"),
        ]
        triggers = [pgtrigger.Protect(name="turn_message_immutable", operation=pgtrigger.Update)]


class Watermark(models.Model):
    project = models.OneToOneField(PROJECT, models.PROTECT, db_column="scope", primary_key=True, related_name="+")
    log_offset = models.BigIntegerField()
    watermark_at = models.DateTimeField()
    updated_at = models.DateTimeField()
    formed_offset = models.BigIntegerField(null=True)

    class Meta:
        db_table = "watermark"
        constraints = [
            CheckConstraint(condition=Q(formed_offset__isnull=True) | Q(formed_offset__lte=F("log_offset")),
                            name="watermark_formed_chk"),
        ]
        triggers = [pgtrigger.Protect(name="watermark_no_delete", operation=pgtrigger.Delete)]


class ObservationRetry(models.Model):
    id = models.BigAutoField(primary_key=True)
    project = _scope()
    key_digest = models.BinaryField()
    request_digest = models.BinaryField(null=True)
    observation = models.ForeignKey(Observation, models.DO_NOTHING, null=True, related_name="+")

    class Meta:
        db_table = "observation_retry"
        constraints = [
            UniqueConstraint(fields=["project", "key_digest"], name="observation_retry_key_uniq"),
            CheckConstraint(condition=octets_exactly("key_digest", 32), name="observation_retry_key_len_chk"),
            CheckConstraint(condition=Q(request_digest__isnull=True) | octets_exactly("request_digest", 32),
                            name="observation_retry_digest_len_chk"),
            CheckConstraint(condition=Q(observation__isnull=True, request_digest__isnull=True)
                            | Q(observation__isnull=False, request_digest__isnull=False),
                            name="observation_retry_payload_chk"),
        ]
        triggers = [pgtrigger.Protect(name="observation_retry_no_delete", operation=pgtrigger.Delete)]


class IngestionBudget(models.Model):
    singleton = models.BooleanField(primary_key=True, default=True)
    max_pending = models.IntegerField(default=4096)
    max_pending_per_project = models.IntegerField(default=512)
    pending = models.IntegerField(default=0)

    class Meta:
        db_table = "ingestion_budget"
        constraints = [
            CheckConstraint(condition=Q(singleton=True), name="ingestion_budget_singleton_chk"),
            CheckConstraint(condition=Q(max_pending__gte=1, max_pending__lte=1_000_000),
                            name="ingestion_budget_max_chk"),
            CheckConstraint(condition=Q(max_pending_per_project__gte=1)
                            & Q(max_pending_per_project__lte=F("max_pending")),
                            name="ingestion_budget_project_max_chk"),
            CheckConstraint(condition=Q(pending__gte=0), name="ingestion_budget_pending_chk"),
        ]


class IngestionProjectUsage(models.Model):
    project = models.OneToOneField(PROJECT, models.DO_NOTHING, db_column="scope", primary_key=True,
                                   related_name="+")
    pending = models.IntegerField()

    class Meta:
        db_table = "ingestion_project_usage"
        constraints = [CheckConstraint(condition=Q(pending__gte=0), name="ingestion_usage_pending_chk")]


class IngestionReservation(models.Model):
    observation = models.OneToOneField(Observation, models.DO_NOTHING, db_constraint=False, primary_key=True,
                                       related_name="+")
    project = _scope()

    class Meta:
        db_table = "ingestion_reservation"


class Predicate(models.Model):
    predicate = models.CharField(max_length=64, primary_key=True)
    semantic_type = models.CharField(max_length=16, choices=choices(SEMANTIC_TYPES))
    cardinality = models.CharField(max_length=8, choices=choices(CARDINALITIES))
    object_kind = models.CharField(max_length=16, choices=choices(OBJECT_KINDS))
    description = models.TextField()
    event = models.BooleanField(default=False)

    class Meta:
        db_table = "predicate"
        ordering = ["predicate"]
        constraints = [
            CheckConstraint(condition=Q(predicate__regex=r"^[a-z][a-z_]*[a-z]$"), name="predicate_name_chk"),
            CheckConstraint(condition=Q(semantic_type__in=SEMANTIC_TYPES), name="predicate_semantic_type_chk"),
            CheckConstraint(condition=Q(cardinality__in=CARDINALITIES), name="predicate_cardinality_chk"),
            CheckConstraint(condition=Q(object_kind__in=OBJECT_KINDS), name="predicate_object_kind_chk"),
            UniqueConstraint(fields=["predicate", "cardinality"], name="predicate_cardinality_uniq"),
        ]

    def __str__(self):
        return self.predicate


class UnresolvableTerm(models.Model):
    id = models.BigAutoField(primary_key=True)
    lang = models.CharField(max_length=8, default="en")
    term = models.TextField()
    reason = models.TextField()

    class Meta:
        db_table = "unresolvable_term"
        constraints = [
            UniqueConstraint(fields=["lang", "term"], name="unresolvable_term_uniq"),
            CheckConstraint(condition=TERM_NORMALISED, name="unresolvable_term_normalised_chk"),
        ]

    def __str__(self):
        return self.term


class SpeakerTerm(models.Model):
    term = models.TextField(primary_key=True)

    class Meta:
        db_table = "speaker_term"
        constraints = [CheckConstraint(condition=TERM_NORMALISED, name="speaker_term_normalised_chk")]

    def __str__(self):
        return self.term


class Entity(models.Model):
    entity_id = models.UUIDField(primary_key=True, default=uuid.uuid4)
    project = _scope()
    canonical_name = models.TextField()
    normalized_name = models.TextField()
    entity_type = models.CharField(max_length=16, choices=choices(OBJECT_KINDS), default="thing")
    aliases = ArrayField(models.TextField(), default=list)
    resolution_version = models.CharField(max_length=32, choices=choices(RESOLUTION_VERSIONS))
    identity_kind = models.CharField(max_length=16, choices=choices(IDENTITY_KINDS))
    speaker_subject_id = models.TextField(null=True)
    first_seen_at = models.DateTimeField(db_default=Now())

    class Meta:
        db_table = "entity"
        verbose_name_plural = "entities"
        constraints = [
            UniqueConstraint(fields=["project", "entity_id"], name="entity_scope_id_uniq"),
            CheckConstraint(condition=octets_between("canonical_name", 1, 4096), name="entity_canonical_name_chk"),
            CheckConstraint(condition=Q(entity_type__in=OBJECT_KINDS), name="entity_type_chk"),
            CheckConstraint(condition=Q(aliases__len__lte=64), name="entity_alias_limit_chk"),
            CheckConstraint(condition=Q(resolution_version__in=RESOLUTION_VERSIONS), name="entity_resolution_chk"),
            CheckConstraint(
                condition=Q(identity_kind="named", speaker_subject_id__isnull=True)
                | (Q(identity_kind="speaker", speaker_subject_id__isnull=False, canonical_name="speaker",
                     normalized_name="speaker", entity_type="person", aliases=[]) & ~Q(speaker_subject_id="")),
                name="entity_identity_kind_chk",
            ),
            UniqueConstraint(fields=["project", "normalized_name"], condition=Q(identity_kind="named"),
                             name="entity_named_identity_uniq"),
            UniqueConstraint(fields=["project", "speaker_subject_id"], condition=Q(identity_kind="speaker"),
                             name="entity_speaker_identity_uniq"),
        ]
        triggers = [
            pgtrigger.ReadOnly(name="entity_identity", fields=[
                "entity_id", "project", "normalized_name", "identity_kind", "speaker_subject_id", "entity_type",
                "first_seen_at"]),
        ]

    def __str__(self):
        return self.canonical_name


class EntityNameReceipt(models.Model):
    id = models.BigAutoField(primary_key=True)
    project = _scope()
    source_observation = models.ForeignKey(Observation, models.DO_NOTHING, db_constraint=False, related_name="+")
    entity = models.ForeignKey(Entity, models.DO_NOTHING, db_constraint=False, related_name="name_receipts")
    name = models.TextField()
    name_hash = models.BinaryField()
    normalized_name = models.TextField()

    class Meta:
        db_table = "entity_name_receipt"
        constraints = [
            UniqueConstraint(fields=["project", "source_observation", "entity", "name_hash"],
                             name="entity_name_receipt_uniq"),
            CheckConstraint(condition=octets_between("name", 1, 4096), name="entity_name_receipt_name_chk"),
            CheckConstraint(condition=octets_exactly("name_hash", 32), name="entity_name_receipt_hash_chk"),
        ]
        indexes = [models.Index(fields=["entity"], name="entity_name_receipt_entity_idx")]
        triggers = [
            pgtrigger.Trigger(
                name="entity_name_receipt_matches",
                when=pgtrigger.Before,
                operation=pgtrigger.Insert,
                func="IF NOT EXISTS (SELECT 1 FROM entity e WHERE e.entity_id = NEW.entity_id"
                     " AND e.scope = NEW.scope AND e.identity_kind = 'named'"
                     " AND e.normalized_name = NEW.normalized_name) THEN"
                     " RAISE EXCEPTION 'name receipt does not match a live named entity'"
                     " USING ERRCODE = '23514'; END IF; RETURN NEW;",
            ),
        ]


class Fact(models.Model):
    fact_id = models.UUIDField(primary_key=True)
    # Every fact index leads with scope or an entity already; a scope-only index would only slow inserts.
    project = _scope(db_index=False)
    subject_entity = models.ForeignKey(Entity, models.DO_NOTHING, db_constraint=False, null=True,
                                       related_name="facts_as_subject")
    object_entity = models.ForeignKey(Entity, models.DO_NOTHING, db_constraint=False, null=True,
                                      related_name="facts_as_object")
    predicate = models.ForeignKey(Predicate, models.PROTECT, db_column="predicate", related_name="+")
    cardinality = models.CharField(max_length=8, choices=choices(CARDINALITIES))
    statement = models.TextField()
    valid = DateTimeRangeField()
    known = DateTimeRangeField()
    confidence = RealField(default=0)
    source_role = models.CharField(max_length=16, choices=choices(ROLES))
    data_subject_id = models.TextField(null=True)
    recorded_at = models.DateTimeField()
    retention_until = models.DateTimeField(null=True)
    superseded_by = models.ForeignKey("self", models.DO_NOTHING, db_constraint=False, null=True, related_name="+",
                                      db_index=False)
    supersession_source = models.ForeignKey(Observation, models.DO_NOTHING, db_constraint=False, null=True,
                                            related_name="+", db_index=False)
    version = models.UUIDField(db_default=Func(function="gen_random_uuid"), default=uuid.uuid4)

    class Meta:
        db_table = "fact"
        constraints = [
            UniqueConstraint(fields=["project", "fact_id"], name="fact_scope_id_uniq"),
            CheckConstraint(condition=Q(valid__isempty=False), name="fact_valid_not_empty_chk"),
            CheckConstraint(condition=Q(known__isempty=False), name="fact_known_not_empty_chk"),
            CheckConstraint(condition=Q(source_role__in=ROLES), name="fact_role_chk"),
            CheckConstraint(condition=Q(cardinality__in=CARDINALITIES), name="fact_cardinality_chk"),
            ExclusionConstraint(
                name="fact_single_cardinality_excl",
                expressions=[
                    ("project", RangeOperators.EQUAL),
                    ("subject_entity", RangeOperators.EQUAL),
                    ("predicate", RangeOperators.EQUAL),
                    # One slot per data subject: one person's words never close or block another's fact
                    # about a shared entity (turns without a subject share the '' slot).
                    (Coalesce("data_subject_id", Value("")), RangeOperators.EQUAL),
                    ("valid", RangeOperators.OVERLAPS),
                    ("known", RangeOperators.OVERLAPS),
                ],
                condition=Q(cardinality="one", subject_entity__isnull=False),
                index_type="gist",
            ),
        ]
        indexes = [
            # The entity leads: with one busy scope leading, a probe by entity (the foreign-key checks of an
            # erasure's commit) walked much of the tree.
            GistIndex(fields=["subject_entity", "project", "valid"], name="fact_subject_idx"),
            GistIndex(fields=["object_entity", "project", "valid"], name="fact_object_idx"),
            GistIndex(fields=["project", "valid", "known"], name="fact_bitemporal_idx"),
            models.Index(fields=["project", "subject_entity", "predicate"], condition=Q(valid__upper_inf=True),
                         name="fact_reconcile_idx"),
            models.Index(fields=["subject_entity", "-recorded_at", "fact_id"],
                         condition=Q(valid__upper_inf=True, known__upper_inf=True), name="fact_subject_walk_idx"),
            models.Index(fields=["object_entity", "-recorded_at", "fact_id"],
                         condition=Q(valid__upper_inf=True, known__upper_inf=True), name="fact_object_walk_idx"),
            models.Index(fields=["project", "subject_entity"], condition=Q(source_role="user"),
                         name="fact_principal_idx"),
            models.Index(fields=["project", "retention_until"], condition=Q(retention_until__isnull=False),
                         name="fact_retention_idx"),
            # The btree path for a single-valued slot (supersession, knowledge time).
            models.Index(fields=["project", "subject_entity", "predicate"], name="fact_slot_idx"),
            models.Index(fields=["superseded_by"], name="fact_superseded_by_idx"),
            models.Index(fields=["supersession_source"], name="fact_supersession_source_idx"),
            # Named speakers: a project-wide recall finds the speaker a given name belongs to (memory.recall).
            models.Index(fields=["object_entity"], condition=Q(predicate="has_name", valid__upper_inf=True,
                                                               known__upper_inf=True), name="fact_has_name_idx"),
        ]
        triggers = [
            pgtrigger.Trigger(name="fact_record_version", when=pgtrigger.Before, operation=pgtrigger.Update,
                              func="NEW.version := gen_random_uuid(); RETURN NEW;"),
            pgtrigger.ReadOnly(name="fact_identity", exclude=[
                "valid", "known", "superseded_by", "supersession_source", "version", "retention_until",
                "cardinality"]),
        ]

    def __str__(self):
        return self.statement[:80]


class FactEvidence(models.Model):
    id = models.BigAutoField(primary_key=True)
    project = _scope()
    fact = models.ForeignKey(Fact, models.DO_NOTHING, db_constraint=False, related_name="evidence")
    source_observation = models.ForeignKey(Observation, models.DO_NOTHING, db_constraint=False, related_name="+")
    source_ordinal = models.IntegerField()
    quote = models.TextField()
    byte_start = models.IntegerField()
    byte_end = models.IntegerField()
    extractor_version = models.TextField()
    authored_by = models.TextField(null=True)

    class Meta:
        db_table = "fact_evidence"
        verbose_name_plural = "fact evidence"
        constraints = [
            UniqueConstraint(fields=["fact", "source_observation", "source_ordinal", "byte_start"],
                             name="fact_evidence_uniq"),
            CheckConstraint(condition=Q(source_ordinal__gte=0), name="fact_evidence_ordinal_chk"),
            CheckConstraint(condition=Q(byte_start__gte=0), name="fact_evidence_start_chk"),
            CheckConstraint(condition=Q(byte_end__gt=F("byte_start")), name="fact_evidence_span_chk"),
            CheckConstraint(condition=extractor_version_ok("extractor_version"), name="fact_evidence_extractor_chk"),
        ]
        indexes = [
            models.Index(fields=["source_observation", "source_ordinal"], name="fact_evidence_source_idx"),
            models.Index(fields=["fact", "source_observation", "source_ordinal", "byte_start"],
                         name="fact_evidence_page_idx"),
        ]
        triggers = [
            pgtrigger.Protect(name="fact_evidence_immutable", operation=pgtrigger.Update),
            pgtrigger.Trigger(
                name="fact_evidence_span_matches",
                when=pgtrigger.Before,
                operation=pgtrigger.Insert,
                func="IF NOT EXISTS (SELECT 1 FROM turn_message m WHERE m.observation_id = NEW.source_observation_id"
                     " AND m.ordinal = NEW.source_ordinal AND substring(convert_to(m.content, 'UTF8')"
                     " FROM NEW.byte_start + 1 FOR NEW.byte_end - NEW.byte_start) = convert_to(NEW.quote, 'UTF8'))"
                     " THEN RAISE EXCEPTION 'evidence span does not match its message' USING ERRCODE = '23514';"
                     " END IF; RETURN NEW;",
            ),
        ]


class FactHistory(models.Model):
    history_id = models.UUIDField(primary_key=True, default=uuid.uuid4)
    project = _scope()
    fact = models.ForeignKey(Fact, models.DO_NOTHING, db_constraint=False, related_name="history")
    valid = DateTimeRangeField()
    known = DateTimeRangeField()
    source_observation = models.ForeignKey(Observation, models.DO_NOTHING, db_constraint=False, related_name="+")

    class Meta:
        db_table = "fact_history"
        verbose_name_plural = "fact history"
        constraints = [
            CheckConstraint(condition=Q(valid__isempty=False), name="fact_history_valid_chk"),
            CheckConstraint(condition=Q(known__isempty=False) & Q(known__upper_inf=False),
                            name="fact_history_known_chk"),
            ExclusionConstraint(name="fact_history_known_excl", index_type="gist",
                                expressions=[("fact", RangeOperators.EQUAL), ("known", RangeOperators.OVERLAPS)]),
        ]
        indexes = [
            models.Index(F("project"), F("fact"), Func(F("known"), function="upper").desc(), F("history_id").desc(),
                         name="fact_history_page_idx"),
            models.Index(fields=["source_observation"], name="fact_history_source_idx"),
        ]
        triggers = [pgtrigger.Protect(name="fact_history_immutable", operation=pgtrigger.Update)]


class RejectedClaim(models.Model):
    rejected_claim_id = models.UUIDField(primary_key=True)
    project = _scope()
    source_observation = models.ForeignKey(Observation, models.DO_NOTHING, db_constraint=False, related_name="+")
    source_ordinal = models.IntegerField()
    predicate = models.TextField()
    subject = models.TextField(default="")
    object = models.TextField(default="")
    statement = models.TextField()
    quote = models.TextField()
    reason = models.CharField(max_length=32, choices=choices(REFUSAL_REASONS))
    extractor_version = models.TextField()
    data_subject_id = models.TextField(null=True)
    recorded_at = models.DateTimeField(db_default=Now())

    class Meta:
        db_table = "rejected_claim"
        constraints = [
            CheckConstraint(condition=Q(reason__in=REFUSAL_REASONS), name="rejected_claim_reason_chk"),
            CheckConstraint(condition=Q(source_ordinal__gte=0), name="rejected_claim_ordinal_chk"),
            CheckConstraint(condition=extractor_version_ok("extractor_version"),
                            name="rejected_claim_extractor_chk"),
        ]
        indexes = [
            models.Index(fields=["project", "reason", "predicate"], name="rejected_claim_reason_idx"),
            models.Index(fields=["source_observation", "source_ordinal"], name="rejected_claim_source_idx"),
        ]
        triggers = [pgtrigger.Protect(name="rejected_claim_immutable", operation=pgtrigger.Update)]


class CuratedClaim(models.Model):
    source_observation = models.OneToOneField(Observation, models.DO_NOTHING, db_constraint=False, primary_key=True,
                                              related_name="+")
    project = _scope()
    fact_id = models.UUIDField()
    principal_id = models.TextField()
    claim = models.JSONField()

    class Meta:
        db_table = "curated_claim"
        constraints = [
            UniqueConstraint(fields=["project", "fact_id"], name="curated_claim_fact_uniq"),
            CheckConstraint(condition=Q(claim__has_keys=["subject", "predicate", "object", "statement"]),
                            name="curated_claim_object_chk"),
        ]
        triggers = [pgtrigger.Protect(name="curated_claim_immutable", operation=pgtrigger.Update)]


class RecordRetraction(models.Model):
    id = models.BigAutoField(primary_key=True)
    project = _scope()
    target_fact_id = models.UUIDField()
    source_observation = models.ForeignKey(Observation, models.DO_NOTHING, db_constraint=False, related_name="+")
    source_ordinal = models.IntegerField()
    claim_signature = models.BinaryField()
    operation_id = models.UUIDField()
    target_version = models.UUIDField()
    principal_id = models.TextField()
    retracted_at = models.DateTimeField()
    replacement_observation = models.ForeignKey(Observation, models.DO_NOTHING, db_constraint=False, null=True,
                                                related_name="+")
    replacement_fact_id = models.UUIDField(null=True)

    class Meta:
        db_table = "record_retraction"
        constraints = [
            UniqueConstraint(fields=["project", "target_fact_id", "source_observation", "source_ordinal"],
                             name="record_retraction_uniq"),
            CheckConstraint(condition=octets_exactly("claim_signature", 32), name="record_retraction_sig_chk"),
            CheckConstraint(condition=Q(replacement_observation__isnull=True, replacement_fact_id__isnull=True)
                            | Q(replacement_observation__isnull=False, replacement_fact_id__isnull=False),
                            name="record_retraction_replacement_chk"),
        ]
        indexes = [
            models.Index(fields=["project", "source_observation", "source_ordinal", "claim_signature"],
                         name="record_retraction_guard_idx"),
            models.Index(fields=["target_fact_id"], name="record_retraction_target_idx"),
        ]
        triggers = [
            pgtrigger.Trigger(
                name="record_retraction_replacement_cleared", when=pgtrigger.Before, operation=pgtrigger.Update,
                func="IF NEW.replacement_observation_id IS NULL THEN NEW.replacement_fact_id := NULL; END IF;"
                     " RETURN NEW;"),
            pgtrigger.ReadOnly(name="record_retraction_identity",
                               exclude=["replacement_observation", "replacement_fact_id"]),
        ]


class MemoryFeedback(models.Model):
    feedback_id = models.UUIDField(primary_key=True, default=uuid.uuid4)
    project = _scope()
    target_fact = models.ForeignKey(Fact, models.DO_NOTHING, db_constraint=False, related_name="feedback")
    note = models.TextField()
    proposed_object = models.TextField(null=True)
    recorded_by = models.TextField()
    recorded_at = models.DateTimeField(db_default=Now())
    promoted_by = models.TextField(null=True)
    promoted_at = models.DateTimeField(null=True)
    promotion_fact_id = models.UUIDField(null=True)

    class Meta:
        db_table = "memory_feedback"
        verbose_name_plural = "memory feedback"
        constraints = [
            CheckConstraint(condition=octets_between("note", 1, 16384), name="memory_feedback_note_chk"),
            CheckConstraint(condition=Q(proposed_object__isnull=True) | octets_between("proposed_object", 1, 1024),
                            name="memory_feedback_object_chk"),
            CheckConstraint(condition=Q(promoted_by__isnull=True, promoted_at__isnull=True)
                            | Q(promoted_by__isnull=False, promoted_at__isnull=False),
                            name="memory_feedback_promotion_chk"),
            CheckConstraint(condition=Q(promotion_fact_id__isnull=True) | Q(promoted_at__isnull=False),
                            name="memory_feedback_promotion_fact_chk"),
        ]
        indexes = [
            models.Index(F("project"), F("recorded_at").desc(), F("feedback_id").desc(),
                         condition=Q(promoted_at__isnull=True), name="memory_feedback_open_idx"),
            models.Index(F("target_fact"), F("recorded_at").desc(), F("feedback_id").desc(),
                         name="memory_feedback_target_idx"),
        ]
        triggers = [
            pgtrigger.ReadOnly(name="memory_feedback_identity",
                               exclude=["promoted_by", "promoted_at", "promotion_fact_id"]),
            pgtrigger.Protect(name="memory_feedback_promotion_once", operation=pgtrigger.Update,
                              condition=pgtrigger.Condition("OLD.promoted_at IS NOT NULL")),
        ]


class Segment(models.Model):
    segment_id = models.UUIDField(primary_key=True, default=uuid.uuid4)
    project = _scope()
    data_subject_id = models.TextField()
    level = models.IntegerField()
    from_offset = models.BigIntegerField()
    to_offset = models.BigIntegerField()
    covered = models.IntegerField()
    summary = models.TextField()
    written_by = models.CharField(max_length=128)
    created_at = models.DateTimeField(db_default=Now())

    class Meta:
        db_table = "segment"
        constraints = [
            UniqueConstraint(fields=["project", "data_subject_id", "level", "from_offset"], name="segment_uniq"),
            CheckConstraint(condition=Q(level__gte=1, level__lte=6), name="segment_level_chk"),
            CheckConstraint(condition=Q(from_offset__lte=F("to_offset")), name="segment_range_chk"),
            CheckConstraint(condition=Q(covered__gte=1), name="segment_covered_chk"),
            CheckConstraint(condition=Q(summary__regex=r"\S"), name="segment_summary_chk"),
        ]
        triggers = [pgtrigger.Protect(name="segment_immutable", operation=pgtrigger.Update)]


REBUILD_STATES = ("running", "completed", "cancelled")


class RebuildJob(models.Model):
    """One extractor rebuild of a project (formation/rebuild.py): offsets and counts only, never content."""

    job_id = models.UUIDField(primary_key=True, default=uuid.uuid4)
    project = _scope()
    target_version = models.TextField()
    state = models.CharField(max_length=16, choices=choices(REBUILD_STATES), default="running")
    clean_up = models.BooleanField(default=True)
    reinterpreting_through = models.BigIntegerField()
    # The highest offset the job has finished (every eligible source at or below it carries the new reading).
    reinterpreted_through = models.BigIntegerField(null=True)
    sources_acknowledged = models.BigIntegerField(default=0)
    sources_skipped = models.BigIntegerField(default=0)
    facts_gained = models.BigIntegerField(default=0)
    facts_lost = models.BigIntegerField(default=0)
    entities_purged = models.BigIntegerField(default=0)
    facts_purged = models.BigIntegerField(default=0)
    source_attempts = models.IntegerField(default=0)  # failed proposer attempts at the next source
    lease_owner = models.UUIDField(null=True)
    lease_until = models.DateTimeField(null=True)
    started_by = models.TextField()
    started_at = models.DateTimeField(db_default=Now())
    finished_at = models.DateTimeField(null=True)

    class Meta:
        db_table = "formation_rebuild"
        permissions = [("run_rebuild", "Can start and cancel extractor rebuilds")]
        constraints = [
            # One job per project at a time.
            UniqueConstraint(fields=["project"], condition=Q(state="running"), name="formation_rebuild_one_running"),
            CheckConstraint(condition=Q(state__in=REBUILD_STATES), name="formation_rebuild_state_chk"),
            # A proposer's version, never curated/v1. Spelled out rather than from the closed set, so a new
            # rules version needs no migration here (the pin CHECKs on observation and evidence still apply).
            CheckConstraint(condition=Q(target_version__regex=r"^(rules/v[1-9][0-9]*|extract/v2:[a-f0-9]{64})$"),
                            name="formation_rebuild_target_chk"),
            CheckConstraint(condition=Q(state="running", finished_at__isnull=True)
                            | (~Q(state="running") & Q(finished_at__isnull=False)),
                            name="formation_rebuild_finished_chk"),
            CheckConstraint(condition=Q(reinterpreted_through__isnull=True)
                            | Q(reinterpreted_through__lte=F("reinterpreting_through")),
                            name="formation_rebuild_cursor_chk"),
            CheckConstraint(condition=Q(sources_acknowledged__gte=0, sources_skipped__gte=0, facts_gained__gte=0,
                                        facts_lost__gte=0, entities_purged__gte=0, facts_purged__gte=0),
                            name="formation_rebuild_counts_chk"),
        ]
        indexes = [models.Index(fields=["project", "-started_at"], name="formation_rebuild_project_idx")]
        triggers = [
            pgtrigger.Protect(name="formation_rebuild_final", operation=pgtrigger.Update,
                              condition=pgtrigger.Condition("OLD.state <> 'running'")),
        ]

    def __str__(self):
        return f"{self.project_id} → {self.target_version} ({self.state})"
GENERATION_STATES = ("building", "active", "cancelled", "retired")
EMBEDDING_PROVIDERS = ("local", "endpoint")
PASSAGE_INPUT_FORMAT = "message-text/v1"


class EmbeddingGeneration(models.Model):
    """One embedding of a project's passage sources under one model identity (docs/decisions.md, passages).

    The vectors live in `passage_vector` (raw SQL, created only where pgvector exists); this row names the
    identity they were made with, so a different embedder can never add to or search them."""

    generation_id = models.UUIDField(primary_key=True, default=uuid.uuid4)
    project = _scope()
    provider = models.CharField(max_length=16, choices=choices(EMBEDDING_PROVIDERS))
    model = models.TextField()
    revision = models.TextField(default="")
    dimensions = models.IntegerField()
    metric = models.CharField(max_length=16, default="cosine")
    input_format = models.CharField(max_length=32, default=PASSAGE_INPUT_FORMAT)
    state = models.CharField(max_length=16, choices=choices(GENERATION_STATES), default="building")
    auto_activate = models.BooleanField(default=False)
    covered_through_offset = models.BigIntegerField(null=True)
    started_by = models.TextField()
    created_at = models.DateTimeField(db_default=Now())
    built_at = models.DateTimeField(null=True)
    activated_at = models.DateTimeField(null=True)
    ended_at = models.DateTimeField(null=True)

    class Meta:
        db_table = "embedding_generation"
        constraints = [
            CheckConstraint(condition=Q(state__in=GENERATION_STATES), name="embedding_generation_state_chk"),
            CheckConstraint(condition=Q(provider__in=EMBEDDING_PROVIDERS), name="embedding_generation_provider_chk"),
            CheckConstraint(condition=Q(dimensions__gte=1, dimensions__lte=16000),
                            name="embedding_generation_dimensions_chk"),
            CheckConstraint(condition=Q(metric="cosine"), name="embedding_generation_metric_chk"),
            CheckConstraint(condition=Q(input_format=PASSAGE_INPUT_FORMAT), name="embedding_generation_format_chk"),
            UniqueConstraint(fields=["project"], condition=Q(state="active"), name="embedding_generation_one_active"),
            UniqueConstraint(fields=["project"], condition=Q(state="building"),
                             name="embedding_generation_one_building"),
        ]
        indexes = [models.Index(fields=["project", "state"], name="embedding_generation_state_idx")]

    def __str__(self):
        return f"{self.provider}:{self.model} ({self.state})"

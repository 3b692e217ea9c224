"""Console pages for memory (console.md §3.3, §5): observations and parked turns, facts with their evidence,
entities, refusals, and the read-only vocabulary. All view-only; unpark goes through formation.driver."""
import re

from django.contrib import admin, messages
from django.contrib.admin.utils import quote
from django.db.models import F, Func
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from console import selectors as console_selectors
from console.access import OPERATOR, can_view_content, principal_of
from console.site import ExactSearchAdmin, NoWritesMixin, ViewOnlyAdmin, exact_uuid, site
from core.errors import NotFound
from core.text import normalize
from formation import driver
from formation.kick import kick_drain
from memory.generation_selectors import generation_rows
from memory.models import (
    CuratedClaim,
    EmbeddingGeneration,
    Entity,
    EntityNameReceipt,
    Fact,
    FactEvidence,
    FactHistory,
    MemoryFeedback,
    Observation,
    ParkedTurn,
    Predicate,
    RecordRetraction,
    RejectedClaim,
    Segment,
    SpeakerTerm,
    TurnMessage,
    UnresolvableTerm,
)

OBSERVATION_SEARCH_RE = re.compile(r"^\s*([a-z][a-z0-9_]{0,62})\s*[#:/ ]\s*(\d{1,19})\s*$")
SEARCH_KEYS = ("subject", "predicate")
TEXT_SEARCH_MAX = 200


def parse_search(term):
    """A search box's words: `subject:S` and `predicate:P` pick exact values, the rest is text to find."""
    picked, words = {}, []
    for word in term.split():
        key, sep, value = word.partition(":")
        if sep and key in SEARCH_KEYS and value:
            picked[key] = value
        else:
            words.append(word)
    return picked, " ".join(words)[:TEXT_SEARCH_MAX]


def link(model, pk, text):
    """A link to an object's console page (the viewer's permissions still apply there)."""
    if pk is None:
        return "—"
    # quote(): the admin escapes "_" and friends in primary keys, as its own links do.
    url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_change", args=[quote(pk)])
    return format_html('<a href="{}">{}</a>', url, text)


def interval(r):
    """A tstzrange as text, e.g. [2026-01-01 10:00:00+00:00, ∞)."""
    if r is None:
        return "—"
    if r.isempty:
        return "empty"
    bounds = r.bounds or "()"
    lower = "−∞" if r.lower is None else r.lower.isoformat(sep=" ", timespec="seconds")
    upper = "∞" if r.upper is None else r.upper.isoformat(sep=" ", timespec="seconds")
    return f"{bounds[0]}{lower}, {upper}{bounds[1]}"


def content_block(text):
    """Message text exactly as stored: escaped, whitespace kept."""
    return format_html('<div class="message-content" style="white-space: pre-wrap">{}</div>', text)


class ContentGatedAdmin(ExactSearchAdmin):
    """Fields listed in content_fields render only for holders of memory.view_content."""

    content_fields = ()

    def get_fields(self, request, obj=None):
        fields = super().get_fields(request, obj)
        if can_view_content(request):
            return fields
        return [f for f in fields if f not in self.content_fields]

    def get_list_display(self, request):
        fields = super().get_list_display(request)
        if can_view_content(request):
            return fields
        return [f for f in fields if f not in self.content_fields]


# --- observations and parked turns ----------------------------------------------------------------

class YesNoFilter(admin.SimpleListFilter):
    column = None

    def lookups(self, request, model_admin):
        return (("yes", "yes"), ("no", "no"))

    def queryset(self, request, queryset):
        if self.value() in ("yes", "no"):
            return queryset.filter(**{f"{self.column}__isnull": self.value() == "no"})
        return queryset


class FormedFilter(YesNoFilter):
    title = parameter_name = "formed"
    column = "formed_at"


class ParkedFilter(YesNoFilter):
    title = parameter_name = "parked"
    column = "parked_at"


class TurnMessageInline(NoWritesMixin, admin.TabularInline):
    model = TurnMessage
    extra = 0
    can_delete = False
    show_change_link = False
    ordering = ("ordinal",)

    def get_fields(self, request, obj=None):
        fields = ["ordinal", "group_ordinal", "role", "occurred_at", "chunk_id", "byte_length"]
        return fields + ["message_content"] if can_view_content(request) else fields

    def get_readonly_fields(self, request, obj=None):
        return self.get_fields(request, obj)

    @admin.display(description="bytes")
    def byte_length(self, obj):
        return len(obj.content.encode("utf-8"))

    @admin.display(description="content")
    def message_content(self, obj):
        return content_block(obj.content)


class ObservationSearchAdmin(ContentGatedAdmin):
    search_help_text = "Exact observation id, or project and log offset as “project#offset”."

    def get_search_results(self, request, queryset, search_term):
        match = OBSERVATION_SEARCH_RE.match(search_term)
        if match:
            return queryset.filter(project_id=match[1], log_offset=int(match[2])), False
        value = exact_uuid(search_term) if search_term.strip() else None
        if value is not None:
            return queryset.filter(observation_id=value), False
        return (queryset.none() if search_term.strip() else queryset), False


@admin.register(Observation, site=site)
class ObservationAdmin(ObservationSearchAdmin):
    list_op = detail_op = "console.read"
    list_display = ("project", "log_offset", "kind", "source_role", "occurred_at", "state", "formation_attempts",
                    "extractor_version")
    list_filter = ("project", "kind", FormedFilter, ParkedFilter)
    list_select_related = ("project",)
    raw_id_fields = ("project",)
    ordering = ("project", "-log_offset")
    inlines = (TurnMessageInline,)
    content_fields = ("data_subject_id",)
    fields = ("observation_id", "project", "log_offset", "kind", "source_role", "data_subject_id", "occurred_at",
              "ingested_at", "retention_until", "formed_at", "formation_attempts", "formation_failed_at",
              "formation_error", "parked_at", "extractor_version", "derived")
    readonly_fields = fields

    @admin.display(description="state")
    def state(self, obj):
        if obj.parked_at is not None:
            return "parked"
        return "formed" if obj.formed_at is not None else "unformed"

    @admin.display(description="derived facts and refusals")
    def derived(self, obj):
        evidence = (FactEvidence.objects.filter(project=obj.project_id, source_observation=obj.observation_id)
                    .order_by("source_ordinal", "byte_start").values_list("source_ordinal", "fact_id")[:200])
        refusals = (RejectedClaim.objects.filter(project=obj.project_id, source_observation=obj.observation_id)
                    .order_by("source_ordinal", "recorded_at")
                    .values_list("source_ordinal", "rejected_claim_id", "reason", "predicate")[:200])
        items = [(f"message {o}", link(Fact, f, f"fact {f}")) for o, f in evidence]
        items += [(f"message {o}", link(RejectedClaim, r, f"refusal {reason} ({predicate})"))
                  for o, r, reason, predicate in refusals]
        if not items:
            return "—"
        return format_html("<ul>{}</ul>", format_html_join("", "<li>{}: {}</li>", items))


@admin.register(ParkedTurn, site=site)
class ParkedTurnAdmin(ObservationSearchAdmin):
    list_op = "formation.parked"
    list_display = ("project", "log_offset", "observation_id", "attempts", "parked_at", "reason")
    list_filter = ("project",)
    list_select_related = ("project",)
    ordering = ("project", "log_offset")
    actions = ("unpark",)
    fields = ("observation_id", "project", "log_offset", "kind", "occurred_at", "ingested_at",
              "formation_attempts", "formation_failed_at", "formation_error", "parked_at", "extractor_version",
              "observation")
    readonly_fields = fields

    def get_queryset(self, request):
        return super().get_queryset(request).filter(parked_at__isnull=False)

    def has_unpark_permission(self, request):
        return request.user.has_perm("memory.unpark_turn")

    @admin.display(description="attempts")
    def attempts(self, obj):
        return obj.formation_attempts

    @admin.display(description="reason")
    def reason(self, obj):
        return obj.formation_error or ""  # untrusted text: the changelist escapes it

    @admin.display(description="observation")
    def observation(self, obj):
        return link(Observation, obj.pk, "observation detail")

    @admin.action(description="Unpark selected turns", permissions=["unpark"])
    def unpark(self, request, queryset):
        selected = set(request.POST.getlist(admin.helpers.ACTION_CHECKBOX_NAME))
        done = 0
        for turn in queryset:
            selected.discard(str(turn.pk))
            try:
                driver.unpark(project=turn.project_id, observation_id=turn.observation_id,
                       principal=principal_of(request), principal_kind=OPERATOR, kick=kick_drain)
                done += 1
            except NotFound:
                selected.add(str(turn.pk))
        if done:
            self.message_user(request, f"Unparked {done} turn(s); formation will retry them.", messages.SUCCESS)
        if selected:
            self.message_user(request, f"{len(selected)} selected turn(s) not parked; nothing changed for them.",
                              messages.WARNING)


@admin.register(TurnMessage, site=site)
class TurnMessageAdmin(ContentGatedAdmin):
    list_op = detail_op = "console.read"
    exact_uuid_field = "chunk_id"
    search_help_text = ("A chunk id; or words found in the message (needs the content permission); narrow with "
                        "subject:ID.")
    list_display = ("id", "observation_link", "ordinal", "group_ordinal", "role", "subject_id", "occurred_at",
                    "chunk_id", "content_preview")
    list_select_related = ("observation",)
    ordering = ("-id",)
    content_fields = ("message_content", "subject_id", "content_preview")

    def get_search_results(self, request, queryset, search_term):
        value = exact_uuid(search_term) if search_term.strip() else None
        if value is not None:
            return queryset.filter(chunk_id=value), False
        picked, text = parse_search(search_term)
        if "predicate" in picked:
            text = f"predicate:{picked['predicate']} {text}".strip()
        if not can_view_content(request) and (text or "subject" in picked):
            # Finding messages by their words or their subject reads content (console.md §1 rule 5).
            self.message_user(request, "Searching messages by their words or subject needs the content "
                                       "permission.", messages.WARNING)
            return queryset.none(), False
        if "subject" in picked:
            queryset = queryset.filter(observation__data_subject_id=picked["subject"])
        if text:
            queryset = queryset.filter(content__icontains=text)
        return queryset, False

    @admin.display(description="subject")
    def subject_id(self, obj):
        return obj.observation.data_subject_id or "—"

    @admin.display(description="content")
    def content_preview(self, obj):
        return obj.content if len(obj.content) <= 120 else obj.content[:119] + "…"
    fields = ("id", "observation_link", "ordinal", "group_ordinal", "role", "occurred_at", "chunk_id",
              "byte_length", "message_content")
    readonly_fields = fields

    @admin.display(description="observation")
    def observation_link(self, obj):
        return link(Observation, obj.observation_id, obj.observation_id)

    @admin.display(description="bytes")
    def byte_length(self, obj):
        return len(obj.content.encode("utf-8"))

    @admin.display(description="content")
    def message_content(self, obj):
        return content_block(obj.content)


# --- facts ----------------------------------------------------------------------------------------

class FactStatusFilter(admin.SimpleListFilter):
    title = "status"
    parameter_name = "status"

    def lookups(self, request, model_admin):
        return [(s, s) for s in console_selectors.FACT_STATUSES]

    def queryset(self, request, queryset):
        if self.value() in console_selectors.FACT_STATUSES:
            return console_selectors.filter_fact_status(queryset, self.value())
        return queryset


def _entity_name(entity):
    if entity is None:
        return "—"
    return entity.canonical_name


@admin.register(Fact, site=site)
class FactAdmin(ContentGatedAdmin):
    list_op = detail_op = "console.read"
    exact_uuid_field = "fact_id"
    search_help_text = ("A fact id; or words found in the statement; narrow with subject:ID and predicate:NAME "
                        "(e.g. “predicate:lives_in Dublin”).")
    list_display = ("fact_id", "predicate", "subject_name", "object_name", "statement", "status", "data_subject_id",
                    "source_role", "recorded_at")
    list_filter = ("project", "predicate", "source_role", FactStatusFilter)
    list_select_related = ("subject_entity", "object_entity")
    raw_id_fields = ("project", "subject_entity", "object_entity", "superseded_by", "supersession_source")
    ordering = ("-recorded_at",)
    content_fields = ("data_subject_id",)
    fields = ("fact_id", "project", "statement", "subject_link", "predicate", "object_link", "cardinality",
              "confidence", "valid_interval", "known_interval", "status", "version", "superseded_by_link",
              "supersession_source_link", "source_role", "data_subject_id", "recorded_at", "retention_until",
              "retraction")
    readonly_fields = fields

    def get_queryset(self, request):
        return console_selectors.with_fact_status(super().get_queryset(request))

    def get_search_results(self, request, queryset, search_term):
        value = exact_uuid(search_term) if search_term.strip() else None
        if value is not None:
            return queryset.filter(fact_id=value), False
        picked, text = parse_search(search_term)
        if "subject" in picked:
            queryset = queryset.filter(data_subject_id=picked["subject"])
        if "predicate" in picked:
            queryset = queryset.filter(predicate=picked["predicate"])
        if text:
            queryset = queryset.filter(statement__icontains=text)
        return queryset, False

    @admin.display(description="subject")
    def subject_name(self, obj):
        return _entity_name(obj.subject_entity)

    @admin.display(description="object")
    def object_name(self, obj):
        return _entity_name(obj.object_entity)

    @admin.display(description="status")
    def status(self, obj):
        return obj.status

    @admin.display(description="subject")
    def subject_link(self, obj):
        return link(Entity, obj.subject_entity_id, _entity_name(obj.subject_entity))

    @admin.display(description="object")
    def object_link(self, obj):
        return link(Entity, obj.object_entity_id, _entity_name(obj.object_entity))

    @admin.display(description="valid")
    def valid_interval(self, obj):
        return interval(obj.valid)

    @admin.display(description="known")
    def known_interval(self, obj):
        return interval(obj.known)

    @admin.display(description="superseded by")
    def superseded_by_link(self, obj):
        return link(Fact, obj.superseded_by_id, obj.superseded_by_id)

    @admin.display(description="supersession source")
    def supersession_source_link(self, obj):
        return link(Observation, obj.supersession_source_id, obj.supersession_source_id)

    @admin.display(description="retraction")
    def retraction(self, obj):
        row = (RecordRetraction.objects.filter(project=obj.project_id, target_fact_id=obj.fact_id)
               .order_by("retracted_at").first())
        if row is None:
            return "—"
        text = format_html("retracted {} by {} (operation {})", row.retracted_at, row.principal_id, row.operation_id)
        if row.replacement_fact_id:
            text = format_html("{}; replaced by {}", text, link(Fact, row.replacement_fact_id, row.replacement_fact_id))
        return text

    def change_view(self, request, object_id, form_url="", extra_context=None):
        fact = self.get_object(request, object_id)
        extra = {}
        if fact is not None:
            extra = {
                "show_content": can_view_content(request),
                "evidence": console_selectors.evidence_view(fact),
                "history": [
                    {"row": h, "valid": interval(h.valid), "known": interval(h.known)}
                    for h in FactHistory.objects.filter(project=fact.project_id, fact=fact.fact_id)
                    .order_by(Func(F("known"), function="upper").desc(), F("history_id").desc())[:100]
                ],
                "feedback": list(MemoryFeedback.objects.filter(project=fact.project_id, target_fact=fact.fact_id)
                                 .order_by("-recorded_at", "-feedback_id")[:100]),
            }
        return super().change_view(request, object_id, form_url, {**(extra_context or {}), **extra})


@admin.register(FactEvidence, site=site)
class FactEvidenceAdmin(ContentGatedAdmin):
    list_op = detail_op = "console.read"
    list_display = ("id", "fact_link", "observation_link", "source_ordinal", "byte_start", "byte_end", "quote",
                    "extractor_version")
    list_filter = ("project",)
    ordering = ("-id",)
    search_fields = ()
    content_fields = ("quote",)
    fields = ("id", "project", "fact_link", "observation_link", "source_ordinal", "quote", "byte_start", "byte_end",
              "extractor_version", "authored_by")
    readonly_fields = fields

    @admin.display(description="fact")
    def fact_link(self, obj):
        return link(Fact, obj.fact_id, obj.fact_id)

    @admin.display(description="source observation")
    def observation_link(self, obj):
        return link(Observation, obj.source_observation_id, obj.source_observation_id)


@admin.register(FactHistory, site=site)
class FactHistoryAdmin(ContentGatedAdmin):
    list_op = detail_op = "console.read"
    list_display = ("history_id", "fact_link", "valid_interval", "known_interval", "observation_link")
    list_filter = ("project",)
    ordering = ("-known",)
    search_fields = ()
    fields = ("history_id", "project", "fact_link", "valid_interval", "known_interval", "observation_link")
    readonly_fields = fields

    @admin.display(description="fact")
    def fact_link(self, obj):
        return link(Fact, obj.fact_id, obj.fact_id)

    @admin.display(description="source observation")
    def observation_link(self, obj):
        return link(Observation, obj.source_observation_id, obj.source_observation_id)

    @admin.display(description="valid")
    def valid_interval(self, obj):
        return interval(obj.valid)

    @admin.display(description="known")
    def known_interval(self, obj):
        return interval(obj.known)


# --- entities -------------------------------------------------------------------------------------

@admin.register(Entity, site=site)
class EntityAdmin(ContentGatedAdmin):
    list_op = detail_op = "console.read"
    list_display = ("canonical_name", "identity_kind", "entity_type", "alias_count", "first_seen_at")
    list_filter = ("project", "identity_kind", "entity_type")
    ordering = ("-first_seen_at",)
    search_help_text = "Exact name; it is normalised (lower case, single spaces) before the lookup."
    content_fields = ("speaker_subject_id",)
    fields = ("entity_id", "project", "canonical_name", "normalized_name", "entity_type", "identity_kind",
              "speaker_subject_id", "resolution_version", "first_seen_at", "alias_list", "name_receipts",
              "as_subject", "as_object")
    readonly_fields = fields

    def get_search_results(self, request, queryset, search_term):
        if not search_term.strip():
            return queryset, False
        return queryset.filter(normalized_name=normalize(search_term)), False

    @admin.display(description="aliases")
    def alias_count(self, obj):
        return len(obj.aliases or [])

    @admin.display(description="aliases")
    def alias_list(self, obj):
        return ", ".join(obj.aliases or []) or "—"

    @admin.display(description="name receipts")
    def name_receipts(self, obj):
        return EntityNameReceipt.objects.filter(project=obj.project_id, entity=obj.entity_id).count()

    def _facts(self, **where):
        facts = Fact.objects.filter(**where).order_by("-recorded_at").values_list("fact_id", "predicate", "statement")
        items = [(link(Fact, f, f"{p}: {s}"),) for f, p, s in facts[:100]]
        return format_html("<ul>{}</ul>", format_html_join("", "<li>{}</li>", items)) if items else "—"

    @admin.display(description="facts as subject")
    def as_subject(self, obj):
        return self._facts(project=obj.project_id, subject_entity=obj.entity_id)

    @admin.display(description="facts as object")
    def as_object(self, obj):
        return self._facts(project=obj.project_id, object_entity=obj.entity_id)


# --- refusals -------------------------------------------------------------------------------------

class PresentValuesFilter(admin.SimpleListFilter):
    """The values present in a column (within the filtered project when one is chosen), bounded."""

    column = None

    def lookups(self, request, model_admin):
        rows = model_admin.model.objects.all()
        project = request.GET.get("project__name__exact")
        if project:
            rows = rows.filter(project=project)
        values = rows.order_by(self.column).values_list(self.column, flat=True).distinct()[:200]
        return [(v, v) for v in values]

    def queryset(self, request, queryset):
        return queryset.filter(**{self.column: self.value()}) if self.value() is not None else queryset


class RefusalPredicateFilter(PresentValuesFilter):
    title = parameter_name = column = "predicate"


class ExtractorVersionFilter(PresentValuesFilter):
    title = "extractor version"
    parameter_name = column = "extractor_version"


@admin.register(RejectedClaim, site=site)
class RejectedClaimAdmin(ContentGatedAdmin):
    list_op = detail_op = "console.read"
    exact_uuid_field = "rejected_claim_id"
    search_help_text = "Exact refusal id."
    list_display = ("rejected_claim_id", "project", "reason", "predicate", "statement", "extractor_version",
                    "recorded_at")
    list_filter = ("project", "reason", RefusalPredicateFilter, ExtractorVersionFilter)
    list_select_related = ("project",)
    raw_id_fields = ("project", "source_observation")
    ordering = ("-recorded_at",)
    # A refusal keeps the proposer's words: its subject, object, statement and quote are a person's words too.
    content_fields = ("data_subject_id", "source_message", "subject", "object", "statement", "quote")
    fields = ("rejected_claim_id", "project", "reason", "subject", "predicate", "object", "statement", "quote",
              "extractor_version", "data_subject_id", "recorded_at", "observation_link", "source_ordinal",
              "source_message")
    readonly_fields = fields

    def changelist_view(self, request, extra_context=None):
        extra_context = {**(extra_context or {}),
                         "can_summarise": request.user.has_perm("governance.view_refusal_summary")}
        return super().changelist_view(request, extra_context)

    @admin.display(description="source observation")
    def observation_link(self, obj):
        return link(Observation, obj.source_observation_id, obj.source_observation_id)

    @admin.display(description="source message")
    def source_message(self, obj):
        message = TurnMessage.objects.filter(observation=obj.source_observation_id,
                                             ordinal=obj.source_ordinal).first()
        if message is None:
            return "(message gone)"
        return content_block(message.content)


# --- other view-only memory tables ----------------------------------------------------------------

@admin.register(CuratedClaim, site=site)
class CuratedClaimAdmin(ContentGatedAdmin):
    list_op = detail_op = "console.read"
    list_display = ("source_observation_id", "project", "fact_id", "principal_id")
    list_filter = ("project",)
    ordering = ("-source_observation_id",)
    exact_uuid_field = "fact_id"
    content_fields = ("claim",)


@admin.register(RecordRetraction, site=site)
class RecordRetractionAdmin(ContentGatedAdmin):
    list_display = ("id", "project", "target_fact_id", "operation_id", "principal_id", "retracted_at",
                    "replacement_fact_id")
    list_filter = ("project",)
    ordering = ("-id",)
    exact_uuid_field = "target_fact_id"


@admin.register(MemoryFeedback, site=site)
class MemoryFeedbackAdmin(ContentGatedAdmin):
    list_op = detail_op = "console.read"
    list_display = ("feedback_id", "project", "fact_link", "recorded_by", "recorded_at", "promoted_at")
    list_filter = ("project",)
    ordering = ("-recorded_at",)
    exact_uuid_field = "feedback_id"
    content_fields = ("note", "proposed_object")
    fields = ("feedback_id", "project", "fact_link", "note", "proposed_object", "recorded_by", "recorded_at",
              "promoted_by", "promoted_at", "promotion_fact_id")
    readonly_fields = fields

    @admin.display(description="fact")
    def fact_link(self, obj):
        return link(Fact, obj.target_fact_id, obj.target_fact_id)


@admin.register(Segment, site=site)
class SegmentAdmin(ContentGatedAdmin):
    list_op = detail_op = "console.read"
    list_display = ("segment_id", "project", "level", "from_offset", "to_offset", "covered", "written_by",
                    "created_at")
    list_filter = ("project", "level")
    ordering = ("-created_at",)
    exact_uuid_field = "segment_id"
    content_fields = ("summary", "data_subject_id")


@admin.register(Predicate, site=site)
class PredicateAdmin(ViewOnlyAdmin):
    list_display = ("predicate", "semantic_type", "cardinality", "object_kind", "event", "description")
    list_filter = ("semantic_type", "cardinality", "object_kind")


@admin.register(UnresolvableTerm, site=site)
class UnresolvableTermAdmin(ViewOnlyAdmin):
    list_display = ("term", "lang", "reason")
    ordering = ("term",)


@admin.register(SpeakerTerm, site=site)
class SpeakerTermAdmin(ViewOnlyAdmin):
    list_display = ("term",)
    ordering = ("term",)



@admin.register(EmbeddingGeneration, site=site)
class EmbeddingGenerationAdmin(ViewOnlyAdmin):
    """Embedding generations with their coverage; the lifecycle verbs are `manage.py memoir_embeddings`."""

    list_display = ("generation_id", "project", "state", "provider", "model", "dimensions", "vectors",
                    "covered_through_offset_now", "through_offset", "entities_embedded", "created_at", "activated_at")
    list_filter = ("state", "provider")
    ordering = ("-created_at",)

    def _coverage(self, obj):
        cache = getattr(self, "_coverage_cache", {})
        key = str(obj.generation_id)
        if key not in cache:
            for row in generation_rows(project=obj.project_id):
                cache[row["generation_id"]] = row
            self._coverage_cache = cache
        return cache.get(key, {})

    @admin.display(description="vectors")
    def vectors(self, obj):
        return self._coverage(obj).get("vectors")

    @admin.display(description="covered through offset")
    def covered_through_offset_now(self, obj):
        return self._coverage(obj).get("covered_through_offset")

    @admin.display(description="through offset")
    def through_offset(self, obj):
        return self._coverage(obj).get("through_offset")

    @admin.display(description="entities embedded")
    def entities_embedded(self, obj):
        row = self._coverage(obj)
        return f"{row.get('entity_vectors', 0)} / {row.get('entities', 0)}" if row else None

    def changelist_view(self, request, extra_context=None):
        self._coverage_cache = {}  # fresh coverage on every page view
        return super().changelist_view(request, extra_context)

"""The closed sets of the memory schema. Python mirrors the database CHECKs and never extends them."""

ROLES = ("user", "assistant", "system", "tool")
OBSERVATION_KINDS = ("turn", "curated", "artifact")
SEMANTIC_TYPES = (
    "identity", "preference", "capability", "intent", "social", "possession",
    "structure", "authorship", "temporal", "state", "constraint",
)
CARDINALITIES = ("one", "many")
OBJECT_KINDS = ("person", "organisation", "place", "time", "value", "thing")
IDENTITY_KINDS = ("named", "speaker")
RESOLUTION_VERSIONS = ("entity/v1", "entity/speaker-v1")
REFUSAL_REASONS = (
    "unmapped_relation", "unlocatable_quote", "duplicate_claim", "not_asserted",
    "unresolvable_subject", "not_current", "conflicting_value", "not_spoken_by_principal",
    "entity_name_limit",
)
# Extractor versions: a fixed list plus the model pattern (formation.md §10).
FIXED_EXTRACTOR_VERSIONS = ("rules/v1", "curated/v1", "rules/v2")
MODEL_EXTRACTOR_VERSION_RE = r"^extract/v2:[a-f0-9]{64}$"


def choices(values):
    """Django choices from a closed tuple."""
    return [(v, v) for v in values]

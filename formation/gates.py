"""The formation gates (formation.md §6): pure checks that admit or refuse one proposal.

Order is fixed and the first failure wins. Store-side refusals (speaker binding, conflicting
values, name limits) belong to the claim writer; their reasons are listed here for completeness.
"""

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from core.closed_sets import OBJECT_KINDS, REFUSAL_REASONS
from core.text import normalize
from formation.locate import locate, quote_at
from formation.proposals import PredicateSpec, Proposal

__all__ = [
    "REFUSAL_REASONS", "Admitted", "Refused", "judge", "effective_unresolvable", "clamp_confidence",
]

# A subject type outside the closed kinds (or missing) would fail the entity_type CHECK and fail the
# whole turn; the entity column's own default is used instead.
DEFAULT_SUBJECT_TYPE = "thing"


@dataclass(frozen=True)
class Admitted:
    """A proposal that passed every gate, with its located span and the words actually stored."""

    proposal: Proposal
    predicate: PredicateSpec
    byte_start: int
    byte_end: int
    quote: str
    subject_type: str
    object_type: str
    confidence: float


@dataclass(frozen=True)
class Refused:
    """A proposal refused by a gate. The proposal keeps the proposer's own words."""

    proposal: Proposal
    reason: str


def effective_unresolvable(unresolvable_terms: Iterable[str], speaker_terms: Iterable[str]) -> frozenset[str]:
    """Unresolvable terms minus speaker terms ("i" and "me" go to speaker binding instead)."""
    return frozenset(normalize(t) for t in unresolvable_terms) - frozenset(normalize(t) for t in speaker_terms)


def clamp_confidence(value: float) -> float:
    """Confidence is stored as given but within [0, 1]; NaN becomes 0. It never gates or ranks."""
    value = float(value)
    if math.isnan(value):
        return 0.0
    return min(1.0, max(0.0, value))


def _kind(value: str, default: str) -> str:
    return value if value in OBJECT_KINDS else default


def judge(
    proposal: Proposal,
    *,
    content: str,
    vocabulary: Mapping[str, PredicateSpec],
    unresolvable: frozenset[str],
    admitted: set[tuple[str, str, str]],
) -> Admitted | Refused:
    """Run gates 1–6 on one proposal from one message.

    ``unresolvable`` is the effective set (see effective_unresolvable). ``admitted`` holds the
    (predicate, subject, object) keys already admitted from this message and is extended on admission.
    """
    spec = vocabulary.get(proposal.predicate)
    if spec is None:
        return Refused(proposal, "unmapped_relation")
    subject = normalize(proposal.subject)
    # Before the quote check: an unresolvable subject is refused whatever its evidence.
    if not subject or subject in unresolvable:
        return Refused(proposal, "unresolvable_subject")
    span = locate(content, proposal.quote)
    if span is None:
        return Refused(proposal, "unlocatable_quote")
    if proposal.polarity != "asserted":
        return Refused(proposal, "not_asserted")
    # A past state is admitted only when its proposer says when it ended (rules/v2): a closed range, or the
    # end of the value the store already holds ("I lost my job as a banker").
    closed = proposal.valid_until is not None and (
        proposal.valid_from is None or proposal.valid_from < proposal.valid_until)
    if not (proposal.tense == "present" or (proposal.tense == "past" and (spec.event or closed))):
        return Refused(proposal, "not_current")
    key = (spec.name, subject, normalize(proposal.object))
    if key in admitted:
        return Refused(proposal, "duplicate_claim")
    admitted.add(key)
    start, end = span
    return Admitted(
        proposal=proposal,
        predicate=spec,
        byte_start=start,
        byte_end=end,
        quote=quote_at(content, start, end),
        subject_type=_kind(proposal.subject_type, DEFAULT_SUBJECT_TYPE),
        object_type=_kind(proposal.object_type, spec.object_kind),
        confidence=clamp_confidence(proposal.confidence),
    )

"""What a proposer exchanges with formation: the message in, proposals out, and the proposer contract.

A proposer only proposes. Admission, quote location and spans belong to the gates (formation.gates).
"""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, runtime_checkable

# An error text is stored on the observation (formation_error, cut to 2000 chars); bound it here
# too so that no caller can be handed an unbounded string.
MAX_ERROR_CHARS = 2000


@dataclass(frozen=True)
class Message:
    """One stored turn message, as a proposer sees it."""

    role: str
    content: str
    occurred_at: datetime | None = None  # what time words resolve against (rules/v2); None = unknown


@dataclass(frozen=True)
class PredicateSpec:
    """One vocabulary row (data-model.md §3)."""

    name: str
    semantic_type: str
    cardinality: str
    object_kind: str
    description: str
    event: bool = False


@dataclass(frozen=True)
class Proposal:
    """One claim as a proposer read it (formation.md §4.4). Nothing here is trusted yet."""

    subject: str
    predicate: str
    object: str
    statement: str
    confidence: float
    quote: str
    polarity: str
    tense: str
    subject_type: str = ""
    object_type: str = ""
    # From time words (rules/v2): when the claim starts holding, and for a state stated as over, when it ended.
    # None leaves the valid time at the message's occurred_at and open.
    valid_from: datetime | None = None
    valid_until: datetime | None = None


class ProposerError(Exception):
    """A proposer could not read the message. The turn fails and is retried; never an empty result.

    Its text becomes the turn's formation_error and parked reason, which operators without view_content see: it is
    a fixed category (with an HTTP status, exception class or claim index), never words of a reply or a message."""

    def __init__(self, message: str):
        if len(message) > MAX_ERROR_CHARS:
            message = message[: MAX_ERROR_CHARS - 1] + "…"
        super().__init__(message)


@runtime_checkable
class Proposer(Protocol):
    """The one interface shared by the model client and the rules proposer."""

    version: str

    def propose(self, message: Message, vocabulary: Sequence[PredicateSpec]) -> list[Proposal]:
        """Return what ``message`` asserts. Raises ProposerError on any failure."""
        ...

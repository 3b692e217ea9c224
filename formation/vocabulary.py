"""The vocabulary as formation reads it: predicates in stable order and the term sets (data-model.md §3).

Changed only by migrations, so one read per process is enough.
"""
from dataclasses import dataclass
from functools import lru_cache

from django.db import connection

from core.text import normalize

from .gates import effective_unresolvable
from .proposals import PredicateSpec


@dataclass(frozen=True)
class Vocabulary:
    predicates: tuple  # PredicateSpec, ORDER BY predicate
    by_name: dict
    unresolvable: frozenset  # unresolvable terms minus speaker terms
    unresolvable_terms: tuple  # the raw table, for the extraction version hash
    speaker_terms: frozenset


@lru_cache(maxsize=1)
def load():
    with connection.cursor() as cursor:
        cursor.execute("SELECT predicate, semantic_type, cardinality, object_kind, description, event"
                       " FROM predicate ORDER BY predicate")
        predicates = tuple(PredicateSpec(*row) for row in cursor.fetchall())
        cursor.execute("SELECT term FROM unresolvable_term ORDER BY term")
        unresolvable_terms = tuple(row[0] for row in cursor.fetchall())
        cursor.execute("SELECT term FROM speaker_term ORDER BY term")
        speaker_terms = frozenset(normalize(row[0]) for row in cursor.fetchall())
    return Vocabulary(
        predicates=predicates,
        by_name={p.name: p for p in predicates},
        unresolvable=effective_unresolvable(unresolvable_terms, speaker_terms),
        unresolvable_terms=unresolvable_terms,
        speaker_terms=speaker_terms,
    )

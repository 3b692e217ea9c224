"""Recall (recall.md §1–§8): question terms, exact anchoring, the one-statement walk with its evidence,
and the budgeted bundle. Reads only; no model is called."""
import unicodedata
from contextlib import contextmanager
from dataclasses import dataclass

import psycopg
from django.db import connection, transaction

from core.closed_sets import ROLES
from core.encoding import format_float32, format_ts
from core.errors import Invalid
from core.text import WHITE_SPACE, normalize

from . import entity_candidates, lexical_index, passages, relevance
from .evidence import CONTEXT_WINDOW, legible
from .self_reference import CURRENT_NAME_FACT

MAX_QUESTION_BYTES = 8192
MAX_TERMS = 512
MAX_TERM_BYTES = 32768
MAX_ANCHORS = 256
MAX_ROWS = 200  # facts per bundle; callers cannot change it
FANOUT = 64  # rows kept per direction, per entity, per hop
MAX_HOPS = 2
LONGEST_ANCHOR = 4  # tokens in the longest window looked up
SURFACES = ("facts", "reports", "passages")
DEFAULT_ROLES = ("user",)

_TRIM = "'-"
MAX_RECALL_PASSAGES = 8
# Semantic anchors: at most this many, and only entities at least this close to the question (cosine).
MAX_SEMANTIC_ANCHORS = 4
MIN_SEMANTIC_SIMILARITY = 0.5
MAX_QUOTE_CHARS = 512
# When facts and passages are both selected and passages were found, facts leave up to this many characters
# (and at most a quarter of the budget) for them, so a subject's many facts cannot crowd the answer out.
PASSAGE_RESERVE = 4000


@dataclass(frozen=True)
class Controls:
    """What a recall applies; `surfaces_explicit` records whether the caller named the surfaces."""

    max_characters: int
    source_roles: tuple
    hops: int
    surfaces: tuple
    themes: bool
    surfaces_explicit: bool

    def as_dict(self):
        return {"max_characters": self.max_characters, "max_rows": MAX_ROWS, "source_roles": list(self.source_roles),
                "hops": self.hops, "surfaces": list(self.surfaces), "themes": self.themes}


def _invalid_controls():
    return Invalid("invalid_recall_controls", "the recall controls are not valid")


def _invalid_question(message="the question is not valid"):
    return Invalid("invalid_question", message)


def _closed_list(values, allowed, default):
    """1..len(allowed) distinct members of `allowed`; None means omitted."""
    if values is None:
        return tuple(default)
    if not values or len(values) > len(allowed) or len(set(values)) != len(values):
        raise _invalid_controls()
    if any(value not in allowed for value in values):
        raise _invalid_controls()
    return tuple(values)


def controls(*, max_characters=None, source_roles=None, hops=None, surfaces=None, themes=None, server_budget):
    """The applied controls, or Invalid(invalid_recall_controls). Hops are clamped, never refused."""
    if max_characters is None:
        max_characters = server_budget
    elif not 1 <= max_characters <= server_budget:
        raise _invalid_controls()
    roles = _closed_list(source_roles, ROLES, DEFAULT_ROLES)
    chosen = _closed_list(surfaces, SURFACES, SURFACES)
    return Controls(max_characters=max_characters, source_roles=roles, hops=min(max(hops or 1, 1), MAX_HOPS),
                    surfaces=chosen, themes=bool(themes), surfaces_explicit=surfaces is not None)


# ---------------------------------------------------------------------------------------------
# Terms (§2)


def _separates(ch):
    if ch in WHITE_SPACE:
        return True
    return ch not in _TRIM and unicodedata.category(ch).startswith("P")


def _tokens(question):
    tokens, current = [], []
    for ch in question:
        if _separates(ch):
            if current:
                tokens.append("".join(current))
                current = []
        else:
            current.append(ch)
    if current:
        tokens.append("".join(current))
    # A token trimmed to nothing keeps its position, so windows never join words that were apart.
    return [normalize(token.strip(_TRIM)) for token in tokens]


def terms(question):
    """Every 1..4-token window of the question, normalized like entity names, in order of start then
    length, without empty or repeated windows."""
    words = _tokens(question)
    seen = set()
    out = []
    for start in range(len(words)):
        for length in range(1, LONGEST_ANCHOR + 1):
            if start + length > len(words):
                break
            window = words[start:start + length]
            if not any(window):
                continue  # nothing but trimmed-away punctuation
            term = " ".join(window)
            if term not in seen:
                seen.add(term)
                out.append(term)
    return out


def check_question(question):
    """The question's terms, or Invalid(invalid_question) past a size limit. Never truncates."""
    if len(question.encode("utf-8")) > MAX_QUESTION_BYTES:
        raise _invalid_question("the question is at most 8192 bytes")
    found = terms(question)
    if len(found) > MAX_TERMS:
        raise _invalid_question("the question names too many terms")
    if sum(len(term.encode("utf-8")) for term in found) > MAX_TERM_BYTES:
        raise _invalid_question("the question's terms are too long")
    return found


# ---------------------------------------------------------------------------------------------
# Anchoring (§3)

_ANCHOR_NAMED = (
    "SELECT e.entity_id::text, e.canonical_name, e.entity_type, e.normalized_name FROM entity e"
    " WHERE e.scope = %(project)s AND e.identity_kind = 'named' AND e.normalized_name = ANY(%(terms)s::text[])"
)
# A named entity anchors a subject's recall only when that subject's turns produced it.
_ANCHOR_SUBJECT = (
    " AND EXISTS (SELECT 1 FROM projection_dependency d WHERE d.entity_ref = e.entity_id"
    " AND d.scope = %(project)s AND d.projection_kind = 'entity' AND d.data_subject_id = %(subject)s)"
    " UNION ALL"
    " SELECT e.entity_id::text, e.canonical_name, e.entity_type, 'speaker' FROM entity e"
    " WHERE e.scope = %(project)s AND e.identity_kind = 'speaker' AND e.speaker_subject_id = %(subject)s"
)


# Named speakers (issue 12): a person's speaker entity is anchored by the name they gave ("My name is
# Caroline", "I'm Caroline": a current has_name fact of that speaker) or by the label registered with their
# data subject. The anchor shows the name, never the subject id.
_SPEAKER_BY_GIVEN_NAME = (  # entity o: a name the question used; s: the speaker whose current has_name it is
    " FROM entity o"
    f" JOIN fact f ON f.object_entity_id = o.entity_id AND f.scope = o.scope AND {CURRENT_NAME_FACT}"
    " JOIN entity s ON s.entity_id = f.subject_entity_id AND s.identity_kind = 'speaker'"
    " WHERE o.scope = %(project)s AND o.identity_kind = 'named' AND o.normalized_name = ANY(%(terms)s::text[])"
)
_LABEL_AS_TERM = "regexp_replace(lower(btrim(ds.label)), '\\s+', ' ', 'g')"  # a label compared with terms
_ANCHOR_SPEAKER_NAMES = (
    " UNION ALL"
    " SELECT s.entity_id::text, o.canonical_name, s.entity_type, o.normalized_name" + _SPEAKER_BY_GIVEN_NAME +
    " UNION ALL"
    " SELECT s.entity_id::text, ds.label, s.entity_type, n.label FROM data_subject ds"
    f" CROSS JOIN LATERAL (SELECT {_LABEL_AS_TERM} AS label) n"
    " JOIN entity s ON s.scope = ds.scope AND s.identity_kind = 'speaker' AND s.speaker_subject_id = ds.subject_id::text"
    " WHERE ds.scope = %(project)s AND ds.label <> '' AND n.label = ANY(%(terms)s::text[])"
)


def _spelled_by(table, subject, spelling, partial):
    """The third way's arm over one table: (word, subject) for each question word that `spelling` spells, at most
    `over` a word, through the table's partial GIN index on memoir_speaker_name_keys(scope, `spelling`)."""
    return (" (SELECT w.word, x.subject FROM unnest(%(words)s::text[]) AS w(word)"
            f" CROSS JOIN LATERAL (SELECT {subject} AS subject FROM {table} t WHERE {partial}"
            f"  AND memoir_speaker_name_keys(t.scope, {spelling}) @> ARRAY[%(project)s || ' ' || w.word]"
            "  AND t.scope = %(project)s LIMIT %(over)s) x)")


# The people a question names, for a recall without a subject: the same two ways, except that a label needs no
# speaker entity (a person with no formed fact yet still has messages), and a third: a word of the question that
# a speaker's data subject id spells ("maya" in "c01-maya": every person with an indexed message, passage_speaker,
# and every speaker entity) or a registered subject's external reference spells; a word that more than
# MAX_NAMED_SUBJECTS of them spell names nobody. Their own messages then lead passages (docs/decisions.md, "Named
# speakers steer passages").
# Rows: ('', subject) for the first two ways, (word, subject) for the third.
_NAMED_SUBJECTS = (
    "(SELECT '' AS word, n.subject FROM (SELECT s.speaker_subject_id AS subject" + _SPEAKER_BY_GIVEN_NAME +
    " UNION"
    " SELECT ds.subject_id::text FROM data_subject ds"
    f" WHERE ds.scope = %(project)s AND ds.label <> '' AND {_LABEL_AS_TERM} = ANY(%(terms)s::text[])"
    " LIMIT %(over)s) n)"
    " UNION ALL" + _spelled_by("passage_speaker", "t.data_subject_id", "t.data_subject_id", "true") +
    " UNION ALL" + _spelled_by("entity", "t.speaker_subject_id", "t.speaker_subject_id", "t.identity_kind = 'speaker'") +
    " UNION ALL" + _spelled_by("data_subject", "t.subject_id::text", "t.external_reference",
                               "t.external_reference IS NOT NULL") +
    # The people of the turns the lexical follower has not reached yet (the tail search reads), so a person is
    # named by their id from their first message on.
    " UNION ALL"
    " (SELECT w.word, r.subject FROM (SELECT DISTINCT q.data_subject_id AS subject FROM (SELECT o.data_subject_id, o.kind"
    "  FROM observation o WHERE o.scope = %(project)s AND o.log_offset > coalesce((SELECT l.indexed_through"
    "  FROM passage_lexical_state l WHERE l.scope = %(project)s), -1) ORDER BY o.log_offset LIMIT %(tail)s) q"
    "  WHERE q.kind = 'turn' AND q.data_subject_id IS NOT NULL) r"
    "  CROSS JOIN LATERAL unnest(memoir_speaker_name_keys(%(project)s, r.subject)) AS k(name_key)"
    "  JOIN unnest(%(words)s::text[]) AS w(word) ON k.name_key = %(project)s || ' ' || w.word)"
)


def _named_subjects(cursor, project, found):
    """The subjects of the people the question names, or [] when there are none or more than
    passages.MAX_NAMED_SUBJECTS (an ambiguous name steers nothing)."""
    # "Maya's dog" names Maya: a possessive counts as the name itself here (not for anchors, whose terms are exact).
    names = found + [term[:-2] for term in found if term.endswith("'s") and len(term) > 2]
    # Only words of letters can match a key (the keys are runs of letters), so no other word costs a probe.
    words = sorted({name for name in names if name.isalpha() and len(name) >= 2})
    cursor.execute(_NAMED_SUBJECTS, {"project": project, "terms": names, "words": words,
                                     "over": passages.MAX_NAMED_SUBJECTS + 1, "tail": lexical_index.TAIL_MESSAGES},
                   prepare=True)
    by_word = {}
    for word, subject in cursor.fetchall():
        by_word.setdefault(word, set()).add(subject)
    subjects = by_word.pop("", set())
    for spelled in by_word.values():
        if len(spelled) <= passages.MAX_NAMED_SUBJECTS:  # a word many ids spell ("user") names nobody
            subjects |= spelled
    return sorted(subjects) if len(subjects) <= passages.MAX_NAMED_SUBJECTS else []


def named_subjects(*, project, question):
    """The subjects of the people `question` names, for a passage search without a subject to lead with their own
    messages as recall does; none for a question past recall's term limits (the search still answers it)."""
    try:
        found = check_question(question)
    except Invalid:
        return []
    if not found:
        return []
    with connection.wrap_database_errors, _prepared_cursor() as cursor:
        return _named_subjects(cursor, project, found)


def _anchors(cursor, project, found, subject):
    named = _ANCHOR_NAMED + ("" if subject else _ANCHOR_SPEAKER_NAMES)
    sql = named + (_ANCHOR_SUBJECT if subject else "") + f" LIMIT {MAX_ANCHORS + 1}"
    cursor.execute(sql, {"project": project, "terms": found, "subject": subject}, prepare=True)
    rows = list({row[0]: row for row in cursor.fetchall()}.values())  # a speaker named twice anchors once
    if len(rows) > MAX_ANCHORS:
        raise _invalid_question("the question matches too many entities")
    rows.sort(key=lambda row: (-len(row[3]), row[1], row[0]))
    return [{"entity_id": r[0], "name": r[1], "type": r[2], "matched": r[3]} for r in rows]


# ---------------------------------------------------------------------------------------------
# The walk (§4, §5, §6): one statement.

_CURRENT_ORDER = "f.recorded_at DESC, f.fact_id"
_HISTORIC_ORDER = "(upper_inf(f.valid) AND upper_inf(f.known)) DESC, f.recorded_at DESC, f.fact_id"
# The fact's state at the knowledge instant: its own row if it was believed then, or an archived one.
_KNOWN_STATE = (
    " CROSS JOIN LATERAL (SELECT f.valid WHERE f.known @> %(as_known_at)s::timestamptz"
    " UNION ALL SELECT h.valid FROM fact_history h"
    " WHERE h.fact_id = f.fact_id AND h.known @> %(as_known_at)s::timestamptz) st(valid)"
)


def _temporal(as_of, as_known_at):
    """(state join, state valid expression, temporal predicate, arm order) for the four variants."""
    if as_known_at is None:
        if as_of is None:
            # upper_inf rather than "@> now()": the database clock stamps known, not ours.
            return "", "f.valid", "upper_inf(f.valid) AND upper_inf(f.known)", _CURRENT_ORDER
        return "", "f.valid", "f.valid @> %(as_of)s::timestamptz AND upper_inf(f.known)", _HISTORIC_ORDER
    validity = "upper_inf(st.valid)" if as_of is None else "st.valid @> %(as_of)s::timestamptz"
    return _KNOWN_STATE, "st.valid", validity, _HISTORIC_ORDER


def _arm(here, there, state_join, state_valid, predicate, order, subject):
    subject_filter = " AND f.data_subject_id = %(subject)s" if subject else ""
    return (
        f"(SELECT f.fact_id, f.predicate, f.{there} AS other, {state_valid} AS valid,"
        f" row_number() OVER (ORDER BY {order}) AS rn"
        f" FROM fact f{state_join}"
        f" WHERE f.{here} = w.node AND f.scope = %(project)s AND f.source_role = ANY(%(roles)s::text[])"
        f"{subject_filter} AND (f.retention_until IS NULL OR f.retention_until > now()) AND {predicate}"
        f" ORDER BY {order} LIMIT {FANOUT + 1})"
    )


def _walk_sql(*, subject, as_of, as_known_at):
    state_join, state_valid, predicate, order = _temporal(as_of, as_known_at)
    forward = _arm("subject_entity_id", "object_entity_id", state_join, state_valid, predicate, order, subject)
    backward = _arm("object_entity_id", "subject_entity_id", state_join, state_valid, predicate, order, subject)
    visible = " AND o.data_subject_id = %(subject)s" if subject else ""
    return f"""
WITH RECURSIVE walk (node, anchor, hops, path, via, fact_id, valid, from_path, from_via, rn) AS (
  SELECT a.id, a.id, 0, ARRAY[a.id], ARRAY[]::text[], NULL::uuid, NULL::tstzrange,
         ARRAY[]::uuid[], ARRAY[]::text[], 0::bigint
  FROM unnest(%(anchors)s::text[]::uuid[]) AS a(id)
  UNION ALL
  SELECT s.other, w.anchor, w.hops + 1, w.path || s.other, w.via || s.predicate::text, s.fact_id, s.valid,
         w.path, w.via, s.rn
  FROM walk w
  CROSS JOIN LATERAL ({forward} UNION ALL {backward}) s
  WHERE w.hops < %(hops)s::int AND w.rn <= {FANOUT} AND w.node IS NOT NULL AND NOT w.node = ANY(w.from_path)
),
reached AS (
  -- Shortest route first, then the smallest anchor; the path only breaks the last tie, for determinism.
  SELECT DISTINCT ON (fact_id) fact_id, hops, anchor, from_path, from_via, valid
  FROM walk WHERE hops > 0 AND rn <= {FANOUT}
  ORDER BY fact_id, hops, anchor, from_path
),
capped AS (SELECT coalesce(bool_or(rn > {FANOUT}), false) AS capped FROM walk)
SELECT capped.capped, b.* FROM capped LEFT JOIN LATERAL (
  SELECT r.fact_id::text, r.hops, r.anchor::text, f.predicate, f.statement, f.confidence, f.source_role,
         lower(r.valid), upper(r.valid), coalesce(se.canonical_name, ''), coalesce(oe.canonical_name, ''),
         CASE WHEN r.hops > 1 THEN ARRAY(
           SELECT coalesce(pe.canonical_name, '') FROM unnest(r.from_path) WITH ORDINALITY AS p(id, n)
           LEFT JOIN entity pe ON pe.entity_id = p.id ORDER BY p.n) ELSE ARRAY[]::text[] END,
         r.from_via,
         ev.source_observation_id::text, ev.source_ordinal, ev.quote, ev.byte_start, ev.byte_end,
         substring(mb.bytes FROM greatest(0, ev.byte_start - {CONTEXT_WINDOW}) + 1
                   FOR least(octet_length(mb.bytes), ev.byte_end + {CONTEXT_WINDOW})
                       - greatest(0, ev.byte_start - {CONTEXT_WINDOW})),
         greatest(0, ev.byte_start - {CONTEXT_WINDOW}), octet_length(mb.bytes),
         f.subject_entity_id::text, f.object_entity_id::text,
         CASE WHEN r.hops > 1 THEN r.from_path::text[] ELSE ARRAY[]::text[] END
  FROM reached r
  JOIN fact f ON f.fact_id = r.fact_id
  CROSS JOIN LATERAL (
    SELECT ev.source_observation_id, ev.source_ordinal, ev.quote, ev.byte_start, ev.byte_end
    FROM fact_evidence ev LEFT JOIN observation o ON o.observation_id = ev.source_observation_id
    WHERE ev.fact_id = r.fact_id{visible}
    ORDER BY o.log_offset NULLS LAST, ev.source_ordinal, ev.byte_start LIMIT 1
  ) ev
  LEFT JOIN turn_message m ON m.observation_id = ev.source_observation_id AND m.ordinal = ev.source_ordinal
  CROSS JOIN LATERAL (SELECT convert_to(m.content, 'UTF8') AS bytes) mb
  LEFT JOIN entity se ON se.entity_id = f.subject_entity_id
  LEFT JOIN entity oe ON oe.entity_id = f.object_entity_id
  ORDER BY r.hops, f.predicate, r.fact_id
  LIMIT {MAX_ROWS + 1}
) b ON true
"""


def walk_statement(*, project, anchors, subject=None, as_of=None, as_known_at=None, source_roles=DEFAULT_ROLES,
                   hops=1):
    """The walk's SQL and parameters (also used by the benchmark to time the statement alone)."""
    sql = _walk_sql(subject=subject, as_of=as_of, as_known_at=as_known_at)
    params = {"project": project, "anchors": list(anchors), "subject": subject, "as_of": as_of,
              "as_known_at": as_known_at, "roles": list(source_roles), "hops": hops}
    return sql, params


def _fact(row, names):
    (fact_id, hops, anchor, predicate, statement, confidence, role, valid_from, valid_until, subject, obj,
     path, via, observation_id, ordinal, quote, byte_start, byte_end, window, window_start, message_bytes,
     subject_id, object_id, path_ids) = row
    if window is None:
        context, context_start, complete = "", byte_start, False
    else:
        context, context_start, complete = legible(window, window_start, byte_start, byte_end, message_bytes)
    if names:
        subject = names.get(subject_id, subject)
        obj = names.get(object_id, obj)
        path = [names.get(entity_id, name) for entity_id, name in zip(path_ids, path, strict=True)]
    return {
        "fact_id": fact_id, "subject": subject, "predicate": predicate, "object": obj, "statement": statement,
        "confidence": format_float32(confidence), "valid_from": format_ts(valid_from),
        "valid_until": format_ts(valid_until), "anchored_on": anchor, "source_role": role, "hops": hops,
        "path": list(path), "via": list(via), "co_derived_with": [],
        "evidence": {"observation_id": observation_id or "", "source_ordinal": ordinal, "quote": quote,
                     "byte_start": byte_start, "byte_end": byte_end, "context": context,
                     "context_start": context_start, "context_complete": complete},
    }


# A shared entity's canonical name is the spelling first seen in the project, possibly in another person's
# turn. A recall for one subject shows that subject's own first spelling instead (every named entity its
# facts reach was named in its own turns), so nothing in the bundle is derived from anyone else's words.
_SUBJECT_NAMES = (
    "SELECT e.entity_id::text, coalesce((SELECT r.name FROM entity_name_receipt r"
    "  JOIN observation o ON o.observation_id = r.source_observation_id"
    "  WHERE r.entity_id = e.entity_id AND o.scope = e.scope AND o.data_subject_id = %s"
    "  ORDER BY o.log_offset, r.id LIMIT 1), e.normalized_name)"
    " FROM entity e WHERE e.entity_id = ANY(%s::uuid[]) AND e.identity_kind = 'named'"
)


def _subject_names(cursor, subject, anchors, rows):
    ids = {a["entity_id"] for a in anchors if a["matched"] != "speaker"}
    for row in rows:
        ids.update(entity_id for entity_id in (row[-3], row[-2], *row[-1]) if entity_id)
    if not ids:
        return {}
    cursor.execute(_SUBJECT_NAMES, [subject, sorted(ids)])
    return dict(cursor.fetchall())


def _size(fact):
    texts = [fact["subject"], fact["predicate"], fact["object"], fact["statement"], fact["source_role"],
             fact["evidence"]["quote"], fact["evidence"]["context"], *fact["path"], *fact["via"]]
    return sum(len(text) for text in texts)


def _mark_co_derived(facts):
    groups = {}
    for fact in facts:
        observation_id = fact["evidence"]["observation_id"]
        if not observation_id or not fact["subject"]:
            continue
        key = (observation_id, fact["evidence"]["source_ordinal"], normalize(fact["subject"]))
        groups.setdefault(key, []).append(fact)
    for members in groups.values():
        for fact in members:
            fact["co_derived_with"] = [other["fact_id"] for other in members if other["fact_id"] != fact["fact_id"]]


# ---------------------------------------------------------------------------------------------
# The bundle (§7)


def _empty_bundle(applied, found=0):
    return {"controls": applied.as_dict(), "anchors": [], "facts": [], "reports": [], "passages": [],
            "truncated": False, "characters": 0, "degraded": [],
            "reach": {"terms": found, "anchored": 0, "named_nothing_known": False, "facts_per_anchor": {}}}


def _prepared_cursor():
    """A server-side binding cursor on Django's own connection, so the anchor query and the walk run as
    prepared statements: planning the walk costs more than executing it for an ordinary anchor."""
    connection.ensure_connection()
    return psycopg.Cursor(connection.connection)


@contextmanager
def _snapshot():
    """One read-only snapshot for the anchor query and the walk; inside a caller's transaction, that one."""
    if connection.in_atomic_block:
        yield
        return
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        yield


def recall(*, project, question, applied, data_subject_id=None, as_of=None, as_known_at=None, timings=None):
    """The bundle for a question. Raises Invalid(invalid_question) past a size or anchor limit. `timings`, a dict,
    receives the question embedding's model time and wait (ms) when one ran."""
    found = check_question(question)
    if not found:
        return _empty_bundle(applied)
    subject = data_subject_id or None
    rows, capped = [], False
    # Passages always embed the question: start now, so the model runs while the facts are read.
    embedding = passages.begin_question_embedding(project, question, subject) if "passages" in applied.surfaces \
        else None
    semantic_ran = False
    lexical = None
    with _snapshot(), connection.wrap_database_errors, _prepared_cursor() as cursor:
        anchors = _anchors(cursor, project, found, subject)
        exact = len(anchors)
        if embedding is not None:  # passages' lexical half, read while the question is embedded
            named_speakers = [] if subject else _named_subjects(cursor, project, found)  # spares the statement
            lexical = passages.lexical_candidates(cursor, project=project, question=question,
                                                  limit=MAX_RECALL_PASSAGES, data_subject_id=subject,
                                                  roles=applied.source_roles, named_subjects=named_speakers,
                                                  question_embedding=embedding)
        if "facts" in applied.surfaces and not anchors:
            embedding = (embedding or passages.begin_question_embedding(project, question, subject)).result()
            semantic_ran, anchors = _semantic_anchors(cursor, project, embedding, subject)
        if "facts" in applied.surfaces and anchors:
            sql, params = walk_statement(
                project=project, anchors=[a["entity_id"] for a in anchors], subject=subject, as_of=as_of,
                as_known_at=as_known_at, source_roles=applied.source_roles, hops=applied.hops)
            cursor.execute(sql, params, prepare=True)
            result = cursor.fetchall()
            capped = bool(result[0][0])
            rows = [row[1:] for row in result if row[1] is not None]
        names = _subject_names(cursor, subject, anchors, rows[:MAX_ROWS]) if subject else {}
    for anchor in anchors:
        anchor["name"] = names.get(anchor["entity_id"], anchor["name"])
    found_passages = None
    if "passages" in applied.surfaces:
        found_passages = passages.search(project=project, question=question, limit=MAX_RECALL_PASSAGES,
                                         data_subject_id=subject, roles=applied.source_roles, approximate=True,
                                         with_coverage=False, question_embedding=embedding, lexical=lexical)
    if timings is not None and embedding is not None:
        done = embedding.result()  # finished already: the anchors or the passages waited for it
        if done.vector is not None:
            waited = done.waited_ms if embedding is done else 0.0  # what the anchors waited, if they did
            if found_passages is not None:
                waited += found_passages.question_embedding_wait_ms
            timings.update({"embed": done.ms, "embed-wait": waited})
    rows = _speaker_by_relevance(rows[:MAX_ROWS], anchors, question) + rows[MAX_ROWS:]
    return _compose(applied, found, anchors, rows, capped, subject, names, found_passages,
                    question=question, exact=exact, semantic_ran=semantic_ran)


def _semantic_anchors(cursor, project, embedding, subject):
    """(whether the semantic surface ran, anchors): when the question names no entity, up to 4 entities whose
    names and quotes are nearest it start the walk, marked `semantic:0.xx` (docs/decisions.md)."""
    if embedding.vector is None or not entity_candidates.entity_storage_ready():
        return False, []
    nearest, _ = entity_candidates.nearest(
        cursor, project=project, generation=embedding.generation, question_literal=embedding.literal,
        limit=MAX_SEMANTIC_ANCHORS, candidates=MAX_SEMANTIC_ANCHORS * 4, subject=subject)
    return True, [{"entity_id": c.entity_id, "name": c.name, "type": c.entity_type,
                   "matched": f"semantic:{c.similarity:.2f}"}
                  for c in nearest if c.similarity >= MIN_SEMANTIC_SIMILARITY]


def _speaker_by_relevance(rows, anchors, question):
    """Facts reached only through the speaker anchor, ordered by how many of the question's content words they
    share (predicate, object, statement, quote), then newest validity first, then fact id; exact-anchor facts
    keep the walk order and come first."""
    speakers = {a["entity_id"] for a in anchors if a["matched"] == "speaker"}
    if not speakers:
        return rows
    asked = relevance.terms(question)
    exact = [row for row in rows if row[2] not in speakers]
    spoken = [row for row in rows if row[2] in speakers]

    def key(row):
        text = " ".join(str(part) for part in (row[3].replace("_", " "), row[10], row[4], row[15] or ""))
        overlap = len(asked & relevance.terms(text))
        valid_from = row[7].timestamp() if row[7] is not None else 0.0
        return (-overlap, -valid_from, row[0])

    return exact + sorted(spoken, key=key)


def _passage_items(found, question):
    """Each hit's quote: the whole message when it fits, else the window of it that holds most of the question's
    words (relevance.quote_window); `complete` says whether the quote is the whole message."""
    asked = relevance.terms(question)
    items = []
    for hit in found.hits[:MAX_RECALL_PASSAGES]:
        quote = relevance.quote_window(hit.content, asked, MAX_QUOTE_CHARS)
        items.append({"chunk_id": hit.chunk_id, "source_id": hit.source_id, "ordinal": hit.ordinal, "role": hit.role,
                      "quote": quote, "similarity": hit.similarity, "occurred_at": format_ts(hit.occurred_at),
                      "complete": len(quote) == len(hit.content)})
    return items


def _compose(applied, found, anchors, rows, capped, subject, names, found_passages=None, *, question,
             exact=None, semantic_ran=False):
    bundle = _empty_bundle(applied, len(found))
    degraded = bundle["degraded"]

    def degrade(value):
        if value not in degraded:
            degraded.append(value)

    exact = len(anchors) if exact is None else exact
    spent = 0
    passage_items = _passage_items(found_passages, question) if found_passages is not None else []
    reserve = 0
    if passage_items and "facts" in applied.surfaces:
        wanted = sum(len(item["quote"]) + len(item["role"]) for item in passage_items)
        reserve = min(PASSAGE_RESERVE, applied.max_characters // 4, wanted)
    fact_budget = applied.max_characters - reserve
    if "facts" not in applied.surfaces:
        # No walk: nothing comes back, but the names the question matched are still counted.
        bundle["reach"]["anchored"] = exact
    else:
        if exact == 0 and not semantic_ran and applied.surfaces_explicit:
            degrade("semantic_anchors")
        truncated = capped or len(rows) > MAX_ROWS
        facts = []
        for row in rows[:MAX_ROWS]:
            fact = _fact(row, names)
            size = _size(fact)
            if size > fact_budget - spent:
                truncated = True  # the first misfit ends the surface; nothing later is tried
                break
            facts.append(fact)
            spent += size
        _mark_co_derived(facts)
        per_anchor = bundle["reach"]["facts_per_anchor"]
        for fact in facts:
            per_anchor[fact["anchored_on"]] = per_anchor.get(fact["anchored_on"], 0) + 1
            if fact["evidence"]["context"] == "":
                degrade("citation_context")
        bundle.update(anchors=anchors, facts=facts, truncated=truncated)
        bundle["reach"]["anchored"] = len(anchors)  # exact and semantic anchors kept
    # No reports surface exists: reports are never served, only reported when asked for.
    if "reports" in applied.surfaces and (applied.themes or exact == 0):
        if subject:
            degrade("reports_withheld_for_subject")
        elif applied.surfaces_explicit:
            degrade("reports")
    if found_passages is not None and spent < applied.max_characters:
        if not found_passages.semantic and applied.surfaces_explicit:
            degrade("passages")  # the vector half could not run: these passages are lexical only
        kept = []
        for item in passage_items:
            cost = len(item["quote"]) + len(item["role"])
            if cost > applied.max_characters - spent:
                bundle["truncated"] = True
                break
            kept.append(item)
            spent += cost
        bundle["passages"] = kept
    bundle["characters"] = spent
    bundle["reach"]["named_nothing_known"] = bundle["reach"]["terms"] > 0 and bundle["reach"]["anchored"] == 0
    return bundle

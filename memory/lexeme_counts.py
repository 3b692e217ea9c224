"""Lexeme document counts: the per-project idf statistics the lexical half reads, kept as deltas written with each
passage source (memory/lexical_index.py) and by triggers on passage_source (memory/passage_schema.py), and the fold
that sums a key's deltas into one row."""
from django.db import connection, transaction

from core.locks import advisory_xact_lock

from .passage_schema import TS_CONFIG

FOLD_LOCK = "lexeme-fold"


def question_counts(cursor, *, project, question):
    """({lexeme: document count} for the question's lexemes, the project's stored observations, the offset through
    which the lexical follower has indexed), in one statement: the question is parsed with the passages'
    text-search configuration."""
    cursor.execute(
        "SELECT (SELECT w.log_offset + 1 FROM watermark w WHERE w.scope = %(p)s),"
        " coalesce((SELECT s.indexed_through FROM passage_lexical_state s WHERE s.scope = %(p)s), -1), q.l,"
        " coalesce((SELECT sum(c.documents) FROM passage_lexeme_count c WHERE c.scope = %(p)s"
        "  AND c.lexeme_key = memoir_lexeme_key(q.l)), 0)::bigint"
        f" FROM (SELECT 1) one LEFT JOIN LATERAL unnest(tsvector_to_array(to_tsvector('{TS_CONFIG}'::regconfig,"
        " %(q)s::text))) q(l) ON true",
        {"p": project, "q": question})
    rows = cursor.fetchall()
    stored, indexed = rows[0][0], rows[0][1]
    return {lexeme: max(0, int(n)) for _, _, lexeme, n in rows if lexeme is not None}, stored, indexed


def fold(cursor, *, project):
    """Sum every key with unfolded deltas into one folded row, dropping keys no source holds any more; returns the
    number of keys dropped. Folds serialize on the project (erasure folds in its own transaction)."""
    advisory_xact_lock(cursor, FOLD_LOCK, project)
    cursor.execute(
        "WITH keys AS (SELECT DISTINCT lexeme_key FROM passage_lexeme_count WHERE scope = %(p)s AND NOT folded),"
        " gone AS (DELETE FROM passage_lexeme_count c USING keys k WHERE c.scope = %(p)s"
        "  AND c.lexeme_key = k.lexeme_key RETURNING c.lexeme_key, c.documents),"
        " summed AS (SELECT lexeme_key, sum(documents) AS n FROM gone GROUP BY lexeme_key),"
        " kept AS (INSERT INTO passage_lexeme_count (scope, lexeme_key, documents, folded)"
        "  SELECT %(p)s, lexeme_key, n, true FROM summed WHERE n > 0 RETURNING 1)"
        " SELECT count(*) FILTER (WHERE n <= 0) FROM summed", {"p": project})
    return cursor.fetchone()[0]


def held_nowhere(cursor, *, project, lexemes):
    """How many of `lexemes` are still counted for the project although no passage source holds them (after an
    erasure this must be 0: a count would be a trace of erased words)."""
    if not lexemes:
        return 0
    distinct = sorted(set(lexemes))
    cursor.execute(
        "SELECT count(*) FROM unnest(%s::text[], %s::tsquery[]) x(l, q) WHERE (SELECT sum(c.documents)"
        "  FROM passage_lexeme_count c WHERE c.scope = %s AND c.lexeme_key = memoir_lexeme_key(x.l)) > 0"
        " AND NOT EXISTS (SELECT 1 FROM passage_source p WHERE p.scope = %s AND p.lexemes @@ x.q)",
        [distinct, [tsquery_literal(lexeme) for lexeme in distinct], project, project])
    return cursor.fetchone()[0]


def tsquery_literal(lexeme):
    """A tsquery text matching exactly this lexeme: quoted, with quote and backslash escaped."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "\\'") + "'"


def projects_to_fold():
    with connection.cursor() as cursor:
        cursor.execute("SELECT DISTINCT scope FROM passage_lexeme_count WHERE NOT folded ORDER BY scope")
        return [row[0] for row in cursor.fetchall()]


def fold_projects():
    """One fold per project with unfolded deltas, each in its own transaction (the embedding sweep runs it)."""
    folded = 0
    for project in projects_to_fold():
        with transaction.atomic(), connection.cursor() as cursor:
            fold(cursor, project=project)
        folded += 1
    return folded

"""Row helpers for tests that read the database directly, in the test's own connection (and transaction)."""
from django.db import connection


def _bound(params):
    return params if isinstance(params, dict) else list(params)


def rows(sql, params=()):
    """Every row; [] for a statement that returns none."""
    with connection.cursor() as cursor:
        cursor.execute(sql, _bound(params))
        return cursor.fetchall() if cursor.description else []


def one(sql, params=()):
    """The only row: the query must return exactly one."""
    result = rows(sql, params)
    assert len(result) == 1, result
    return result[0]


def first(sql, params=()):
    """The first row, or None."""
    with connection.cursor() as cursor:
        cursor.execute(sql, _bound(params))
        return cursor.fetchone()

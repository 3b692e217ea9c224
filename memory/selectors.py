"""Memory reads: freshness and the inspection reads (recall.md §10)."""
from dataclasses import dataclass

from django.db import connection


@dataclass(frozen=True)
class Freshness:
    scope: str
    stored: int | None
    formed: int | None
    parked: int

    def as_dict(self):
        return {"scope": self.scope, "stored": self.stored, "formed": self.formed, "parked": self.parked}


def freshness(*, project):
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT w.log_offset, w.formed_offset,"
            " (SELECT count(*) FROM observation o WHERE o.scope = %s AND o.parked_at IS NOT NULL)"
            " FROM (SELECT 1) one LEFT JOIN watermark w ON w.scope = %s",
            [project, project],
        )
        stored, formed, parked = cursor.fetchone()
    return Freshness(scope=project, stored=stored, formed=formed, parked=parked)

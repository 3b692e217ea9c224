"""Governance reads: projects, credentials and the credential lookup behind every /v1 request."""
from dataclasses import dataclass

from django.db import connection

from .models import Credential, Project


@dataclass(frozen=True)
class Caller:
    """Who a /v1 request is: one credential of one active project."""

    credential_id: str
    project: str
    access: str
    retention_days: int | None


def caller_for_digest(token_digest):
    """The live credential with this digest whose project is active, or None."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.credential_id, c.scope, c.access, p.retention_days FROM credential c"
            " JOIN project p ON p.name = c.scope"
            " WHERE c.token_digest = %s AND c.revoked_at IS NULL AND p.suspended_at IS NULL",
            [token_digest],
        )
        row = cursor.fetchone()
    if row is None:
        return None
    return Caller(credential_id=str(row[0]), project=row[1], access=row[2], retention_days=row[3])


def list_projects():
    return list(Project.objects.order_by("name"))


def list_credentials(*, project=None):
    queryset = Credential.objects.order_by("-created_at")
    if project:
        queryset = queryset.filter(project_id=project)
    return list(queryset)

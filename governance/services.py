"""Governance writes: projects, credentials and their ledger rows (governance.md §5–§6).

Every mutation writes its audit row inside its own transaction, so a failed ledger insert undoes it.
"""
import re

from django.db import transaction
from django.utils import timezone

from core import audit
from core.errors import Conflict, Invalid, NotFound
from governance import tokens

from .models import PROJECT_NAME_RE, Credential, Project


def create_project(*, name, label=None, retention_days=None, principal, principal_kind="operator"):
    if not re.match(PROJECT_NAME_RE, name or ""):
        raise Invalid("invalid_project", "a project name is a lowercase letter then up to 62 of a-z, 0-9, _")
    _check_retention(retention_days)
    label = (label or "").strip() or name
    with transaction.atomic():
        if Project.objects.filter(name=name).exists():
            raise Conflict("project_exists", f"project {name} already exists")
        project = Project.objects.create(name=name, label=label, retention_days=retention_days)
        audit.record(op="project.create", principal=principal, principal_kind=principal_kind, project=name,
                     magnitude=1)
    return project


def _check_retention(retention_days):
    if retention_days is not None and not (1 <= int(retention_days) <= 36500):
        raise Invalid("invalid_retention", "retention is 1 to 36500 days, or indefinite")


def _locked_project(name):
    try:
        return Project.objects.select_for_update().get(name=name)
    except Project.DoesNotExist:
        raise NotFound("not_found", f"no project {name}") from None


def _change_project(*, name, op, principal, principal_kind, change):
    """`change(project)` on the locked project and its ledger row, in one transaction; the project after."""
    with transaction.atomic():
        change(_locked_project(name))
        audit.record(op=op, principal=principal, principal_kind=principal_kind, project=name, magnitude=1)
    return Project.objects.get(name=name)


def _update(name, **values):
    Project.objects.filter(name=name).update(**values)


def suspend_project(*, name, principal, principal_kind="operator"):
    def suspend(project):
        if project.suspended_at is None:  # suspending again keeps the first time
            _update(name, suspended_at=timezone.now())

    return _change_project(name=name, op="project.suspend", principal=principal, principal_kind=principal_kind,
                           change=suspend)


def resume_project(*, name, principal, principal_kind="operator"):
    return _change_project(name=name, op="project.resume", principal=principal, principal_kind=principal_kind,
                           change=lambda project: _update(name, suspended_at=None))


def set_project_retention(*, name, retention_days, principal, principal_kind="operator"):
    """Set retention in days (None = indefinite). Affects only turns appended from now on."""
    _check_retention(retention_days)
    return _change_project(name=name, op="project.retention", principal=principal, principal_kind=principal_kind,
                           change=lambda project: _update(name, retention_days=retention_days))


def set_project_label(*, name, label):
    """Labels are display text only; no ledger op exists for them."""
    label = (label or "").strip()
    if not label:
        raise Invalid("invalid_project", "a label cannot be empty")
    Project.objects.filter(name=name).update(label=label)


def issue_credential(*, project, name, access="read_write", principal, principal_kind="operator"):
    """Create a credential and return (credential, token). The token is shown once and never stored."""
    name = (name or "").strip()
    if not name or len(name) > 128:
        raise Invalid("invalid_credential", "a credential name is 1 to 128 characters")
    if access not in ("read_only", "read_write"):
        raise Invalid("invalid_credential", "access is read_only or read_write")
    token = tokens.new_token()
    with transaction.atomic():
        owner = _locked_project(project)
        if owner.suspended_at is not None:
            raise Conflict("project_suspended", f"project {project} is suspended")
        credential = Credential.objects.create(
            project=owner, name=name, access=access, token_digest=tokens.digest(token),
            token_prefix=token[: tokens.PREFIX_LENGTH])
        audit.record(op="credential.issue", principal=principal, principal_kind=principal_kind,
                     project=project, magnitude=1)
    return credential, token


def revoke_credential(*, credential_id, principal, principal_kind="operator"):
    with transaction.atomic():
        try:
            credential = Credential.objects.select_for_update().get(credential_id=credential_id)
        except (Credential.DoesNotExist, ValueError):
            raise NotFound("not_found", "no such credential") from None
        if credential.revoked_at is None:
            Credential.objects.filter(credential_id=credential_id).update(revoked_at=timezone.now())
        audit.record(op="credential.revoke", principal=principal, principal_kind=principal_kind,
                     project=credential.project_id, magnitude=1)
    return Credential.objects.get(credential_id=credential_id)

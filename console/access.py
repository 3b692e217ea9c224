"""Who may see what on the console, and the ledger row a console read writes: shared by the site, its
model admins and its custom pages, and importing none of them."""
import re

from django.core.exceptions import PermissionDenied

from core import audit
from governance.models import PROJECT_NAME_RE

OPERATOR = "operator"


def principal_of(request):
    return f"user:{request.user.pk}"


def can_view_content(request):
    return request.user.has_perm("memory.view_content")


def ledger_read(request, op, project="", magnitude=0):
    """A best-effort ledger row for a console read; it never names the object viewed. `project` may come
    from a query string, so anything that is not a project name is left out rather than recorded."""
    project = project if isinstance(project, str) and re.fullmatch(PROJECT_NAME_RE, project) else ""
    audit.record_best_effort(op=op, principal=principal_of(request), principal_kind=OPERATOR, project=project,
                             magnitude=magnitude)


def hexdigest(value):
    return bytes(value).hex() if value is not None else ""


# The subject page opens to anyone who may see one of its sections (console/subject.py).
SUBJECT_PAGE_PERMS = ("memory.view_turnmessage", "memory.view_fact", "memory.view_rejectedclaim",
                      "governance.view_agentartifact", "governance.view_erasurerequest", "governance.view_datasubject")


def may_open(request, perm):
    if perm is None:
        return any(request.user.has_perm(p) for p in SUBJECT_PAGE_PERMS)
    return request.user.has_perm(perm)



def require(request, perm):
    """Custom pages answer 403 to a signed-in user without the page's permission."""
    if not request.user.has_perm(perm):
        raise PermissionDenied



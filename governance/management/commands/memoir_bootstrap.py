"""`memoir_bootstrap`: what `make run` needs on first start: a default project, an admin login and one
read-write token, each created once and printed once. Later runs create nothing and say so."""
import os
import secrets

from django.contrib.auth import get_user_model

from core import audit
from core.commands import OperatorCommand
from governance import services
from governance.models import Credential, Project


class Command(OperatorCommand):
    help = "Create the default project, an admin login and a project token (each only once)."

    def add_arguments(self, parser):
        parser.add_argument("--project", default="default", help="the project to create (default: %(default)s)")
        parser.add_argument("--admin", default="admin", help="the console superuser's name (default: %(default)s)")

    def run(self, *, project, admin, **options):
        lines, result = [], {"project": project, "created_project": False, "admin": admin, "password": None,
                              "token": None}
        if not Project.objects.filter(name=project).exists():
            services.create_project(name=project, label="Default project", principal=audit.CLI_PRINCIPAL)
            result["created_project"] = True
            lines.append(f"created project {project}")
        users = get_user_model()
        if not users.objects.filter(username=admin).exists():
            password = secrets.token_urlsafe(12)
            users.objects.create_superuser(username=admin, email="", password=password)
            bind = os.environ.get("MEMOIR_BIND", "127.0.0.1:8000")
            result["password"] = password
            lines.append(f"console login (shown once): http://{bind}/console/  user {admin}  password {password}")
        if not Credential.objects.filter(project_id=project, revoked_at__isnull=True).exists():
            credential, token = services.issue_credential(project=project, name="make-run",
                                                          principal=audit.CLI_PRINCIPAL)
            result["token"] = token
            lines.append(f"read-write token for project {project} (shown once): {token}")
            lines.append(f"  export TOKEN={token}")
        else:
            lines.append(f"project {project} already has a live credential; issue another with:"
                         f" ./manage.py memoir_credential issue NAME --project {project}")
        return result, lines

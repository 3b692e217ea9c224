"""`memoir_project create|list|suspend|resume|retention`: project administration from the shell."""
from django.core.management.base import BaseCommand, CommandError

from governance import audit, selectors, services
from memory.errors import DomainError


class Command(BaseCommand):
    help = "Create, list, suspend, resume projects and set their retention."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create")
        create.add_argument("name")
        create.add_argument("--label")
        create.add_argument("--retention-days", type=int)
        sub.add_parser("list")
        for action in ("suspend", "resume"):
            sub.add_parser(action).add_argument("name")
        retention = sub.add_parser("retention")
        retention.add_argument("name")
        retention.add_argument("days", help="1..36500 or 'indefinite'")

    def handle(self, *args, action, **options):
        try:
            getattr(self, f"do_{action}")(**options)
        except DomainError as err:
            raise CommandError(err.message or err.code) from None

    def do_create(self, name, label=None, retention_days=None, **_):
        project = services.create_project(name=name, label=label, retention_days=retention_days,
                                          principal=audit.CLI_PRINCIPAL)
        self.stdout.write(f"created project {project.name}")

    def do_list(self, **_):
        projects = selectors.list_projects()
        audit.record("project.list", audit.CLI_PRINCIPAL, "operator", "", len(projects))
        for p in projects:
            retention = f"{p.retention_days} days" if p.retention_days else "indefinite"
            state = "suspended" if p.suspended_at else "active"
            self.stdout.write(f"{p.name}\t{p.label}\t{retention}\t{state}")

    def do_suspend(self, name, **_):
        services.suspend_project(name=name, principal=audit.CLI_PRINCIPAL)
        self.stdout.write(f"suspended {name}")

    def do_resume(self, name, **_):
        services.resume_project(name=name, principal=audit.CLI_PRINCIPAL)
        self.stdout.write(f"resumed {name}")

    def do_retention(self, name, days, **_):
        if days == "indefinite":
            value = None
        else:
            try:
                value = int(days)
            except ValueError:
                raise CommandError("retention is a number of days (1..36500) or 'indefinite'") from None
        services.set_project_retention(name=name, retention_days=value, principal=audit.CLI_PRINCIPAL)
        self.stdout.write(f"retention of {name}: {days}")

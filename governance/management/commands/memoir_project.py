"""`memoir_project create|list|suspend|resume|retention`: project administration from the shell."""
from core import audit
from core.commands import OperatorCommand, OperatorError, require_project
from governance import selectors, services


class Command(OperatorCommand):
    help = "Create, list, suspend, resume projects and set their retention."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True,
                                    metavar="{create,list,suspend,resume,retention}", help="what to do")
        create = sub.add_parser("create", help="create a project")
        create.add_argument("name", help="a lowercase letter then up to 62 of a-z, 0-9 and _")
        create.add_argument("--label", help="display text (the name when omitted)")
        create.add_argument("--retention-days", type=int, help="1..36500; omitted keeps turns indefinitely")
        sub.add_parser("list", help="list every project")
        for action, what in (("suspend", "refuse the project's tokens until resumed"),
                             ("resume", "accept the project's tokens again")):
            sub.add_parser(action, help=what).add_argument("name", help="the project's name")
        retention = sub.add_parser("retention", help="set how long the project keeps turns")
        retention.add_argument("name", help="the project's name")
        retention.add_argument("days", help="1..36500 or 'indefinite'")

    def run(self, *, action, **options):
        return getattr(self, f"do_{action}")(**options)

    def do_create(self, name, label=None, retention_days=None, **_):
        project = services.create_project(name=name, label=label, retention_days=retention_days,
                                          principal=audit.CLI_PRINCIPAL)
        return {"name": project.name}, [f"created project {project.name}"]

    def do_list(self, **_):
        projects = selectors.list_projects()
        audit.record(op="project.list", principal=audit.CLI_PRINCIPAL, principal_kind="operator", project="",
                     magnitude=len(projects))
        rows, lines = [], []
        for p in projects:
            retention = f"{p.retention_days} days" if p.retention_days else "indefinite"
            state = "suspended" if p.suspended_at else "active"
            rows.append({"name": p.name, "label": p.label, "retention_days": p.retention_days, "state": state})
            lines.append(f"{p.name}\t{p.label}\t{retention}\t{state}")
        return rows, lines

    def do_suspend(self, name, **_):
        require_project(name)
        services.suspend_project(name=name, principal=audit.CLI_PRINCIPAL)
        return {"name": name, "state": "suspended"}, [f"suspended {name}"]

    def do_resume(self, name, **_):
        require_project(name)
        services.resume_project(name=name, principal=audit.CLI_PRINCIPAL)
        return {"name": name, "state": "active"}, [f"resumed {name}"]

    def do_retention(self, name, days, **_):
        require_project(name)
        if days == "indefinite":
            value = None
        else:
            try:
                value = int(days)
            except ValueError:
                raise OperatorError("retention is a number of days (1..36500) or 'indefinite'") from None
        services.set_project_retention(name=name, retention_days=value, principal=audit.CLI_PRINCIPAL)
        return {"name": name, "retention_days": value}, [f"retention of {name}: {days}"]

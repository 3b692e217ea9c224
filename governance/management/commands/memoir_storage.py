"""`memoir_storage limits --project P [...]`: show or set a project's artifact storage policy."""
from core import audit
from core.commands import OperatorCommand, require_project
from governance import artifacts

FLAGS = {
    "max_object_bytes": "largest artifact in bytes (1..524288)",
    "max_bytes": "total artifact bytes (1..1073741824)",
    "max_objects": "number of artifacts (1..100000)",
    "max_age_hours": "hours an artifact lives (1..8760)",
}


class Command(OperatorCommand):
    help = "Show a project's artifact storage policy, or set its four limits (omitted limits keep their value)."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True, metavar="{limits}", help="limits: show or set")
        limits = sub.add_parser("limits", help="show the policy, or set the limits given")
        limits.add_argument("--project", required=True, help="the project's name")
        for flag, what in FLAGS.items():
            limits.add_argument("--" + flag.replace("_", "-"), type=int, dest=flag, help=what)

    def run(self, *, action, project, **options):
        require_project(project)
        current = artifacts.get_storage_policy(project=project)
        given = {flag: options.get(flag) for flag in FLAGS if options.get(flag) is not None}
        if given:
            # The policy is always set as a whole, so an omitted limit is re-sent at its current value.
            values = {flag: given.get(flag, getattr(current, flag)) for flag in FLAGS}
            current = artifacts.configure_storage(project=project, principal=audit.CLI_PRINCIPAL, **values)
        result = {"project": current.project,
                  **{flag: getattr(current, flag) for flag in FLAGS},
                  "used_bytes": current.used_bytes, "used_objects": current.used_objects}
        return result, [
            f"{current.project}\tmax_object_bytes={current.max_object_bytes}\tmax_bytes={current.max_bytes}"
            f"\tmax_objects={current.max_objects}\tmax_age_hours={current.max_age_hours}"
            f"\tused_bytes={current.used_bytes}\tused_objects={current.used_objects}"]

"""`memoir_storage limits --project P [...]`: show or set a project's artifact storage policy."""
from django.core.management.base import BaseCommand, CommandError

from governance import artifacts, audit
from memory.errors import DomainError

FLAGS = ("max_object_bytes", "max_bytes", "max_objects", "max_age_hours")


class Command(BaseCommand):
    help = "Show a project's artifact storage policy, or set its four limits (omitted limits keep their value)."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        limits = sub.add_parser("limits")
        limits.add_argument("--project", required=True)
        for flag in FLAGS:
            limits.add_argument("--" + flag.replace("_", "-"), type=int, dest=flag)

    def handle(self, *args, action, **options):
        try:
            getattr(self, f"do_{action}")(**options)
        except DomainError as err:
            raise CommandError(err.message or err.code) from None

    def do_limits(self, project, **options):
        current = artifacts.get_storage_policy(project=project)
        given = {flag: options.get(flag) for flag in FLAGS if options.get(flag) is not None}
        if given:
            # The policy is always set as a whole, so an omitted limit is re-sent at its current value.
            values = {flag: given.get(flag, getattr(current, flag)) for flag in FLAGS}
            current = artifacts.configure_storage(project=project, principal=audit.CLI_PRINCIPAL, **values)
        self.stdout.write(
            f"{current.project}\tmax_object_bytes={current.max_object_bytes}\tmax_bytes={current.max_bytes}"
            f"\tmax_objects={current.max_objects}\tmax_age_hours={current.max_age_hours}"
            f"\tused_bytes={current.used_bytes}\tused_objects={current.used_objects}")

"""`memoir_credential issue|list|revoke`: project tokens from the shell. A token is printed once."""
from django.core.management.base import BaseCommand, CommandError

from governance import audit, selectors, services
from memory.errors import DomainError


class Command(BaseCommand):
    help = "Issue (token printed once), list and revoke project credentials."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        issue = sub.add_parser("issue")
        issue.add_argument("name")
        issue.add_argument("--project", required=True)
        issue.add_argument("--read-only", action="store_true")
        listing = sub.add_parser("list")
        listing.add_argument("--project", required=True)
        sub.add_parser("revoke").add_argument("credential_id")

    def handle(self, *args, action, **options):
        try:
            getattr(self, f"do_{action}")(**options)
        except DomainError as err:
            raise CommandError(err.message or err.code) from None

    def do_issue(self, name, project, read_only=False, **_):
        credential, token = services.issue_credential(
            project=project, name=name, access="read_only" if read_only else "read_write",
            principal=audit.CLI_PRINCIPAL)
        self.stderr.write(f"credential {credential.credential_id} ({credential.access}) for {project};"
                          " the token below is shown once and cannot be shown again:")
        self.stdout.write(token)

    def do_list(self, project, **_):
        credentials = selectors.list_credentials(project=project)
        audit.record("credential.list", audit.CLI_PRINCIPAL, "operator", project, len(credentials))
        for c in credentials:
            revoked = c.revoked_at.isoformat() if c.revoked_at else "-"
            last = c.last_used_at.isoformat() if c.last_used_at else "-"
            self.stdout.write(f"{c.credential_id}\t{c.name}\t{c.access}\t{c.token_prefix}\t"
                              f"{c.created_at.isoformat()}\trevoked={revoked}\tlast_used={last}")

    def do_revoke(self, credential_id, **_):
        services.revoke_credential(credential_id=credential_id, principal=audit.CLI_PRINCIPAL)
        self.stdout.write(f"revoked {credential_id}")

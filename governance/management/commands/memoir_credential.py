"""`memoir_credential issue|list|revoke`: project tokens from the shell. A token is printed once."""
from core import audit
from core.commands import OperatorCommand, parse_uuid, require_project
from governance import selectors, services


class Command(OperatorCommand):
    help = "Issue (token printed once), list and revoke project credentials."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True, metavar="{issue,list,revoke}",
                                    help="issue a token, list a project's credentials, or revoke one")
        issue = sub.add_parser("issue", help="issue a credential; its token is printed once on stdout")
        issue.add_argument("name", help="a name for the credential (e.g. the agent using it)")
        issue.add_argument("--project", required=True, help="the project's name")
        issue.add_argument("--read-only", action="store_true", help="issue a read_only credential")
        listing = sub.add_parser("list", help="list a project's credentials (never their tokens)")
        listing.add_argument("--project", required=True, help="the project's name")
        sub.add_parser("revoke", help="revoke a credential at once; this cannot be undone").add_argument(
            "credential_id", help="the credential's id (a UUID, as `list` shows)")

    def run(self, *, action, **options):
        return getattr(self, f"do_{action}")(**options)

    def do_issue(self, name, project, read_only=False, **_):
        require_project(project)
        credential, token = services.issue_credential(
            project=project, name=name, access="read_only" if read_only else "read_write",
            principal=audit.CLI_PRINCIPAL)
        self.stderr.write(f"credential {credential.credential_id} ({credential.access}) for {project};"
                          " the token below is shown once and cannot be shown again:")
        return ({"credential_id": str(credential.credential_id), "project": project, "access": credential.access,
                 "token": token}, [token])

    def do_list(self, project, **_):
        require_project(project)
        credentials = selectors.list_credentials(project=project)
        audit.record(op="credential.list", principal=audit.CLI_PRINCIPAL, principal_kind="operator",
                     project=project, magnitude=len(credentials))
        rows, lines = [], []
        for c in credentials:
            rows.append({"credential_id": str(c.credential_id), "name": c.name, "access": c.access,
                         "token_prefix": c.token_prefix, "created_at": c.created_at, "revoked_at": c.revoked_at,
                         "last_used_at": c.last_used_at})
            revoked = c.revoked_at.isoformat() if c.revoked_at else "-"
            last = c.last_used_at.isoformat() if c.last_used_at else "-"
            lines.append(f"{c.credential_id}\t{c.name}\t{c.access}\t{c.token_prefix}\t"
                         f"{c.created_at.isoformat()}\trevoked={revoked}\tlast_used={last}")
        return rows, lines

    def do_revoke(self, credential_id, **_):
        credential_id = parse_uuid(credential_id, "credential id")
        services.revoke_credential(credential_id=credential_id, principal=audit.CLI_PRINCIPAL)
        return {"credential_id": credential_id, "revoked": True}, [f"revoked {credential_id}"]

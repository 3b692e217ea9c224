"""`memoir_erasures list --project P [--limit N]`: the project's erasure receipts, newest first."""
from governance import erasure

from ._selector import ProjectListing

_CLEAN = {True: "clean", False: "RESIDUAL", None: "open"}


class Command(ProjectListing):
    help = "List a project's erasure receipts (selector kind, times, clean), newest first."
    action, action_help, op = "list", "list receipts, newest first (never their subject)", "erasure.list"

    def rows(self, project, limit):
        return erasure.list_erasures(project=project, limit=limit)

    def line(self, item):
        return (f"{item['request_id']}\t{item['selector']}\t{item['requested_at']}\t{item['completed_at'] or '-'}\t"
                f"{_CLEAN[item['clean']]}")

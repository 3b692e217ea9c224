"""`memoir_refusals summary --project P [--limit N]`: refusal counts by reason and predicate, largest first."""
from governance import export

from ._selector import ProjectListing


class Command(ProjectListing):
    help = "Summarize a project's refused claims by (reason, predicate)."
    action, action_help, op = "summary", "counts by (reason, predicate), largest first", "refusal.summary"

    def rows(self, project, limit):
        return export.refusal_summary(project=project, limit=limit)

    def line(self, row):
        return f"{row['count']}\t{row['reason']}\t{row['predicate']}"

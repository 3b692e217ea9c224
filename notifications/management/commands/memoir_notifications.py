"""`memoir_notifications endpoints|deliveries|retry|deliver`: the console's notification pages from the shell."""
import uuid

from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from core import audit
from core.encoding import format_ts
from notifications import delivery, selectors, services


class Command(BaseCommand):
    help = "List a project's endpoints and deliveries (parked first), retry parked deliveries, run one send pass."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        sub.add_parser("endpoints").add_argument("--project", required=True)
        deliveries = sub.add_parser("deliveries")
        deliveries.add_argument("--project", required=True)
        deliveries.add_argument("--limit", type=int, default=50)
        sub.add_parser("retry").add_argument("delivery_id", nargs="+")
        sub.add_parser("deliver")

    def handle(self, *args, action, **options):
        getattr(self, f"do_{action}")(**options)

    def do_endpoints(self, project, **_):
        rows = selectors.list_endpoints(project=project)
        audit.record(op="notification.list", principal=audit.CLI_PRINCIPAL, principal_kind="operator",
                     project=project, magnitude=len(rows))
        for row in rows:
            state = f"disabled {format_ts(row['disabled_at'])}" if row["disabled_at"] else "enabled"
            self.stdout.write(f"{row['id']}\t{row['url']}\t{format_ts(row['created_at'])}\t{state}")

    def do_deliveries(self, project, limit, **_):
        if not 1 <= limit <= 500:
            raise CommandError("--limit is 1..500")
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT delivery_id, formed_through, attempts, last_status, last_error, delivered_at, parked_at"
                " FROM notification_delivery WHERE scope = %s"
                " ORDER BY parked_at DESC NULLS LAST, created_at DESC LIMIT %s", [project, limit])
            rows = cursor.fetchall()
        audit.record(op="notification.deliveries", principal=audit.CLI_PRINCIPAL, principal_kind="operator",
                     project=project, magnitude=len(rows))
        for delivery_id, formed, attempts, status, error, delivered_at, parked_at in rows:
            state = "delivered" if delivered_at else ("parked" if parked_at else "pending")
            self.stdout.write(f"{delivery_id}\t{state}\tformed_through={formed}\tattempts={attempts}"
                              f"\tlast_status={status or '-'}\tlast_error={error or '-'}")

    def do_retry(self, delivery_id, **_):
        try:
            ids = [str(uuid.UUID(value)) for value in delivery_id]
        except ValueError:
            raise CommandError("delivery ids are UUIDs") from None
        count = services.retry_parked(delivery_ids=ids, principal=audit.CLI_PRINCIPAL)
        self.stdout.write(f"{count} parked deliveries queued again")

    def do_deliver(self, **_):
        self.stdout.write(f"sent {delivery.deliver_due()} deliveries")

"""Access modes as a DRF permission (api.md §1.3): a read_only credential may call only the ops listed here; any
op not listed, including future ones, is refused."""
from rest_framework.permissions import BasePermission

READ_ONLY_OPS = frozenset({
    "freshness", "recall", "context.assemble", "export", "citation.resolve", "message.get", "record.list",
    "record.history", "entity.list", "entity.get", "embedding.search", "entity_embedding.search",
    "report_embedding.search", "artifact.get", "artifact.list", "subject.get", "subject.list", "feedback.list",
    "notification.list", "notification.deliveries",
})


class AccessMode(BasePermission):
    def has_permission(self, request, view):
        return request.user.access == "read_write" or view.op in READ_ONLY_OPS

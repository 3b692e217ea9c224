"""The console's notification pages: endpoints, and deliveries with parked ones first and an action that puts a
parked delivery back in the queue (same delivery id). No other writes; the secret is never shown."""
from django.contrib import admin, messages
from django.db.models import F

from console.access import principal_of
from console.site import LedgeredAdmin, NoWritesMixin, site
from notifications import services
from notifications.models import NotificationDelivery, NotificationEndpoint


@admin.register(NotificationEndpoint, site=site)
class NotificationEndpointAdmin(NoWritesMixin, LedgeredAdmin):
    actions = None
    list_op = "notification.list"
    detail_op = "console.read"
    list_display = ("id", "project", "url", "created_at", "disabled_at", "created_by")
    list_filter = ("project",)
    list_select_related = ("project",)
    ordering = ("-created_at",)
    fields = ("id", "project", "url", "created_at", "disabled_at", "created_by")
    readonly_fields = fields


@admin.register(NotificationDelivery, site=site)
class NotificationDeliveryAdmin(NoWritesMixin, LedgeredAdmin):
    list_op = "notification.deliveries"
    detail_op = "console.read"
    actions = ["retry_parked"]
    list_display = ("id", "project", "state", "attempts", "last_status", "last_error", "formed_through",
                    "stored_through", "created_at", "delivered_at", "parked_at")
    list_filter = ("project", ("parked_at", admin.EmptyFieldListFilter),
                   ("delivered_at", admin.EmptyFieldListFilter))
    list_select_related = ("project", "endpoint")
    ordering = (F("parked_at").desc(nulls_last=True), "-created_at")
    fields = ("id", "project", "endpoint", "formed_through", "stored_through", "parked_turns", "occurred_at",
              "created_at", "attempts", "next_attempt_at", "last_attempt_at", "last_status", "last_error",
              "delivered_at", "parked_at")
    readonly_fields = fields

    @admin.display(description="state")
    def state(self, obj):
        if obj.delivered_at:
            return "delivered"
        if obj.parked_at:
            return "parked"
        return "pending"

    def has_retry_permission(self, request):
        return request.user.has_perm("notifications.retry_delivery")

    @admin.action(description="Retry the selected parked deliveries", permissions=["retry"])
    def retry_parked(self, request, queryset):
        ids = list(queryset.filter(parked_at__isnull=False, delivered_at__isnull=True).values_list("id", flat=True))
        count = services.retry_parked(delivery_ids=ids, principal=principal_of(request))
        self.message_user(request, f"{count} parked deliveries queued again.", messages.SUCCESS)

"""The four /v1 notification routes (api.md §7.9, docs/webhooks.md): thin views over notifications.services
and notifications.selectors. With MEMOIR_NOTIFY_DESTINATIONS unset each answers 501 without reading the body."""
from rest_framework import serializers

from core.encoding import format_ts
from core.strings import canonical_uuid
from notifications import destinations, selectors, services

from .base import Result, V1View
from .bodies import answer, choice, count, integer, text, uuid, when
from .contract import Body, Integer, RouteDoc, Text, Uuid
from .errors import ApiError

_NOTIFY_OFF = "With MEMOIR_NOTIFY_DESTINATIONS unset: 501 notifications_unavailable, the body unread."


class NotificationRegisterRequest(Body):
    code = "invalid_destination"
    # The rest (https, an allowed host, a public address) is notifications.destinations', after the body.
    url = Text(required=True, non_blank=True, max_bytes=destinations.MAX_URL_BYTES,
               description="https, an allowed host, no credentials, a public address")


class NotificationListRequest(Body):
    pass  # no fields: any field is invalid_body


class NotificationDisableRequest(Body):
    code = "invalid_destination"
    id = Uuid(required=True)


class NotificationDeliveriesRequest(Body):
    limit = Integer(description="0 or omitted means 20; clamped into [1, 100]")


_ENDPOINT = {"id": uuid(), "url": text(), "created_at": when()}
NotificationEndpoint = answer("NotificationEndpoint", _ENDPOINT, {"disabled_at": when()})
# disabled_at stays before secret in the document, so here it is a field left out when it does not apply.
NotificationEndpointCreated = answer(
    "NotificationEndpointCreated",
    {**_ENDPOINT, "disabled_at": serializers.DateTimeField(required=False), "secret": text()})
NotificationEndpoints = answer("NotificationEndpoints", {"endpoints": [NotificationEndpoint]})
NotificationDisabled = answer("NotificationDisabled", {"disabled": choice([True])})
NotificationDelivery = answer(
    "NotificationDelivery",
    {"id": uuid(), "endpoint_id": uuid(), "url": text(), "formed_through": integer(), "stored_through": integer(),
     "attempts": count(), "created_at": when()},
    {"delivered_at": when(), "parked_at": when(), "last_status": integer(), "last_error": text()})
NotificationDeliveries = answer("NotificationDeliveries", {"deliveries": [NotificationDelivery]})


def _endpoint(item):
    data = {"id": item["id"], "url": item["url"], "created_at": format_ts(item["created_at"])}
    if item.get("disabled_at") is not None:
        data["disabled_at"] = format_ts(item["disabled_at"])
    return data


def _delivery(item):
    data = {key: item[key] for key in ("id", "endpoint_id", "url", "formed_through", "stored_through", "attempts")}
    for key in ("delivered_at", "parked_at"):
        if item[key] is not None:
            data[key] = format_ts(item[key])
    for key in ("last_status", "last_error"):
        if item[key] is not None:
            data[key] = item[key]
    data["created_at"] = format_ts(item["created_at"])
    return data


class _NotificationsView(V1View):
    @property
    def reads_body(self):
        return destinations.enabled()

    def handle(self, caller, body):
        if not destinations.enabled():
            raise ApiError(501, "notifications_unavailable")
        return self.serve(caller, body)


class NotificationsRegisterView(_NotificationsView):
    op = "notification.register"
    request_body = NotificationRegisterRequest
    response_body = NotificationEndpointCreated
    doc = RouteDoc("notifications", "Register an HTTPS endpoint; its secret is shown once", description=_NOTIFY_OFF,
                   errors={400: ["invalid_destination"], 409: ["invalid_destination"],
                           501: ["notifications_unavailable"]})

    def serve(self, caller, body):
        created = services.register_endpoint(project=caller.project, url=body["url"], principal=caller.credential_id)
        return Result({**_endpoint(created), "secret": created["secret"]}, magnitude=1, audited=True)


class NotificationsListView(_NotificationsView):
    op = "notification.list"
    request_body = NotificationListRequest
    response_body = NotificationEndpoints
    doc = RouteDoc("notifications", "The project's endpoints, newest first", description=_NOTIFY_OFF,
                   errors={501: ["notifications_unavailable"]})

    def serve(self, caller, body):
        endpoints = selectors.list_endpoints(project=caller.project)
        return Result({"endpoints": [_endpoint(e) for e in endpoints]}, magnitude=len(endpoints))


class NotificationsDisableView(_NotificationsView):
    op = "notification.disable"
    request_body = NotificationDisableRequest
    response_body = NotificationDisabled
    doc = RouteDoc("notifications", "Disable an endpoint", description=_NOTIFY_OFF,
                   errors={400: ["invalid_destination"], 404: ["not_found"], 501: ["notifications_unavailable"]})

    def serve(self, caller, body):
        data = services.disable_endpoint(project=caller.project, endpoint_id=canonical_uuid(body["id"]),
                                         principal=caller.credential_id)
        return Result(data, magnitude=1, audited=True)


class NotificationsDeliveriesView(_NotificationsView):
    op = "notification.deliveries"
    request_body = NotificationDeliveriesRequest
    response_body = NotificationDeliveries
    doc = RouteDoc("notifications", "Deliveries, newest first", description=_NOTIFY_OFF,
                   errors={501: ["notifications_unavailable"]})

    def serve(self, caller, body):
        # 0 or omitted means the default page; anything else is clamped into [1, 100], never refused.
        limit = body.get("limit") or selectors.DELIVERY_PAGE_DEFAULT
        limit = max(1, min(limit, selectors.DELIVERY_PAGE_MAX))
        deliveries = selectors.list_deliveries(project=caller.project, limit=limit)
        return Result({"deliveries": [_delivery(d) for d in deliveries]}, magnitude=len(deliveries))

"""The four /v1 notification routes (api.md §7.9, docs/webhooks.md): thin views over notifications.services
and notifications.selectors. With MEMOIR_NOTIFY_DESTINATIONS unset each answers 501 without reading the body."""
from core.encoding import format_ts
from core.strings import canonical_uuid
from notifications import destinations, selectors, services

from .base import EMPTY, Result, V1View
from .errors import ApiError
from .jsonbody import INT, STR, UUID_STR, Obj


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
    shape = Obj({"url": STR})

    def serve(self, caller, body):
        url = body.get("url")
        if not url:
            raise ApiError(400, "invalid_destination")
        created = services.register_endpoint(project=caller.project, url=url, principal=caller.credential_id)
        return Result({**_endpoint(created), "secret": created["secret"]}, magnitude=1, audited=True)


class NotificationsListView(_NotificationsView):
    op = "notification.list"
    shape = EMPTY

    def serve(self, caller, body):
        endpoints = selectors.list_endpoints(project=caller.project)
        return Result({"endpoints": [_endpoint(e) for e in endpoints]}, magnitude=len(endpoints))


class NotificationsDisableView(_NotificationsView):
    op = "notification.disable"
    shape = Obj({"id": UUID_STR})

    def serve(self, caller, body):
        endpoint_id = canonical_uuid(body.get("id"))
        if endpoint_id is None:
            raise ApiError(400, "invalid_destination")
        data = services.disable_endpoint(project=caller.project, endpoint_id=endpoint_id,
                                         principal=caller.credential_id)
        return Result(data, magnitude=1, audited=True)


class NotificationsDeliveriesView(_NotificationsView):
    op = "notification.deliveries"
    shape = Obj({"limit": INT})

    def serve(self, caller, body):
        # 0 or omitted means the default page; anything else is clamped into [1, 100], never refused.
        limit = body.get("limit") or selectors.DELIVERY_PAGE_DEFAULT
        limit = max(1, min(limit, selectors.DELIVERY_PAGE_MAX))
        deliveries = selectors.list_deliveries(project=caller.project, limit=limit)
        return Result({"deliveries": [_delivery(d) for d in deliveries]}, magnitude=len(deliveries))

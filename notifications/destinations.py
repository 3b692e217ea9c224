"""Where a notification may go: HTTPS, no credentials in the URL, a host the operator listed, and no address
only this deployment can reach (checked at register and again before every send)."""
import ipaddress
import socket
from urllib.parse import urlsplit

from django.conf import settings

MAX_URL_BYTES = 2048


class Refused(Exception):
    """The destination is not permitted; `reason` is a short fixed phrase, never the URL."""

    def __init__(self, reason):
        super().__init__(reason)
        self.reason = reason


def enabled():
    return bool(settings.MEMOIR_NOTIFY_DESTINATIONS)


def _allowed_host(host):
    for entry in settings.MEMOIR_NOTIFY_DESTINATIONS:
        entry = entry.strip().lower().rstrip(".")
        if not entry:
            continue
        if entry.startswith("."):
            if host.endswith(entry) and len(host) > len(entry):
                return True
        elif host == entry:
            return True
    return False


def parse(url):
    """(host, port) of a permitted URL's form, or Refused. Resolution is checked separately."""
    if len(url.encode("utf-8")) > MAX_URL_BYTES or any(ord(c) <= 0x20 or ord(c) == 0x7F for c in url):
        raise Refused("malformed")
    try:
        parts = urlsplit(url)
        port = parts.port or 443
    except ValueError:
        raise Refused("malformed") from None
    if parts.scheme.lower() != "https":
        raise Refused("not https")
    if "@" in parts.netloc or parts.username is not None or parts.password is not None:
        raise Refused("credentials in url")
    host = (parts.hostname or "").lower().rstrip(".")
    if not host or parts.fragment:
        raise Refused("malformed")
    if not _allowed_host(host):
        raise Refused("host not allowed")
    return host, port


def is_public(address):
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


def resolve(host, port):
    """Every address `host` resolves to; each must be public unless the test-only switch permits private ones."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        raise Refused("does not resolve") from None
    addresses = sorted({info[4][0] for info in infos})
    if not addresses:
        raise Refused("does not resolve")
    if not settings.MEMOIR_NOTIFY_ALLOW_PRIVATE and not all(is_public(a) for a in addresses):
        raise Refused("private address")
    return addresses


def check(url):
    """Refused unless `url` may receive notifications now."""
    host, port = parse(url)
    resolve(host, port)
    return host, port

"""Checks shared by every outbound HTTP client (the extraction model, the embedding model): which hosts may
be reached over plain http, how an endpoint's host and port are read, and how the allowlist spells them."""
import ipaddress
from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured

PLAIN_HTTP_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "host.docker.internal"})


class ExtractorConfigError(ImproperlyConfigured):
    """The extractor settings cannot be used: a startup error, never a silent fallback to rules.

    Defined here, not in formation, because the endpoint parser below raises it for every client (the
    embedding client's invalid-port refusal has always been this class; formation re-exports it)."""


def _host_port(config_endpoint: str) -> tuple[str, str, int]:
    """(scheme, host, port) of an endpoint, with the scheme's default port filled in."""
    parts = urlsplit(config_endpoint)
    try:
        port = parts.port
    except ValueError as exc:
        raise ExtractorConfigError(f"extraction endpoint has an invalid port: {exc}") from exc
    scheme = parts.scheme.lower()
    if port is None:
        port = 443 if scheme == "https" else 80
    return scheme, (parts.hostname or ""), port


def _authority(host: str, port: int) -> str:
    """host:port as written in the allowlist; an IPv6 literal goes in brackets."""
    try:
        if isinstance(ipaddress.ip_address(host), ipaddress.IPv6Address):
            return f"[{host}]:{port}"
    except ValueError:
        pass
    return f"{host}:{port}"

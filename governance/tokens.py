"""Project tokens: generation and digests. The token itself is never stored or logged (api.md §1.1)."""
import base64
import hashlib
import re
import secrets

TOKEN_RE = re.compile(r"^mem_[A-Za-z0-9_-]{43}$")
PREFIX_LENGTH = 12


def new_token():
    return "mem_" + base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode("ascii")


def digest(token):
    return hashlib.sha256(token.encode("ascii")).digest()


def is_well_formed(token):
    return bool(TOKEN_RE.match(token))

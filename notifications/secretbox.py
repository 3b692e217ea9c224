"""Signing secrets at rest: encrypted (Fernet, AES-128-CBC + HMAC-SHA256) under a key derived with HKDF from
MEMOIR_NOTIFY_KEY, or from DJANGO_SECRET_KEY when that is unset. The sender decrypts to sign; nothing lists it."""
import base64
import secrets

from cryptography.fernet import Fernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings

SECRET_PREFIX = "whsec_"


def _fernet():
    material = (settings.MEMOIR_NOTIFY_KEY or settings.SECRET_KEY).encode("utf-8")
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=b"memoir-notifications",
               info=b"endpoint signing secret v1").derive(material)
    return Fernet(base64.urlsafe_b64encode(key))


def new_secret():
    """A fresh secret as shown to the client once: the prefix and 32 random bytes in base64url."""
    return SECRET_PREFIX + secrets.token_urlsafe(32)


def seal(secret):
    return _fernet().encrypt(secret.encode("utf-8"))


def unseal(ciphertext):
    return _fernet().decrypt(bytes(ciphertext)).decode("utf-8")

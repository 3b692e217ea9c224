"""Small expression helpers for database constraints declared on models."""
from django.db.models import F, Func, IntegerField, Q
from django.db.models.lookups import Exact, GreaterThanOrEqual, LessThanOrEqual

from core.closed_sets import FIXED_EXTRACTOR_VERSIONS, MODEL_EXTRACTOR_VERSION_RE


def octet_length(field):
    return Func(F(field), function="octet_length", output_field=IntegerField())


def char_length(field):
    return Func(F(field), function="char_length", output_field=IntegerField())


def octets_at_most(field, limit):
    return Q(LessThanOrEqual(octet_length(field), limit))


def octets_exactly(field, n):
    return Q(Exact(octet_length(field), n))


def octets_between(field, low, high):
    return Q(GreaterThanOrEqual(octet_length(field), low)) & Q(LessThanOrEqual(octet_length(field), high))


def extractor_version_ok(field):
    """The extractor_version CHECK shared by observations, evidence and refusals."""
    return Q(**{f"{field}__in": FIXED_EXTRACTOR_VERSIONS}) | Q(**{f"{field}__regex": MODEL_EXTRACTOR_VERSION_RE})

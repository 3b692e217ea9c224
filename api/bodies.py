"""Building blocks of the /v1 success bodies that more than one route's response serializer uses."""
from rest_framework import serializers


def counts():
    """kind → rows; {} when none (api.md §4)."""
    return serializers.DictField(child=serializers.IntegerField(min_value=0))


class IdCursor(serializers.Serializer):
    """The next page starts after this id."""

    id = serializers.UUIDField()

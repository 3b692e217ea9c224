"""The /v1 success bodies' vocabulary: `answer()` declares a response serializer in one statement from the field
kinds below, so a body reads as the list of what it holds; plus the pieces several routes share."""
import copy

from rest_framework import serializers


def uuid():
    return serializers.UUIDField()


def text(**kwargs):
    return serializers.CharField(**kwargs)


def when():
    return serializers.DateTimeField()


def flag(**kwargs):
    return serializers.BooleanField(**kwargs)


def number():
    return serializers.FloatField()


def integer(**kwargs):
    return serializers.IntegerField(**kwargs)


def count():
    return serializers.IntegerField(min_value=0)


def choice(values):
    return serializers.ChoiceField(choices=list(values))


def listing(child):
    return serializers.ListField(child=child)


def _with(field, **options):
    # DRF rebuilds a declared field from its constructor arguments whenever a serializer is made, so an option
    # is only kept when it is one of them.
    # Deep copies, as DRF makes them, so a bound child (a list's) comes back unbound.
    return type(field)(*copy.deepcopy(field._args), **{**copy.deepcopy(field._kwargs), **options})


def nullable(field):
    return _with(field, allow_null=True)


def counts():
    """kind → rows; {} when none (api.md §4)."""
    return serializers.DictField(child=serializers.IntegerField(min_value=0))


def answer(name, fields, optional=None, *, doc=None):
    """A response serializer named `name` (its component name in the document): `fields` are always present,
    `optional` ones are left out when they do not apply. A value may be a field or another answer (one object;
    put it in a list for an array of them)."""
    attrs = {"__module__": __name__, "__doc__": doc}
    for required, group in ((True, fields), (False, optional or {})):
        for key, value in group.items():
            if isinstance(value, list):
                value = value[0](many=True, required=required)
            elif isinstance(value, type):
                value = value(required=required)
            elif not required:
                value = _with(value, required=False)
            # DRF orders fields by when they were made; a nested answer is made here, after its siblings.
            value._creation_counter = serializers.Field._creation_counter
            serializers.Field._creation_counter += 1
            attrs[key] = value
    return type(name, (serializers.Serializer,), attrs)


IdCursor = answer("IdCursor", {"id": uuid()}, doc="The next page starts after this id.")

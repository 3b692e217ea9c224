"""The bottom layer: what every other package needs and nothing of theirs.

Domain errors, retry, named locks, the closed sets, database constraint helpers, white space and name
normalisation, string checks, wire encoding of times and floats, shared limits, the ledger writer, endpoint
checks, the operator-command base and the version string; and, as a Django app, the tables every layer points at:
the project and the audit ledger (models.py). core imports only Django, django-pgtrigger and the standard library
(docs/architecture.md).
"""

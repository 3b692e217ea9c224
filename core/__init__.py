"""The bottom layer: what every other package needs and nothing of theirs.

Domain errors, retry, named locks, the closed sets, database constraint helpers, white space and name
normalisation, string checks, wire encoding of times and floats, shared limits, the ledger writer, endpoint
checks, the operator-command base and the version string. core imports only Django and the standard library
(docs/architecture.md); it is a plain package, not a Django app, because it has no tables.
"""

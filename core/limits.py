"""Limits shared by more than one layer, each declared once (the database CHECKs hold the same numbers)."""

# A data subject id, an external reference, a record's subject/object text: at most this many UTF-8 bytes.
MAX_SUBJECT_BYTES = 1_024

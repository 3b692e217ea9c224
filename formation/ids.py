"""Derived identifiers: the same claim from the same message always gets the same id, so a retried
turn re-uses what it already wrote (formation.md §7.2 step 5, §8)."""
import hashlib
import json
import uuid


def uuid8(data: bytes) -> uuid.UUID:
    """A version-8 UUID from the first 16 bytes of SHA-256(namespace + data), RFC 4122 variant."""
    raw = bytearray(hashlib.sha256(uuid.NAMESPACE_OID.bytes + data).digest()[:16])
    raw[6] = (raw[6] & 0x0F) | 0x80
    raw[8] = (raw[8] & 0x3F) | 0x80
    return uuid.UUID(bytes=bytes(raw))


def claim_signature(predicate, subject_end, object_end) -> bytes:
    """Each end is ("speaker", subject_id), ("named", normalized_name) or ("none", "")."""
    text = json.dumps(["claim/v1", predicate, subject_end[0], subject_end[1], object_end[0], object_end[1]],
                      separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).digest()


def fact_id(scope, observation_id, ordinal, signature: bytes) -> uuid.UUID:
    return uuid8(f'memoir:fact/v1:"{scope}":{observation_id}:{ordinal}:{signature.hex()}'.encode())


def rejected_claim_id(scope, observation_id, ordinal, predicate, statement, quote, reason, extractor_version):
    text = json.dumps(["rejected/v1", scope, str(observation_id), ordinal, predicate, statement, quote, reason,
                       extractor_version], separators=(",", ":"), ensure_ascii=False)
    return uuid8(text.encode("utf-8"))

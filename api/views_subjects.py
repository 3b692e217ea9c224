"""The /v1 subjects and artifacts routes (api.md §7.7): thin views over
governance.subjects and governance.artifacts (the notification routes live in api/views_notifications.py)."""
import base64
import re

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from core.encoding import format_ts
from core.limits import MAX_SUBJECT_BYTES
from governance import artifacts, subjects

from .base import Result, V1View
from .bodies import IdCursor, answer, choice, count, flag, nullable, text, uuid, when
from .contract import Body, Integer, RouteDoc, Text, Uuid, WireField, shape_error

MAX_LABEL_BYTES = 256


def _reference(**kwargs):
    return Text(max_bytes=MAX_SUBJECT_BYTES, empty_or_non_blank=True, **kwargs)


def _label(**kwargs):
    return Text(max_bytes=MAX_LABEL_BYTES, empty_or_non_blank=True, **kwargs)


def _page_limit():
    return Integer(min_value=0, max_value=100, description="0 or omitted means 20")


class SubjectRegisterRequest(Body):
    code = "invalid_subject"
    idempotency_key = Uuid(required=True)
    external_reference = _reference(description="\"\" is omitted; otherwise non-blank, at most 1,024 UTF-8 bytes")
    label = _label(description="\"\" is omitted; otherwise non-blank, at most 256 UTF-8 bytes")


class SubjectGetRequest(Body):
    code = "invalid_subject"
    one_of = (("id", "external_reference"),)
    id = Uuid(empty_ok=True)
    external_reference = _reference()


class SubjectListRequest(Body):
    code = "invalid_subject"
    after = Uuid(empty_ok=True)
    limit = _page_limit()


class SubjectUpdateRequest(Body):
    code = "invalid_subject"
    id = Uuid(required=True)
    expected_version = Uuid(required=True)
    external_reference = _reference(description="omitted or \"\" clears it")
    label = _label(description="omitted or \"\" clears it")


# external_reference stays second in the document, so it is a field left out when empty among the others.
_SUBJECT = {"id": uuid(), "version": uuid(),
            "external_reference": text(required=False, help_text="omitted when empty"),
            "label": text(), "updated_by": text(), "created_at": when(), "updated_at": when(),
            "inactive_after": nullable(when())}
Subject = answer("Subject", _SUBJECT)
SubjectReplayed = answer("SubjectReplayed", {**_SUBJECT, "replayed": flag()})
SubjectList = answer("SubjectList", {"subjects": [Subject]}, {"next": IdCursor})


def subject_payload(subject, *, replayed=None):
    data = {"id": subject.id, "version": subject.version}
    if subject.external_reference:  # an empty reference is omitted (api.md §4)
        data["external_reference"] = subject.external_reference
    data.update({
        "label": subject.label,
        "updated_by": subject.updated_by,
        "created_at": format_ts(subject.created_at),
        "updated_at": format_ts(subject.updated_at),
        "inactive_after": format_ts(subject.inactive_after),  # always present, may be null
    })
    if replayed is not None:
        data["replayed"] = replayed
    return data


def artifact_payload(artifact, *, replayed=None, with_content=False):
    data = {
        "id": artifact.id,
        "version": artifact.version,
        "data_subject_id": artifact.data_subject_id,
        "kind": artifact.kind,
        "name": artifact.name,
        "source_observation_id": artifact.source_observation_id,
        "bytes": artifact.bytes,
        "authored_by": artifact.authored_by,
        "created_at": format_ts(artifact.created_at),
        "updated_at": format_ts(artifact.updated_at),
        "expires_at": format_ts(artifact.expires_at),
    }
    if replayed is not None:
        data["replayed"] = replayed
    if with_content:
        data["content"] = base64.b64encode(artifact.content).decode("ascii")
    return data


class SubjectsRegisterView(V1View):
    op = "subject.register"
    request_body = SubjectRegisterRequest
    response_body = SubjectReplayed
    doc = RouteDoc("subjects", "Register a data subject (idempotent)",
                   errors={400: ["invalid_subject"], 404: ["not_found"], 409: ["subject_conflict"]})

    def handle(self, caller, body):
        subject, replayed = subjects.register_subject(
            project=caller.project, idempotency_key=body.get("idempotency_key"),
            external_reference=body.get("external_reference"), label=body.get("label"),
            principal=caller.credential_id)
        return Result(subject_payload(subject, replayed=replayed), audited=True)


class SubjectsGetView(V1View):
    op = "subject.get"
    request_body = SubjectGetRequest
    response_body = Subject
    doc = RouteDoc("subjects", "One subject by id or by external reference",
                   errors={400: ["invalid_subject"], 404: ["not_found"]})

    def handle(self, caller, body):
        subject = subjects.get_subject(project=caller.project, subject_id=body.get("id"),
                                       external_reference=body.get("external_reference"))
        return Result(subject_payload(subject), magnitude=1)


class SubjectsListView(V1View):
    op = "subject.list"
    request_body = SubjectListRequest
    response_body = SubjectList
    doc = RouteDoc("subjects", "Subjects in id order", errors={400: ["invalid_subject"]})

    def handle(self, caller, body):
        page, next_id = subjects.list_subjects(project=caller.project, after=body.get("after"),
                                               limit=body.get("limit"))
        data = {"subjects": [subject_payload(s) for s in page]}
        if next_id is not None:
            data["next"] = {"id": next_id}
        return Result(data, magnitude=len(page))


class SubjectsUpdateView(V1View):
    op = "subject.update"
    request_body = SubjectUpdateRequest
    response_body = SubjectReplayed
    doc = RouteDoc("subjects", "Replace a subject's reference and label",
                   errors={400: ["invalid_subject"], 404: ["not_found"], 409: ["subject_conflict"]})

    def handle(self, caller, body):
        subject, replayed = subjects.update_subject(
            project=caller.project, subject_id=body.get("id"), expected_version=body.get("expected_version"),
            external_reference=body.get("external_reference"), label=body.get("label"),
            principal=caller.credential_id)
        return Result(subject_payload(subject, replayed=replayed), audited=True)


# Artifacts. Every broken rule is invalid_artifact; governance.artifacts checks them all again for its other callers.

# Canonical standard base64 with padding: the character before "==" or "=" leaves its unused bits zero, as the
# service insists (it compares the text with the re-encoding of its bytes).
_BASE64 = "^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/][AQgw]==|[A-Za-z0-9+/]{2}[AEIMQUYcgkosw048]=)?$"
_BASE64_RE = re.compile(_BASE64)
# Four characters carry three bytes. 524,288 = 3 × 174,762 + 2, so unpadded text holds at most 699,048 characters
# (524,286 bytes), and a last quad of one or two bytes, which ends in "=", takes it to 699,052.
_UNPADDED_MAX_CHARS = artifacts.MAX_CONTENT_BYTES // 3 * 4
_MAX_CONTENT_CHARS = _UNPADDED_MAX_CHARS + 4


class Base64Content(WireField):
    """Artifact content: canonical standard base64 with padding ("" is no bytes), at most 524,288 bytes decoded."""

    def convert(self, data):
        if not isinstance(data, str):
            raise shape_error()
        return data

    def check(self, value):
        # fullmatch: re's "$" also matches before a final newline, JSON Schema's does not.
        if len(value) > _MAX_CONTENT_CHARS or _BASE64_RE.fullmatch(value) is None:
            self.refuse()
        if len(value) > _UNPADDED_MAX_CHARS and not value.endswith("="):
            self.refuse()

    def openapi(self):
        return {"type": "string", "pattern": _BASE64, "maxLength": _MAX_CONTENT_CHARS,
                "anyOf": [{"maxLength": _UNPADDED_MAX_CHARS}, {"pattern": "=$"}]}


def _subject_filter():
    return Text(max_bytes=MAX_SUBJECT_BYTES, empty_or_non_blank=True)


class ArtifactPutRequest(Body):
    code = "invalid_artifact"
    id = Uuid(required=True)
    data_subject_id = Text(required=True, non_blank=True, max_bytes=MAX_SUBJECT_BYTES,
                           description="at most 1,024 UTF-8 bytes, no U+0000")
    kind = Text(required=True, choices=artifacts.KINDS)
    name = Text(max_bytes=artifacts.MAX_NAME_BYTES, empty_or_non_blank=True,
                description="\"\" by default; otherwise non-blank, at most 256 UTF-8 bytes")
    content = Base64Content(required=True,
                            description="canonical standard base64 with padding, at most 524,288 decoded bytes")
    expected_version = Uuid(empty_ok=True,
                            description="omitted: unconditional (last write wins); given: compare-and-set")


class ArtifactGetRequest(Body):
    code = "invalid_artifact"
    id = Uuid(required=True)
    data_subject_id = _subject_filter()


class ArtifactListRequest(Body):
    code = "invalid_artifact"
    kind = Text(choices=("", *artifacts.KINDS))
    name_prefix = Text(max_bytes=artifacts.MAX_NAME_BYTES, description="a literal prefix")
    data_subject_id = _subject_filter()
    after = Uuid(empty_ok=True)
    limit = _page_limit()


class ArtifactDeleteRequest(Body):
    code = "invalid_artifact"
    id = Uuid(required=True)
    expected_version = Uuid(empty_ok=True, description="omitted: delete whatever version is current")
    data_subject_id = _subject_filter()


@extend_schema_field(OpenApiTypes.BYTE)
class _Base64Field(serializers.CharField):
    pass


_ARTIFACT = {"id": uuid(), "version": uuid(), "data_subject_id": text(), "kind": choice(artifacts.KINDS),
             "name": text(), "source_observation_id": uuid(), "bytes": count(), "authored_by": text(),
             "created_at": when(), "updated_at": when(), "expires_at": nullable(when())}
Artifact = answer("Artifact", _ARTIFACT)
ArtifactPut = answer("ArtifactPut", {**_ARTIFACT, "replayed": flag()})
ArtifactContent = answer("ArtifactContent", {**_ARTIFACT, "content": _Base64Field()})
ArtifactList = answer("ArtifactList", {"artifacts": [Artifact]}, {"next": IdCursor})
Deleted = answer("Deleted", {"deleted": choice([True])})


class ArtifactsPutView(V1View):
    op = "artifact.put"
    request_body = ArtifactPutRequest
    response_body = ArtifactPut
    doc = RouteDoc("artifacts", "Create, update or replay an artifact",
                   errors={400: ["invalid_artifact"], 404: ["not_found"], 409: ["artifact_conflict"],
                           429: ["storage_capacity"]})

    def handle(self, caller, body):
        artifact, replayed = artifacts.put_artifact(
            project=caller.project, artifact_id=body.get("id"), data_subject_id=body.get("data_subject_id"),
            kind=body.get("kind"), name=body.get("name"), content=body.get("content"),
            expected_version=body.get("expected_version"), principal=caller.credential_id)
        return Result(artifact_payload(artifact, replayed=replayed), audited=True)


class ArtifactsGetView(V1View):
    op = "artifact.get"
    request_body = ArtifactGetRequest
    response_body = ArtifactContent
    doc = RouteDoc("artifacts", "One artifact with its content",
                   errors={400: ["invalid_artifact"], 404: ["not_found"]})

    def handle(self, caller, body):
        artifact = artifacts.get_artifact(project=caller.project, artifact_id=body.get("id"),
                                          data_subject_id=body.get("data_subject_id"))
        return Result(artifact_payload(artifact, with_content=True), magnitude=1)


class ArtifactsListView(V1View):
    op = "artifact.list"
    request_body = ArtifactListRequest
    response_body = ArtifactList
    doc = RouteDoc("artifacts", "Artifacts in id order", errors={400: ["invalid_artifact"]})

    def handle(self, caller, body):
        page, next_id = artifacts.list_artifacts(
            project=caller.project, kind=body.get("kind"), name_prefix=body.get("name_prefix"),
            data_subject_id=body.get("data_subject_id"), after=body.get("after"), limit=body.get("limit"))
        data = {"artifacts": [artifact_payload(a) for a in page]}
        if next_id is not None:
            data["next"] = {"id": next_id}
        return Result(data, magnitude=len(page))


class ArtifactsDeleteView(V1View):
    op = "artifact.delete"
    request_body = ArtifactDeleteRequest
    response_body = Deleted
    doc = RouteDoc("artifacts", "Delete an artifact (at its current version when one is given)",
                   errors={400: ["invalid_artifact"], 404: ["not_found"], 409: ["artifact_conflict"]})

    def handle(self, caller, body):
        artifacts.delete_artifact(
            project=caller.project, artifact_id=body.get("id"), expected_version=body.get("expected_version"),
            data_subject_id=body.get("data_subject_id"), principal=caller.credential_id)
        return Result({"deleted": True}, audited=True)

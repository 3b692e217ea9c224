"""The /v1 subjects and artifacts routes (api.md §7.7): thin views over
governance.subjects and governance.artifacts (the notification routes live in api/views_notifications.py)."""
import base64

from core.encoding import format_ts
from governance import artifacts, subjects

from .base import Result, V1View
from .jsonbody import INT, STR, UUID_STR, Obj


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
    shape = Obj({"idempotency_key": UUID_STR, "external_reference": STR, "label": STR})

    def handle(self, caller, body):
        subject, replayed = subjects.register_subject(
            project=caller.project, idempotency_key=body.get("idempotency_key"),
            external_reference=body.get("external_reference"), label=body.get("label"),
            principal=caller.credential_id)
        return Result(subject_payload(subject, replayed=replayed), audited=True)


class SubjectsGetView(V1View):
    op = "subject.get"
    shape = Obj({"id": UUID_STR, "external_reference": STR})

    def handle(self, caller, body):
        subject = subjects.get_subject(project=caller.project, subject_id=body.get("id"),
                                       external_reference=body.get("external_reference"))
        return Result(subject_payload(subject), magnitude=1)


class SubjectsListView(V1View):
    op = "subject.list"
    shape = Obj({"after": UUID_STR, "limit": INT})

    def handle(self, caller, body):
        page, next_id = subjects.list_subjects(project=caller.project, after=body.get("after"),
                                               limit=body.get("limit"))
        data = {"subjects": [subject_payload(s) for s in page]}
        if next_id is not None:
            data["next"] = {"id": next_id}
        return Result(data, magnitude=len(page))


class SubjectsUpdateView(V1View):
    op = "subject.update"
    shape = Obj({"id": UUID_STR, "expected_version": UUID_STR, "external_reference": STR, "label": STR})

    def handle(self, caller, body):
        subject, replayed = subjects.update_subject(
            project=caller.project, subject_id=body.get("id"), expected_version=body.get("expected_version"),
            external_reference=body.get("external_reference"), label=body.get("label"),
            principal=caller.credential_id)
        return Result(subject_payload(subject, replayed=replayed), audited=True)


class ArtifactsPutView(V1View):
    op = "artifact.put"
    shape = Obj({"id": UUID_STR, "data_subject_id": STR, "kind": STR, "name": STR, "content": STR,
                 "expected_version": UUID_STR})

    def handle(self, caller, body):
        artifact, replayed = artifacts.put_artifact(
            project=caller.project, artifact_id=body.get("id"), data_subject_id=body.get("data_subject_id"),
            kind=body.get("kind"), name=body.get("name"), content=body.get("content"),
            expected_version=body.get("expected_version"), principal=caller.credential_id)
        return Result(artifact_payload(artifact, replayed=replayed), audited=True)


class ArtifactsGetView(V1View):
    op = "artifact.get"
    shape = Obj({"id": UUID_STR, "data_subject_id": STR})

    def handle(self, caller, body):
        artifact = artifacts.get_artifact(project=caller.project, artifact_id=body.get("id"),
                                          data_subject_id=body.get("data_subject_id"))
        return Result(artifact_payload(artifact, with_content=True), magnitude=1)


class ArtifactsListView(V1View):
    op = "artifact.list"
    shape = Obj({"kind": STR, "name_prefix": STR, "data_subject_id": STR, "after": UUID_STR, "limit": INT})

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
    shape = Obj({"id": UUID_STR, "expected_version": UUID_STR, "data_subject_id": STR})

    def handle(self, caller, body):
        artifacts.delete_artifact(
            project=caller.project, artifact_id=body.get("id"), expected_version=body.get("expected_version"),
            data_subject_id=body.get("data_subject_id"), principal=caller.credential_id)
        return Result({"deleted": True}, audited=True)

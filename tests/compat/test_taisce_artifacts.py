"""The official `taisce` client's artifact calls (put, get, delete) against a live Memoir server."""
import uuid

import pytest
import taisce
from taisce.client import TaisceError

from tests.support.aio import run_async

pytestmark = pytest.mark.live


def run(coro):
    return run_async(coro)


async def _call(url, token, method, **kwargs):
    async with taisce.Client(url, token) as client:
        return await getattr(client, method)(**kwargs)


def test_put_get_update_and_delete_round_trip(live_server_url, live_project):
    _, token = live_project
    artifact_id = str(uuid.uuid4())

    async def scenario():
        async with taisce.Client(live_server_url, token) as client:
            created = await client.put_artifact(artifact_id=artifact_id, data_subject_id="alice", kind="state",
                                                content=b"\x00session\xff", name="chat")
            replay = await client.put_artifact(artifact_id=artifact_id, data_subject_id="alice", kind="state",
                                               content=b"\x00session\xff", name="chat")
            got = await client.get_artifact(artifact_id=artifact_id, data_subject_id="alice")
            updated = await client.put_artifact(artifact_id=artifact_id, data_subject_id="alice", kind="state",
                                                content=b"v2", name="chat", expected_version=created["version"])
            got_again = await client.get_artifact(artifact_id=artifact_id)
            deleted = await client.delete_artifact(artifact_id=artifact_id, expected_version=updated["version"],
                                                   data_subject_id="alice")
            return created, replay, got, updated, got_again, deleted

    created, replay, got, updated, got_again, deleted = run(scenario())
    assert (created["id"], created["replayed"]) == (artifact_id, False)
    assert (replay["version"], replay["replayed"]) == (created["version"], True)
    assert got["content"] == "AHNlc3Npb27/" and got["version"] == created["version"]
    assert updated["version"] != created["version"]
    assert (got_again["content"], got_again["version"]) == ("djI=", updated["version"])
    assert deleted == {"deleted": True}
    with pytest.raises(TaisceError) as gone:
        run(_call(live_server_url, token, "get_artifact", artifact_id=artifact_id))
    assert (gone.value.status, gone.value.code) == (404, "not_found")


def test_version_conflicts_raise_artifact_conflict(live_server_url, live_project):
    _, token = live_project
    artifact_id = str(uuid.uuid4())
    first = run(_call(live_server_url, token, "put_artifact", artifact_id=artifact_id, data_subject_id="alice",
                      kind="file", content=b"one"))
    with pytest.raises(TaisceError) as stale_put:
        run(_call(live_server_url, token, "put_artifact", artifact_id=artifact_id, data_subject_id="alice",
                  kind="file", content=b"two", expected_version=str(uuid.uuid4())))
    assert (stale_put.value.status, stale_put.value.code) == (409, "artifact_conflict")
    with pytest.raises(TaisceError) as stale_delete:
        run(_call(live_server_url, token, "delete_artifact", artifact_id=artifact_id,
                  expected_version=str(uuid.uuid4())))
    assert (stale_delete.value.status, stale_delete.value.code) == (409, "artifact_conflict")
    got = run(_call(live_server_url, token, "get_artifact", artifact_id=artifact_id))
    assert (got["version"], got["content"]) == (first["version"], "b25l")


def test_without_expected_version_put_and_delete_are_unconditional(live_server_url, live_project):
    _, token = live_project
    artifact_id = str(uuid.uuid4())
    first = run(_call(live_server_url, token, "put_artifact", artifact_id=artifact_id, data_subject_id="alice",
                      kind="state", content=b"x"))
    over = run(_call(live_server_url, token, "put_artifact", artifact_id=artifact_id, data_subject_id="alice",
                     kind="state", content=b"y"))
    assert over["version"] != first["version"] and over["replayed"] is False
    assert run(_call(live_server_url, token, "get_artifact", artifact_id=artifact_id))["content"] == "eQ=="
    assert run(_call(live_server_url, token, "delete_artifact", artifact_id=artifact_id)) == {"deleted": True}
    with pytest.raises(TaisceError) as gone:
        run(_call(live_server_url, token, "get_artifact", artifact_id=artifact_id))
    assert gone.value.status == 404


def test_deleted_id_cannot_be_reused(live_server_url, live_project):
    _, token = live_project
    artifact_id = str(uuid.uuid4())
    first = run(_call(live_server_url, token, "put_artifact", artifact_id=artifact_id, data_subject_id="alice",
                      kind="state", content=b"x"))
    run(_call(live_server_url, token, "delete_artifact", artifact_id=artifact_id, expected_version=first["version"]))
    with pytest.raises(TaisceError) as info:
        run(_call(live_server_url, token, "put_artifact", artifact_id=artifact_id, data_subject_id="alice",
                  kind="state", content=b"x"))
    assert (info.value.status, info.value.code) == (409, "artifact_conflict")

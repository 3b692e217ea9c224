"""The erasure registry as only the owner role can change it (the runtime may read projection_kind, never write
it): a kind pointed at a table whose DELETE does nothing leaves a residual and an unclean receipt."""
import pytest
from django.db import connection

from core.errors import DomainError
from governance import services
from governance.erasure import erase
from tests.conftest import unique_name
from tests.governance.support import add_segment, form, one, project_counts, say, word


def _erase(project, **selector):
    return erase(project=project, principal="cli", principal_kind="operator", **selector)


def test_a_kind_whose_delete_does_nothing_shows_a_residual_and_an_unclean_receipt(owner_db):
    project = unique_name()
    services.create_project(name=project, principal="cli")
    subject = word("s")
    say(project, subject, f"I live in {word('Dub')}.")
    form(project)
    add_segment(project, subject, "a summary")
    with connection.cursor() as cursor:
        # A decoy the registry can be pointed at: it shows the segment rows but its DELETE does nothing.
        cursor.execute("CREATE VIEW erasure_decoy AS SELECT * FROM segment")
        cursor.execute("CREATE RULE erasure_decoy_keeps AS ON DELETE TO erasure_decoy DO INSTEAD NOTHING")
        cursor.execute("UPDATE projection_kind SET projection_table = 'erasure_decoy' WHERE kind = 'segment'")
    receipt = _erase(project, data_subject_id=subject)
    assert receipt["deleted"]["segment"] == 0
    assert receipt["residual"]["segment"] == 1
    assert receipt["clean"] is False
    assert [key for key, value in receipt["residual"].items() if value] == ["segment"]
    # The stored receipt says the same.
    assert one("SELECT residual->>'segment' FROM erasure_request WHERE request_id = %s",
               [receipt["request_id"]]) == ("1",)


def test_a_kind_missing_from_the_registry_is_reported_as_residual(owner_db):
    project = unique_name()
    services.create_project(name=project, principal="cli")
    subject = word("s")
    say(project, subject, "I live in Paris.")
    form(project)
    add_segment(project, subject, "a summary")
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM projection_kind WHERE kind = 'segment'")
        receipt = _erase(project, data_subject_id=subject)
    assert receipt["residual"]["segment"] == 1 and receipt["clean"] is False


def test_an_empty_registry_refuses_and_changes_nothing(owner_db):
    project = unique_name()
    services.create_project(name=project, principal="cli")
    subject = word("s")
    say(project, subject, "I live in Paris.")
    form(project)
    before = project_counts(project)
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM projection_kind")
        with pytest.raises(DomainError) as info:
            _erase(project, data_subject_id=subject)
        assert info.value.status == 500
        assert project_counts(project) == before
        assert one("SELECT count(*) FROM erasure_request WHERE scope = %s", [project]) == (0,)

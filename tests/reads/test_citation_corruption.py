"""A citation whose stored words no longer match its quote (storage corruption, simulated by the owner role with
the message's triggers off, which the runtime role cannot do) is a 500 with no evidence."""
from django.db import connection

from governance import services
from tests.conftest import unique_name

from .conftest import ledger, post, query
from .test_citations import ROUTE, dublin


def test_a_quote_that_no_longer_matches_is_a_500_with_no_evidence(owner_db):
    project = unique_name()
    services.create_project(name=project, principal="cli")
    _, token = services.issue_credential(project=project, name="test", principal="cli")
    auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    fact_id, receipt = dublin(project)
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # no deferred checks pending on the table
        cursor.execute("ALTER TABLE turn_message DISABLE TRIGGER USER")
    query("UPDATE turn_message SET content = 'Hello. I live in Dubhne. Thanks.' WHERE observation_id = %s",
          [receipt.id])
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE turn_message ENABLE TRIGGER USER")
    response = post(auth, ROUTE, {"id": fact_id})
    assert response.status_code == 500
    assert response.json() == {"error": {"code": "internal", "message": "internal error"}}
    assert ledger(project, "citation.resolve") == [("refused", 0)]

"""Governance test fixtures: a committed project on the session's test database."""
import pytest
from django.conf import settings
from django.db import connection

from tests.conftest import make_project


@pytest.fixture
def committed_project(committed, test_database_name):
    """(project, token) committed for real.

    pytest-django creates the test database only when some collected test uses `db`; without one,
    `committed` would write into the configured database itself, so refuse instead.
    """
    if connection.settings_dict["NAME"] != settings.DATABASES["default"]["TEST"]["NAME"]:
        pytest.fail("the test database was not set up: run these tests together with a `db` test of this package")
    name, token, _ = make_project(committed)
    return name, token

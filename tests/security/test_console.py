"""The operator console (console.md): every page needs a staff sign-in — anonymous visitors are sent to sign in,
signed-in non-staff users never get a page — and every POST without a CSRF token is refused with 403 before
anything is written, sign-in included."""
import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.urls import reverse

from console.site import site

pytestmark = pytest.mark.django_db

LOGIN = "/console/login/"
CUSTOM_PAGES = [
    "console_formation_health", "console_issue_credential", "console_issue_credential_result", "console_new_erasure",
    "console_export", "console_refusal_summary", "console_ledger_activity", "console_seal_now", "console_verify_chain",
]
WRITE_TABLES = ("credential", "project", "erasure_request", "audit_seal", "audit_entry", "auth_user")


def console_urls():
    urls = [reverse(f"{site.name}:index")] + [reverse(f"{site.name}:{name}") for name in CUSTOM_PAGES]
    for model in site._registry:
        meta = model._meta
        urls.append(reverse(f"{site.name}:{meta.app_label}_{meta.model_name}_changelist"))
        urls.append(reverse(f"{site.name}:{meta.app_label}_{meta.model_name}_add"))
    return urls


def _counts():
    out = {}
    with connection.cursor() as cursor:
        for table in WRITE_TABLES:
            cursor.execute(f"SELECT count(*) FROM {table}")  # noqa: S608 - fixed table names
            out[table] = cursor.fetchone()[0]
    return out


def test_anonymous_visitors_are_sent_to_sign_in_on_every_page():
    client = Client()
    urls = console_urls()
    assert len(urls) > 30
    for url in urls:
        response = client.get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith(LOGIN), url


def test_signed_in_non_staff_users_get_no_page():
    user = User.objects.create_user("not-staff", password="pw-not-staff-1")
    client = Client()
    client.force_login(user)
    for url in console_urls():
        response = client.get(url)
        assert response.status_code in (302, 403), url
        if response.status_code == 302:
            assert response["Location"].startswith(LOGIN), url


def test_posts_without_csrf_are_refused_and_write_nothing():
    admin = User.objects.create_superuser("root-csrf", password="pw-root-csrf-1")
    client = Client(enforce_csrf_checks=True)
    client.force_login(admin)
    assert client.get(reverse(f"{site.name}:index")).status_code == 200  # signed in as a superuser
    before = _counts()
    posts = {
        reverse(f"{site.name}:console_issue_credential"): {"project": "x", "name": "n", "access": "read_write"},
        reverse(f"{site.name}:console_issue_credential_result"): {"project": "x", "name": "n"},
        reverse(f"{site.name}:console_new_erasure"): {"project": "x", "data_subject_id": "alice"},
        reverse(f"{site.name}:console_export"): {"project": "x", "data_subject_id": "alice"},
        reverse(f"{site.name}:console_seal_now"): {},
        reverse(f"{site.name}:console_verify_chain"): {},
        reverse(f"{site.name}:governance_project_add"): {"name": "csrfproject", "label": "x"},
        reverse(f"{site.name}:governance_credential_changelist"): {"action": "revoke", "_selected_action": ["x"]},
        reverse(f"{site.name}:auth_user_add"): {"username": "eve", "password1": "pw-eve-123456",
                                               "password2": "pw-eve-123456"},
        "/console/logout/": {},
    }
    for url, data in posts.items():
        response = client.post(url, data)
        assert response.status_code == 403, url
        assert b"CSRF verification failed" in response.content, url  # refused for the token, not a permission
    assert _counts() == before


def test_sign_in_needs_the_csrf_token():
    User.objects.create_user("staff-csrf", password="pw-staff-csrf-1", is_staff=True)
    client = Client(enforce_csrf_checks=True)
    form = {"username": "staff-csrf", "password": "pw-staff-csrf-1"}
    assert client.post(LOGIN, form).status_code == 403
    client.get(LOGIN)  # sets the csrftoken cookie, as a browser would
    token = client.cookies["csrftoken"].value
    response = client.post(LOGIN, {**form, "csrfmiddlewaretoken": token})
    assert response.status_code == 302  # the same sign-in with the token succeeds

"""Console query strings are no oracle (issue 15): on every registered admin a lookup outside the declared
filters is refused with a 400 and never applied; the declared ones still work. Compliance (no view_content) sees
a refused claim's reason and predicate, never its words."""
import pytest
from django.contrib.auth.models import Group, User
from django.test import Client
from django.urls import reverse

from console.site import site
from governance import services
from tests.conftest import unique_name

pytestmark = pytest.mark.django_db


def _changelist(model):
    return reverse(f"{site.name}:{model._meta.app_label}_{model._meta.model_name}_changelist")


@pytest.fixture
def superuser_client():
    user = User.objects.create_superuser(unique_name("root"), password="pw-root-0001")
    client = Client()
    client.force_login(user)
    return client


def _undeclared(model, admin, request_factory_request):
    declared = admin.declared_lookups(request_factory_request)
    for field in model._meta.concrete_fields:
        lookups = [field.attname]
        if field.get_internal_type() in ("CharField", "TextField"):
            lookups.append(f"{field.name}__startswith")  # the enumeration oracle on text
        for lookup in lookups:
            if lookup not in declared:
                yield lookup


def test_every_admin_refuses_every_undeclared_lookup_and_keeps_its_declared_ones(superuser_client, rf):
    request = rf.get("/")
    request.user = User.objects.filter(is_superuser=True).first()
    checked = 0
    for model, admin in site._registry.items():
        url = _changelist(model)
        assert superuser_client.get(url).status_code == 200, url
        for lookup in _undeclared(model, admin, request):
            response = superuser_client.get(url, {lookup: "x"})
            assert response.status_code == 400, (url, lookup, response.status_code)
            checked += 1
        for lookup in admin.declared_lookups(request):
            response = superuser_client.get(url, {lookup: ""})
            # A declared parameter is applied (or, with a value its field cannot take, answered with Django's
            # ?e=1 redirect); it is never refused as undeclared.
            assert response.status_code in (200, 302), (url, lookup, response.status_code)
    assert len(site._registry) > 20 and checked > 200


def test_a_subject_guess_on_observations_is_refused_not_counted(superuser_client):
    from memory.models import Observation

    url = _changelist(Observation)
    for query in ({"data_subject_id": "alice"}, {"data_subject_id__startswith": "a"},
                  {"data_subject_id__exact": "alice"}):
        assert superuser_client.get(url, query).status_code == 400
    assert superuser_client.get(url, {"formed": "yes"}).status_code == 200


def test_compliance_sees_a_refusals_reason_and_predicate_but_not_its_words(db):
    from memory.models import RejectedClaim
    from tests.governance.support import form, say

    project = unique_name()
    services.create_project(name=project, principal="cli")
    say(project, "subject-zeta", "I live in Galway.", minutes_ago=5)
    form(project)
    # An older message with another value for a single-valued slot: refused as conflicting_value.
    say(project, "subject-zeta", "I live in Ballyvaughan.", minutes_ago=10)
    form(project)
    refusal = RejectedClaim.objects.get(project=project)
    assert refusal.reason == "conflicting_value" and "Ballyvaughan" in refusal.quote
    claim_id = refusal.rejected_claim_id
    user = User.objects.create_user(unique_name("comp"), password="pw-comp-0001", is_staff=True)
    user.groups.add(Group.objects.get(name="memoir_compliance"))
    client = Client()
    client.force_login(user)
    listing = client.get(_changelist(RejectedClaim), {"project__name__exact": project})
    detail = client.get(reverse(f"{site.name}:memory_rejectedclaim_change", args=[claim_id]))
    for response in (listing, detail):
        assert response.status_code == 200
        page = response.content.decode()
        assert refusal.predicate in page and "conflicting_value" in page
        for text in ("Ballyvaughan", "subject-zeta"):
            assert text not in page, text
    # With view_content the same pages show the words.
    user.is_superuser = True
    user.save()
    page = client.get(reverse(f"{site.name}:memory_rejectedclaim_change", args=[claim_id])).content.decode()
    assert "Ballyvaughan" in page

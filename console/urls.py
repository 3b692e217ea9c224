"""URLs of the operator console: the MemoirAdminSite at /console/, its custom pages first.

The pages are joined to the site's own URLs here rather than in MemoirAdminSite.get_urls, so the site does not
import its pages (which import the site for its context): the old governance/admin.py <-> console_views.py
cycle is gone. The include keeps the site's application namespace and instance name, so every
`admin:<name>` reverse is unchanged.
"""
from django.urls import path

from console import rebuild, subject, views
from console.site import site


def _page(route, view, name):
    return path(route, site.admin_view(view), name=name)


def _console_urls():
    pages = [
        _page("formation/health/", views.formation_health, "console_formation_health"),
        _page("governance/credential/issue/", views.issue_credential, "console_issue_credential"),
        _page("governance/credential/issue/result/", views.issue_credential_result,
              "console_issue_credential_result"),
        _page("governance/erasurerequest/new/", views.new_erasure, "console_new_erasure"),
        _page("governance/export/", views.export_subject, "console_export"),
        _page("memory/rejectedclaim/summary/", views.refusal_summary, "console_refusal_summary"),
        _page("governance/auditentry/activity/", views.ledger_activity, "console_ledger_activity"),
        _page("governance/auditseal/seal/", views.seal_now, "console_seal_now"),
        _page("governance/auditseal/verify/", views.verify_chain, "console_verify_chain"),
        _page("subject/", subject.subject_page, "console_subject"),
        _page("formation/rebuild/", rebuild.rebuild_page, "console_extractor_rebuild"),
    ]
    urls, app_name, instance = site.urls
    return pages + urls, app_name, instance


urlpatterns = [
    path("console/", _console_urls()),
]

"""The /v1 URLconf: every route without a trailing slash."""
from django.urls import path, re_path

from . import views
from . import views_recall
from . import views_subjects

urlpatterns = [
    path("/observations", views.ObservationsView.as_view()),
    path("/freshness", views.FreshnessView.as_view()),
    path("/recalls", views_recall.RecallView.as_view()),
    path("/passages/search", views_recall.PassagesSearchView.as_view()),
    path("/entities/candidates", views_recall.EntityCandidatesView.as_view()),
    path("/reports/candidates", views_recall.ReportCandidatesView.as_view()),
    path("/subjects/register", views_subjects.SubjectsRegisterView.as_view()),
    path("/subjects/get", views_subjects.SubjectsGetView.as_view()),
    path("/subjects/list", views_subjects.SubjectsListView.as_view()),
    path("/subjects/update", views_subjects.SubjectsUpdateView.as_view()),
    path("/artifacts/put", views_subjects.ArtifactsPutView.as_view()),
    path("/artifacts/get", views_subjects.ArtifactsGetView.as_view()),
    path("/artifacts/list", views_subjects.ArtifactsListView.as_view()),
    path("/artifacts/delete", views_subjects.ArtifactsDeleteView.as_view()),
    path("/notifications/endpoints/register", views_subjects.NotificationsRegisterView.as_view()),
    path("/notifications/endpoints/list", views_subjects.NotificationsListView.as_view()),
    path("/notifications/endpoints/disable", views_subjects.NotificationsDisableView.as_view()),
    path("/notifications/deliveries/list", views_subjects.NotificationsDeliveriesView.as_view()),
    re_path(r"^/.*$", views.UnknownRouteView.as_view()),
]

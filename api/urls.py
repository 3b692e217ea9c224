"""The /v1 URLconf: every route without a trailing slash."""
from django.urls import path, re_path

from . import openapi, views, views_governance, views_reads, views_recall, views_records, views_subjects

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
    path("/contexts", views_reads.ContextsView.as_view()),
    path("/citations/resolve", views_reads.CitationsView.as_view()),
    path("/messages/get", views_reads.MessagesView.as_view()),
    path("/records/list", views_reads.RecordsListView.as_view()),
    path("/records/history", views_reads.RecordsHistoryView.as_view()),
    path("/entities/list", views_reads.EntitiesListView.as_view()),
    path("/entities/get", views_reads.EntitiesGetView.as_view()),
    path("/records/assert", views_records.RecordsAssertView.as_view()),
    path("/records/correct", views_records.RecordsCorrectView.as_view()),
    path("/records/retract", views_records.RecordsRetractView.as_view()),
    path("/feedback/record", views_records.FeedbackRecordView.as_view()),
    path("/feedback/list", views_records.FeedbackListView.as_view()),
    path("/feedback/promote", views_records.FeedbackPromoteView.as_view()),
    path("/entities/purge", views_records.EntitiesPurgeView.as_view()),
    path("/erasures", views_governance.ErasuresView.as_view()),
    path("/exports", views_governance.ExportsView.as_view()),
    path("/schema", openapi.schema_view),
    re_path(r"^(?:/.*)?$", views.UnknownRouteView.as_view()),  # bare /v1 too
]

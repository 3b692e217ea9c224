"""The /v1 URLconf: every route without a trailing slash."""
from django.urls import path, re_path

from . import views

urlpatterns = [
    path("/observations", views.ObservationsView.as_view()),
    path("/freshness", views.FreshnessView.as_view()),
    re_path(r"^/.*$", views.UnknownRouteView.as_view()),
]

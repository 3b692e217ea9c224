"""URLs of the operator console (the Django admin at /console/)."""
from django.contrib import admin
from django.urls import path

urlpatterns = [
    path("console/", admin.site.urls),
]

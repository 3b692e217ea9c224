"""URLs of the operator console: the MemoirAdminSite at /console/."""
from django.urls import path

from governance.admin import site

urlpatterns = [
    path("console/", site.urls),
]

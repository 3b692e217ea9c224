"""Development settings: the defaults `make run` uses."""
from .base import *  # noqa: F403

DEBUG = env.bool("DJANGO_DEBUG", default=False)  # noqa: F405
# Serve the console's static files straight from the apps, so `make run` needs no collectstatic step to look right.
WHITENOISE_USE_FINDERS = True

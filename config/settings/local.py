"""Development settings: the defaults `make run` uses."""
from .base import *  # noqa: F403

DEBUG = env.bool("DJANGO_DEBUG", default=False)  # noqa: F405

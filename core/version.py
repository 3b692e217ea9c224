"""The one version string: the console footer, /v1/schema's info.version and `manage.py memoir_version` show it."""
__version__ = "0.2.0"

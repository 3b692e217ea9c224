"""The /v1 HTTP surface: views, strict bodies, errors and encoding."""

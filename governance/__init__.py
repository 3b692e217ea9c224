"""Governance: projects, credentials, erasure, export, retention and the audit ledger."""

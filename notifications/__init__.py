"""Content-free webhooks: endpoints a project registers, and the outbox of deliveries telling them memory formed."""

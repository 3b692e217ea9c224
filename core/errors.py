"""Domain refusals raised by services and selectors; the API maps each to its wire status and code."""


class DomainError(Exception):
    status = 400
    code = "invalid_body"

    def __init__(self, code=None, message=None, *, status=None):
        super().__init__(message or code or self.code)
        if code:
            self.code = code
        if status:
            self.status = status
        self.message = message


class Invalid(DomainError):
    """A request that names something impossible: 400 with the route's code."""


class NotFound(DomainError):
    status = 404
    code = "not_found"


class Conflict(DomainError):
    status = 409
    code = "idempotency_conflict"


class RateLimited(DomainError):
    status = 429
    code = "rate_limited"


class Unavailable(DomainError):
    status = 503

"""Each retain error maps to one HTTP status; the most specific class wins."""

from __future__ import annotations

import pytest

from retain.errors import (
    BudgetInfeasible,
    DuplicateContent,
    EncoderMismatch,
    Forbidden,
    InvalidInput,
    PayloadTooLarge,
    RecordNotFound,
    SchemaError,
    TextTooLong,
    Unauthorized,
    WriteConflict,
)
from retain.service.errors import status_of


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (InvalidInput("x"), 400),
        (TextTooLong("x"), 400),
        (EncoderMismatch("x"), 400),
        (Unauthorized("x"), 401),
        (Forbidden("x"), 403),
        (RecordNotFound("x"), 404),
        (WriteConflict("x"), 409),
        (DuplicateContent("x"), 409),
        (BudgetInfeasible("x"), 409),
        (PayloadTooLarge("x"), 413),
        (SchemaError("x"), 500),
    ],
)
def test_status_of_each_error(error, status):
    assert status_of(error) == status

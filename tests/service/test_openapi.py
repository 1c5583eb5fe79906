"""schemathesis against /openapi.json of a real server: generated requests for every operation
(a bounded number of examples each) never get a 500 and answer with the statuses, content types and
bodies the schema declares."""

from __future__ import annotations

import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

EXAMPLES = 6
"""Examples per operation (about 25 operations): bounded so the test stays well under a minute."""


def test_generated_requests_for_every_operation_conform(server):
    schema = schemathesis.openapi.from_url(f"{server.url}/openapi.json")
    headers = {"Authorization": f"Bearer {server.keys['admin']}"}
    checks = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 20

    for operation in operations:

        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            database=None,
            derandomize=True,
            suppress_health_check=list(HealthCheck),
        )
        @given(case=operation.as_strategy())
        def check(case: schemathesis.Case) -> None:
            case.call_and_validate(base_url=server.url, headers=headers, checks=checks)

        check()

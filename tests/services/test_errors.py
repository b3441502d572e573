"""The services' error helpers: a resource closed when a server's start-up fails."""

from __future__ import annotations

import pytest

from privad.errors import ParameterError
from privad.services.errors import closed_on_error


class _Resource:
    def __init__(self) -> None:
        self.closed = 0

    def close(self) -> None:
        self.closed += 1


def test_closed_on_error_closes_on_any_failure_and_re_raises() -> None:
    for exc in (ParameterError("bad option"), KeyboardInterrupt()):
        resource = _Resource()
        with pytest.raises(type(exc)), closed_on_error(resource):
            raise exc
        assert resource.closed == 1


def test_closed_on_error_leaves_a_good_start_open() -> None:
    resource = _Resource()
    with closed_on_error(resource):
        pass
    assert resource.closed == 0

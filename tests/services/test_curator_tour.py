"""privad.services.curator_tour: the tour's section that asks a curator over loopback."""

from __future__ import annotations

import json

import pytest

from privad.noise import Randomness
from privad.services.curator_tour import curator_section

pytestmark = pytest.mark.slow  # starts a curator server


def test_the_querier_is_charged_per_id_and_not_for_a_repeat() -> None:
    section = curator_section(Randomness(3))
    (ids, first, charged, left), (_, again, free, same), (_, bits, vectors, last) = section.rows
    assert ids.startswith("ids [") and len(json.loads(first)) == 5
    # five ids at ε = 0.1 each of a budget of 1; the same question again is answered from
    # the record (the same noisy bits) for nothing; two far-apart vectors share no ball of
    # radius r, so Claim 5 charges m = 1 of them: 0.1
    assert (charged, left) == ("0.5", "0.5")
    assert (again, free, same) == (first, "0", "0.5")
    assert (vectors, last) == ("0.1", "0.4") and len(json.loads(bits)) == 2
    assert section.title.startswith("privad serve sp: a querier asks the curator over HTTP")

"""The noise policy of a sensor stream: privad.relaxed.stream_sensitivities."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from privad.errors import ParameterError, PrivacyWarning
from privad.relaxed import stream_sensitivities

# 0, 1, ..., 100 in one column: with p_o = 10 eq. (1) takes the 95th and 5th percentiles,
# 95 and 5 (numpy's linear rule on 101 evenly spaced values), so RS = 90; twice that in a
# second column scaled by 2.
WINDOW = np.column_stack([np.arange(101.0), 2 * np.arange(101.0)])


def test_given_sensitivities_are_used_as_they_are():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rs = stream_sensitivities(WINDOW, 10, given=[3.0, 4.0])
    assert rs.tolist() == [3.0, 4.0]


def test_one_given_value_is_every_column_s():
    assert stream_sensitivities(WINDOW, 10, given=2.5).tolist() == [2.5, 2.5]


def test_history_gives_eq_1_on_the_history_without_a_warning():
    history = np.column_stack([np.arange(101.0) * 3, np.arange(101.0)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rs = stream_sensitivities(WINDOW, 10, history=history)
    assert rs == pytest.approx([270.0, 90.0])


def test_without_either_the_first_window_is_used_with_a_privacy_warning():
    with pytest.warns(PrivacyWarning, match="first window .101 records."):
        rs = stream_sensitivities(WINDOW, 10)
    assert rs == pytest.approx([90.0, 180.0])


def test_both_given_and_history_is_refused():
    with pytest.raises(ParameterError, match="not both"):
        stream_sensitivities(WINDOW, 10, given=[1.0, 1.0], history=WINDOW)


def test_a_bad_p_o_is_refused():
    with pytest.raises(ParameterError, match="p_o"):
        stream_sensitivities(WINDOW, 100)

"""A querier's questions to a sensitive-privacy curator (:mod:`privad.services.curator`) as
one call, :func:`ask_curator`: what ``privad sp ask`` does. The curator charges the querier's
budget and answers with noisy labels; this side names each answer and may write them as CSV.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from privad.errors import ParameterError
from privad.io import atomic_write
from privad.services.clients import CuratorClient

__all__ = ["CuratorAnswers", "ask_curator"]


@dataclass(frozen=True)
class CuratorAnswers:
    """The curator's answers to one request.

    Attributes
    ----------
    server : the curator's URL, as given.
    questions : each question's name: the record id, the query's id or ``row N``.
    answers : the noisy labels (1 = anomaly), one per question, in order.
    charged : the ε charged to the querier for this request.
    budget : the querier's budget after it (``total``, ``spent``, ``remaining``, ``notion``).
    output : the CSV file written (``question,label``), or None.

    Examples
    --------
    >>> from privad.services.curator_ask import CuratorAnswers
    >>> budget = {"total": 1.0, "spent": 0.2, "remaining": 0.8, "notion": "sensitive"}
    >>> done = CuratorAnswers("http://h:1", ["3", "7"], [0, 1], 0.2, budget)
    >>> done.to_dict()["answers"]
    [{'question': '3', 'label': 0}, {'question': '7', 'label': 1}]
    >>> done.budget_line
    'charged ε 0.2; budget: spent 0.2 of 1, remaining 0.8 (sensitive)'
    """

    server: str
    questions: list[str]
    answers: list[int]
    charged: float
    budget: dict[str, Any]
    output: Path | None = None

    def to_dict(self) -> dict[str, Any]:
        """The answers as JSON data (``privad sp ask --json``)."""
        pairs = zip(self.questions, self.answers, strict=True)
        return {
            "command": "sp ask",
            "server": self.server,
            "answers": [{"question": q, "label": int(a)} for q, a in pairs],
            "charged": self.charged,
            "budget": self.budget,
            "output": self.output,
        }

    @property
    def budget_line(self) -> str:
        """The charge and the budget left, in one line."""
        b = self.budget
        return (
            f"charged ε {self.charged:g}; budget: spent {b['spent']:g} of {b['total']:g}, "
            f"remaining {b['remaining']:g} ({b['notion']})"
        )


def ask_curator(
    server: str,
    token: str,
    *,
    ids: Sequence[int] | None = None,
    records: Any = None,
    names: Sequence[Any] | None = None,
    add_query_to_data: bool = False,
    output: str | os.PathLike[str] | None = None,
    timeout: float = 60.0,
    verify: bool | str = True,
) -> CuratorAnswers:
    """Ask the curator at ``server`` which records are (β, r)-anomalies.

    Give ``ids`` (records of the curator's data, 0 .. n-1; charged ε per id not asked
    before) or ``records`` (feature vectors, charged by Claim 5; with ``add_query_to_data``
    each is judged as if added to the data, footnote 1), one of them.

    Parameters
    ----------
    server, token : the curator's URL and this querier's token.
    names : with ``records``, the name of each (default ``row N``, N the 0-based row).
    output : also write the answers there as CSV (``question,label``), atomically.
    timeout, verify : seconds per request and the TLS check (a CA bundle's path or a bool).

    Returns
    -------
    CuratorAnswers

    Examples
    --------
    >>> from privad.services.curator_ask import ask_curator
    >>> ask_curator("http://127.0.0.1:1", "querier-token")
    Traceback (most recent call last):
    ...
    privad.errors.ParameterError: give ids (record ids) or records (feature vectors), one of them
    """
    if (ids is None) == (records is None):
        raise ParameterError("give ids (record ids) or records (feature vectors), one of them")
    with CuratorClient(server, token, timeout=timeout, verify=verify) as client:
        if ids is not None:
            reply = client.ask_ids(ids)
            questions = [str(i) for i in ids]
        else:
            reply = client.ask_records(records, add_query_to_data=add_query_to_data)
            count = len(reply["answers"])
            questions = (
                [f"row {i}" for i in range(count)] if names is None else list(map(str, names))
            )
    if output is not None:
        with atomic_write(output, "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(["question", "label"])
            writer.writerows(zip(questions, reply["answers"], strict=True))
    answers = list(reply["answers"])
    return CuratorAnswers(server, questions, answers, reply["charged"], reply["budget"], output)

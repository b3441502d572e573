"""The public half of a search: the data model of eq. (1) and each oracle's answer model.

An :class:`AnswerModel` is what the searcher knows of an oracle (``dp-noisy-binary-search.txt``,
section 4): its ε, its :class:`~privad.accounting.Guarantee`, how to check an answer, and the
likelihood of an answer given that the anomaly is in the queried group Q or in its complement.
A remote oracle's model is rebuilt from the server's public parameters with
:func:`model_from_description`. :func:`check_search_data` checks values against eq. (1).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, Final, Literal, NamedTuple

import numpy as np

from privad.accounting import ANOMALY_RESTRICTED_DP, Component, Guarantee
from privad.errors import DataError, ParameterError
from privad.noise import GRANULARITY_BITS, grid_exponent, laplace_scale_for
from privad.search.theory import binarized_error_probability_for
from privad.validation import check_array, check_choice, check_epsilon, check_int, check_positive

NEIGHBOURING: Final[str] = (
    "anomaly-restricted neighbours (Bittner, Sarwate, Wright, Definition 1): the data sets "
    "share the anomaly (value >= t_h) and differ in one non-anomalous record, whose value "
    "lies in [0, t_l] in both"
)
"""The neighbouring relation every oracle here is ε-DP under."""

ORACLE_KINDS: Final[tuple[str, ...]] = ("laplace", "binarized", "randomized-response")
"""Names accepted by :func:`make_oracle`."""

ORACLE_ALIASES: Final[Mapping[str, str]] = {
    "laplace": "laplace",
    "max": "laplace",
    "binarized": "binarized",
    "binary": "binarized",
    "randomized-response": "randomized-response",
    "rr": "randomized-response",
}
"""The oracle names and aliases the oracle server and ``--kind`` accept (``rr`` is
randomized response), each with the name of :data:`ORACLE_KINDS` it stands for."""


def oracle_kind(kind: Any) -> str:
    """The canonical oracle name (:data:`ORACLE_KINDS`) of ``kind`` or an alias.

    Examples
    --------
    >>> oracle_kind(" RR "), oracle_kind("max")
    ('randomized-response', 'laplace')
    """
    key = str(kind).strip().lower() if isinstance(kind, str) else kind
    if key in ORACLE_ALIASES:
        return ORACLE_ALIASES[key]
    return check_choice(kind, "kind", ORACLE_KINDS)


class MaxAnswer(NamedTuple):
    """The answer of the max oracle (eq. 9): Y_t for Q and Ȳ_t for its complement."""

    y: float
    y_complement: float


class AnswerModel(ABC):
    """What the searcher knows about an oracle: ε, guarantee, answer format, likelihood.

    :meth:`log_likelihoods` returns (log φ(answer | i* ∈ Q), log φ(answer | i* ∉ Q)), each
    up to one additive constant shared by both (and by :meth:`log_likelihood_absent`), which
    the normalisation of Bayes' rule (eq. 12) cancels.
    """

    kind: str = ""
    supports_absent: bool = False
    """Whether the model has a likelihood for "no anomaly among the items" (section 7 search)."""

    _epsilon: float

    @property
    def epsilon(self) -> float:
        """ε of one query under :data:`NEIGHBOURING`."""
        return self._epsilon

    @property
    @abstractmethod
    def guarantee(self) -> Guarantee:
        """The per-query guarantee, notion ``"anomaly-restricted-dp"``."""

    def _declare(self, description: str, **extra: Any) -> Guarantee:
        """ε-DP under :data:`NEIGHBOURING` for one answer (Definition 1), as data."""
        return Guarantee(
            ANOMALY_RESTRICTED_DP, self._epsilon, NEIGHBOURING, description=description, **extra
        )

    @abstractmethod
    def check_answer(self, answer: Any) -> Any:
        """The answer in canonical form; :class:`~privad.errors.DataError` if malformed."""

    @abstractmethod
    def log_likelihoods(self, answer: Any) -> tuple[float, float]:
        """(log φ(answer | i* ∈ Q), log φ(answer | i* ∉ Q)), up to a shared constant."""

    def log_likelihood_absent(self, answer: Any) -> float:
        """log φ(answer | no anomaly), on the scale of :meth:`log_likelihoods`."""
        raise ParameterError(
            f"the {self.kind or type(self).__name__} answer model has no likelihood for "
            "'no anomaly present'; use the Laplace max or randomized-response oracle"
        )

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """The public parameters as a JSON-ready dict (:func:`model_from_description`)."""


def _binary_answer(answer: Any) -> bool:
    if isinstance(answer, bool | np.bool_):
        return bool(answer)
    if isinstance(answer, int | np.integer) and int(answer) in (0, 1):
        return bool(answer)
    raise DataError(f"a binary oracle answer must be 0/1 or a bool, got {answer!r}")


class BinaryModel(AnswerModel):
    """A binary answer that is wrong with probability (at most) p: eq. (6).

    Used for randomized response (p the flip probability, ε = ln((1 - p)/p)) and for the
    binarized max oracle (p of eq. 24, ε of the underlying Laplace oracle). An answer 1 says
    "the anomaly is in Q": the likelihoods are (ln(1 - p), ln p) for answer 1 and
    (ln p, ln(1 - p)) for answer 0, the update (6) with R_t = Q_t or Q̄_t.
    """

    def __init__(
        self,
        p: float,
        epsilon: float,
        *,
        kind: Literal["randomized-response", "binarized"],
        description: str = "",
    ) -> None:
        p = float(p)
        if not (0.0 < p < 0.5) or not math.isfinite(p):
            raise ParameterError(f"p (the error probability) must be in (0, 1/2), got {p!r}")
        self.p = p
        self._epsilon = check_epsilon(epsilon, per_answer=True)
        self.kind = check_choice(kind, "kind", ("randomized-response", "binarized"))
        # Under "no anomaly" randomized response always reports the true bit 0, flipped with
        # probability p. The binarized answer has no fixed law then (it depends on the data).
        self.supports_absent = self.kind == "randomized-response"
        if not description:
            description = (
                f"randomized response (eq. 5) with flip probability {p!r}"
                if self.kind == "randomized-response"
                else "binarized noisy maxima Z = 1(Y > Ybar) (section 5, post-processing of "
                f"eq. 9); error probability at most p = {p!r} (eq. 24)"
            )
        self._description = description
        self._log_right = math.log1p(-p)
        self._log_wrong = math.log(p)

    @property
    def guarantee(self) -> Guarantee:
        return self._declare(self._description)

    def check_answer(self, answer: Any) -> bool:
        return _binary_answer(answer)

    def log_likelihoods(self, answer: Any) -> tuple[float, float]:
        if _binary_answer(answer):
            return self._log_right, self._log_wrong
        return self._log_wrong, self._log_right

    def log_likelihood_absent(self, answer: Any) -> float:
        if not self.supports_absent:
            return super().log_likelihood_absent(answer)
        return self._log_wrong if _binary_answer(answer) else self._log_right

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "p": self.p, "epsilon": self._epsilon}

    def __repr__(self) -> str:
        return f"BinaryModel(kind={self.kind!r}, p={self.p!r}, epsilon={self._epsilon!r})"


class LaplaceMaxModel(AnswerModel):
    """The max oracle's answer (Y, Ȳ) and the approximate likelihood of eq. (11).

    φ(Y, Ȳ | i* ∈ Q) = (1/(2λ))² exp(-(|Y - t_h| + |Ȳ - t_ℓ|)/λ) and, for i* ∉ Q,
    (1/(2λ))² exp(-(|Y - t_ℓ| + |Ȳ - t_h|)/λ): the true maxima are replaced by the thresholds
    (the searcher does not know them). λ is the oracle's Laplace scale: the paper's t_ℓ/ε,
    or (our choice) the slightly larger scale the floating-point-safe mechanism really uses
    (at most 2**-40 relative difference). The shared factor (1/(2λ))² is dropped.

    For "no anomaly among the items" (section 7 search) both maxima are taken to be t_ℓ:
    log φ = -(|Y - t_ℓ| + |Ȳ - t_ℓ|)/λ on the same scale (our extension).
    """

    kind = "laplace"
    supports_absent = True

    def __init__(
        self,
        epsilon: float,
        t_low: float,
        t_high: float,
        scale: float | None = None,
        *,
        granularity_bits: int = GRANULARITY_BITS,
    ) -> None:
        self._epsilon = check_epsilon(epsilon, per_answer=True)
        self.t_low, self.t_high = check_thresholds(t_low, t_high)
        self.granularity_bits = check_int(granularity_bits, "granularity_bits")
        if scale is None:
            scale = laplace_scale_for(
                self.t_low, self._epsilon, coordinates=1, granularity_bits=self.granularity_bits
            )
        self.scale = check_positive(scale, "scale")
        if self.scale * self._epsilon < self.t_low * (1 - 1e-12):
            raise ParameterError(
                f"scale {self.scale!r} is below t_l/epsilon = {self.t_low / self._epsilon!r}: "
                "the oracle would not be epsilon-DP"
            )
        self.grid = math.ldexp(1.0, grid_exponent(self.scale, self.granularity_bits))

    @property
    def guarantee(self) -> Guarantee:
        # The accountant composes the Laplace mechanism's privacy-loss distribution, not a
        # worst-case ε-DP answer: scale b on a query of sensitivity ε·b ≥ t_l + the grid's
        # allowance (laplace_scale_for), so the declared mechanism is never tighter than
        # the real one (Lemma 1: one coordinate of the pair changes).
        return self._declare(
            description=(
                "noisy group maxima (eq. 9): max over Q and over its complement, each plus "
                f"floating-point-safe Laplace noise of scale {self.scale!r} (sensitivity "
                f"t_l = {self.t_low!r} by Lemma 1, one coordinate changes, grid {self.grid!r})"
            ),
            components=(Component.laplace(self.scale, self._epsilon * self.scale),),
        )

    def check_answer(self, answer: Any) -> MaxAnswer:
        try:
            y, y_bar = (float(v) for v in answer)
        except (TypeError, ValueError):
            raise DataError(
                f"a max-oracle answer must be a pair of numbers (Y, Ybar), got {answer!r}"
            ) from None
        if not (math.isfinite(y) and math.isfinite(y_bar)):
            raise DataError(f"a max-oracle answer must be finite, got {answer!r}")
        return MaxAnswer(y, y_bar)

    def log_likelihoods(self, answer: Any) -> tuple[float, float]:
        y, y_bar = self.check_answer(answer)
        lo, hi, lam = self.t_low, self.t_high, self.scale
        return (
            -(abs(y - hi) + abs(y_bar - lo)) / lam,
            -(abs(y - lo) + abs(y_bar - hi)) / lam,
        )

    def log_likelihood_absent(self, answer: Any) -> float:
        y, y_bar = self.check_answer(answer)
        return -(abs(y - self.t_low) + abs(y_bar - self.t_low)) / self.scale

    def describe(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "epsilon": self._epsilon,
            "t_low": self.t_low,
            "t_high": self.t_high,
            "scale": self.scale,
            "granularity_bits": self.granularity_bits,
        }

    def __repr__(self) -> str:
        return (
            f"LaplaceMaxModel(epsilon={self._epsilon!r}, t_low={self.t_low!r}, "
            f"t_high={self.t_high!r}, scale={self.scale!r})"
        )


def binarized_model(base: LaplaceMaxModel) -> BinaryModel:
    """The binary model of Z = 1(Y > Ȳ) computed from ``base``'s answers (eq. 24).

    p = (1/2 + w/(4λ)) exp(-w/λ) with λ the scale actually used and w = t_h - t_ℓ less one
    grid step (snapping moves each maximum by at most half a step), so p bounds the error of
    the snapped release too. (The discrete Laplace on a grid 2**40 times finer than λ has
    the continuous tail up to a relative 1e-12, which we neglect.)
    """
    gap = (base.t_high - base.t_low) - base.grid
    p = binarized_error_probability_for(base.t_low, base.t_low + gap, base.scale)
    return BinaryModel(p, base.epsilon, kind="binarized")


def model_from_description(data: Mapping[str, Any]) -> AnswerModel:
    """Rebuild an answer model from :meth:`AnswerModel.describe` (e.g. sent by a server)."""
    if not isinstance(data, Mapping) or "kind" not in data:
        raise ParameterError(f"a model description must be a mapping with 'kind', got {data!r}")
    kind = check_choice(data["kind"], "kind", ORACLE_KINDS)
    try:
        if kind == "laplace":
            return LaplaceMaxModel(
                data["epsilon"],
                data["t_low"],
                data["t_high"],
                data.get("scale"),
                granularity_bits=data.get("granularity_bits", GRANULARITY_BITS),
            )
        return BinaryModel(data["p"], data["epsilon"], kind=kind)  # type: ignore[arg-type]
    except KeyError as exc:
        raise ParameterError(f"model description of kind {kind!r} lacks {exc}") from None


def check_thresholds(t_low: Any, t_high: Any) -> tuple[float, float]:
    """The thresholds of eq. (1): 0 < t_ℓ < t_h, as floats (else ParameterError)."""
    lo = check_positive(t_low, "t_low")
    hi = check_positive(t_high, "t_high")
    if not hi > lo:
        raise ParameterError(
            f"t_high must be > t_low (eq. 1 separates [0, t_l] from [t_h, inf)), got "
            f"t_low={lo!r}, t_high={hi!r}"
        )
    return lo, hi


def check_search_data(values: Any, t_low: Any, t_high: Any) -> tuple[np.ndarray, float, float]:
    """Validate data against the model of eq. (1); return (values, t_low, t_high).

    Values must be finite, at least two, nonnegative (the model has x_i ∈ R+), and each
    in [0, t_ℓ] (non-anomalous) or [t_h, ∞) (anomalous): a value in (t_ℓ, t_h) would break
    the sensitivity bound of Lemma 1 and so the privacy guarantee. Raises
    :class:`~privad.errors.DataError` / :class:`~privad.errors.ParameterError`.
    """
    lo, hi = check_thresholds(t_low, t_high)
    x = check_array(values, "values", ndim=1, min_rows=2)
    if (x < 0).any():
        raise DataError(
            f"values must be >= 0 (the paper's data model, section 3.1), got "
            f"{int((x < 0).sum())} negative value(s)"
        )
    between = (x > lo) & (x < hi)
    if between.any():
        raise DataError(
            f"{int(between.sum())} value(s) lie strictly between t_low = {lo!r} and t_high = "
            f"{hi!r}; eq. (1) needs every value in [0, t_low] or [t_high, inf) (otherwise the "
            "max oracle's sensitivity exceeds t_low and its privacy guarantee fails)"
        )
    x = x.copy()
    x.setflags(write=False)
    return x, lo, hi

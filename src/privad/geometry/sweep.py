"""Sort-and-sweep window of the dual-tree leaf kernels (:mod:`privad.geometry.dualtree`).

The points of every kd-tree leaf are sorted by the leaf's widest feature ``w``
(:func:`privad.geometry.kdtree.widest_feature`). Before sorting the points of a leaf out
against a box, :func:`window` narrows them, by binary search, to the points whose distance
from the box on feature ``w`` *alone* is within the threshold; the points of a leaf paired
with itself are swept in order, each compared only with the following points up to
:func:`upper_end`.

Why this is exact (canonical arithmetic of :mod:`privad.geometry.predicate`): the pair value
combines non-negative per-feature terms from 0 with ``+`` or ``max``, and rounding is
monotone, so every partial result, and the pair value itself, is at least any single term:
``v(x, y) >= term(fl(x[w] - y[w]))`` with ``term(t) = fl(t * t)`` (euclidean) or ``|t|``.
A point whose term exceeds ``thr`` is therefore outside the ball, as computed. And since
``fl(x[w] - y)`` does not increase as ``y`` grows, the points with a term above ``thr`` are
a prefix (``x[w] - y > 0``) and a suffix (``x[w] - y < 0``) of the sorted run: the window
between them is found by binary search with the very same test, no derived bound. Against
a box ``[lo, hi]`` take ``x[w] = lo`` for the prefix and ``hi`` for the suffix: the point's
lower box bound, and its pair value with every point of the box, is at least that term.
"""

from __future__ import annotations

from numba import njit

from privad.geometry.kdtree import widest_feature
from privad.geometry.predicate import EUCLIDEAN


@njit(cache=True, inline="always")
def _outside(t, thr, metric):
    """Whether the single-feature term of the difference ``t`` exceeds ``thr``."""
    if metric == EUCLIDEAN:
        return t * t > thr
    return abs(t) > thr


@njit(cache=True)
def _before(x, y, thr, metric, upper):
    """Whether the point with value ``y`` on the sweep feature lies before the end of the
    lower (``upper`` false: it is outside, below ``x``) or the upper (``upper``: it is not
    outside above ``x``) part of the run."""
    t = x - y
    if upper:
        return not ((t < 0.0) & _outside(t, thr, metric))
    return (t > 0.0) & _outside(t, thr, metric)


@njit(cache=True)
def _end(x, YT, w, s, e, thr, metric, upper):
    """First ``k`` in ``[s, e]`` with ``YT[w, k]`` not :func:`_before` (those that are form a
    prefix of the sorted run). Branch-free halving: the test only moves the base."""
    base = s
    n = e - s
    while n > 1:
        half = n // 2
        base += half * _before(x, YT[w, base + half - 1], thr, metric, upper)
        n -= half
    if n == 1:
        base += _before(x, YT[w, base], thr, metric, upper)
    return base


@njit(cache=True)
def window(x_lo, x_hi, YT, w, s, e, thr, metric):
    """``(k0, k1)``: the points ``YT[:, k0:k1]`` of the run ``YT[:, s:e]``, sorted by feature
    ``w``, not outside the interval ``[x_lo, x_hi]`` on ``w`` alone (its single-feature
    gap term at most ``thr``); the points left out are outside the ball of every point with
    its ``w`` coordinate in the interval (module docstring). Binary search."""
    k0 = _end(x_lo, YT, w, s, e, thr, metric, False)
    return k0, _end(x_hi, YT, w, k0, e, thr, metric, True)


@njit(cache=True)
def upper_end(x, YT, w, k, e, thr, metric):
    """The first point at or after ``k`` in the sorted run ending at ``e`` that is outside
    above ``x`` on ``w``. Non-decreasing in ``x``: a sweep over sorted ``x`` moves it on."""
    while k < e and _before(x, YT[w, k], thr, metric, True):
        k += 1
    return k


@njit(cache=True)
def leaf_window(lo, hi, leaf, box_lo, box_hi, XT, s, e, thr, metric):
    """:func:`window` of the points ``XT[:, s:e]`` of ``leaf`` (node boxes ``lo``/``hi``)
    against the box ``[box_lo, box_hi]`` on the leaf's widest feature, which sorts them."""
    w = widest_feature(lo, hi, leaf)[0]
    return window(box_lo[w], box_hi[w], XT, w, s, e, thr, metric)

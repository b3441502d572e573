"""A reproduction report: CSV tables, PNG figures and one HTML page, all written atomically.

:class:`Report` collects sections (a heading, explanatory text, tables shown inline, figures
embedded by relative links, links to the CSV files) and writes ``index.html`` last. Every
file goes through :func:`privad.io.atomic_write`, so an interrupted run leaves complete
files or none (never a half-written CSV, PNG or page).

:class:`Reproduction` is the skeleton every ``privad.experiments.<scheme>.reproduce``
fills: a list of :class:`Step` (a progress label, its share of the progress bar, and a
section function that computes, keeps its tables and figures with :meth:`Reproduction.keep`
and returns its sections), run in order with progress and timings; :meth:`Reproduction.finish`
writes the page last and returns every file written.

Figures are :class:`matplotlib.figure.Figure` objects created without :mod:`matplotlib.pyplot`
(no global state, no display needed); they are rendered by the Agg backend at 200 dpi (or as
SVG), with legends outside the axes. Tables scroll sideways when wide, their headers read as
words (``n_queries`` → "n queries"), and whole numbers print without decimals.
"""

from __future__ import annotations

import html
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from privad.io import atomic_write

__all__ = [
    "Progress",
    "Report",
    "Reproduction",
    "Section",
    "Step",
    "format_number",
    "human_header",
    "new_figure",
]

Progress = Callable[[str, int, int], None] | None
"""``progress(step, done, total)``: called before each step and once at the end."""


def format_number(value: Any) -> str:
    """Numbers as the paper prints them: 4 decimals, or 4-digit scientific notation when tiny.

    ``0.475 -> "0.4750"``, ``1.1127e-21 -> "1.1127E-21"``, integers unchanged, NaN -> "—".
    """
    if value is None:
        return "—"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return str(value)
    try:
        v = float(value)
    except (TypeError, ValueError):
        return str(value)
    if math.isnan(v):
        return "—"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if v == 0.0:
        return "0"
    if float(v).is_integer() and abs(v) < 1e12 and not isinstance(value, float):
        return str(int(v))
    if 1e-3 <= abs(v) < 1e5:
        return f"{v:.4f}"
    return f"{v:.4E}"


def new_figure(width: float, height: float) -> Any:
    """A :class:`matplotlib.figure.Figure` of the given size in inches (no pyplot)."""
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


@dataclass
class Section:
    """One section of the page.

    Attributes
    ----------
    title
        heading.
    text
        paragraphs of plain text (escaped), one string each.
    tables
        (caption, DataFrame) pairs shown inline.
    figures
        (file name, caption) pairs, embedded with relative links.
    files
        (file name, description) pairs, linked (CSV data of the section).
    """

    title: str
    text: list[str] = field(default_factory=list)
    tables: list[tuple[str, pd.DataFrame]] = field(default_factory=list)
    figures: list[tuple[str, str]] = field(default_factory=list)
    files: list[tuple[str, str]] = field(default_factory=list)

    @classmethod
    def of_kept(
        cls,
        name: str,
        title: str,
        *,
        text: Sequence[str],
        tables: Sequence[tuple[str, pd.DataFrame]],
        figure: str | None = None,
        data: str = "all columns",
    ) -> Section:
        """The section of the table kept as ``name`` (:meth:`Reproduction.keep`).

        ``tables`` are shown inline; ``name``.png, the kept table drawn, is embedded with the
        caption ``figure`` when one is given; ``name``.csv is linked, described as ``data``.

        Examples
        --------
        >>> import pandas as pd
        >>> t = pd.DataFrame({"epsilon": [0.1, 1.0], "error_rate": [0.4, 0.1]})
        >>> s = Section.of_kept("figure2", "Figure 2", text=["Error against ε."],
        ...                     tables=[("Summary", t)], figure="Error rate against ε")
        >>> s.figures, s.files
        ([('figure2.png', 'Error rate against ε')], [('figure2.csv', 'all columns')])
        """
        return cls(
            title,
            text=list(text),
            tables=list(tables),
            figures=[] if figure is None else [(f"{name}.png", figure)],
            files=[(f"{name}.csv", data)],
        )


class Report:
    """Writes a reproduction into ``directory``: CSVs and PNGs first, ``index.html`` last.

    Parameters
    ----------
    directory
        output folder (created if missing).
    title
        the page title.
    intro
        paragraphs shown under the title.
    """

    def __init__(self, directory: str | Path, title: str, intro: Sequence[str] = ()) -> None:
        self.directory = Path(directory)
        self.title = title
        self.intro = list(intro)
        self.sections: list[Section] = []
        self.written: list[Path] = []

    def write_csv(self, name: str, frame: pd.DataFrame) -> Path:
        """Write ``frame`` as ``name`` (CSV, no index, full float precision), atomically."""
        path = self.directory / name
        with atomic_write(path, "w", newline="", encoding="utf-8") as handle:
            frame.to_csv(handle, index=False)
        self.written.append(path)
        return path

    def save_figure(self, name: str, figure: Any, *, dpi: int = 200) -> Path:
        """Render ``figure`` to ``name`` (PNG at ``dpi``, or SVG for a ``.svg`` name; Agg
        backend), atomically. Legends are moved outside the axes, so they never cover data."""
        path = self.directory / name
        _legends_outside(figure)
        fmt = "svg" if path.suffix.lower() == ".svg" else "png"
        with atomic_write(path, "wb") as handle:
            figure.savefig(handle, format=fmt, dpi=dpi)
        self.written.append(path)
        return path

    def add(self, section: Section) -> Section:
        """Append a section to the page."""
        self.sections.append(section)
        return section

    def html(self) -> str:
        """The page as a string (figures and files referenced by relative links)."""
        parts = [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            f"<title>{html.escape(self.title)}</title>",
            "<style>",
            "body{font-family:sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;"
            "line-height:1.4}",
            ".scroll{overflow-x:auto;max-width:100%;margin:.5em 0 1.5em}",
            "table{border-collapse:collapse;font-size:.85em}",
            "th,td{border:1px solid #bbb;padding:.2em .5em;text-align:right}",
            "th{background:#eee}td:first-child,th:first-child{text-align:left}",
            "caption{text-align:left;font-weight:bold;padding:.3em 0}",
            "img{max-width:100%;border:1px solid #ddd}figure{margin:1em 0}",
            "figcaption{font-size:.9em;color:#333}",
            "nav ul{columns:2}",
            "</style></head><body>",
            f"<h1>{html.escape(self.title)}</h1>",
        ]
        parts += [f"<p>{html.escape(p)}</p>" for p in self.intro]
        if self.sections:
            parts.append("<nav><ul>")
            for n, s in enumerate(self.sections):
                parts.append(f'<li><a href="#s{n}">{html.escape(s.title)}</a></li>')
            parts.append("</ul></nav>")
        for n, s in enumerate(self.sections):
            parts.append(f'<h2 id="s{n}">{html.escape(s.title)}</h2>')
            parts += [f"<p>{html.escape(p)}</p>" for p in s.text]
            for caption, frame in s.tables:
                parts.append(_table_html(caption, frame))
            for name, caption in s.figures:
                src = html.escape(name, quote=True)
                parts.append(
                    f'<figure><img src="{src}" alt="{html.escape(caption, quote=True)}">'
                    f"<figcaption>{html.escape(caption)}</figcaption></figure>"
                )
            if s.files:
                links = ", ".join(
                    f'<a href="{html.escape(name, quote=True)}">{html.escape(name)}</a>'
                    f" ({html.escape(desc)})"
                    for name, desc in s.files
                )
                parts.append(f"<p>Data: {links}</p>")
        parts.append("</body></html>")
        return "\n".join(parts) + "\n"

    def write_html(self, name: str = "index.html") -> Path:
        """Write the page (atomically) and return its path."""
        path = self.directory / name
        with atomic_write(path, "w", encoding="utf-8") as handle:
            handle.write(self.html())
        self.written.append(path)
        return path


@dataclass(frozen=True)
class Step:
    """One step of a reproduction.

    Attributes
    ----------
    name
        the progress label.
    run
        the section function: computes with the :class:`Reproduction` it is given
        (:meth:`Reproduction.keep` writes its tables and figures) and returns the sections
        it adds to the page (one, several or none).
    units
        its share of the progress bar; a step that reports finer progress calls
        :meth:`Reproduction.tick` at most ``units`` times.
    """

    name: str
    run: Callable[[Reproduction], Section | Sequence[Section] | None]
    units: int = 1


class Reproduction:
    """The skeleton of a reproduction: a :class:`Report`, steps with progress and timings.

    Parameters
    ----------
    directory
        output folder (created if missing; files in it are replaced).
    title
        the page title.
    progress
        ``progress(step, done, total)`` before each step, as steps tick, before the page
        and once at the end (``done == total``).

    Attributes
    ----------
    report
        the :class:`Report` written into ``directory``.
    tables
        every table kept by :meth:`keep`, by name.
    timings
        seconds per step name, and ``"total"`` after :meth:`finish`.
    """

    def __init__(self, directory: str | Path, title: str, *, progress: Progress = None) -> None:
        self.report = Report(Path(directory).expanduser(), title)
        self.progress = progress
        self.tables: dict[str, pd.DataFrame] = {}
        self.timings: dict[str, float] = {}
        self.done = 0
        self.total = 1
        self._start = time.perf_counter()

    @property
    def directory(self) -> Path:
        """The output folder."""
        return self.report.directory

    def elapsed(self) -> float:
        """Seconds since the reproduction started."""
        return time.perf_counter() - self._start

    def provenance(
        self,
        mode: str,
        facts: str,
        *,
        command: str = "",
        timings: bool = False,
        elapsed: float | None = None,
    ) -> str:
        """The page's first line: privad's version, the ``mode``, ``facts`` about the run,
        the seconds it took (``elapsed``, default: so far; with ``timings``, each step's
        too) and the ``command`` that ran it, when given.

        Examples
        --------
        >>> r = Reproduction("out", "A reproduction")
        >>> line = r.provenance("quick", "seed 0", command="privad reproduce sp --quick")
        >>> line.startswith("privad "), line.endswith("s. Command: privad reproduce sp --quick")
        (True, True)
        """
        from privad import __version__

        seconds = self.elapsed() if elapsed is None else elapsed
        steps = ", ".join(f"{k} {v:.1f} s" for k, v in self.timings.items())
        return (
            f"privad {__version__}. Mode: {mode}; {facts}; computed in {seconds:.1f} s"
            + (f" ({steps})" if timings else "")
            + "."
            + (f" Command: {command}" if command else "")
        )

    def keep(
        self, name: str, frame: pd.DataFrame, draw: Callable[[pd.DataFrame], Any] | None = None
    ) -> pd.DataFrame:
        """Keep table ``name``: in :attr:`tables`, as ``name``.csv and, drawn, as ``name``.png."""
        self.tables[name] = frame
        self.report.write_csv(f"{name}.csv", frame)
        if draw is not None:
            self.report.save_figure(f"{name}.png", draw(frame))
        return frame

    def say(self, text: str) -> None:
        """Report ``text`` at the current position (never past the last unit)."""
        if self.progress is not None:
            self.progress(text, min(self.done, self.total - 1), self.total)

    def tick(self, text: str) -> None:
        """One unit of the current step done; report ``text``."""
        self.done += 1
        self.say(text)

    def run(self, steps: Sequence[Step]) -> None:
        """Run ``steps`` in order: progress before each, its timing, its sections added.

        The progress total is the units done so far, those of ``steps`` and one for the page,
        so a reproduction whose later steps depend on an earlier one (their units unknown
        before it) calls :meth:`run` more than once.
        """
        self.total = self.done + sum(s.units for s in steps) + 1
        for step in steps:
            start = self.done
            self.say(step.name)
            t0 = time.perf_counter()
            sections = step.run(self)
            self.timings[step.name] = time.perf_counter() - t0
            self.done = start + step.units
            if isinstance(sections, Section):
                sections = [sections]
            for section in sections or ():
                self.report.add(section)

    def finish(self, intro: Sequence[str], page: str | None = "index.html") -> list[Path]:
        """Write the page (``intro`` under the title) last, report the end; every file written.

        ``page=None`` writes no page (a caller that adds the sections to its own).
        """
        self.done = self.total - 1
        if page is not None:
            self.say(page)
            self.report.intro = list(intro)
            self.report.write_html(page)
        if self.progress is not None:
            self.progress("done", self.total, self.total)
        self.timings["total"] = self.elapsed()
        return list(self.report.written)


def _legends_outside(figure: Any) -> None:
    """Move every axes' legend to the right of the axes (constrained layout makes room)."""
    for ax in figure.axes:
        legend = ax.get_legend()
        if legend is None:
            continue
        handles, labels = ax.get_legend_handles_labels()
        title = legend.get_title().get_text() or None
        ax.legend(
            handles,
            labels,
            title=title,
            loc="upper left",
            bbox_to_anchor=(1.02, 1.0),
            borderaxespad=0.0,
            fontsize="small",
        )


def human_header(name: Any) -> str:
    """A column name as a header a reader expects: ``mean_error_sp`` → ``mean error sp``."""
    return str(name).replace("_", " ")


def _integral_columns(frame: pd.DataFrame) -> set[Any]:
    """Float columns whose finite values are all whole numbers (shown without decimals)."""
    out = set()
    for column in frame.columns:
        values = pd.to_numeric(frame[column], errors="coerce")
        finite = values[values.notna() & (values.abs() != float("inf"))]
        if (
            frame[column].dtype.kind == "f"
            and len(finite)
            and (finite == finite.round()).all()
            and (finite.abs() < 1e12).all()
        ):
            out.add(column)
    return out


def _table_html(
    caption: str, frame: pd.DataFrame, formatter: Callable[[Any], str] = format_number
) -> str:
    head = "".join(f"<th>{html.escape(human_header(c))}</th>" for c in frame.columns)
    integral = _integral_columns(frame)
    rows = []
    for record in frame.itertuples(index=False):
        cells = "".join(
            f"<td>{html.escape(_cell(v, c in integral, formatter))}</td>"
            for c, v in zip(frame.columns, record, strict=True)
        )
        rows.append(f"<tr>{cells}</tr>")
    return (
        f'<div class="scroll"><table><caption>{html.escape(caption)}</caption>'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
    )


def _cell(value: Any, integral: bool, formatter: Callable[[Any], str]) -> str:
    if integral and isinstance(value, float) and math.isfinite(value):
        return str(int(value))
    return formatter(value)

"""privad.experiments.report.Reproduction: the skeleton every reproduction fills."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from privad.experiments.report import Reproduction, Section, Step


def test_steps_progress_sections_and_the_page_last(tmp_path: Path) -> None:
    seen: list[tuple[str, int, int]] = []
    r = Reproduction(tmp_path / "out", "A title", progress=lambda s, d, t: seen.append((s, d, t)))

    def first(r: Reproduction) -> Section:
        r.keep("one", pd.DataFrame({"a": [1, 2]}))
        return Section("First", text=["prose"], files=[("one.csv", "data")])

    def ticking(r: Reproduction) -> list[Section]:
        r.tick("half")
        r.tick("all")
        return [Section("Second"), Section("Third")]

    r.run([Step("load", lambda r: None), Step("first", first)])
    assert r.total == 3 and r.done == 2
    r.run([Step("ticking", ticking, units=2), Step("quiet", lambda r: None, units=0)])
    files = r.finish(["intro line"])
    # the units of a second run count on from the first; one more for the page
    assert seen == [
        ("load", 0, 3),
        ("first", 1, 3),
        ("ticking", 2, 5),
        ("half", 3, 5),
        ("all", 4, 5),
        ("quiet", 4, 5),
        ("index.html", 4, 5),
        ("done", 5, 5),
    ]
    assert [p.name for p in files] == ["one.csv", "index.html"]
    assert [s.title for s in r.report.sections] == ["First", "Second", "Third"]
    assert set(r.timings) == {"load", "first", "ticking", "quiet", "total"}
    assert list(r.tables) == ["one"]
    page = (tmp_path / "out" / "index.html").read_text(encoding="utf-8")
    assert "<p>intro line</p>" in page and page.index("First") < page.index("Third")
    assert pd.read_csv(tmp_path / "out" / "one.csv")["a"].tolist() == [1, 2]


def test_a_tick_never_reports_past_the_last_unit_and_no_page(tmp_path: Path) -> None:
    seen: list[tuple[str, int, int]] = []
    r = Reproduction(tmp_path, "T", progress=lambda s, d, t: seen.append((s, d, t)))

    def overrun(r: Reproduction) -> None:
        for _ in range(3):
            r.tick("x")

    r.run([Step("one unit", overrun)])
    assert [d for _, d, _ in seen] == [0, 1, 1, 1]  # clipped at total − 1 = 1
    assert r.finish([], page=None) == [] and not (tmp_path / "index.html").exists()
    assert seen[-1] == ("done", 2, 2)

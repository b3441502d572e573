"""``privad budget``: show, set and reset privacy budgets in a ledger file; cancel a
reservation left by a run that was killed.

The ledger is :class:`privad.accounting.Ledger`; ``--ledger`` defaults to ``$PRIVAD_LEDGER``
if set, else ``~/.privad/ledger.sqlite``. Every :class:`~privad.errors.PrivadError` (a bad
ε, a missing or foreign ledger file) reaches ``privad.cli.main``, which prints it on one line
and exits with status 2.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import typer

from privad.accounting import BUDGETED_NOTIONS, PURE_DP, Ledger, default_ledger_path
from privad.accounting.exact import fmt
from privad.accounting.report import cancel_reservation, ledger_report, reset_ledger
from privad.cli._options import DELTA_OPTION, LEDGER_HELP, Integer, Number, check_output_path
from privad.cli._render import JSON_OPTION, emit, out_console
from privad.cli._tables import rows_table
from privad.errors import PrivadError
from privad.validation import check_choice, check_epsilon

budget_app = typer.Typer(
    name="budget",
    help=(
        "Privacy budgets: set a scope's total ε, show what was spent on what, reset.\n\n"
        "Budgets are kept per scope (a dataset, a user, a deployment: any name) and per "
        "privacy notion, in a ledger file. A pure-dp spend also counts against the "
        "sensitive, anomaly-restricted-dp and relaxed-dp budgets of its scope (ε-DP implies "
        "them)."
    ),
    no_args_is_help=True,
    add_completion=False,
)

_NOTIONS = ", ".join(BUDGETED_NOTIONS)

LEDGER_OPTION: Any = typer.Option(None, "--ledger", metavar="PATH", help=LEDGER_HELP)
YES_OPTION: Any = typer.Option(
    False,
    "--yes",
    "-y",
    help="Do not ask for confirmation. Without it the command asks, and refuses when "
    "there is no one to answer (no standard input).",
)


def _scope_option(what: str) -> Any:
    """``--scope SCOPE``: ``what`` (e.g. "Show only") this scope; default every scope."""
    return typer.Option(
        None,
        "--scope",
        metavar="SCOPE",
        help=f"{what} this scope (a non-empty name). Default: every scope.",
    )


def _open(ledger: str | None, *, create: bool) -> Ledger:
    if ledger is not None and create:  # a new ledger only where its folder exists
        check_output_path(ledger, "--ledger", "store")
    return Ledger(default_ledger_path() if ledger is None else ledger, create=create)


@budget_app.command("show")
def show(
    ledger: str | None = LEDGER_OPTION,
    scope: str | None = _scope_option("Show only"),
    last: int = Integer("an integer >= 0", minimum=0).option(
        50, "--last", "N", "Show only the N most recent spends (an integer >= 0; 0 shows all)."
    ),
    as_json: bool = JSON_OPTION,
) -> None:
    """Show the budgets (total, spent, remaining ε) and the spends, most recent last.

    A notion's spent ε includes the spends of the notions that imply it, e.g.
    "2.0 (1.0 own + 1.0 implied by pure-dp)"; a notion with no budget is listed when such
    implied spends count toward it.
    """
    with _open(ledger, create=False) as book:
        report = ledger_report(book, scope)
    where = f" (scope {scope!r})" if scope is not None else ""
    payload = report.summary(last)

    def render(console: Any) -> None:
        if not report.budgets and not report.spends:
            console.print(
                f"No budgets and no spends in ledger {report.ledger}{where}.", markup=False
            )
            return
        columns, rows = report.budget_rows()
        title = f"Budgets — {report.ledger}{where}"
        console.print(rows_table(title, columns, rows, right=columns[2:], empty=("(none set)",)))
        columns, rows = report.spend_rows(last)
        right, no_wrap = ("id", "ε", "k", "ε' outliers"), {"no_wrap": True}
        title, options = "Spends (times in UTC)", {"id": no_wrap, "when": no_wrap}
        console.print(
            rows_table(title, columns, rows, right=right, options=options, empty=_NO_SPENDS)
        )
        if payload["spends_not_shown"]:
            console.print(
                f"{payload['spends_not_shown']} earlier spend(s) not shown; use --last 0 for all.",
                markup=False,
            )

    emit(payload, as_json, render)


_NO_SPENDS = ("", "(no spends)")


@budget_app.command("set")
def set_(
    scope: str = typer.Argument(
        ...,
        metavar="SCOPE",
        help="The scope to budget: any non-empty name (a dataset, a user, a deployment).",
    ),
    epsilon: float = Number("a finite number > 0 (e.g. 1.0)", strict=True).option(
        ...,
        "--epsilon",
        "E",
        "Total ε of the budget: a finite number > 0. It may not be below what the scope "
        "has already spent under the notion (reset first).",
    ),
    notion: str = typer.Option(
        PURE_DP,
        "--notion",
        metavar="N",
        help=f"Privacy notion the budget is for, one of: {_NOTIONS}.",
    ),
    delta: float | None = DELTA_OPTION,
    ledger: str | None = LEDGER_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Set (create or change) the total ε (and δ) of SCOPE under one notion."""
    total = check_epsilon(epsilon, "--epsilon")
    notion = check_choice(notion, "--notion", BUDGETED_NOTIONS)
    with _open(ledger, create=True) as book:
        b = book.set_budget(scope, notion, total, delta=delta)
    kind = "" if b.delta is None else f", δ {fmt(b.delta)} (spent δ {fmt(b.delta_spent)})"
    text = (
        f"Budget of scope {b.scope!r} under {b.notion}: total ε {fmt(b.total)}{kind}, "
        f"spent {fmt(b.spent)}, remaining {fmt(b.remaining)} (ledger {book.path})"
    )
    emit({"ledger": book.path, **b.to_dict()}, as_json, lambda c: c.print(text, markup=False))


@budget_app.command("reset")
def reset(
    scope: str | None = _scope_option("Reset only"),
    ledger: str | None = LEDGER_OPTION,
    yes: bool = YES_OPTION,
    drop_budgets: bool = typer.Option(
        False,
        "--drop-budgets",
        help="Also delete the budgets. Default: keep them, with nothing spent.",
    ),
    as_json: bool = JSON_OPTION,
) -> None:
    """Delete the recorded spends (of one scope, or all), so the budgets are full again.

    It forgets privacy loss that did happen: use it only when the data was replaced.
    """
    with _open(ledger, create=False) as book:
        confirm = _asker(("reset", "reset"), yes, as_json)
        done = reset_ledger(book, scope, drop_budgets=drop_budgets, confirm=confirm)
    emit(done.to_dict(), as_json, lambda console: console.print(done.text(), markup=False))


def _asker(verbs: tuple[str, str], yes: bool, as_json: bool) -> Callable[[str], None]:
    """``confirm(question)`` for the library: go on if ``yes`` or the user answers yes; exit 1
    on no ("Nothing was DONE.", ``verbs`` is (VERB, DONE)), refuse to VERB when there is no
    one to answer (``--json``: a script; no standard input)."""
    verb, done = verbs

    def confirm(prompt: str) -> None:
        if yes:
            return
        if as_json:
            raise PrivadError(
                f"refusing to {verb} without confirmation: with --json, pass "
                "--yes (a script cannot answer the question)"
            )
        try:
            confirmed = typer.confirm(prompt, default=False)
        except typer.Abort:  # end of input: nobody to answer
            raise PrivadError(
                f"refusing to {verb} without confirmation: no answer on standard "
                "input; pass --yes to confirm"
            ) from None
        if not confirmed:
            out_console().print(f"Nothing was {done}.", markup=False)
            raise typer.Exit(1)

    return confirm


@budget_app.command("cancel")
def cancel(
    spend_id: int = typer.Argument(
        ...,
        metavar="ID",
        help="The reservation's id: the id column of 'privad budget show', "
        "where its status is reserved.",
        parser=Integer("a spend id (an integer >= 1)", minimum=1).bind("ID"),
    ),
    ledger: str | None = LEDGER_OPTION,
    yes: bool = YES_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Give back the ε of a reservation whose run was killed before it finished.

    A run reserves its spend before it computes its answers and commits it before it
    publishes them; a run killed in between leaves the reservation counted (the safe side).
    Cancel it only when nothing computed under it was seen by anyone: the output never
    appeared and nobody read the unfinished staging files (.NAME.XXXX.part) it left.
    A committed spend cannot be cancelled.
    """
    with _open(ledger, create=False) as book:
        done = cancel_reservation(book, spend_id, _asker(("cancel", "cancelled"), yes, as_json))
    emit(done.to_dict(), as_json, lambda console: console.print(done.text(), markup=False))


@budget_app.command("statement")
def statement(
    ledger: str | None = LEDGER_OPTION,
    scope: str | None = _scope_option("Only"),
    as_json: bool = JSON_OPTION,
) -> None:
    """Print a readable statement of what was spent on what, per scope and notion.

    With --json: the statement's text and its accounts (as 'budget show --json', every
    spend listed).
    """
    with _open(ledger, create=False) as book:
        report = ledger_report(book, scope)
    emit(report.to_dict(), as_json, lambda console: console.print(report.statement, markup=False))


def register(app: typer.Typer) -> None:
    """Add the ``budget`` group to the ``privad`` command."""
    app.add_typer(budget_app, name="budget")

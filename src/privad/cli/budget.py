"""``privad budget``: show, set and reset privacy budgets in a ledger file; cancel a
reservation left by a run that was killed.

The ledger is :class:`privad.accounting.Ledger`; ``--ledger`` defaults to ``$PRIVAD_LEDGER``
if set, else ``~/.privad/ledger.sqlite``. Every :class:`~privad.errors.PrivadError` (a bad
ε, a missing or foreign ledger file) reaches ``privad.cli.main``, which prints it on one line
and exits with status 2.
"""

from __future__ import annotations

from typing import Any

import typer
from rich.table import Table

from privad.accounting import BUDGETED_NOTIONS, NOTIONS, PURE_DP, Ledger, default_ledger_path
from privad.accounting.exact import fmt
from privad.accounting.records import CANCELLED, RESERVED
from privad.accounting.statement import account_summary, accounts, when
from privad.cli._options import DELTA_OPTION, LEDGER_HELP, Integer, Number, check_output_path
from privad.cli._render import JSON_OPTION, emit, out_console
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
        budgets = book.budgets(scope)
        spends = book.history(scope, include_cancelled=False)
        name = book.path
    where = f" (scope {scope!r})" if scope is not None else ""
    rows = [a for a in accounts(budgets, spends) if NOTIONS[a.notion].has_epsilon]
    shown = spends if last == 0 else spends[-last:]
    payload = {
        "ledger": name,
        "scope": scope,
        "budgets": [account_summary(a) for a in rows],
        "spends": [s.to_dict() for s in shown],
        "spends_not_shown": len(spends) - len(shown),
    }

    def render(console: Any) -> None:
        if not budgets and not spends:
            console.print(f"No budgets and no spends in ledger {name}{where}.", markup=False)
            return
        console.print(_budgets_table(f"Budgets — {name}{where}", rows, budgets))
        console.print(_spends_table(shown))
        if len(shown) < len(spends):
            console.print(
                f"{len(spends) - len(shown)} earlier spend(s) not shown; use --last 0 for all.",
                markup=False,
            )

    emit(payload, as_json, render)


def _budgets_table(title: str, rows: list[Any], budgets: list[Any]) -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column("scope")
    table.add_column("notion")
    table.add_column("total ε", justify="right")
    table.add_column("spent ε", justify="right")
    table.add_column("remaining ε", justify="right")
    table.add_column("spends", justify="right")
    with_delta = any(b.delta is not None for b in budgets)
    if with_delta:
        table.add_column("δ; δ spent", justify="right")
    for a in rows:
        approx = a.budget is not None and a.budget.delta is not None
        remaining = account_summary(a)["remaining"]
        cells = [
            a.scope,
            a.notion,
            "—" if a.budget is None else fmt(a.budget.total),
            (f"{fmt(a.tight_spent)} tight (pure {a.spent_text()})" if approx else a.spent_text()),
            "—" if remaining is None else fmt(remaining),
            str(len(a.own)),
        ]
        if with_delta:
            cells.append(f"{fmt(a.budget.delta)}; {fmt(a.delta_spent)}" if approx else "")  # type: ignore[union-attr]
        table.add_row(*cells)
    if not rows:
        table.add_row("(none set)", "", "", "", "", "")
    return table


def _spends_table(shown: list[Any]) -> Table:
    table = Table(title="Spends (times in UTC)", title_justify="left")
    table.add_column("id", justify="right", no_wrap=True)
    table.add_column("when", no_wrap=True)
    table.add_column("scope")
    table.add_column("label")
    table.add_column("notion")
    table.add_column("ε", justify="right")
    table.add_column("k", justify="right")
    with_outlier = any(s.epsilon_outlier is not None for s in shown)
    with_status = any(s.status == RESERVED for s in shown)
    if with_outlier:
        table.add_column("ε' outliers", justify="right")
    if with_status:
        table.add_column("status")
    for s in shown:
        row = [
            str(s.id),
            when(s.timestamp),
            s.scope,
            s.label,
            s.notion,
            fmt(s.epsilon) if s.guarantee.epsilon is not None else "— (0)",
            "" if s.k is None else str(s.k),
        ]
        if with_outlier:
            row.append(fmt(s.epsilon_outlier) if s.epsilon_outlier is not None else "")
        if with_status:
            row.append(s.status)
        table.add_row(*row)
    if not shown:
        table.add_row("", "(no spends)", "", "", "", "", "")
    return table


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
        name = book.path
    kind = "" if b.delta is None else f", δ {fmt(b.delta)} (spent δ {fmt(b.delta_spent)})"
    payload = {"ledger": name, **b.to_dict()}
    emit(
        payload,
        as_json,
        lambda console: console.print(
            f"Budget of scope {b.scope!r} under {b.notion}: total ε {fmt(b.total)}{kind}, "
            f"spent {fmt(b.spent)}, remaining {fmt(b.remaining)} (ledger {name})",
            markup=False,
        ),
    )


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
        n_spends = len(book.history(scope))
        n_budgets = len(book.budgets(scope))
        what = f"scope {scope!r}" if scope is not None else "every scope"
        kept = "and delete" if drop_budgets else "keeping"
        _confirm(
            f"Delete {n_spends} spend(s) of {what} from ledger {book.path}, {kept} "
            f"{n_budgets} budget(s)?",
            yes or as_json,
            "reset",
            "reset",
            as_json=as_json and not yes,
        )
        deleted = book.reset(scope, drop_budgets=drop_budgets)
        name = book.path
    after = "budgets dropped" if drop_budgets else "budgets kept"
    payload = {
        "ledger": name,
        "scope": scope,
        "reset": True,
        "spends_deleted": deleted,
        "budgets_dropped": drop_budgets,
    }
    emit(
        payload,
        as_json,
        lambda console: console.print(
            f"Reset {what}: {deleted} spend(s) deleted, {after} (ledger {name}).", markup=False
        ),
    )


def _confirm(prompt: str, yes: bool, verb: str, done: str, *, as_json: bool = False) -> None:
    """Go on if ``yes`` or the user answers yes; exit 1 on no ("Nothing was DONE."), refuse
    to VERB when there is no one to answer (``as_json``: a script; no standard input)."""
    if as_json:
        raise PrivadError(
            f"refusing to {verb} without confirmation: with --json, pass "
            "--yes (a script cannot answer the question)"
        )
    if yes:
        return
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
        spend = book.get_spend(spend_id)
        what = (
            f"reservation #{spend.id} ({spend.label!r}, scope {spend.scope!r}, "
            f"{spend.notion}, ε = {fmt(spend.epsilon)}, {when(spend.timestamp)} UTC)"
        )
        already = spend.status == CANCELLED
        if spend.status == RESERVED:
            _confirm(
                f"Give back the ε of {what} in ledger {book.path}? Only if nothing it "
                "computed was released.",
                yes or as_json,
                "cancel",
                "cancelled",
                as_json=as_json and not yes,
            )
        if not already:
            spend = book.cancel(spend_id)  # a committed spend: LedgerError, one line
        remaining = {b.notion: b.remaining for b in book.budgets(spend.scope)}
        name = book.path
    payload = {
        "ledger": name,
        "spend": spend.id,
        "scope": spend.scope,
        "cancelled": True,
        "already_cancelled": already,
        "remaining": remaining,
    }
    left = ", ".join(f"{k} {fmt(v)}" for k, v in remaining.items()) or "no budget"
    text = (
        f"{what[0].upper()}{what[1:]} was already cancelled."
        if already
        else f"Cancelled {what}; remaining ε of scope {spend.scope!r}: {left} (ledger {name})."
    )
    emit(payload, as_json, lambda console: console.print(text, markup=False))


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
        text = book.statement(scope)
        budgets = book.budgets(scope)
        spends = book.history(scope, include_cancelled=False)
        name = book.path
    payload = {
        "ledger": name,
        "scope": scope,
        "statement": text,
        "accounts": [account_summary(a) for a in accounts(budgets, spends)],
        "spends": [s.to_dict() for s in spends],
    }
    emit(payload, as_json, lambda console: console.print(text, markup=False))


def register(app: typer.Typer) -> None:
    """Add the ``budget`` group to the ``privad`` command."""
    app.add_typer(budget_app, name="budget")

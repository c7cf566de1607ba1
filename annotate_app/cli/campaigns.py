"""``critiquelab campaign``: create annotation campaigns and follow their progress."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from annotate_app.cli.context import bounded, state, to_jsonable
from annotate_app.cli.disagreements import review_flags
from annotate_app.cli.gold import (
    GOLD_FEEDBACK,
    GOLD_RATE,
    QUALIFY,
    QUALIFY_ACCURACY,
    apply_gold_options,
)
from schemas.bounds import LEASE_SECONDS, OVERLAP, RATIONALE_MIN, SEED

if TYPE_CHECKING:
    from data.services.campaigns import PairSampling

_ROUTING_HELP = (
    "least-annotated | judge-disagreement | judge-uncertainty | stratified (see PROTOCOLS.md)."
)
campaign_app = typer.Typer(help="Annotation campaigns: create them, follow their progress.")


@campaign_app.command("create")
def create(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="Campaign name (unique)."),
    dataset: str = typer.Option(..., "--dataset", help="Name of an imported dataset."),
    protocol: str = typer.Option(..., "--protocol", help="alignmmbench | mmie | pairwise | score."),
    scale: str = typer.Option(None, "--scale", help="score protocol: MIN:MAX[:STEP], e.g. 1:5."),
    overlap: int = typer.Option(
        3, "--overlap", help="Annotators per unit (K), 1–1,000.", **bounded(OVERLAP)
    ),
    rationale_min: int = typer.Option(
        20,
        "--rationale-min",
        help="Minimum rationale length in characters, 0–10,000.",
        **bounded(RATIONALE_MIN),
    ),
    lease_seconds: int = typer.Option(
        900,
        "--lease-seconds",
        help="Seconds a unit is held, 1–604,800 (a week).",
        **bounded(LEASE_SECONDS),
    ),
    show_reference: bool = typer.Option(
        True, "--show-reference/--hide-reference", help="Show the reference answer."
    ),
    show_others_after_submit: bool = typer.Option(
        False, "--show-others-after-submit", help="After submitting, show other annotators' labels."
    ),
    instructions: Path = typer.Option(
        None,
        "--instructions",
        exists=True,
        dir_okay=False,
        help="Markdown file shown beside the rubric (a regular file, at most 4 MiB).",
    ),
    models: list[str] = typer.Option(
        None, "--model", help="Only responses of this model (repeatable; default all)."
    ),
    pairs: str = typer.Option(
        "dataset", "--pairs", help="pairwise: 'dataset' (imported pairs), 'all', or K per item."
    ),
    seed: int = typer.Option(
        0, "--seed", help="Seed of the pair sample (--pairs K).", **bounded(SEED)
    ),
    disagreement_threshold: float = typer.Option(
        None,
        "--disagreement-threshold",
        help="Disagreement review: smallest |judge − reference| shown (default 20% of the scale).",
    ),
    taxonomy: str = typer.Option(
        None, "--taxonomy", help='Disagreement review: the causes to tag, e.g. "a,b,c".'
    ),
    routing: str = typer.Option(
        "least-annotated", "--routing", help=_ROUTING_HELP, show_default=True
    ),
    routing_judges: str = typer.Option(
        None, "--routing-judges", help="Judges whose outputs order the queue: J1,J2."
    ),
    stratified_share: float = typer.Option(
        None, "--stratified-share", help="stratified: share of units served at random (0.2)."
    ),
    gold: Path = typer.Option(
        None,
        "--gold",
        exists=True,
        dir_okay=False,
        help="Gold file (JSON Lines, as `gold import` reads it): known answers for its units.",
    ),
    gold_rate: float = GOLD_RATE,
    gold_feedback: bool = GOLD_FEEDBACK,
    qualify: int = QUALIFY,
    qualify_accuracy: float = QUALIFY_ACCURACY,
) -> None:
    """Create a campaign with one unit per response (pointwise) or per pair (pairwise).

    With --gold FILE, its known answers are attached and the gold options set in the same
    transaction (an error in either creates nothing); --gold-rate above 0 and --qualify above 0
    need gold units, so they need --gold.
    """
    from data.services.campaign_progress import campaign_progress
    from data.services.campaigns import CampaignSpec, create_campaign
    from data.services.routing import routing_plan
    from data.storage.engine import session_scope
    from schemas.core import stored_id
    from schemas.protocols import parse_scale

    pair_mode, pairs_per_item = _pair_sampling(pairs)
    if protocol != "pairwise" and pair_mode != "dataset":  # a spec's pairs, else ignored
        from data.storage.campaign_lookup import CampaignError

        raise CampaignError(
            f"--pairs applies to the pairwise protocol only; {protocol} campaigns have one unit "
            "per response"
        )
    spec = CampaignSpec(
        name=name,
        dataset=dataset,
        protocol=protocol,
        scale=parse_scale(scale) if scale else None,
        overlap=overlap,
        rationale_min=rationale_min,
        lease_seconds=lease_seconds,
        show_reference=show_reference,
        show_others_after_submit=show_others_after_submit,
        instructions=_instructions(instructions),
        models=tuple(models) if models else None,
        pairs=pair_mode,
        pairs_per_item=pairs_per_item,
        seed=seed,
        disagreement_threshold=disagreement_threshold,
        taxonomy=tuple(taxonomy.split(",")) if taxonomy is not None else None,
        routing=routing,
        routing_judges=_judges(routing_judges),
        routing_share=stratified_share,
    )
    if gold is None and (gold_rate or qualify):
        raise typer.BadParameter(
            "--gold-rate above 0 and --qualify above 0 need gold units: give --gold FILE "
            "(or set them later with `critiquelab gold import` and `critiquelab gold set`)",
            param_hint="'--gold-rate' / '--qualify'",
        )
    cli = state(ctx)
    with review_flags(), session_scope(cli.engine()) as session:
        campaign = create_campaign(session, spec)
        gold_units = 0
        if gold is not None:
            from data.services.gold import import_gold

            gold_units = import_gold(session, gold, stored_id(campaign)).gold_units
        apply_gold_options(
            session, stored_id(campaign), gold_rate, gold_feedback, qualify, qualify_accuracy
        )
        progress = campaign_progress(session, stored_id(campaign))
        plan = routing_plan(session, campaign)
    cli.emit(
        {
            "campaign": campaign.name,
            "id": campaign.id,
            "protocol": campaign.protocol,
            "units": progress.units,
            "overlap": campaign.overlap,
            "routing": campaign.routing,
            "routing_note": plan.note,
            "gold_units": gold_units,
            "gold_rate": campaign.gold_rate,
            "gold_feedback": campaign.gold_feedback,
            "qualification_gold": campaign.qualification_gold,
            "qualification_accuracy": campaign.qualification_accuracy,
        },
        text=f"created campaign {campaign.name!r}: {progress.units} units, "
        f"{campaign.overlap} annotators each ({campaign.protocol})"
        + ("" if plan.routing == "least-annotated" else f"; routing {plan.routing}: {plan.note}")
        + (f"; {gold_units} gold units" if gold_units else "")
        + (
            f"; qualification: {campaign.qualification_gold} gold units, "
            f"{campaign.qualification_accuracy:.0%} right"
            if campaign.qualification_gold
            else ""
        ),
    )


@campaign_app.command("set-routing")
def set_routing_command(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="Campaign name."),
    routing: str = typer.Option(..., "--routing", help=_ROUTING_HELP),
    routing_judges: str = typer.Option(
        None, "--routing-judges", help="Judges whose outputs order the queue: J1,J2."
    ),
    stratified_share: float = typer.Option(
        None, "--stratified-share", help="stratified: share of units served at random (0.2)."
    ),
) -> None:
    """Change which units a campaign serves first, and re-rank its units now."""
    from data.services.routing import set_routing
    from data.storage.engine import session_scope

    cli = state(ctx)
    with session_scope(cli.engine()) as session:
        plan = set_routing(session, name, routing, _judges(routing_judges), stratified_share)
    cli.emit(
        {
            "campaign": name,
            "routing": plan.routing,
            "guide": plan.guide,
            "units_with_signal": plan.units_with_signal,
            "fell_back": plan.fell_back,
            "note": plan.note,
        },
        text=f"campaign {name!r}: routing {plan.routing}: {plan.note}",
    )


def _instructions(path: Path | None) -> str:
    """``--instructions FILE``: read by the one reader's rules (a regular file, at most
    :data:`~data.io.importers.sources.MAX_SMALL_FILE_BYTES`, UTF-8)."""
    if path is None:
        return ""
    from data.io.importers.errors import InvalidRecord
    from data.io.importers.sources import read_text
    from data.services.campaigns import CampaignError

    try:
        return read_text(path)
    except InvalidRecord as error:
        raise CampaignError(f"--instructions {error}") from None


def _judges(text: str | None) -> tuple[str, ...] | None:
    return tuple(text.split(",")) if text else None


@campaign_app.command("status")
def status(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="Campaign name."),
    units: bool = typer.Option(False, "--units", help="Also list every unit."),
) -> None:
    """Progress per annotator and per unit, with the active time per unit."""
    from data.services.campaign_progress import campaign_progress
    from data.storage.campaign_lookup import get_campaign
    from data.storage.engine import session_scope
    from schemas.core import stored_id

    cli = state(ctx)
    with session_scope(cli.engine()) as session:
        progress = campaign_progress(session, stored_id(get_campaign(session, name)))
    lines = [
        f"campaign {progress.campaign} ({progress.protocol}, {progress.status}): "
        f"{progress.units_complete}/{progress.units} units complete "
        f"with {progress.overlap} annotators each; {progress.annotations} annotations; "
        f"median {_seconds(progress.median_seconds_per_unit)} per unit",
        "annotator\tsubmitted\trejected\tleased\tskipped\tmedian time\ttotal time",
    ]
    lines += [
        f"{a.annotator}\t{a.submitted}\t{a.rejected}\t{a.leased}\t{a.skipped}\t"
        f"{_seconds(a.median_seconds)}\t{_seconds(a.total_seconds)}"
        for a in progress.by_annotator
    ]
    if units:
        lines.append("unit\titem\tsubmitted\tleased\tflagged\tmedian time")
        lines += [
            f"{u.unit_key}\t{u.item_id}\t{u.submitted}/{progress.overlap}\t{u.leased}\t"
            f"{'yes' if u.flagged else ''}\t{_seconds(u.median_seconds)}"
            for u in progress.by_unit
        ]
    cli.emit(progress if units else _without_units(progress), text="\n".join(lines))


def _without_units(progress: object) -> dict[str, object]:
    summary = to_jsonable(progress)
    summary.pop("by_unit")
    return summary


def _pair_sampling(text: str) -> tuple[PairSampling, int | None]:
    if text == "dataset":
        return "dataset", None
    if text == "all":
        return "all", None
    if text.isdigit() and int(text) > 0:
        return "sample", int(text)
    from data.storage.campaign_lookup import CampaignError

    raise CampaignError(f"--pairs is {text!r}; use 'dataset', 'all' or a number of pairs per item")


def _seconds(value: float) -> str:
    return "–" if math.isnan(value) else f"{value:.0f}s"


def register(app: typer.Typer) -> None:
    app.add_typer(campaign_app, name="campaign")

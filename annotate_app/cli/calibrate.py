"""``critiquelab calibrate``: judges against humans, from a campaign or from files alone."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from typer.core import TyperCommand, TyperOption

from annotate_app.cli.context import CliState, bounded, state
from schemas.audit_records import response_lengths
from schemas.bounds import BOOTSTRAP, MAX_DISAGREEMENTS, SEED

if TYPE_CHECKING:
    import pandas as pd

    from annotate_app.cli.calibrate_audits import AuditOutputs
    from calibration.result import CalibrationResult
    from schemas.protocols import Protocol


def register(app: typer.Typer) -> None:
    """Add the ``calibrate`` command to the root app."""
    app.command("calibrate", cls=_PairsCommand)(calibrate_command)


class _PairsCommand(TyperCommand):
    """``calibrate`` with ``--compare A B`` repeatable: Typer cannot declare an option that takes
    two values each time it is given (a list of pairs); its Click option can (``nargs=2`` on a
    ``multiple`` option, each use's two values handed to ``parser=tuple`` as one tuple)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for param in self.params:
            if isinstance(param, TyperOption) and param.name == "compare":
                param.nargs = 2


def calibrate_command(
    ctx: typer.Context,
    campaign: str = typer.Option(None, "--campaign", help="Campaign name (database mode)."),
    judgments: list[Path] = typer.Option(
        None,
        "--judgments",
        help="Judgement file (.jsonl, .csv or .parquet), humans and models (repeatable; file "
        "mode).",
    ),
    dataset: Path = typer.Option(
        None,
        "--dataset",
        help="File mode: dataset file (.jsonl, .csv or .parquet) giving task/category/model per "
        "response (and, for pairs, the responses' lengths that the Annotators table reads).",
    ),
    protocol: str = typer.Option(
        None, "--protocol", help="alignmmbench | mmie | pairwise | score (default: the campaign's)."
    ),
    scale: str = typer.Option(None, "--scale", help="score protocol: MIN:MAX[:STEP], e.g. 1:5."),
    judge: list[str] = typer.Option(None, "--judge", help="Only this judge (repeatable)."),
    by: list[str] = typer.Option(
        None,
        "--by",
        help="Metrics per value of this field (repeatable; default: task and "
        "category where present; 'none' for no grouping).",
    ),
    aggregate: str = typer.Option("mean", "--aggregate", help="mean | fisher | tanh-mean."),
    unparsed: str = typer.Option("wrong", "--unparsed", help="tie | drop | wrong."),
    consensus: str = typer.Option(
        None, "--consensus", help="The same as --reference (its older name)."
    ),
    reference: str = typer.Option(
        None,
        "--reference",
        help="mean | median | majority | dawid-skene | mace: the humans' reference (default: "
        "mean; pairwise: majority). dawid-skene (pairwise) and mace weigh each annotator by a "
        "latent-class model (METRICS.md).",
    ),
    exclude_annotator: list[str] = typer.Option(
        None,
        "--exclude-annotator",
        help="Leave this annotator out of the reference and the human ceiling (repeatable).",
    ),
    no_majority: str = typer.Option("tie", "--no-majority", help="tie | drop."),
    bootstrap: int = typer.Option(
        1000,
        "--bootstrap",
        help="Resamples for intervals, 0–1,000,000; 0 = none.",
        **bounded(BOOTSTRAP),
    ),
    seed: int = typer.Option(
        0, "--seed", help="Seed of the bootstrap and of the map split.", **bounded(SEED)
    ),
    max_disagreements: int = typer.Option(
        25,
        "--max-disagreements",
        help="Disagreements listed per judge in the report, 0–1,000,000.",
        **bounded(MAX_DISAGREEMENTS),
    ),
    json_out: Path = typer.Option(
        None, "--json", dir_okay=False, help="Write the metrics JSON here (folders made)."
    ),
    html_out: Path = typer.Option(
        None, "--html", dir_okay=False, help="Write the HTML audit report here (folders made)."
    ),
    compare: list[Any] = typer.Option(
        None,
        "--compare",
        metavar="A B",
        parser=tuple,  # each use gives a pair (_PairsCommand)
        help="Is judge A better than judge B? Δ = A − B per metric on the units both judged, "
        "with a paired bootstrap interval; 'human' as A or B is the leave-one-out human. "
        "Repeatable: one comparison per pair.",
    ),
    consistency: tuple[str, str] | None = typer.Option(
        None,
        "--consistency",
        metavar="POINTWISE PAIRWISE",
        help="Do preferences agree with scores? Two campaigns of one dataset: one with scores, "
        "one pairwise; alone or with --campaign.",
    ),
    delta: float = typer.Option(
        None,
        "--delta",
        help="--consistency: a tie is consistent when the scores differ by at "
        "most this (default: one step of the scale).",
    ),
    price_in: float = typer.Option(
        None, "--price-in", help="Price per million input tokens, every judge (with --price-out)."
    ),
    price_out: float = typer.Option(
        None, "--price-out", help="Price per million output tokens, every judge."
    ),
    prices: Path = typer.Option(
        None,
        "--prices",
        help='JSON file: {"judge": {"input": N, "output": N}}, prices ≥ 0 per million tokens.',
    ),
    baselines: bool = typer.Option(
        False,
        "--baselines",
        help="Add the shortcut baseline 'baseline:shortcut' as a judge: no language model, "
        "only the responses' lengths, list items and models, fitted on the reference by "
        "cross-fitting over item folds (METRICS.md); file mode needs --dataset.",
    ),
    families: Path = typer.Option(
        None,
        "--families",
        help="JSON file mapping judge and model names to a family, e.g. "
        '{"gpt-4o-judge": "gpt", "gpt-4o": "gpt"}: self-preference.',
    ),
) -> None:
    """Agreement of each judge with the humans, human ceiling, intervals (METRICS.md)."""
    # the calibration package, pandas and scipy: loaded when the command runs, not for --help
    from annotate_app.cli.calibrate_audits import (
        check_consistency_pair,
        consistency_only,
        read_audit_inputs,
    )
    from calibration import CalibrationInputError
    from calibration.reference import no_majority_rule
    from schemas.bounds import BOOTSTRAP
    from schemas.protocols import parse_scale

    if (problem := BOOTSTRAP.problem(bootstrap)) is not None:  # before any audit or file read
        raise CalibrationInputError(problem)
    _make_folders({"--json": json_out, "--html": html_out})  # before the work, not after it
    cli = state(ctx)
    audit_inputs = read_audit_inputs(
        consistency, delta, price_in, price_out, prices, families, file_mode=bool(judgments)
    )
    if consistency is not None and campaign is None and not judgments:
        outputs = consistency_only(
            cli,
            audit_inputs,
            judges=judge or None,
            no_majority=no_majority_rule(no_majority),
            bootstrap=bootstrap,
            seed=seed,
        )
        _emit_audits_only(cli, outputs, json_out, html_out)
        return
    if campaign is not None and judgments:
        raise CalibrationInputError(
            "give either --campaign NAME (database) or --judgments FILE... (files), not both"
        )
    if campaign is None and not judgments:
        raise CalibrationInputError(
            "nothing to calibrate: give --campaign NAME (database) or --judgments FILE... (files)"
        )
    if consensus is not None and reference is not None and consensus != reference:
        raise CalibrationInputError(
            f"--consensus {consensus} and --reference {reference} disagree; give --reference"
        )
    shared = {
        "consensus": reference or consensus,
        "exclude_annotators": tuple(exclude_annotator or ()),
        "no_majority": no_majority,
        "unparsed": unparsed,
        "bootstrap": bootstrap,
        "seed": seed,
        "max_disagreements": max_disagreements,
        "by": None if not by else tuple(f for f in by if f != "none"),
        "aggregate": aggregate,
        "judges": tuple(judge) if judge else None,
    }
    if baselines and campaign is None and dataset is None:
        raise CalibrationInputError(
            "--baselines in file mode needs --dataset: the baseline reads the responses' texts"
        )
    scale_bounds = parse_scale(scale) if scale else None
    pairs = tuple(dict.fromkeys((str(a), str(b)) for a, b in compare or ()))  # each pair once
    if campaign is None:
        _calibrate_files(cli, judgments, dataset, protocol, scale_bounds, pairs, shared,
                         json_out, html_out, baselines=baselines)  # fmt: skip
        return
    from annotate_app.campaign_report import CampaignReportRequest, build_campaign_report
    from annotate_app.cli.calibrate_audits import AuditOutputs
    from calibration.report_compare import comparison_text

    if audit_inputs.consistency is not None:  # before the long calibration
        check_consistency_pair(cli, audit_inputs.consistency)
    request = CampaignReportRequest(
        campaign=campaign,
        protocol=protocol,
        scale=scale_bounds,
        compare=pairs,
        consistency=audit_inputs.consistency,
        delta=audit_inputs.delta,
        prices=audit_inputs.prices,
        families=audit_inputs.families,
        baselines=baselines,
        **shared,  # type: ignore[arg-type]
    )
    report = build_campaign_report(cli.engine(), request, progress=cli.progress)
    files = report.files
    if json_out is not None:
        json_out.write_text(files.result.to_json(), "utf-8")
    if html_out is not None:
        html_out.write_text(files.html, "utf-8")
    audits = AuditOutputs(consistency=report.consistency, judge_audit=report.judge_audit)
    text = _summary_text(files.result, json_out, html_out)
    lines = [text, *map(comparison_text, report.comparisons), audits.text()]
    cli.emit(files.result.model_dump(mode="json"), text="\n".join(line for line in lines if line))


def _calibrate_files(
    cli: CliState,
    judgments: list[Path],
    dataset: Path | None,
    protocol: str | None,
    scale_bounds: tuple[float, float, float | None] | None,
    compare: tuple[tuple[str, str], ...],
    shared: dict,
    json_out: Path | None,
    html_out: Path | None,
    *,
    baselines: bool = False,
) -> None:
    """File mode: judgement files calibrated as they are (no database, no audits)."""
    from calibration import CalibrationInputError, CalibrationOptions, calibrate
    from calibration.compare import compare_judges
    from calibration.report_compare import comparison_text
    from calibration.report_html import write_html
    from calibration.units import human_rater_names
    from schemas.protocols import protocol_on_scale

    if protocol is None:
        raise CalibrationInputError("file mode needs --protocol alignmmbench|mmie|pairwise|score")
    chosen = protocol_on_scale(protocol, scale_bounds)
    frame, data_sha256 = _file_frame(judgments, dataset, chosen)
    fields = {
        **shared,
        "exclude_annotators": human_rater_names(frame, shared["exclude_annotators"]),
    }
    # The options' closed sets arrive as the user's text; CalibrationOptions.validate() checks
    # each one and names the valid values, so the Literal types hold once it has run.
    options = CalibrationOptions(protocol=chosen, **fields)
    facts = None
    if dataset is not None and (baselines or not chosen.is_pointwise):
        from data.readmodels.judge_facts import dataset_response_facts

        facts = dataset_response_facts(dataset)
    if baselines and facts is not None:
        from calibration.analysis import with_shortcut_baseline

        options.validate()
        frame = with_shortcut_baseline(frame, options, facts)
    lengths = None  # pairs: the Annotators table's length figure reads the responses' lengths
    if facts is not None and not chosen.is_pointwise:
        lengths = response_lengths(facts)
    total = options.bootstrap or None
    comparisons = []  # first, so that a misspelt judge is named before the long calibration
    for first, second in compare:
        with cli.progress(f"{first} vs {second}", total=total) as advance:
            comparisons.append(compare_judges(frame, options, first, second, progress=advance))
    with cli.progress("bootstrap resamples", total=total) as advance:
        report = calibrate(
            frame, options, data_sha256=data_sha256, progress=advance, response_lengths=lengths
        )
    result = report.result.with_extras(comparisons=comparisons or None)
    if json_out is not None:
        json_out.write_text(result.to_json(), "utf-8")
    if html_out is not None:
        write_html(report, html_out, comparisons)
    text = _summary_text(result, json_out, html_out)
    lines = [text, *map(comparison_text, comparisons)]
    cli.emit(result.model_dump(mode="json"), text="\n".join(line for line in lines if line))


def _make_folders(outputs: dict[str, Path | None]) -> None:
    """Create the folders of the output files, as ``export`` does; a bad input when one cannot
    be (a file in the way, no permission)."""
    for option, path in outputs.items():
        if path is None:
            continue
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            blocked = isinstance(error, FileExistsError | NotADirectoryError)
            reason = "a file is in the way" if blocked else error.strerror
            raise typer.BadParameter(
                f"cannot make the folder {path.parent} for {path.name} ({reason}): "
                "choose another path",
                param_hint=option,
            ) from None


def _emit_audits_only(cli, outputs: AuditOutputs, json_out: Path | None, html_out: Path | None):
    """``--consistency`` without ``--campaign``: its JSON, its report section, its text."""
    from calibration.report_html import audit_report_html

    output = outputs.json()
    if json_out is not None:
        json_out.write_text(json.dumps(output, indent=2, ensure_ascii=False), "utf-8")
    if html_out is not None:
        html_out.write_text(audit_report_html(outputs.html()), "utf-8")
    cli.emit(output, text=outputs.text())


def _file_frame(
    judgments: list[Path], dataset: Path | None, protocol: Protocol
) -> tuple[pd.DataFrame, str]:
    """File mode: the files read by the importers' reader (same rules as ``import`` and
    ``judgments import``), turned into the judgement frame; and the SHA-256 of the files' bytes
    in the order given, dataset last."""
    from calibration.io import judgement_frame, with_response_metadata
    from data.io.importers.reader import dataset_metadata, files_sha256, read_judgement_files

    lines = read_judgement_files(judgments)
    frame = judgement_frame(((line.where, line.record) for line in lines), protocol)
    if dataset is not None:
        frame = with_response_metadata(frame, dataset_metadata(dataset))
    sha256 = files_sha256([*judgments, *([dataset] if dataset is not None else [])])
    return frame.drop(columns="response_id"), sha256


def _summary_text(result: CalibrationResult, json_out: Path | None, html_out: Path | None) -> str:
    lines = [
        f"{result.protocol}: {result.reference.n_units} units with a reference, "
        f"{result.human.n_annotators} annotators"
    ]
    headline = ("mae", "pearson", "kendall", "acc_with_tie", "f1_macro", "consistency")
    for name, judge in result.judges.items():
        values = judge.values
        parts = [f"{k} {values[k]:.3f}" for k in headline if values.get(k) is not None]
        lines.append(f"  {name}: n {judge.n}, " + ", ".join(parts))
    for label, path in (("json", json_out), ("html", html_out)):
        if path is not None:
            lines.append(f"wrote {label}: {path}")
    return "\n".join(lines)

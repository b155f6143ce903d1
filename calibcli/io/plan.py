"""What reading one kind of rows needs, built from the settings alone: the row spec, the
per-file router, the block decoders and the summary builder. A worker process rebuilds it from
its job, so nothing but settings crosses a process."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from calibcli.io.sources import BLOCK_SIZE, MAX_LINE_BYTES


@dataclass(frozen=True)
class ReadPlan:
    """How to read: the row kind (``calibration`` or ``perplexity``), the settings of its
    summary, whether to keep every row, the block and line sizes, and whether each source
    keeps its own table."""

    kind: str
    settings: Any  # CalibrationSettings or PerplexitySettings
    keep_rows: bool = False
    block_size: int = BLOCK_SIZE
    max_line_bytes: int = MAX_LINE_BYTES
    per_source: bool = False  # calibration rows: a table per source (per-file figures)
    max_document_bytes: int | None = None  # a compressed whole document, inflated (None: 256 MiB)
    id_field: str | None = None  # identifies native rows (formats with ids need none)
    all_runs: bool = False  # rows read twice are pooled on purpose: ids are not checked
    # key every kept row (the Poisson bootstrap), or every perplexity row's question (rows
    # pooled with --all-runs that may carry ids): one process per file
    row_keys: bool = False
    # the rows are keyed only to find ids repeated across inputs pooled with --all-runs
    # (calibcli.io.pooled_ids): the keys are dropped again where none repeats
    pooled_keys: bool = False
    # the Poisson bootstrap's (samples, seed) a summary is made with: the state summary files
    # read must hold (their rows are not there to resample)
    resamples: tuple[int, int] | None = None
    gold_field: str | None = None  # the gold label of answers scored from token logprobs
    options: tuple[str, ...] | None = None  # their answer options (None: the letters A to E)

    def adopting(self, settings: Any) -> ReadPlan:
        """The plan reading with ``settings`` (a summary file's, read beside it), the reading
        options they record (ids, and the answer options and gold label of calibration rows)
        included."""
        from dataclasses import replace

        if self.kind != "calibration":
            return replace(self, settings=settings, id_field=settings.id_field)
        choices = None if settings.choices is None else tuple(settings.choices.split(","))
        return replace(
            self,
            settings=settings,
            id_field=settings.id_field,
            gold_field=settings.gold_field,
            options=choices,
        )

    @property
    def forced(self) -> str | None:
        """The format given (None: detected per file)."""
        return None if self.settings.fmt == "auto" else self.settings.fmt

    @cached_property
    def spec(self) -> Any:
        from calibcli.io.rows import CalibrationRow, PerplexityRow

        s = self.settings
        if self.kind == "calibration":
            return CalibrationRow(s.confidence_field, s.correct_field)
        return PerplexityRow(
            s.nll_field, s.tokens_field, s.bytes_field, s.words_field, s.logprobs_field
        )

    @cached_property
    def router(self) -> Any:
        from calibcli.io.route import calibration_router, perplexity_router

        if self.kind == "calibration":
            s = self.settings
            return calibration_router(
                self.spec,
                mc_norm=s.mc_norm,
                scorer=s.scorer,
                inspect_confidence=s.inspect_confidence,
                gold_field=self.gold_field,
                options=self.options,
            )
        return perplexity_router(self.spec)

    def decoder(self, fmt: str, source: str, own: Callable[[dict], Any] | None = None) -> Any:
        """A source's block decoder once its format is known: native rows through the typed
        fast path (dicts with ``--by``), other formats through the router's converters.
        ``own``: row -> its id, for rows that name themselves where neither the format nor
        ``--id-field`` identifies them (a Batch output's requests,
        :func:`~calibcli.io.batch_ids.request_key`)."""
        from calibcli.io.decode import BlockDecoder
        from calibcli.io.ids import identifier

        key = group_key(fmt, self.settings.by, source)
        # rows pooled on purpose (--all-runs) are not identified, but rows keyed for the
        # bootstrap are keyed by their question (an lm-eval task's doc_id, which re-runs share;
        # an inspect-ai sample's id, which its epochs share)
        pooled = self.all_runs and not self.row_keys
        ident = None if pooled else identifier(fmt, self.id_field, source) or own
        if fmt == "jsonl":
            if key is None and ident is None:
                return BlockDecoder(self.spec)
            # a top-level --by field rides in the typed struct (a dotted path needs the dict)
            by = self.settings.by
            field = by if by is not None and "." not in by else None
            return BlockDecoder(
                self.spec, convert=self.spec.check, key=key, ident=ident, group_field=field
            )
        convert = self.router.converter(fmt, source)
        if fmt == "lm-eval" and self.id_field is None:
            from calibcli.io.lm_eval_blocks import LmEvalBlockDecoder
            from calibcli.io.task_config import target_delimiter

            # lm-eval rows take a typed path by whole blocks; the group is the file's own
            return LmEvalBlockDecoder(
                self.spec,
                kind=self.router.lm_eval_kind,
                mc_norm=getattr(self.settings, "mc_norm", "none"),
                target_delimiter=target_delimiter(source),
                convert=convert,
                key=key,
                ident=ident,
                constant_key=self.settings.by in ("task", "model") and source != "-",
            )
        if fmt == "inspect-ai" and self.kind == "calibration":
            from calibcli.io.inspect_rows import InspectDecoder, read_fields

            # a log's samples come as typed structs (see Reader._read_document)
            s = self.settings
            return InspectDecoder(
                self.spec,
                convert=convert,
                key=key,
                ident=ident,
                scorer=s.scorer,
                confidence=s.inspect_confidence,
                fields=read_fields(s.by, self.id_field),
                default_id=self.id_field is None,
            )
        return BlockDecoder(self.spec, convert=convert, key=key, many=True, ident=ident)

    def builder(self) -> Any:
        """An empty summary builder for these settings."""
        from calibcli.summaries import CalibrationBuilder, PerplexityBuilder

        grouped = self.settings.by is not None
        if self.kind == "calibration":
            return CalibrationBuilder(
                self.settings,
                keep_rows=self.keep_rows,
                grouped=grouped,
                per_source=self.per_source,
                row_keys=self.row_keys,
            )
        return PerplexityBuilder(self.settings, self.spec, grouped=grouped, keyed=self.row_keys)


STDIN_TASK = "stdin has no file name to take the lm-eval task from; use --by FIELD"
NO_MODEL = (
    "the file's run names no model (lm-eval: model_args in a name before v0.4.3, an org__name "
    "folder or the model_name of the results file beside it; inspect-ai: the log's eval.model); "
    "use --by FIELD"
)
NO_HELM_MODEL = (
    "the HELM file's run names no model (run_spec.json's adapter_spec.model beside it, or the "
    "model= argument of its run folder's name); use --by FIELD"
)
NO_EVALS_MODEL = "the OpenAI evals log's spec names no model (its completion_fns); use --by FIELD"
NO_SCENARIO = (
    "the HELM file's run folder is not named as HELM names a run (scenario:arguments), and no "
    "run_spec.json beside it names one; use --by FIELD"
)


def group_key(fmt: str, by: str | None, source: str) -> Callable[[dict], Any] | None:
    """Row -> group value for ``by``. lm-eval's ``task`` comes from the file name; on stdin,
    from the row's own ``task`` field when it has one (the harness does not write it); a HELM
    run's is its scenario (:func:`calibcli.io.helm_spec.helm_task`). The ``model`` of lm-eval,
    inspect-ai and HELM rows is the one their run names
    (:func:`calibcli.io.runs.named_model`), an OpenAI evals log's the completion_fns its spec
    names (:func:`calibcli.io.evals_log.evals_model`), an API response's the one it names
    (:func:`calibcli.io.response_models.row_model`)."""
    if by is None:
        return None
    from calibcli import formats

    if fmt in ("lm-eval", "inspect-ai", "helm", "openai-evals") and by == "model" and source != "-":
        from calibcli.io.runs import named_model

        model = named_model(source, fmt)
        if model is not None:
            return lambda row: model
        return _refused({"helm": NO_HELM_MODEL, "openai-evals": NO_EVALS_MODEL}.get(fmt, NO_MODEL))
    if fmt in ("openai", "vllm") and by == "model":
        from calibcli.io.response_models import row_model

        # a batch line names its model in response.body, each row its own
        return lambda row: row_model(row) or formats.by_value(row, by)
    if fmt == "helm" and by == "task" and source != "-":
        from calibcli.io.helm_spec import helm_task

        scenario = helm_task(source)
        return (lambda row: scenario) if scenario is not None else _refused(NO_SCENARIO)
    if fmt == "lm-eval" and by == "task":
        if source != "-":
            task = formats.task_from_filename(source)
            return lambda row: task

        def row_task(row: dict) -> Any:
            if "task" not in row:
                raise ValueError(STDIN_TASK)
            return formats.by_value(row, "task")

        return row_task
    return lambda row: formats.by_value(row, by)


def _refused(reason: str) -> Callable[[dict], Any]:
    """A group key that refuses every row, saying ``reason``."""

    def refuse(row: dict) -> Any:
        raise ValueError(reason)

    return refuse


def answer_options(choices: list[str] | tuple[str, ...] | None) -> tuple[str, ...] | None:
    """The answer options as given (spaces around each ignored); ValueError for fewer than two
    or a repeated one."""
    if choices is None:
        return None
    options = tuple(c.strip() for c in choices)
    if len(options) < 2 or len(set(options)) != len(options) or "" in options:
        raise ValueError(f"choices must be two or more distinct options, not {list(choices)!r}")
    return options

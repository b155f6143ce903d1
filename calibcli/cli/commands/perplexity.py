"""calibcli perplexity: corpus perplexity, bits per byte and word perplexity."""

from __future__ import annotations

import typer

from calibcli.cli.app import EXIT_CODES, app, usage_error
from calibcli.cli.emit import check_outputs, emit
from calibcli.cli.options import (
    MAX_LINE_MB,
    AllRunsOpt,
    ByOpt,
    BytesField,
    Files,
    Format,
    FormatOpt,
    GateEachOpt,
    IdFieldOpt,
    JsonOpt,
    LogprobsField,
    MaxDocumentMbOpt,
    MaxLineMbOpt,
    NllField,
    OutputOpt,
    QuietOpt,
    SummaryOpt,
    TokensField,
    WordsField,
    WorkersOpt,
    document_bytes,
    gate_options,
    line_bytes,
    one,
)
from calibcli.cli.reading import (
    absent_count_fields,
    grouping,
    load_numpy_without_blas_threads,
    read,
)
from calibcli.reports import PERPLEXITY


@app.command(epilog=EXIT_CODES)
@gate_options(PERPLEXITY)
def perplexity(
    files: Files,
    nll_field: NllField = ("nll",),
    tokens_field: TokensField = ("tokens",),
    bytes_field: BytesField = ("bytes",),
    words_field: WordsField = ("words",),
    logprobs_field: LogprobsField = ("logprobs",),
    fmt: FormatOpt = (Format.auto,),
    by: ByOpt = None,
    id_field: IdFieldOpt = None,
    all_runs: AllRunsOpt = False,
    gate_each: GateEachOpt = False,
    json_out: JsonOpt = False,
    output: OutputOpt = None,
    quiet: QuietOpt = False,
    summary: SummaryOpt = None,
    workers: WorkersOpt = None,
    max_line_mb: MaxLineMbOpt = MAX_LINE_MB,
    max_document_mb: MaxDocumentMbOpt = None,
    limits: dict[str, float] | None = None,
    floors: dict[str, int] | None = None,
    reading_context: typer.Context = None,
) -> None:
    """Corpus perplexity: exp(total NLL / total tokens), pooled over every sequence.

    Rows: {"nll": summed NLL in nats, "tokens": count}; optional "bytes" and "words" add bits per
    byte, byte perplexity and word perplexity. A --max-perplexity gate fails closed on no rows,
    zero tokens, or input without token counts (--max-bits-per-byte and --max-word-perplexity
    likewise on bytes and words), and --min-tokens on fewer tokens.
    """
    load_numpy_without_blas_threads()  # exact integer sums: no BLAS call
    from calibcli.cli.reading_options import given_options, named_fields
    from calibcli.io import read_perplexity
    from calibcli.reports import GATE_EACH_WITHOUT_GATE, Gate, floor_options, perplexity_report

    fields = nll_field, tokens_field, bytes_field, words_field, logprobs_field
    nll_field, tokens_field, bytes_field, words_field, logprobs_field = map(one, fields)
    fmt, by, id_field = one(fmt), one(by), one(id_field)
    named_fields(
        {
            "--nll-field": nll_field,
            "--tokens-field": tokens_field,
            "--bytes-field": bytes_field,
            "--words-field": words_field,
            "--logprobs-field": logprobs_field,
            "--by": by,
            "--id-field": id_field,
        }
    )
    if gate_each and grouping(files, by) is None:
        raise usage_error("--gate-each needs --by FIELD")
    if gate_each and not (limits or floors):
        raise usage_error(GATE_EACH_WITHOUT_GATE)
    check_outputs(output=output, summary=summary)
    data = read(
        read_perplexity,
        files,
        fmt,
        quiet,
        nll_field=nll_field,
        tokens_field=tokens_field,
        bytes_field=bytes_field,
        words_field=words_field,
        logprobs_field=logprobs_field,
        by=by,
        workers=workers,
        max_line_bytes=line_bytes(max_line_mb),
        max_document_bytes=document_bytes(max_document_mb),
        id_field=id_field,
        all_runs=all_runs,
        given=given_options(reading_context),
    )
    named = {"bytes": bytes_field, "words": words_field}
    data = absent_count_fields(data, named)
    floors = floors or {}
    gate = Gate(
        limits or {},
        each=gate_each,
        minimums=floors,
        options=floor_options(PERPLEXITY, floors),
    )
    result = perplexity_report(data, gate)
    emit(result, json_out=json_out, output=output, summary=summary, files=files, by=by)

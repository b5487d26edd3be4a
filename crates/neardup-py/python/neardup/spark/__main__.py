"""``python -m neardup.spark dedup INPUT OUTPUT``: corpus dedup on Spark.

Reads JSON Lines (each line kept byte for byte, as ``neardup dedup`` keeps it) or Parquet with
Spark's readers (any filesystem Spark supports), writes the kept records as JSON Lines or
Parquet, and prints the summary ``neardup dedup`` prints. spark-submit runs a file, not a
module: ``python -m neardup.spark --script`` prints the file to give it.

    spark-submit --master local[2] "$(python -m neardup.spark --script)" dedup corpus.jsonl kept/ --threshold 0.8
    python -m neardup.spark dedup s3a://bucket/crawl/*.jsonl.gz s3a://bucket/kept --format parquet
"""

from __future__ import annotations

import argparse
import sys


def _option_value(text: str):
    """A search option's value from the command line: a number, a list of numbers (``a,b``),
    or the word itself (``minhash``); the library checks it and names the option when wrong."""
    import json

    if "," in text:
        return [_option_value(part) for part in text.split(",")]
    try:
        return json.loads(text)
    except ValueError:
        return text


def search_options(args: argparse.Namespace) -> dict:
    """The search options given on the command line, by their names."""
    from neardup import _neardup

    return {
        name: getattr(args, name)
        for group, name, _, _ in _neardup.option_table()
        if group == "search" and getattr(args, name) is not None
    }


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m neardup.spark", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--script", action="store_true",
                    help="print the path of the file spark-submit runs for this command, and exit")
    sub = ap.add_subparsers(dest="command")
    d = sub.add_parser("dedup", help="near-duplicate clusters and the kept records")
    d.add_argument("input", nargs="+", help="JSONL (plain, .gz, .bz2) or Parquet paths or globs")
    d.add_argument("output", help="the directory of the kept records")
    d.add_argument("--input-format", choices=["auto", "jsonl", "parquet"], default="auto")
    d.add_argument("--format", choices=["jsonl", "parquet"], default=None,
                   help="output format (default: the input's)")
    d.add_argument("--text-field", default="text")
    d.add_argument("--id-field", default=None,
                   help="the id field (default: id; a named field that no record has is an error)")
    d.add_argument("--lossy", action="store_true",
                   help="JSONL: replace invalid UTF-8 with U+FFFD instead of calling the line bad")
    d.add_argument("--max-doc-bytes", type=int, default=None,
                   help="the largest document taken, in bytes (default 32 MiB, as neardup dedup); a "
                        "larger one is a bad record")
    # The search options: the library's one table, spelled as `neardup dedup` spells them
    # (`--lsh-weights 0.3,0.7`); defaults and rules are the library's.
    from neardup import _neardup

    for group, name, _, takes in _neardup.option_table():
        if group == "search":
            d.add_argument("--" + name.replace("_", "-"), dest=name, type=_option_value,
                           default=None, metavar=name.upper(),
                           help=f"{takes} (as `neardup dedup --{name.replace('_', '-')}`)")
    d.add_argument("--preset", default=None, help="the pipeline preset (default: default)")
    d.add_argument("--spec", default=None, help="a pipeline spec file (JSON, as `neardup spec`)")
    d.add_argument("--assignments", default=None, help="also write every document's cluster here")
    d.add_argument("--pairs", default=None, help="also write every verified pair here")
    d.add_argument("--skip-bad", action="store_true",
                   help="skip malformed lines and rows without text (counted) instead of failing")
    d.add_argument("--master", default=None, help="the Spark master when not run by spark-submit")
    return ap


def main(argv: list[str] | None = None) -> int:
    ap = parser()
    args = ap.parse_args(argv)
    if args.script:
        from pathlib import Path

        print(Path(__file__).with_name("submit.py"))
        return 0
    if args.command is None:
        ap.error("a command is required: dedup")
    import neardup

    try:
        result = run(args)
    except neardup.InputError as e:
        print(f"neardup: error: {e}\n(no output was written)", file=sys.stderr)
        return 1
    print(result.print_summary(), file=sys.stderr)
    return 0


def run(args: argparse.Namespace):
    """Runs ``dedup`` as parsed by :func:`parser` (the outputs written) and returns its
    :class:`~neardup.spark.SparkDedupResult`; a bad input raises ``neardup.InputError``."""
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    import neardup
    from neardup.spark import dedup, dedup_jsonl

    builder = SparkSession.builder.appName("neardup dedup")
    if args.master:
        builder = builder.master(args.master)
    spark = builder.getOrCreate()
    fmt = args.input_format
    if fmt == "auto":
        fmt = "parquet" if all(p.rstrip("/").endswith(".parquet") for p in args.input) else "jsonl"
    out_fmt = args.format or fmt

    if args.spec:
        with open(args.spec, encoding="utf-8") as f:
            pipeline = neardup.Pipeline.from_spec(f.read())
    else:
        pipeline = neardup.Pipeline(args.preset)

    options = dict(pipeline=pipeline, **search_options(args), pairs=args.pairs is not None,
                   skip_bad=args.skip_bad,
                   # A plain read of files: Spark reads the same rows into the same partitions
                   # every time, so the input need not be cached.
                   cache_input=False)
    if fmt == "jsonl":
        # The executors read each line as `neardup dedup` reads it (Spark parses no JSON).
        # Lines end at "\n" only, as `neardup dedup` reads them (Spark's default also ends
        # one at a bare "\r").
        result = dedup_jsonl(spark.read.text(args.input, lineSep="\n"), text_field=args.text_field,
                             id_field=args.id_field or "id", id_field_named=args.id_field is not None,
                             lossy=args.lossy, max_doc_bytes=args.max_doc_bytes, **options)
    else:
        df = spark.read.parquet(*args.input)
        id_field = args.id_field or "id"
        if args.id_field is not None and id_field not in df.columns:
            raise neardup.InputError(
                f"no column {id_field!r} (--id-field) in the input; its columns are {df.columns}"
            )
        result = dedup(df, text_col=args.text_field, id_col=id_field if id_field in df.columns else None,
                       max_doc_bytes=args.max_doc_bytes, **options)
    import time

    spark.sparkContext.setJobDescription("neardup dedup: write")
    started = time.perf_counter()
    kept = result.kept
    if fmt == "jsonl" and out_fmt == "jsonl":
        kept.select("value").write.mode("errorifexists").text(args.output)
    elif out_fmt == "jsonl":
        kept.write.mode("errorifexists").json(args.output)
    elif fmt == "jsonl":
        # Parquet from JSONL: the kept records' id and text, each field found as the library
        # finds it (a key with the whole name, else the dotted path).
        def field(name: str):
            whole = F.get_json_object("value", "$['" + name.replace("'", "\\'") + "']")
            return F.coalesce(whole, F.get_json_object("value", "$." + name)) if "." in name else whole

        id_name = args.id_field or "id"
        kept.select(field(id_name).alias(id_name), field(args.text_field).alias(args.text_field)) \
            .write.mode("errorifexists").parquet(args.output)
    else:
        kept.write.mode("errorifexists").parquet(args.output)
    if args.assignments:
        result.assignments.write.mode("errorifexists").json(args.assignments)
    if args.pairs and result.pairs is not None:
        result.pairs.write.mode("errorifexists").json(args.pairs)
    result.summary["stage_seconds"]["write"] = time.perf_counter() - started
    spark.sparkContext.setJobDescription(None)
    return result


if __name__ == "__main__":
    sys.exit(main())

"""``python -m neardup.spark dedup INPUT OUTPUT``: corpus dedup on Spark; ``python -m neardup.spark
overlap QUERIES OUTPUT [--against COLLECTION]``: the passage check (see its --help).

Reads JSON Lines (each line kept byte for byte, as ``neardup dedup`` keeps it) or Parquet with
Spark's readers (any filesystem Spark supports), writes the kept records as JSON Lines or
Parquet, and prints the summary ``neardup dedup`` prints. The input's format is decided as
``neardup dedup`` decides it: by the files' names, else their first bytes, a folder (a Spark
job's output, with its ``_SUCCESS``) by its files; ``--format`` forces it. spark-submit runs a
file, not a module: ``python -m neardup.spark --script`` prints the file to give it.

    spark-submit --master local[2] "$(python -m neardup.spark --script)" dedup corpus.jsonl kept/ --threshold 0.8
    python -m neardup.spark dedup s3a://bucket/crawl/*.jsonl.gz s3a://bucket/kept --output-format parquet

Spark's own log is kept to its warnings, and a failure is one line; ``--verbose`` shows Spark's
log and the Java trace. Under spark-submit, which starts Spark before this command runs, the
first lines of Spark's start are still said unless the driver is given the package's log4j2
configuration:

    spark-submit --driver-java-options "-Dlog4j2.configurationFile=$(python -m neardup.spark --log-config)" ...
"""

from __future__ import annotations

import argparse
import sys
from typing import Any


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
    import neardup

    return {
        r["name"]: getattr(args, r["name"])
        for r in neardup.options()
        if r["group"] == "search" and r["spark"] and getattr(args, r["name"]) is not None
    }


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m neardup.spark", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--script", action="store_true",
                    help="print the path of the file spark-submit runs for this command, and exit")
    ap.add_argument("--log-config", action="store_true",
                    help="print the URI of the package's log4j2 configuration (Spark's warnings "
                         "only), for spark-submit --driver-java-options "
                         "-Dlog4j2.configurationFile=URI, and exit")
    sub = ap.add_subparsers(dest="command")
    d = sub.add_parser("dedup", help="near-duplicate clusters and the kept records")
    d.add_argument("input", nargs="+", help="JSONL (plain, .gz, .bz2) or Parquet paths or globs")
    d.add_argument("output", help="the directory of the kept records")
    d.add_argument("--format", choices=["auto", "jsonl", "parquet"], default="auto",
                   help="the input's format, as `neardup dedup --format` (default: by the files' "
                        "names, else their first bytes; a folder by its files)")
    # The earlier spelling of --format.
    d.add_argument("--input-format", dest="format", choices=["auto", "jsonl", "parquet"],
                   default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    d.add_argument("--output-format", choices=["jsonl", "parquet"], default=None,
                   help="the output's format (default: the input's)")
    d.add_argument("--verbose", action="store_true",
                   help="show Spark's log (INFO) and, on a failure, the Java trace")
    d.add_argument("--text-field", default="text")
    d.add_argument("--id-field", default=None,
                   help="the id field (default: id; a named field that no record has is an error)")
    d.add_argument("--lossy", action="store_true",
                   help="JSONL: replace invalid UTF-8 with U+FFFD instead of calling the line bad")
    d.add_argument("--max-doc-bytes", type=int, default=None,
                   help="the largest document taken, in bytes (default 32 MiB, as neardup dedup); a "
                        "larger one is a bad record")
    # The search options and the preset: the library's option table (`neardup options`), with
    # its spellings (`--lsh-weights 0.3,0.7`), docs and defaults; its rules apply them.
    import neardup

    for r in neardup.options():
        if r["spark"] and r["group"] == "search":
            default = "" if r["default"] is None else f" [default: {r['default']}]"
            d.add_argument(r["spark"], dest=r["name"], type=_option_value, default=None,
                           metavar=r["name"].upper(), help=f"{r['doc']}; {r['takes']}{default}")
        elif r["spark"] and r["group"] == "pipeline":
            d.add_argument(r["spark"], dest=r["name"], default=None,
                           help=f"{r['doc']} [default: {r['default']}]")
    d.add_argument("--spec", default=None, help="a pipeline spec file (JSON, as `neardup spec`)")
    d.add_argument("--assignments", default=None, help="also write every document's cluster here")
    d.add_argument("--pairs", default=None, help="also write every verified pair here")
    d.add_argument("--skip-bad", action="store_true",
                   help="skip malformed lines and rows without text (counted) instead of failing")
    d.add_argument("--master", default=None, help="the Spark master when not run by spark-submit")
    _overlap_parser(sub)
    return ap


def _overlap_parser(sub: Any) -> None:
    """``overlap``: the passage check, its options from the library's table."""
    import neardup

    o = sub.add_parser(
        "overlap",
        help="copied passages: QUERIES against a collection (--against), or within one input",
        description="Which passages of each query are copied from which documents of the "
                    "collection (--against), or which passages the documents of one input repeat "
                    "from earlier ones: the answers of `neardup overlap`, written to OUTPUT/passages "
                    "and OUTPUT/summary (and with --remove, OUTPUT/records: the input with its "
                    "repeated passages removed, the first holder keeping each).",
    )
    o.add_argument("input", nargs="+", help="the queries (or the corpus): JSONL or Parquet paths or globs")
    o.add_argument("output", help="the directory of the answers")
    o.add_argument("--against", action="append", default=None, metavar="COLLECTION",
                   help="the collection: a JSONL or Parquet path or glob, repeatable (without it, "
                        "the inputs are checked against each other)")
    o.add_argument("--format", choices=["auto", "jsonl", "parquet"], default="auto",
                   help="the inputs' format (default: by the files' names, else their first bytes)")
    o.add_argument("--output-format", choices=["jsonl", "parquet"], default="jsonl",
                   help="the answers' format (default jsonl; --remove writes the records in the "
                        "input's format)")
    o.add_argument("--remove", action="store_true",
                   help="within one input: also write OUTPUT/records, each record with the passages "
                        "it repeats from earlier ones removed (`neardup overlap -o`)")
    o.add_argument("--min-chars", type=int, default=None,
                   help="with --remove: drop records left shorter than this many characters")
    o.add_argument("--exclude-source", action="append", default=[],
                   help="an id of the collection never taken as a source (repeatable)")
    o.add_argument("--text-field", default="text")
    o.add_argument("--id-field", default=None,
                   help="the id field (default: id; without one a record is named by its position)")
    o.add_argument("--lossy", action="store_true",
                   help="JSONL: replace invalid UTF-8 with U+FFFD instead of calling the line bad")
    o.add_argument("--max-doc-bytes", type=int, default=None,
                   help="the largest document taken, in bytes (default 32 MiB)")
    o.add_argument("--skip-bad", action="store_true", help="skip malformed lines instead of failing")
    o.add_argument("--verbose", action="store_true",
                   help="show Spark's log (INFO) and, on a failure, the Java trace")
    o.add_argument("--master", default=None, help="the Spark master when not run by spark-submit")
    for r in neardup.options():
        if r["spark"] and r["group"] == "passages":
            kind = {"integer": int, "number": float}.get(r.get("kind"), str)
            if r.get("kind") == "flag":
                o.add_argument(r["spark"], dest=r["name"], action="store_true", default=None,
                               help=f"{r['doc']} [default: {r['default']}]")
            else:
                o.add_argument(r["spark"], dest=r["name"], type=kind, default=None,
                               metavar=r["name"].upper(),
                               help=f"{r['doc']}; {r['takes']} [default: {r['default']}]")


def passage_options(args: argparse.Namespace) -> dict:
    """The passage options given on the command line, by their names."""
    import neardup

    return {
        r["name"]: getattr(args, r["name"])
        for r in neardup.options()
        if r["group"] == "passages" and r["spark"] and getattr(args, r["name"], None) is not None
    }


def main(argv: list[str] | None = None) -> int:
    ap = parser()
    args = ap.parse_args(argv)
    if args.script:
        from pathlib import Path

        print(Path(__file__).with_name("submit.py"))
        return 0
    if args.log_config:
        from neardup.spark._input import LOG4J_CONFIG

        print(LOG4J_CONFIG.resolve().as_uri())
        return 0
    if args.command is None:
        ap.error("a command is required: dedup or overlap")
    import neardup

    try:
        result = run_overlap(args) if args.command == "overlap" else run(args)
    except neardup.OptionError as e:
        # The caller's mistake in an option, as the CLI's exit 2.
        print(f"neardup: error: {e}", file=sys.stderr)
        return 2
    except neardup.InputError as e:
        print(f"neardup: error: {e}\n(no output was written)", file=sys.stderr)
        return 1
    except Exception as e:  # noqa: BLE001 - Spark's own failures, said in one line
        line = spark_failure(e)
        if line is None or args.verbose:
            raise
        print(f"neardup: error: {line} (--verbose shows Spark's log and trace)", file=sys.stderr)
        return 1
    print(result.print_summary(), file=sys.stderr)
    return 0


def spark_failure(e: BaseException) -> str | None:
    """A failure Spark reported, in one line without its trace: a Python worker's exception
    (the last line of its traceback), else the first line of the Java exception or of Spark's
    error; None for anything else (a bug, raised as it is)."""
    try:
        from py4j.protocol import Py4JJavaError
        from pyspark.errors import PySparkException
    except ImportError:
        return None
    java = None
    if isinstance(e, Py4JJavaError):
        java = e.java_exception
        message = str(java.getMessage() or java.toString())
    elif isinstance(e, PySparkException):
        java = getattr(e, "_origin", None)
        message = str(e)
    else:
        return None
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    if not lines:
        return type(e).__name__
    cause = _root_cause(java)
    if "exception was thrown from the Python worker" in lines[0]:
        raised = lines[-1]
        if "No module named 'neardup'" in raised:
            return (f"Spark's Python workers cannot import neardup ({raised}): install it in the "
                    "Python the executors run (PYSPARK_PYTHON; on a cluster, ship the environment "
                    "with --archives)")
        return f"a Python worker failed: {raised}"
    return f"{lines[0]}: {cause}" if cause and cause not in lines[0] else lines[0]


def _root_cause(java: object) -> str | None:
    """The first line of the innermost cause of a Java exception (what went wrong under
    Spark's "error while reading file ..."), as ``Class: message``."""
    try:
        root, seen = java, 0
        while root is not None and root.getCause() is not None and seen < 20:
            root, seen = root.getCause(), seen + 1
        if root is None or seen == 0:
            return None
        text = str(root.getMessage() or "").strip().splitlines()
        name = str(root.getClass().getSimpleName())
        return f"{name}: {text[0].strip()}" if text else name
    except Exception:  # noqa: BLE001 - a detail of the message; the line stands without it
        return None


def _session(args: argparse.Namespace, name: str) -> Any:
    """The Spark session of a command: quiet unless --verbose, in this command's own session
    only (a session made before, in this process, keeps its levels)."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    from neardup.spark._input import quiet_running_jvm, quiet_start

    builder = SparkSession.builder.appName(name)
    if args.master:
        builder = builder.master(args.master)
    quiet = not args.verbose and SparkContext._active_spark_context is None
    if quiet:
        builder = quiet_start(builder)
    spark = builder.getOrCreate()
    if quiet:
        quiet_running_jvm(SparkContext)
    return spark


def run_overlap(args: argparse.Namespace):
    """Runs ``overlap`` as parsed by :func:`parser` (the answers written) and returns its
    :class:`~neardup.spark._overlap.SparkOverlapResult`."""
    import time

    from pyspark.sql import functions as F

    import neardup
    from neardup.spark import _overlap
    from neardup.spark._graph import choose_shuffle_partitions
    from neardup.spark._input import input_format
    from neardup.spark._stages import _max_doc_bytes

    if args.remove and args.against:
        raise neardup.OptionError(
            "--remove writes the inputs with the passages they repeat from each other removed: "
            "give it without --against")
    if args.min_chars is not None and not args.remove:
        raise neardup.OptionError("--min-chars applies to --remove's records: give --remove too")
    if args.min_chars is not None and not 0 <= args.min_chars <= 2**32:
        raise neardup.OptionError(f"--min-chars must be between 0 and 4294967296, not {args.min_chars}")
    spec = neardup._neardup.passage_spec(passage_options(args))
    spark = _session(args, "neardup overlap")
    fields = dict(text_field=args.text_field, id_field=args.id_field or "id", tokens_field="tokens",
                  lossy=args.lossy, max_doc_bytes=_max_doc_bytes(args.max_doc_bytes))

    skipped = []

    def read(paths: list) -> tuple:
        fmt = args.format if args.format != "auto" else input_format(spark, paths)
        if fmt == "jsonl":
            docs, bad = _overlap.read_jsonl(spark, paths, fields, args.skip_bad)
            skipped.append(bad)
            return fmt, docs, docs
        docs, rows = _overlap.read_parquet(spark, paths, args.text_field, args.id_field)
        return fmt, docs, rows

    started = time.perf_counter()
    fmt, queries, rows = read(args.input)
    collection = read(args.against)[1] if args.against else None
    # Unless the user set them, shuffle partitions for the inputs' size, as dedup chooses them:
    # Spark's 200 cost 250,000 documents (270 MB) 100 s on local[2], 87 s with 16
    # (BENCHMARKS.md). The size is the files', from a plan that reads none of them; after the
    # reads, which name a path that is not there.
    chosen = choose_shuffle_partitions(spark.read.text([*args.input, *(args.against or [])]))
    if args.remove:
        _overlap.refuse_tokens(rows)
    reading = time.perf_counter() - started
    result = _overlap.overlap(queries, collection, spec, args.exclude_source)
    result.summary["stage_seconds"] = {"read": reading, **result.summary["stage_seconds"]}
    result.summary["skipped"] = sum(skipped)
    result.summary["shuffle_partitions"] = int(spark.conf.get("spark.sql.shuffle.partitions"))
    result.summary["shuffle_partitions_chosen"] = chosen is not None

    spark.sparkContext.setJobDescription("neardup overlap: write")
    started = time.perf_counter()
    out = args.output.rstrip("/")
    passages = result.passages.orderBy("q", "i").select("line")
    summaries = result.summaries.orderBy("q").select("line")
    if args.output_format == "jsonl":
        passages.write.mode("errorifexists").text(f"{out}/passages")
        summaries.write.mode("errorifexists").text(f"{out}/summary")
    else:
        for name, df, schema in (("passages", passages, _overlap.PASSAGE_SCHEMA),
                                 ("summary", summaries, _overlap.SUMMARY_SCHEMA)):
            df.select(F.from_json("line", schema).alias("r")).select("r.*") \
                .write.mode("errorifexists").parquet(f"{out}/{name}")
    if args.remove:
        removed = _overlap.write_records(result.rewritten, rows, fmt, f"{out}/records", fields,
                                         args.min_chars, args.text_field)
        result.summary.update(removed)
    result.summary["stage_seconds"]["write"] = time.perf_counter() - started
    spark.sparkContext.setJobDescription(None)
    return result


def run(args: argparse.Namespace):
    """Runs ``dedup`` as parsed by :func:`parser` (the outputs written) and returns its
    :class:`~neardup.spark.SparkDedupResult`; a bad input raises ``neardup.InputError``."""
    from pyspark.sql import functions as F

    import neardup
    from neardup.spark import dedup, dedup_jsonl
    from neardup.spark._input import input_format

    spark = _session(args, "neardup dedup")
    fmt = args.format if args.format != "auto" else input_format(spark, args.input)
    out_fmt = args.output_format or fmt

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

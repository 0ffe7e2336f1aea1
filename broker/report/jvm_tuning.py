"""JVM options of the report's driver when zkbroker starts it: the collector, the metaspace,
and which code the optimising JIT compiler (C2) may compile.

A report run is short and, on a small machine, the JVM's own work is a large part of it: at
1M capture lines the JIT compilers took ~21 of ~48 CPU-s (C2 ~16), and C2 spent about half
of its time on code that runs only while Spark plans a query, never per row: Janino
compiling the generated Java, ASM reading class files for Spark's ClosureCleaner, Java
serialisation of tasks, Catalyst's analyser and optimiser, the SQL parser. The options:

- the parallel collector (`-XX:+UseParallelGC`): a throughput collector for a batch job.
  Against G1 (the JVM's default) it cut the 1M-line job by 6-15% and the driver's peak
  RSS from 1.53 to 1.27 GB (no remembered sets);
- `-XX:MetaspaceSize`: the metaspace size at which the JVM first collects classes. Spark
  loads ~20,000 classes; from the default (~21 MB) two full collections ran only because
  the metaspace grew (~0.23 s of pauses per run at 1M lines);
- a compiler-directives file (HotSpot's `-XX:CompilerDirectivesFile`, JEP 165) that
  excludes those planning-only packages from C2 (`C2_EXCLUDED`). HotSpot then compiles
  them with C1 alone, without profiling (the tiered policy's answer to a method C2 may not
  compile). Every per-row path (Jackson, the generated code, Parquet, Spark's unsafe rows,
  sorters and hash maps, the JDK) is left to C2 as before. Measured, 4 runs each, same hour:
  1M lines 2.7 CPU-s (5%) less, and less in every pair; at 10M C2 took 3.5 CPU-s less and
  the job was as fast.

The directives file is written (from `C2_EXCLUDED`) into zkbroker's cache folder under a
name that is a digest of its text, so a JVM is never given another version's file; a
malformed file would stop the JVM, so a test starts one with it. No file (a read-only home):
no directives, and the run goes on as before.

Deliberately not here: options Spark needs (`broker.report.session`), the class-data
archive (`broker.report.class_archive`). Under spark-submit none of this applies: Spark
started the JVM.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import structlog

from broker.report import class_archive

log = structlog.get_logger(__name__)

METASPACE_SIZE = "256m"

# HotSpot method patterns (`package/Class.method`, `*` at either end of a part). Only code
# that runs while a query is planned or a task is shipped; nothing a row passes through
# (the code generators' writers, `codegen/Unsafe*Writer`, are per-row, so only
# `Code*`/`Generate*` of that package are here).
C2_EXCLUDED = (
    "org/codehaus/*.*",  # Janino: compiles the generated Java
    "org/apache/xbean/*.*",  # ASM, as Spark's ClosureCleaner reads class files
    "jdk/internal/org/objectweb/*.*",  # the JDK's ASM: lambda and proxy classes
    "org/antlr/*.*",  # Spark's SQL parser
    "scala/reflect/*.*",
    "java/io/Object*.*",  # Java serialisation of tasks and their closures
    "org/apache/spark/sql/catalyst/analysis/*.*",
    "org/apache/spark/sql/catalyst/optimizer/*.*",
    "org/apache/spark/sql/catalyst/trees/*.*",
    "org/apache/spark/sql/catalyst/rules/*.*",
    "org/apache/spark/sql/catalyst/planning/*.*",
    "org/apache/spark/sql/catalyst/plans/*.*",
    "org/apache/spark/sql/catalyst/parser/*.*",
    "org/apache/spark/sql/execution/adaptive/*.*",
    "org/apache/spark/sql/catalyst/expressions/codegen/Code*.*",
    "org/apache/spark/sql/catalyst/expressions/codegen/Generate*.*",
)


def directives_text() -> str:
    """The compiler-directives file: one directive excluding `C2_EXCLUDED` from C2."""
    return json.dumps([{"match": list(C2_EXCLUDED), "c2": {"Exclude": True}}], indent=1) + "\n"


def directives_file(folder: str | None = None) -> Path | None:
    """The directives file for this version of `C2_EXCLUDED`, written if missing; None when
    no folder can hold it."""
    text = directives_text()
    base = Path(folder or class_archive.cache_folder())
    path = base / f"jit-{hashlib.sha256(text.encode()).hexdigest()[:16]}.json"
    try:
        if path.is_file() and path.read_text(encoding="utf-8") == text:
            return path
        base.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, path)  # never a half-written file under the final name
    except OSError as e:
        log.warning("report.jit_directives.not_written", folder=str(base), error=str(e))
        return None
    return path


def java_options(folder: str | None = None) -> list[str]:
    """The options for a driver JVM zkbroker starts."""
    options = ["-XX:+UseParallelGC", f"-XX:MetaspaceSize={METASPACE_SIZE}"]
    path = directives_file(folder)
    if path is not None:
        options += ["-XX:+UnlockDiagnosticVMOptions", f"-XX:CompilerDirectivesFile={path}"]
    return options

"""JVM options for the report's driver when zkbroker starts it: the parallel collector, the
initial metaspace size, and a compiler-directives file (JEP 165) keeping Spark's query-planning
code away from the C2 JIT compiler; `c2_paused` keeps C2 off everything during the report's
tables. The reason for each option is in a comment beside it.

The directives file lives in zkbroker's cache folder under a digest of its text; without a
writable folder there are no directives and the run goes on.

Not here: options Spark needs (`zkbroker.broker.report.session`), the class-data archive
(`zkbroker.broker.report.class_archive`). Under spark-submit these options do not apply (Spark
started the JVM); `c2_paused` does, in the driver's JVM only.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from zkbroker.broker.jvm import class_archive
from zkbroker.broker.log import get_logger

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = get_logger(__name__)

# Spark loads tens of thousands of classes; from the default size, full collections ran only
# because the metaspace grew.
METASPACE_SIZE = "256m"

# The JIT compilers take a large share of the job's CPU, much of C2's on code that runs only
# while Spark plans a query. Excluded from C2, HotSpot compiles it with C1 alone, which costs
# less CPU and leaves the job at least as fast.
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


def no_c2_text() -> str:
    """The directive `c2_paused` pushes: every method excluded from C2 (C1 unchanged)."""
    return json.dumps([{"match": ["*.*"], "c2": {"Exclude": True}}], indent=1) + "\n"


def directives_file(folder: str | None = None) -> Path | None:
    """The directives file for this version of `C2_EXCLUDED`, written if missing; None when
    no folder can hold it."""
    return _cached_file(directives_text(), folder)


def no_c2_file(folder: str | None = None) -> Path | None:
    """The file of `no_c2_text`, written if missing; None when no folder can hold it."""
    return _cached_file(no_c2_text(), folder)


def _cached_file(text: str, folder: str | None) -> Path | None:
    """`text` in the cache folder under a digest of it, written if missing or changed;
    None when no folder can hold it."""
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


def diagnostic_command(spark: SparkSession, operation: str, *arguments: str) -> str:
    """Run one of the driver JVM's diagnostic commands (what `jcmd` runs, e.g.
    "compilerDirectivesAdd") and return its output."""
    jvm, gateway = spark.sparkContext._jvm, spark.sparkContext._gateway
    assert jvm is not None and gateway is not None

    def array(kind: object, values: list[object]) -> object:
        made = gateway.new_array(kind, len(values))
        for i, value in enumerate(values):
            made[i] = value
        return made

    server = jvm.java.lang.management.ManagementFactory.getPlatformMBeanServer()
    name = jvm.javax.management.ObjectName("com.sun.management:type=DiagnosticCommand")
    strings = jvm.java.lang.String
    command = [name, operation, array(jvm.java.lang.Object, [array(strings, list(arguments))]),
               array(strings, ["[Ljava.lang.String;"])]
    # Called through the public interface's Method: the platform server's own class is in a
    # package the JDK does not export, where py4j cannot call it.
    find = jvm.java.lang.Class.forName
    signature = ["javax.management.ObjectName", "java.lang.String", "[Ljava.lang.Object;",
                 "[Ljava.lang.String;"]
    invoke = find("javax.management.MBeanServerConnection").getMethod(
        "invoke", array(jvm.java.lang.Class, [find(c) for c in signature])
    )
    return str(invoke.invoke(server, array(jvm.java.lang.Object, command)))


@contextmanager
def c2_paused(spark: SparkSession, folder: str | None = None) -> Iterator[bool]:
    """Keep C2 off every method the driver JVM compiles inside the block; yields whether it
    is. Only for a JVM that runs nothing after the block that needs C2 (see the comment
    below). Anything failing leaves the JIT as it was: a slower run, never a failed one."""
    # The report's many short Spark jobs over small tables spend a large share of their CPU
    # in C2 for code that then runs milliseconds; with C2 paused the tables take less time.
    # HotSpot marks a method C2 refused as never to be compiled by C2 again ("made not
    # compilable on level 4" outlives the directive), so a later run in the same JVM would
    # leave its per-row code to C1: only a process running one report may pause C2.
    path = no_c2_file(folder)
    paused = False
    if path is not None:
        try:
            added = diagnostic_command(spark, "compilerDirectivesAdd", str(path))
            paused = added.split(" ", 1)[0] == "1"
            if not paused:
                log.warning("report.jit.c2_not_paused", answer=added.strip())
        except Exception as e:  # an older or other JVM without the command
            log.warning("report.jit.c2_not_paused", error=str(e))
    log.info("report.jit.c2_paused", paused=paused)
    try:
        yield paused
    finally:
        if paused:
            try:
                diagnostic_command(spark, "compilerDirectivesRemove")
            except Exception as e:
                log.warning("report.jit.c2_not_resumed", error=str(e))


def java_options(folder: str | None = None) -> list[str]:
    """The options for a driver JVM zkbroker starts."""
    # The JVM's own messages ("1 compiler directives added") on stderr: stdout carries the
    # command's summary.
    # ParallelGC, a throughput collector for a batch job: against G1 the job runs faster and
    # the driver's peak memory is lower.
    options = ["-XX:+UseParallelGC", f"-XX:MetaspaceSize={METASPACE_SIZE}",
               "-XX:+DisplayVMOutputToStderr"]
    path = directives_file(folder)
    if path is not None:
        options += ["-XX:+UnlockDiagnosticVMOptions", f"-XX:CompilerDirectivesFile={path}"]
    return options

"""The report JVM's class-data archive: which archive names Spark's classes (its Spark release
and jars), on the mechanism every zkbroker JVM shares (``zkbroker.broker.jvm.class_archive``):
the session starts sooner with the classes it loads already parsed. Used only when zkbroker
starts the JVM (not under spark-submit or a session of your own).

Not here: the session's other settings (`zkbroker.broker.report.session`), JEP 483's AOT cache
(JDK 24+), which does not make the report faster.
"""

from __future__ import annotations

import os
from pathlib import Path

from zkbroker.broker.jvm import class_archive as jvm_archive
from zkbroker.broker.jvm.class_archive import ArchivePlan

# The mechanism (kept, written, verified, published) is the one every zkbroker JVM shares;
# here only what names Spark's archive.


def _spark_jars() -> tuple[str, list[str]]:
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    names = sorted(p.name for p in jars.glob("*.jar")) if jars.is_dir() else []
    return pyspark.__version__, names


def plan(folder: str | os.PathLike[str] | None) -> ArchivePlan | None:
    """The archive for this run's JVM (Spark release, Java release, JVM build and Spark's
    jars name it): use the one kept, or write one; None when off or when the JDK cannot."""
    if folder is None:
        return None
    spark_version, jars = _spark_jars()
    return jvm_archive.plan(folder, f"spark-{spark_version}", jars, event="report.class_archive")

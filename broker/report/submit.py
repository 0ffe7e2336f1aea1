"""The spark-submit entry of the report job (spark-submit takes a file, not a module):

    spark-submit --master spark://host:7077 "$(python -c \
        'import zkbroker.broker.report.submit as m; print(m.__file__)')" INPUT... --out DIR

Same arguments and exit codes as `zkbroker report`; the master, deploy mode and memory are
spark-submit's (`zkbroker.broker.report.session` detects the launch). The driver's Python must have
zkbroker installed (PYSPARK_PYTHON / PYSPARK_DRIVER_PYTHON); executors need no Python.

Deliberately nothing else. Run as a file, its own folder is first on sys.path, where our
module names could shadow others': it is removed before anything is imported.
"""

import os
import sys

if sys.path and os.path.abspath(sys.path[0]) == os.path.dirname(os.path.abspath(__file__)):
    del sys.path[0]

from zkbroker.broker.report.job import main  # after the sys.path fix above

if __name__ == "__main__":
    sys.exit(main(prog="broker/report/submit.py"))

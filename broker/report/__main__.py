"""`python -m zkbroker.broker.report INPUT... --out DIR`: the report job, as `zkbroker report`.

Deliberately nothing else: spark-submit takes `broker/report/submit.py` (a file), this is
for `python -m`.
"""

import sys

from zkbroker.broker.report.job import main

sys.exit(main(prog="python -m zkbroker.broker.report"))

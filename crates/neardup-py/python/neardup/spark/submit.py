"""The file spark-submit runs for ``python -m neardup.spark`` (spark-submit takes a file, not a
module): ``spark-submit [spark options] "$(python -m neardup.spark --script)" dedup IN OUT``."""

import sys

from neardup.spark.__main__ import main

if __name__ == "__main__":
    sys.exit(main())

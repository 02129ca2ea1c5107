"""``python -m etctl.common.crd [--check] [OUT_DIR]``: write the CRDs, or check they are current."""

import sys

from etctl.common.crd.cli import main

sys.exit(main())

#!/bin/bash
# The last window starts at len(values) - size, so the range needs + 1.
set -e
python3 - <<'PY'
import pathlib
p = pathlib.Path("sliding.py")
src = p.read_text()
bad = "range(len(values) - size)"
assert bad in src, "the buggy line is gone"
p.write_text(src.replace(bad, "range(len(values) - size + 1)"))
PY

#!/bin/bash
set -e
python3 - <<'PY'
import csv
from decimal import Decimal

total, count = {}, {}
with open("orders.csv", newline="") as f:
    for row in csv.DictReader(f):
        r = row["region"]
        total[r] = total.get(r, Decimal("0")) + Decimal(row["amount"])
        count[r] = count.get(r, 0) + 1
with open("totals.csv", "w") as f:
    f.write("region,orders,total\n")
    for r in sorted(total, key=lambda r: (-total[r], r)):
        f.write("%s,%d,%.2f\n" % (r, count[r], total[r]))
PY

#!/usr/bin/env python3
"""beta: the fast lister.

Dumps every listing as a bullet list as quickly as possible: no date filter,
no de-duplication. Fastest, but its post carries stale and duplicate events.
"""
import json
import os
import sys

objective, output_path = sys.argv[1], sys.argv[2]
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "events.json"), encoding="utf-8") as f:
    data = json.load(f)
events = data["events"]
print(f"[Beta] Found {len(events)} events", flush=True)

lines = ["# AI events this week", ""]
for ev in events:
    lines.append(f"- {ev['date']} {ev['time']} · {ev['title']} · {ev['city']} {ev['url']}".rstrip())
lines.append("")
with open(output_path, "w", encoding="utf-8") as f:
    f.write("\n".join(lines))

week = [e for e in events if data["week_of"] <= e["date"] <= "2026-11-29"]
with open(os.environ["FORGE_RESULT"], "w", encoding="utf-8") as f:
    json.dump({"events": len(events), "coverage": round(len(week) / len(events), 3), "quality": 0.55}, f)
print(f"[Beta] Wrote {output_path}", flush=True)

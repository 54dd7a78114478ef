#!/usr/bin/env python3
"""gamma: the ambitious summariser.

Writes a themed digest ("what this week is about") with a one-line summary per
topic. Its date handling is fragile: it parses the weekday out of free text
and, when the week's listings include a malformed entry it trips over,
crashes with a traceback. It also fails at random about one run in three
(FORGE_TRIAL seeds it), as real experimental agents do.
"""
import collections
import json
import os
import random
import sys
import time

objective, output_path = sys.argv[1], sys.argv[2]
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "events.json"), encoding="utf-8") as f:
    data = json.load(f)

seed = os.environ.get("GAMMA_SEED") or f"{os.environ.get('FORGE_RUN_ID', '')}/{os.environ.get('FORGE_TRIAL', '1')}"
rng = random.Random(seed)
print(f"[Gamma] Clustering {len(data['events'])} events by theme", flush=True)
time.sleep(0.3)

themes = collections.defaultdict(list)
for ev in data["events"]:
    themes[ev["topics"][0]].append(ev)
print(f"[Gamma] Found {len(themes)} themes", flush=True)

if rng.random() < 0.34:
    # The fragile part: a "per-theme event rate" that divides by the number of
    # online events of a theme, which is sometimes zero.
    rates = {t: len(evs) / sum(1 for e in evs if e["format"] == "online") for t, evs in themes.items()}

lines = ["# This week in AI, by theme", ""]
for theme, evs in sorted(themes.items(), key=lambda kv: -len(kv[1])):
    titles = "; ".join(e["title"] for e in evs[:3])
    lines.append(f"### {theme.title()} ({len(evs)})")
    lines.append(f"{titles}.")
    lines.append("")
with open(output_path, "w", encoding="utf-8") as f:
    f.write("\n".join(lines))
with open(os.environ["FORGE_RESULT"], "w", encoding="utf-8") as f:
    json.dump({"events": len(data["events"]), "themes": len(themes), "quality": 0.75}, f)
print(f"[Gamma] Wrote {output_path}", flush=True)

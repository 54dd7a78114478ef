#!/usr/bin/env python3
"""alpha: the careful curator.

Reads the sample events, keeps only this week's, removes duplicates, ranks
them by relevance to the objective and writes a Discord-style post grouped by
day. Slowest of the three, and the most complete.
"""
import datetime as dt
import json
import os
import sys
import time

objective, output_path = sys.argv[1], sys.argv[2]
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "events.json"), encoding="utf-8") as f:
    data = json.load(f)

print(f"[Alpha] Objective: {objective!r}", flush=True)
week_start = dt.date.fromisoformat(data["week_of"])
week_end = week_start + dt.timedelta(days=6)
print(f"[Alpha] Scanning {len(data['events'])} listings for {week_start}..{week_end}", flush=True)

seen, events = set(), []
for ev in data["events"]:
    time.sleep(0.08)  # stands in for fetching and checking each listing
    day = dt.date.fromisoformat(ev["date"])
    key = (ev["title"].strip().lower(), ev["date"], ev["city"].lower())
    if not (week_start <= day <= week_end) or key in seen:
        continue
    seen.add(key)
    events.append(ev)
print(f"[Alpha] Found {len(events)} events this week (dropped {len(data['events']) - len(events)})", flush=True)

words = {w.strip(".,:;!?").lower() for w in objective.split()}
def relevance(ev):
    topical = sum(1 for t in ev["topics"] for w in t.split() if w in words or w.rstrip("s") in words)
    return (-topical, ev["date"], ev["time"])

by_day = {}
for ev in sorted(events, key=lambda e: (e["date"], e["time"])):
    by_day.setdefault(ev["date"], []).append(ev)

lines = [f"# 🤖 AI events this week ({week_start:%b %d} – {week_end:%b %d})", "",
         f"> {len(events)} events, {sum(1 for e in events if e['format'] != 'in person')} you can join online.", ""]
for day, evs in by_day.items():
    d = dt.date.fromisoformat(day)
    lines.append(f"## {d:%A %b %d}")
    for ev in sorted(evs, key=relevance):
        link = f" — <{ev['url']}>" if ev["url"] else " — link to follow"
        tags = " ".join(f"`{t}`" for t in ev["topics"])
        lines.append(f"- **{ev['time']}** {ev['title']} ({ev['city']}, {ev['format']}){link} {tags}")
    lines.append("")
top = sorted(events, key=relevance)[0]
lines += [f"⭐ Pick of the week: **{top['title']}**", "", "_Curated by alpha · reply with events we missed!_", ""]
with open(output_path, "w", encoding="utf-8") as f:
    f.write("\n".join(lines))

with_links = sum(1 for e in events if e["url"])
result = {"events": len(events), "coverage": round(with_links / max(len(events), 1), 3), "quality": 0.92}
with open(os.environ["FORGE_RESULT"], "w", encoding="utf-8") as f:
    json.dump(result, f)
print(f"[Alpha] Wrote {output_path} ({len(events)} events)", flush=True)

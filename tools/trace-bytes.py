#!/usr/bin/env python3
"""trace-bytes.py - where the bytes of a version 3 to 5 trace go (docs/benchmarks.md, issue 20).

    python3 tools/trace-bytes.py T.json [N]

Reads a plain (not gzipped) version 3 to 5 trace line by line (one step per line, docs/trace-format.md)
and prints the N largest shares (default 30): per step kind and key, per edit kind, per reason
code, per check field, and the top-level tables, in MB of compact JSON (what the writer writes),
with counts where they mean something (an edit's count is of items of "edits": in version 4 a
run of erases, moves or rewires, or a replace, is one). Shares are in MB to 3 decimals, or to 6
when the largest is under 1 MB. Standard library only; any python3.
"""
import collections
import json
import sys


def size(v):
    return len(json.dumps(v, separators=(",", ":"), ensure_ascii=False))


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: trace-bytes.py T.json [N]")
    top = int(sys.argv[2]) if len(sys.argv) == 3 else 30
    total = collections.Counter()
    count = collections.Counter()
    with open(sys.argv[1], encoding="utf-8") as f:
        for line in f:
            s = line.rstrip("\n").rstrip(",")
            if not s.startswith('{"kind"'):
                key = s.split(":", 1)[0] if s.startswith('"') else s[:12]
                total[("table or header", key)] += len(line.encode("utf-8"))
                continue
            d = json.loads(s)
            kind = d.get("kind", "?")
            for k, v in d.items():
                total[(kind, k)] += size(v) + len(k) + 4
            for e in d.get("edits", []):
                total[("edit", e[0])] += size(e) + 1
                count[("edit", e[0])] += 1
            if "reason" in d:
                r = d["reason"]
                total[("reason", r.get("code", "?"))] += size(r)
                count[("reason", r.get("code", "?"))] += 1
            for name, c in d.get("checks", {}).items():
                for k, v in c.items():
                    total[("check " + name, k)] += size(v) + len(k) + 4
    digits = 3 if total and max(total.values()) >= 1e6 else 6
    for k, v in total.most_common(top):
        print(f"{v / 1e6:8.{digits}f} MB {count.get(k, ''):>8}  {' '.join(k)}")


if __name__ == "__main__":
    main()

"""Reads storebench's HDR outputs with HdrHistogram_py (module hdrh), the
reference Python reader, and prints what it found as JSON:
  hdr_totals.py log FILE       -> {"<tag or empty>": total count, ...}
  hdr_totals.py hist B64...    -> [total count, ...] of encoded histograms
Any file or payload it cannot read is an error (exit 1)."""
import json
import sys

from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogReader


def log_totals(path):
    # The reference histogram only matters for add_next_interval_histogram;
    # get_next_interval_histogram decodes each line on its own.
    reader = HistogramLogReader(path, HdrHistogram(1, 100 * 10**9, 3))
    totals = {}
    lines = 0
    while True:
        h = reader.get_next_interval_histogram()
        if h is None:
            break
        lines += 1
        tag = h.get_tag() or ""
        totals[tag] = totals.get(tag, 0) + h.get_total_count()
    reader.close()
    # The reader stops silently at a line it cannot parse: count the data
    # lines ourselves so a truncated read is caught.
    with open(path, encoding="utf-8") as f:
        want = sum(1 for l in f if l.strip() and not l.startswith("#") and not l.startswith('"'))
    if lines != want:
        raise SystemExit("%s: read %d interval lines of %d" % (path, lines, want))
    return totals


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "log":
        print(json.dumps(log_totals(sys.argv[2])))
    elif len(sys.argv) >= 2 and sys.argv[1] == "hist":
        print(json.dumps([HdrHistogram.decode(b).get_total_count() for b in sys.argv[2:]]))
    else:
        raise SystemExit("usage: hdr_totals.py log FILE | hist B64...")


main()

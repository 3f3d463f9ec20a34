#!/usr/bin/env python3
"""The shape of a storebench report.md: its headings, each table's header
and the set of its rows' labels (numbers masked, as in every cell kept), every n/a reason and
every failure cell (numbers masked: a sweep's "failed at 4.0K/s"); prose
and measured figures left out. Used by
scripts/compare-reports.sh. Usage: report_shape.py REPORT.md"""
import re, sys
def mask(s): return re.sub(r'\d[\d.,]*','#',s)
out=[]; rows=set(); header=None
def flush():
    global rows
    if header is not None:
        out.append('TABLE '+header)
        out.extend('  '+r for r in sorted(rows))
    rows=set()
for line in open(sys.argv[1]):
    line=line.rstrip('\n')
    if line.startswith('|'):
        cells=[c.strip() for c in line.strip('|').split('|')]
        if header is None:
            header=mask('|'.join(cells)); continue
        if set(line) <= set('|-: '): continue
        key=mask(cells[0])
        if len(cells)>1:
            c1=mask(cells[1])
            if '#' not in c1 and not re.search(r'busy|waiting|disk|tell|gained|lost|held|µs|ms\b',c1):
                key+=' | '+c1
        extra=[mask(c) for c in cells if c.startswith('n/a') or 'FAIL' in c or 'failed' in c]
        rows.add(key+(' :: '+' ; '.join(extra) if extra else ''))
        continue
    if header is not None:
        flush(); header=None
    if line.startswith('#'):
        out.append(mask(line))
flush()
print('\n'.join(out))

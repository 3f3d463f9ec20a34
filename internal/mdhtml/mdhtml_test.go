package mdhtml

import (
	"strings"
	"testing"
)

func TestConvert(t *testing.T) {
	md := "# Ledger: chains <b>\n\n" +
		"Study `ledger` (studies/ledger.yaml). Status: **complete** and *fine*.\n" +
		"Second line with a_b_c and bloom_filter: 10.\n\n" +
		"<!-- storebench:charts ledger -->\n\n" +
		"## Targets\n\n" +
		"| target | settings | status |\n|---|---:|:---:|\n" +
		"| Pebble | a: 1; b \\| c | ok<br>fine |\n" +
		"| `x\\|y` | <script>alert(1)</script> |\n\n" +
		"- one **bold**\n- two\n  - nested [link](https://example.org/a?b=1&c=2)\n- three\n\n" +
		"1. first\n2. second\n\n" +
		"> quoted *text*\n\n" +
		"```\ncode <here>\n```\n\n" +
		"---\n\n" +
		"![chart](charts/a.png) [bad](javascript:alert(1)) \\*literal\\*\n\n" +
		"## Targets\n"
	got, heads := Convert(md)
	for _, want := range []string{
		`<h1 id="ledger-chains-b">Ledger: chains &lt;b&gt;</h1>`,
		`<code>ledger</code>`, `<strong>complete</strong>`, `<em>fine</em>`,
		`a_b_c and bloom_filter: 10.`,
		`<!-- storebench:charts ledger -->`,
		"<th>target</th>\n<th style=\"text-align:right\">settings</th>\n<th style=\"text-align:center\">status</th>",
		`<td style="text-align:right">a: 1; b | c</td>`, `ok<br>fine`,
		`<td><code>x|y</code></td>`,
		`&lt;script&gt;alert(1)&lt;/script&gt;`,
		"<li>one <strong>bold</strong></li>",
		`<ul>` + "\n" + `<li>nested <a href="https://example.org/a?b=1&amp;c=2">link</a></li>`,
		"<ol>\n<li>first</li>\n<li>second</li>\n</ol>",
		"<blockquote>\n<p>quoted <em>text</em></p>\n</blockquote>",
		"<pre><code>code &lt;here&gt;\n</code></pre>",
		"<hr>",
		`<img src="charts/a.png" alt="chart">`, `bad</a> *literal*`,
		`<h2 id="targets-2">Targets</h2>`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
	if strings.Contains(got, "<script") || strings.Contains(got, "javascript:") {
		t.Errorf("unsafe output:\n%s", got)
	}
	if len(heads) != 3 || heads[1].ID != "targets" || heads[2].ID != "targets-2" || heads[0].Level != 1 {
		t.Errorf("headings %+v", heads)
	}
	// The table's last row had fewer cells: padded, not dropped.
	if strings.Count(got, "<tr>") != 3 {
		t.Errorf("want 3 table rows:\n%s", got)
	}
}

func TestParagraphStopsAtBlocks(t *testing.T) {
	got, _ := Convert("text\n| a | b |\n|---|---|\n| 1 | 2 |\n\nafter\n## H\nmore")
	if !strings.Contains(got, "<p>text</p>\n<div class=\"table\">") || !strings.Contains(got, "<p>after</p>\n<h2") {
		t.Errorf("blocks not split:\n%s", got)
	}
}

// TestCommonMark checks constructs the hand-written converter this
// package used to be got wrong, now that the conversion is goldmark's:
// entities, autolinks, emphasis nested in strong text, reference links,
// setext headings and a hard line break.
func TestCommonMark(t *testing.T) {
	got, heads := Convert("Setext title\n============\n\n" +
		"p99 &lt; 1 ms &amp; <https://example.org/x> **all *nested* here**\\\n" +
		"see [the docs][d].\n\n[d]: https://example.org/docs\n")
	for _, want := range []string{
		`<h1 id="setext-title">Setext title</h1>`,
		`p99 &lt; 1 ms &amp; <a href="https://example.org/x">https://example.org/x</a>`,
		`<strong>all <em>nested</em> here</strong><br>`,
		`<a href="https://example.org/docs">the docs</a>`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
	if len(heads) != 1 || heads[0].ID != "setext-title" || heads[0].HTML != "Setext title" {
		t.Errorf("headings %+v", heads)
	}
}

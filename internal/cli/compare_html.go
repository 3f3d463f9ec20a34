package cli

import "storebench/internal/report"

// compareHTML renders the comparison's Markdown as a self-contained page,
// with the report's own Markdown-to-HTML conversion and style.
func compareHTML(md string) []byte {
	return report.HTMLPage("storebench comparison", md)
}

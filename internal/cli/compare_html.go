package cli

import "html"

// compareHTML renders the comparison's Markdown as a page.
// TODO(issue 4): use the report's Markdown-to-HTML page once it lands.
func compareHTML(md string) []byte {
	return []byte("<!doctype html><meta charset=utf-8><title>storebench comparison</title><pre>" + html.EscapeString(md) + "</pre>")
}
